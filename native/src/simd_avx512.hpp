// The 512-bit integer policy shared by kernels_avx512.cpp and kernels_avx512_vnni.cpp (dot_kernels.hpp's
// V, without dot). Internal linkage: each including file gets its own copy compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qwen3tts::native {
namespace {

struct Avx512Base {
    static constexpr int64_t kStep = 32;  // int16 lanes
    static constexpr bool kStraightGroups = false;  // dot_kernels.hpp's straight_row: measured for AVX2 only
    using reg = __m512i;
    static reg zero() { return _mm512_setzero_si512(); }
    static reg load(const int16_t* p) { return _mm512_loadu_si512(p); }
    static reg widen(const int8_t* p) {
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    // kStep INT4 channels (kernels.hpp's Int4Matrix) from the 16 bytes at p, sign-extended, in channel order
    // (as simd_avx2.hpp's widen4, twice as wide).
    static reg widen4(const uint8_t* p) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i nibble = _mm_set1_epi8(0x0f);
        const __m128i low = _mm_and_si128(bytes, nibble), high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
        const __m256i nibbles = _mm256_set_m128i(_mm_unpackhi_epi8(low, high), _mm_unpacklo_epi8(low, high));
        const __m256i eight = _mm256_set1_epi8(8);
        return _mm512_cvtepi8_epi16(_mm256_sub_epi8(_mm256_xor_si256(nibbles, eight), eight));
    }
    static reg add(reg a, reg b) { return _mm512_add_epi32(a, b); }
    // int32 lane j (j < 8) covers channels 2j, 2j+1 of each 32; lane j + 8 channels 2j+16, 2j+17: both are
    // kernels.hpp's lane j (channels mod 16), and adding integers is exact.
    static __m256i lanes8(reg v) {
        return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    }
};

}  // namespace
}  // namespace qwen3tts::native
