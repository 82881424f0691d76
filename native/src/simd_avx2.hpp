// The 256-bit integer policy shared by kernels_avx2.cpp and kernels_avx_vnni.cpp (dot_kernels.hpp's V,
// without dot). Internal linkage: each including file gets its own copy compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qwen3tts::native {
namespace {

struct Avx2Base {
    static constexpr int64_t kStep = 16;  // int16 lanes
    static constexpr bool kStraightGroups = false;  // dot_kernels.hpp's straight_row: measured for AVX2 only
    using reg = __m256i;
    static reg zero() { return _mm256_setzero_si256(); }
    static reg load(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static reg widen(const int8_t* p) {
        return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    // kStep INT4 channels (kernels.hpp's Int4Matrix) from the 8 bytes at p, sign-extended, in channel order,
    // as simd_avx512.hpp's widen4 does (whose comment says why), with a multiply by 16 for its per-lane
    // shift, which AVX2 lacks: the 8 bytes in every 64-bit lane; int16 lane i of 128-bit lane L (channel
    // 8L + i) takes byte 4L + i / 2 into its high byte; even channels times 16; an arithmetic shift by 12.
    static reg widen4(const uint8_t* p) {
        const __m256i spread = _mm256_set_epi8(7, -1, 7, -1, 6, -1, 6, -1, 5, -1, 5, -1, 4, -1, 4, -1,  //
                                               3, -1, 3, -1, 2, -1, 2, -1, 1, -1, 1, -1, 0, -1, 0, -1);
        const __m256i low_up = _mm256_set1_epi32(0x00010010);  // int16 lanes: 16 (even), 1 (odd)
        const __m256i bytes = _mm256_broadcastq_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        return _mm256_srai_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(bytes, spread), low_up), 12);
    }
    static reg add(reg a, reg b) { return _mm256_add_epi32(a, b); }
    static __m256i lanes8(reg v) { return v; }
};

}  // namespace
}  // namespace qwen3tts::native
