// RowDot and PanelDot (kernels.hpp) written once, RowDot over an integer SIMD policy V, for
// kernels_avx2.cpp, kernels_avx512.cpp and their VNNI twins. Each includes this file and is compiled with its own -m
// flags; everything here has internal linkage (anonymous namespace), so the linker can never hand one
// instruction set's copy to another's caller. The f32 lanes are 256-bit AVX code in every one of them.
//
// V provides: kStep (int16 lanes per register); reg; zero(); widen(const int8_t*) (kStep int8 -> int16);
// load(const int16_t*); dot(acc, a, b) = acc + pairwise a*b in int32 lanes (vpmaddwd + vpaddd, or
// vpdpwssd); lanes8(reg) -> __m256i, the 8 lanes of kernels.hpp (256 bits: as is; 512 bits: lane j
// plus lane j + 8, which covers the same channels mod 16).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels.hpp"

namespace qwen3tts::native {
namespace {

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) of four 8-lane vectors at once (hadd pairs
// neighbours within each 128-bit half).
inline void lane_sums4(__m256 a, __m256 b, __m256 c, __m256 d, float* out) {
    const __m256 ab = _mm256_hadd_ps(a, b);      // a0+a1 a2+a3 b0+b1 b2+b3 | a4+a5 a6+a7 b4+b5 b6+b7
    const __m256 cd = _mm256_hadd_ps(c, d);
    const __m256 abcd = _mm256_hadd_ps(ab, cd);  // (a0+a1)+(a2+a3) ... | (a4+a5)+(a6+a7) ...
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}

// The same tree for one vector: hadd twice, then the two halves' first lanes.
inline float lane_sum(__m256 a) {
    const __m256 pairs = _mm256_hadd_ps(a, a);      // a0+a1 a2+a3 . . | a4+a5 a6+a7 . .
    const __m256 quads = _mm256_hadd_ps(pairs, pairs);  // (a0+a1)+(a2+a3) ... | (a4+a5)+(a6+a7) ...
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

template <typename V, int M>
inline void dot_step(typename V::reg (&sums)[M], const int8_t* w, const int16_t* const* x, int64_t k) {
    const typename V::reg wv = V::widen(w + k);
    for (int i = 0; i < M; ++i) sums[i] = V::dot(sums[i], wv, V::load(x[i] + k));
}

template <typename V, int M>
void row_dot_rows(const int8_t* w, const QuantizedRows& x, int64_t row, float* out) {
    const int64_t K = x.cols;
    const int16_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.values + (row + i) * K;
    __m256 acc[M];
    for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t g0 = 0, g = 0; g0 < K; g0 += kGroup, ++g) {
        const int64_t g1 = g0 + kGroup < K ? g0 + kGroup : K;
        typename V::reg sums[M];
        for (int i = 0; i < M; ++i) sums[i] = V::zero();
        int64_t k = g0;
        for (; k + 64 <= g1; k += 64) {  // one cache line of weights per iteration, one prefetch
            _mm_prefetch(reinterpret_cast<const char*>(w + k + kPrefetchBytes), _MM_HINT_T0);
            for (int64_t u = 0; u < 64; u += V::kStep) dot_step<V, M>(sums, w, xr, k + u);
        }
        for (; k < g1; k += V::kStep) dot_step<V, M>(sums, w, xr, k);
        for (int i = 0; i < M; ++i) {
            const __m256 scale = _mm256_set1_ps(x.scales[(row + i) * x.groups + g]);
            const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(V::lanes8(sums[i])), scale);
            acc[i] = _mm256_add_ps(acc[i], part);  // -ffp-contract=off: never fused
        }
    }
    for (int i = 0; i < M; ++i) out[i] = lane_sum(acc[i]);
}

template <typename V>
void row_dot(const int8_t* w, const QuantizedRows& x, int64_t row, int m, float* out) {
    switch (m) {
        case 4: row_dot_rows<V, 4>(w, x, row, out); break;
        case 3: row_dot_rows<V, 3>(w, x, row, out); break;
        case 2: row_dot_rows<V, 2>(w, x, row, out); break;
        default: row_dot_rows<V, 1>(w, x, row, out); break;
    }
}

template <int M>
void panel_dot_rows(const float* panel, const float* x, int64_t cols, float* out) {
    __m256 acc[M][kBlock];
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < kBlock; ++r) acc[i][r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < cols; k += 8) {
        __m256 xv[M];
        for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x + i * cols + k);
        for (int r = 0; r < kBlock; ++r) {
            const __m256 wv = _mm256_loadu_ps(panel + r * cols + k);
            for (int i = 0; i < M; ++i) acc[i][r] = _mm256_fmadd_ps(wv, xv[i], acc[i][r]);
        }
    }
    for (int i = 0; i < M; ++i) lane_sums4(acc[i][0], acc[i][1], acc[i][2], acc[i][3], out + i * kBlock);
}

// (256-bit in every set: the lanes are kernels.hpp's; cols is a multiple of 8.)
inline void panel_dot(const float* panel, const float* x, int64_t cols, int m, float* out) {
    if (m == 2) {
        panel_dot_rows<2>(panel, x, cols, out);
    } else {
        panel_dot_rows<1>(panel, x, cols, out);
    }
}

}  // namespace
}  // namespace qwen3tts::native
