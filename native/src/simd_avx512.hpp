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
    // kStep INT4 channels (kernels.hpp's Int4Matrix) from the 16 bytes at p, sign-extended, in channel order.
    // Four instructions where the AVX2 form's nine, twice as wide, left the INT4 frame bound by them (10 GB/s
    // on Zen 4, docs/benchmarks.md): the 16 bytes in every 128-bit lane; int16 lane i of lane L (channel
    // 8L + i) takes byte 4L + i / 2 into its high byte and zero (-1) into its low one (an in-lane shuffle);
    // even channels shift their low nibble up into bits 12-15, where odd ones hold their high nibble; an
    // arithmetic shift by 12 sign-extends either. The constants live in the function, not the namespace: an
    // initializer run at load time would execute AVX-512 code on any CPU.
    static reg widen4(const uint8_t* p) {
        const __m512i spread = _mm512_set_epi8(
            15, -1, 15, -1, 14, -1, 14, -1, 13, -1, 13, -1, 12, -1, 12, -1, 11, -1, 11, -1, 10, -1, 10, -1, 9, -1,
            9, -1, 8, -1, 8, -1, 7, -1, 7, -1, 6, -1, 6, -1, 5, -1, 5, -1, 4, -1, 4, -1, 3, -1, 3, -1, 2, -1, 2, -1,
            1, -1, 1, -1, 0, -1, 0, -1);
        const __m512i low_up = _mm512_set1_epi32(4);
        const __m512i bytes = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        const __m512i top = _mm512_sllv_epi16(_mm512_shuffle_epi8(bytes, spread), low_up);
        return _mm512_srai_epi16(top, 12);
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
