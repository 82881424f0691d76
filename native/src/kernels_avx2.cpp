// AVX2 kernels (compiled with -mavx2; called only where the CPU reports AVX2), and their AVX-VNNI twin
// in kernels_avx_vnni.cpp.
#include <immintrin.h>

#include "dot4_kernels.hpp"
#include "dot_kernels.hpp"
#include "simd_avx2.hpp"

namespace qwen3tts::native {
namespace {

struct Avx2 : Avx2Base {
    // A decode row as straight-line groups (dot_kernels.hpp's straight_row): the frame at batch 1 took
    // 0.92-0.95 of the general loop's time on Zen 3. The AVX-VNNI twin, not measured, keeps the loop. The
    // INT4 rows prefetch kRowPrefetchBytes ahead (dot4_kernels.hpp).
    static constexpr bool kStraightGroups = true;
    static constexpr int64_t kRowPrefetchBytes = 4096;
    static reg dot(reg acc, reg a, reg b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
};

const KernelSet kAvx2{"avx2", Avx2::kStep, block_dot<Avx2>, 1, 2, block_dot4<Avx2>,
                      decode_rows<Avx2>, decode_rows4<Avx2>};

}  // namespace

const KernelSet& avx2_kernels() { return kAvx2; }

}  // namespace qwen3tts::native
