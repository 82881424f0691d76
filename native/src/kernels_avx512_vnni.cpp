// AVX-512 VNNI kernels (Cascade Lake and later, Zen 4/5: vpdpwssd on 512 bits; compiled with
// -mavx512f -mavx512bw -mavx512vnni, called only where the CPU and the OS report all three).
#include <immintrin.h>

#include "dot4_kernels.hpp"
#include "dot_kernels.hpp"
#include "simd_avx512.hpp"

namespace qwen3tts::native {
namespace {

struct Avx512Vnni : Avx512Base {
    static reg dot(reg acc, reg a, reg b) { return _mm512_dpwssd_epi32(acc, a, b); }
};

const KernelSet kAvx512Vnni{"avx512_vnni", Avx512Vnni::kStep, block_dot<Avx512Vnni>, 2, 4,
                            block_dot4<Avx512Vnni>};

}  // namespace

const KernelSet& avx512_vnni_kernels() { return kAvx512Vnni; }

}  // namespace qwen3tts::native
