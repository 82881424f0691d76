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
    // kStep INT4 channels (kernels.hpp's Int4Matrix) from the 8 bytes at p, sign-extended, in channel order:
    // the low nibbles interleaved with the high ones, then (n ^ 8) - 8 turns a nibble into its value.
    static reg widen4(const uint8_t* p) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        const __m128i nibble = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
        const __m128i low = _mm_and_si128(bytes, nibble), high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
        const __m128i values = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(low, high), eight), eight);
        return _mm256_cvtepi8_epi16(values);
    }
    static reg add(reg a, reg b) { return _mm256_add_epi32(a, b); }
    static __m256i lanes8(reg v) { return v; }
};

}  // namespace
}  // namespace qwen3tts::native
