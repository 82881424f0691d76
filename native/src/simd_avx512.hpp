// The 512-bit integer policy shared by kernels_avx512.cpp and kernels_avx512_vnni.cpp (dot_kernels.hpp's
// V, without dot). Internal linkage: each including file gets its own copy compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qwen3tts::native {
namespace {

struct Avx512Base {
    static constexpr int64_t kStep = 32;  // int16 lanes
    using reg = __m512i;
    static reg zero() { return _mm512_setzero_si512(); }
    static reg load(const int16_t* p) { return _mm512_loadu_si512(p); }
    static reg widen(const int8_t* p) {
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    // kStep INT4 channels (kernels.hpp's Int4Matrix) from the 16 bytes at p, sign-extended, in channel order.
    // Word j of the result is nibble j % 2 of byte j / 2; 128-bit lane L holds words 8L..8L+7, i.e. bytes
    // 4L..4L+3. So: the 16 bytes in every lane (one broadcast load), byte 4L + j / 2 into word j (an in-lane
    // shuffle; its high byte zeroed), each word shifted right by 0 or 4, then (w & 0xf) ^ 8 in one ternary
    // op and - 8: the 4-bit two's complement. Five instructions where unpacking into bytes and widening
    // took nine; the values, and so every sum, are the same.
    static reg widen4(const uint8_t* p) {
        alignas(64) static constexpr uint8_t kPick[64] = {
            0, 0x80, 0, 0x80, 1, 0x80, 1, 0x80, 2, 0x80, 2, 0x80, 3, 0x80, 3, 0x80,
            4, 0x80, 4, 0x80, 5, 0x80, 5, 0x80, 6, 0x80, 6, 0x80, 7, 0x80, 7, 0x80,
            8, 0x80, 8, 0x80, 9, 0x80, 9, 0x80, 10, 0x80, 10, 0x80, 11, 0x80, 11, 0x80,
            12, 0x80, 12, 0x80, 13, 0x80, 13, 0x80, 14, 0x80, 14, 0x80, 15, 0x80, 15, 0x80,
        };
        const __m512i bytes = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        const __m512i words = _mm512_shuffle_epi8(bytes, _mm512_load_si512(kPick));
        const __m512i shifted = _mm512_srlv_epi16(words, _mm512_set1_epi32(0x00040000));  // even 0, odd 4
        const __m512i biased = _mm512_ternarylogic_epi32(shifted, _mm512_set1_epi16(0x0f), _mm512_set1_epi16(8), 0x6a);
        return _mm512_sub_epi16(biased, _mm512_set1_epi16(8));
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
