// BlockDot4 and DecodeRows4 (kernels.hpp: INT4_SYM weights, a scale per group) written once over the SIMD
// policies of dot_kernels.hpp, with V::kStep4 (channels per unpack: 32 on 256 bits, 64 on 512) and
// V::unpack4(p, even, odd) (the channels in the kStep4 / 2 bytes at p, sign-extended to int16: even
// channels in one register, odd ones in the other), against x.split (kernels.hpp's split4_rows). A 512-bit
// policy also names V::Narrow, a 256-bit one its set runs where a 64-channel step would straddle two weight
// groups (groups of 32) or the row ends in half a block. Internal linkage, as dot_kernels.hpp: each
// kernels_<isa>.cpp compiles its own copy with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "dot_kernels.hpp"
#include "kernels.hpp"

namespace qwen3tts::native {
namespace {

// Where channel k (a multiple of 32) and its next 31 or 63 sit in x.split (kernels.hpp's split4_rows): block
// k - k % 64 holds its even channels first, then its odd ones (half a block each: 32, or 16 in a last block
// of 32 channels).
inline void split_at(int64_t k, int64_t cols, int64_t& even, int64_t& odd) {
    const int64_t base = k - k % 64, half = (cols - base < 64 ? cols - base : 64) / 2;
    even = base + k % 64 / 2, odd = even + half;
}

// NW weight rows against M rows of x, integer sums of one weight group at a time (dot_kernels.hpp's Block
// for INT4 rows). The lanes come out as kernels.hpp's INT4 lanes: int32 lane j of a dot takes channels
// 4j..4j+3 of the step (its even and odd registers), and lanes8 folds a 512-bit step's upper 32 channels
// onto the lower ones.
template <typename V, int NW, int M>
struct Block4 {
    static constexpr int S = kChains<NW, M>;  // 2: even and odd channels on their own chains
    const uint8_t* w[NW];
    const int16_t* x[M];  // rows of x.split
    int64_t cols;
    typename V::reg sums[NW][M][S];

    void clear() {
        for (int r = 0; r < NW; ++r)
            for (int i = 0; i < M; ++i)
                for (int s = 0; s < S; ++s) sums[r][i][s] = V::zero();
    }
    // kStep4 channels at k (a multiple of kStep4), their even channels at x + even, their odd ones at
    // x + odd (x.split's order: split_at)
    void step(int64_t k, int64_t even, int64_t odd) {
        typename V::reg xe[M], xo[M];
        for (int i = 0; i < M; ++i) xe[i] = V::load(x[i] + even), xo[i] = V::load(x[i] + odd);
        for (int r = 0; r < NW; ++r) {
            typename V::reg we, wo;
            V::unpack4(w[r] + k / 2, we, wo);
            for (int i = 0; i < M; ++i) {
                sums[r][i][0] = V::dot(sums[r][i][0], we, xe[i]);
                sums[r][i][S - 1] = V::dot(sums[r][i][S - 1], wo, xo[i]);
            }
        }
    }
    void step(int64_t k) {
        int64_t even, odd;
        split_at(k, cols, even, odd);
        step(k, even, odd);
    }
    __m256i lanes(int r, int i) const {
        typename V::reg total = sums[r][i][0];
        for (int s = 1; s < S; ++s) total = V::add(total, sums[r][i][s]);
        return V::lanes8(total);
    }
};

// True where V's steps fit w: a 512-bit step takes 64 channels of one weight group.
template <typename V>
bool steps_fit(const Int4Matrix& w) {
    return w.group % V::kStep4 == 0 && w.cols % V::kStep4 == 0;
}

template <typename V, int NW, int M>
void block_dot4_rows(const Int4Matrix& w, int64_t n, const QuantizedRows& x, int64_t row, float* out) {
    const int64_t K = w.cols, G = w.group, groups = K / G;
    Block4<V, NW, M> block;
    block.cols = K;
    const float* scales[NW];
    for (int r = 0; r < NW; ++r) block.w[r] = w.data + (n + r) * (K / 2), scales[r] = w.scale + (n + r) * groups;
    for (int i = 0; i < M; ++i) block.x[i] = x.split + (row + i) * K;
    __m256 acc[NW][M];
    for (int r = 0; r < NW; ++r)
        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();
    for (int64_t g0 = 0, g = 0; g0 < K; g0 += G, ++g) {
        block.clear();
        if (g0 % 128 == 0)  // a cache line of each row holds 128 channels: prefetched as the INT8 kernel does
            for (int r = 0; r < NW; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(block.w[r] + g0 / 2 + NW * kPrefetchBytes), _MM_HINT_T0);
        for (int64_t k = g0; k < g0 + G; k += V::kStep4) block.step(k);
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

// kernels.hpp's DecodeRows4: the rows [n, n + count) of y4 for the M (1 to 4) rows of x, one weight row after
// the next in one call, each group as straight-line code (G constant). At one row of x a BlockDot4 call per
// one or two 512-byte rows spent more on the call, its dispatch and its set-up than on the row's eight
// groups (Zen 4: the INT4 frame took 0.64x the time this way, docs/benchmarks.md).
template <typename V, int64_t G, int M>
void straight_rows4(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y) {
    const int64_t K = w.cols, groups = K / G;
    Block4<V, 1, M> block;
    block.cols = K;
    for (int i = 0; i < M; ++i) block.x[i] = x.split + i * K;
    for (int64_t r = n; r < n + count; ++r) {
        block.w[0] = w.data + r * (K / 2);
        const float* scales = w.scale + r * groups;
        __m256 acc[M];
        for (int i = 0; i < M; ++i) acc[i] = _mm256_setzero_ps();
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t g0 = g * G;
            if (G >= 128 || g0 % 128 == 0)  // a cache line holds 128 channels
                _mm_prefetch(reinterpret_cast<const char*>(block.w[0] + g0 / 2 + V::kRowPrefetchBytes), _MM_HINT_T0);
            block.clear();
            if constexpr (G >= 64) {  // g0 starts a block of 64: every offset below is a constant from g0
                for (int64_t u = 0; u < G; u += V::kStep4) {
                    const int64_t even = g0 + u - u % 64 + u % 64 / 2;
                    block.step(g0 + u, even, even + 32);
                }
            } else {
                block.step(g0);
            }
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
        case 32:
            if constexpr (V::kStep4 <= 32) straight_rows4<V, 32, M>(w, n, count, x, y);
            break;
        case 64: straight_rows4<V, 64, M>(w, n, count, x, y); break;
        default: straight_rows4<V, 128, M>(w, n, count, x, y); break;
    }
}

template <typename V>
void decode_rows4(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y) {
    if constexpr (V::kStep4 > 32)
        if (!steps_fit<V>(w)) return decode_rows4<typename V::Narrow>(w, n, count, x, y);
    switch (x.rows) {
        case 4: decode_rows4_m<V, 4>(w, n, count, x, y); break;
        case 3: decode_rows4_m<V, 3>(w, n, count, x, y); break;
        case 2: decode_rows4_m<V, 2>(w, n, count, x, y); break;
        default: decode_rows4_m<V, 1>(w, n, count, x, y); break;
    }
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
    if constexpr (V::kStep4 > 32)
        if (!steps_fit<V>(w)) return block_dot4<typename V::Narrow>(w, n, nw, x, row, m, out);
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
