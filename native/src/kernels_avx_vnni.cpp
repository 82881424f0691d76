// AVX-VNNI kernels (Alder Lake and later, N100/N200, Core Ultra: VEX-encoded vpdpwssd on 256 bits;
// compiled with -mavx2 -mavxvnni, called only where the CPU reports AVX-VNNI).
#include <immintrin.h>

#include "dot4_kernels.hpp"
#include "dot_kernels.hpp"
#include "simd_avx2.hpp"

namespace qwen3tts::native {
namespace {

struct AvxVnni : Avx2Base {
    static reg dot(reg acc, reg a, reg b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
};

const KernelSet kAvxVnni{"avx_vnni", AvxVnni::kStep, block_dot<AvxVnni>, 1, 2, block_dot4<AvxVnni>};

}  // namespace

const KernelSet& avx_vnni_kernels() { return kAvxVnni; }

}  // namespace qwen3tts::native
