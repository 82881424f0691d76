// AVX-512 kernels (compiled with -mavx512f -mavx512bw; called only where the CPU and the OS report both).
// Building this file needs only a compiler that knows the flags, never an AVX-512 CPU.
#include <immintrin.h>

#include "dot4_kernels.hpp"
#include "dot_kernels.hpp"
#include "simd_avx2.hpp"
#include "simd_avx512.hpp"

namespace qwen3tts::native {
namespace {

// The INT4 kernels' 256-bit steps where a 512-bit one would straddle two groups of 32 (dot4_kernels.hpp).
struct Avx512Narrow : Avx2Base {
    static reg dot(reg acc, reg a, reg b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
};

struct Avx512 : Avx512Base {
    using Narrow = Avx512Narrow;
    static reg dot(reg acc, reg a, reg b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
};

const KernelSet kAvx512{"avx512", Avx512::kStep, block_dot<Avx512>, 2, 4, block_dot4<Avx512>};

}  // namespace

const KernelSet& avx512_kernels() { return kAvx512; }

}  // namespace qwen3tts::native
