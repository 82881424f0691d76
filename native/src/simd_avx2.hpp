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
    // The 32 INT4 channels in the 16 bytes at p, as simd_avx512.hpp's unpack4 takes 64.
    static constexpr int64_t kStep4 = 32;
    static void unpack4(const uint8_t* p, reg& even, reg& odd) {
        const reg bytes = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        odd = _mm256_srai_epi16(bytes, 4);
        even = _mm256_srai_epi16(_mm256_slli_epi16(bytes, 12), 12);
    }
    static reg add(reg a, reg b) { return _mm256_add_epi32(a, b); }
    static __m256i lanes8(reg v) { return v; }
};

}  // namespace
}  // namespace qwen3tts::native
