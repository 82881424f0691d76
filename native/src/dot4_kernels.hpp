// BlockDot4 (kernels.hpp: INT4_SYM weights, a scale per group) written once over the SIMD policies of
// dot_kernels.hpp and its Block with INT4 rows (Int4Row: V::widen4(const uint8_t* p), the kStep channels
// packed in the kStep / 2 bytes at p, sign-extended to int16 in channel order). Internal linkage, as
// dot_kernels.hpp: each kernels_<isa>.cpp compiles its own copy with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "dot_kernels.hpp"
#include "kernels.hpp"

namespace qwen3tts::native {
namespace {

template <typename V, int NW, int M>
void block_dot4_rows(const Int4Matrix& w, int64_t n, const QuantizedRows& x, int64_t row, float* out) {
    const int64_t K = w.cols, G = w.group, groups = K / G;
    Block<V, NW, M, Int4Row> block;
    const float* scales[NW];
    for (int r = 0; r < NW; ++r) block.w[r] = w.data + (n + r) * (K / 2), scales[r] = w.scale + (n + r) * groups;
    for (int i = 0; i < M; ++i) block.x[i] = x.values + (row + i) * K;
    __m256 acc[NW][M];
    for (int r = 0; r < NW; ++r)
        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();
    for (int64_t g0 = 0, g = 0; g0 < K; g0 += G, ++g) {
        block.clear();
        if (g0 % 128 == 0)  // a cache line of each row holds 128 channels: prefetched as the INT8 kernel does
            for (int r = 0; r < NW; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(block.w[r] + g0 / 2 + NW * kPrefetchBytes), _MM_HINT_T0);
        for (int64_t k = g0, u = 0; k < g0 + G; k += V::kStep, ++u) block.step(k, static_cast<int>(u % block.S));
        for (int i = 0; i < M; ++i) {
            const float xs = x.scales[(row + i) * x.groups + g0 / kGroup];
            for (int r = 0; r < NW; ++r) {
                const __m256 c = _mm256_set1_ps(scales[r][g] * xs);  // rounded once, as row_dot4 does
                const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(block.lanes(r, i)), c);
                acc[r][i] = _mm256_add_ps(acc[r][i], part);  // -ffp-contract=off: never fused
            }
        }
    }
    for (int r = 0; r < NW; ++r)
        for (int i = 0; i < M; ++i) out[r * kBlockRows + i] = lane_sum(acc[r][i]);
}

// kernels.hpp's DecodeRows4: the rows [n, n + count) of y4 for the M (1 or 2) rows of x, one weight row after
// the next in one call, each group as straight-line code (G constant). At one row of x a BlockDot4 call per
// one or two 512-byte rows spent more on the call, its dispatch and its set-up than on the row's eight
// groups (Zen 4: the INT4 frame took 0.64x the time this way, docs/benchmarks.md).
template <typename V, int64_t G, int M>
void straight_rows4(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y) {
    const int64_t K = w.cols, groups = K / G;
    constexpr int64_t kSteps = G / V::kStep;
    Block<V, 1, M, Int4Row> block;
    for (int i = 0; i < M; ++i) block.x[i] = x.values + i * K;
    for (int64_t r = n; r < n + count; ++r) {
        block.w[0] = w.data + r * (K / 2);
        const float* scales = w.scale + r * groups;
        __m256 acc[M];
        for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t g0 = g * G;
            if (g0 % 128 == 0)  // a cache line holds 128 channels
                _mm_prefetch(reinterpret_cast<const char*>(block.w[0] + g0 / 2 + V::kRowPrefetchBytes), _MM_HINT_T0);
            block.clear();
            for (int64_t u = 0; u < kSteps; ++u) block.step(g0 + u * V::kStep, static_cast<int>(u % block.S));
            for (int i = 0; i < M; ++i) {
                const __m256 c = _mm256_set1_ps(scales[g] * x.scales[i * x.groups + g0 / kGroup]);  // as row_dot4
                acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(_mm256_cvtepi32_ps(block.lanes(0, i)), c));
            }
        }
        for (int i = 0; i < M; ++i) y[i * w.rows + r] = lane_sum(acc[i]);
    }
}

template <typename V, int M>
void decode_rows4_m(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y) {
    switch (w.group) {
        case 32: straight_rows4<V, 32, M>(w, n, count, x, y); break;
        case 64: straight_rows4<V, 64, M>(w, n, count, x, y); break;
        default: straight_rows4<V, 128, M>(w, n, count, x, y); break;
    }
}

template <typename V>
void decode_rows4(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y) {
    if (x.rows == 2)
        decode_rows4_m<V, 2>(w, n, count, x, y);
    else
        decode_rows4_m<V, 1>(w, n, count, x, y);
}

template <typename V, int NW>
void block_dot4_m(const Int4Matrix& w, int64_t n, const QuantizedRows& x, int64_t row, int m, float* out) {
    switch (m) {
        case 4: block_dot4_rows<V, NW, 4>(w, n, x, row, out); break;
        case 3: block_dot4_rows<V, NW, 3>(w, n, x, row, out); break;
        case 2: block_dot4_rows<V, NW, 2>(w, n, x, row, out); break;
        default: block_dot4_rows<V, NW, 1>(w, n, x, row, out); break;
    }
}

template <typename V>
void block_dot4(const Int4Matrix& w, int64_t n, int nw, const QuantizedRows& x, int64_t row, int m, float* out) {
    switch (nw) {
        case 4: block_dot4_m<V, 4>(w, n, x, row, m, out); break;
        case 2: block_dot4_m<V, 2>(w, n, x, row, m, out); break;
        default:
            for (int r = 0; r < nw; ++r) block_dot4_m<V, 1>(w, n + r, x, row, m, out + r * kBlockRows);
            break;
    }
}

}  // namespace
}  // namespace qwen3tts::native
