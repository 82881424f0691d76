// The 512-bit integer policy shared by kernels_avx512.cpp and kernels_avx512_vnni.cpp (dot_kernels.hpp's
// V, without dot). Internal linkage: each including file gets its own copy compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qwen3tts::native {
namespace {

struct Avx512Base {
    static constexpr int64_t kStep = 32;  // int16 lanes
    static constexpr bool kStraightGroups = false;  // dot_kernels.hpp's straight_row: the VNNI set turns it on
    using reg = __m512i;
    static reg zero() { return _mm512_setzero_si512(); }
    static reg load(const int16_t* p) { return _mm512_loadu_si512(p); }
    static reg widen(const int8_t* p) {
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    // The 64 INT4 channels in the 32 bytes at p (kernels.hpp's Int4Matrix), as split4_rows orders x: the
    // bytes sign-extended to int16 (channel 2e + 1 in bits 4-7 with its sign above, channel 2e in bits 0-3);
    // an arithmetic shift by 4 gives the odd channels, a shift up by 12 and back the even ones.
    static constexpr int64_t kStep4 = 64;
    static void unpack4(const uint8_t* p, reg& even, reg& odd) {
        const reg bytes = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
        odd = _mm512_srai_epi16(bytes, 4);
        even = _mm512_srai_epi16(_mm512_slli_epi16(bytes, 12), 12);
    }
    static reg add(reg a, reg b) { return _mm512_add_epi32(a, b); }
    // int32 lane j (j < 8) covers channels 2j, 2j+1 of each 32; lane j + 8 channels 2j+16, 2j+17: both are
    // kernels.hpp's lane j (channels mod 16), and adding integers is exact. After unpack4 lane j covers
    // channels 4j..4j+3 of a step's 64, lane j + 8 channels 32+4j..32+4j+3: both kernels.hpp's INT4 lane j.
    static __m256i lanes8(reg v) {
        return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    }
};

}  // namespace
}  // namespace qwen3tts::native
