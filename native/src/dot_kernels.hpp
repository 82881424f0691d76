// BlockDot (kernels.hpp) written once over an integer SIMD policy V, for kernels_avx2.cpp,
// kernels_avx512.cpp and their VNNI twins. Each includes this file and is compiled with its own -m flags;
// everything here has internal linkage (anonymous namespace), so the linker can never hand one
// instruction set's copy to another's caller. The f32 lanes are 256-bit AVX code in every one of them.
//
// V provides: kStep (int16 lanes per register); kStraightGroups (see straight_row; kRowPrefetchBytes is the
// INT4 rows' distance, dot4_kernels.hpp); reg; zero(); widen(const int8_t*) (kStep int8 -> int16);
// load(const int16_t*); dot(acc, a, b) = acc + pairwise a*b in int32 lanes (vpmaddwd + vpaddd, or
// vpdpwssd); add(a, b) in int32 lanes; lanes8(reg) -> __m256i, the 8 lanes of kernels.hpp (256 bits: as
// is; 512 bits: lane j plus lane j + 8, which covers the same channels mod 16).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels.hpp"

namespace qwen3tts::native {
namespace {

// The same tree for one vector: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
inline float lane_sum(__m256 a) {
    const __m256 pairs = _mm256_hadd_ps(a, a);          // a0+a1 a2+a3 . . | a4+a5 a6+a7 . .
    const __m256 quads = _mm256_hadd_ps(pairs, pairs);  // (a0+a1)+(a2+a3) ... | (a4+a5)+(a6+a7) ...
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

// Few products per weight (one or two outputs) leave a single accumulator waiting on the dot
// instruction's latency (vpdpwssd: 5 cycles): two chains per output, taking alternate steps, keep the
// units busy. With more outputs the block itself gives enough independent chains.
template <int NW, int M>
constexpr int kChains = NW * M <= 2 ? 2 : 1;

template <typename V, int NW, int M>
struct Block {
    static constexpr int S = kChains<NW, M>;
    const int8_t* w[NW];
    const int16_t* x[M];
    typename V::reg sums[NW][M][S];

    void clear() {
        for (int r = 0; r < NW; ++r)
            for (int i = 0; i < M; ++i)
                for (int s = 0; s < S; ++s) sums[r][i][s] = V::zero();
    }
    // one step of kStep input channels at k, into chain s
    void step(int64_t k, int s) {
        typename V::reg xv[M];
        for (int i = 0; i < M; ++i) xv[i] = V::load(x[i] + k);
        for (int r = 0; r < NW; ++r) {
            const typename V::reg wv = V::widen(w[r] + k);
            for (int i = 0; i < M; ++i) sums[r][i][s] = V::dot(sums[r][i][s], wv, xv[i]);
        }
    }
    __m256i lanes(int r, int i) const {
        typename V::reg total = sums[r][i][0];
        for (int s = 1; s < S; ++s) total = V::add(total, sums[r][i][s]);
        return V::lanes8(total);
    }
};

// Adds group g's integer sums, times x's scale for the group, to the f32 lanes (kernels.hpp's order).
template <typename V, int NW, int M>
void add_group(const Block<V, NW, M>& block, const QuantizedRows& x, int64_t row, int64_t g, __m256 (&acc)[NW][M]) {
    for (int i = 0; i < M; ++i) {
        const __m256 scale = _mm256_set1_ps(x.scales[(row + i) * x.groups + g]);
        for (int r = 0; r < NW; ++r) {
            const __m256 part = _mm256_mul_ps(_mm256_cvtepi32_ps(block.lanes(r, i)), scale);
            acc[r][i] = _mm256_add_ps(acc[r][i], part);  // -ffp-contract=off: never fused
        }
    }
}

// One weight row against M rows of x (a decode step's product), out[i] for row + i, for a policy that asks
// for it (V::kStraightGroups): each whole group as straight-line code, with no loop bound to work out per
// group, and the row prefetched kStraightPrefetchBytes ahead. On Zen 3 the general loop below spent about a
// fifth of a row's time on its per-group set-up (weights in cache: 26 against 33 GB/s per thread), and the
// fused frame at batch 1 took 0.92-0.95 of its time this way (docs/benchmarks.md, "the AVX2 kernel's
// decode row"). BlockDot's one-by-one block takes it; DecodeRows up to kDecodeRowsMax rows of x.
// How far ahead straight_row asks for a decode row's weights, and into L2 (T1), not L1: with 4 KiB into L1
// the 0.6B talker's step at batch 1 read 27 GB/s of weights on Zen 4 while a plain read of the same bytes
// took 45-48 GB/s; 8 KiB into L2 took 0.90-0.92 of its time (the AVX2 set forced 0.93, the INT8 frame at
// batch 1 0.93, two rows 0.96, four rows, bound by their multiply-adds, the same), 16 and 32 KiB into L2
// 0.92-0.95, 2 KiB 1.07-1.11, 16 KiB into L1 1.14 (docs/benchmarks.md, "the talker's share").
constexpr int64_t kStraightPrefetchBytes = 8192;

template <typename V, int M = 1>
void straight_row(const int8_t* w, const QuantizedRows& x, int64_t row, float* out) {
    const int64_t K = x.cols, whole = K / kGroup;
    Block<V, 1, M> block;
    block.w[0] = w;
    for (int i = 0; i < M; ++i) block.x[i] = x.values + (row + i) * K;
    __m256 acc[1][M];
    for (int i = 0; i < M; ++i) acc[0][i] = _mm256_setzero_ps();
    constexpr int64_t kStepsPerLine = 64 / V::kStep;
    for (int64_t g = 0; g < whole; ++g) {
        block.clear();
        for (int64_t line = 0; line < kGroup; line += 64) {  // constant bounds: the compiler unrolls them
            const int64_t k = g * kGroup + line;
            _mm_prefetch(reinterpret_cast<const char*>(w + k + kStraightPrefetchBytes), _MM_HINT_T1);
            for (int64_t u = 0; u < kStepsPerLine; ++u) block.step(k + u * V::kStep, static_cast<int>(u % block.S));
        }
        add_group(block, x, row, g, acc);
    }
    if (whole * kGroup < K) {  // the last group, shorter (K is a multiple of kStep)
        block.clear();
        for (int64_t k = whole * kGroup; k < K; k += V::kStep) block.step(k, 0);
        add_group(block, x, row, whole, acc);
    }
    for (int i = 0; i < M; ++i) out[i] = lane_sum(acc[0][i]);
}

// kernels.hpp's DecodeRows for a set with straight_row.
template <typename V, int M>
void decode_rows_m(const int8_t* w, int64_t n, const float* scale, const QuantizedRows& x, float* y, int64_t stride) {
    float out[M];
    for (int64_t r = 0; r < n; ++r) {
        straight_row<V, M>(w + r * x.cols, x, 0, out);
        for (int i = 0; i < M; ++i) y[i * stride + r] = out[i] * scale[r];
    }
}

template <typename V>
void decode_rows(const int8_t* w, int64_t n, const float* scale, const QuantizedRows& x, float* y, int64_t stride) {
    switch (x.rows) {
        case 4: decode_rows_m<V, 4>(w, n, scale, x, y, stride); break;
        case 3: decode_rows_m<V, 3>(w, n, scale, x, y, stride); break;
        case 2: decode_rows_m<V, 2>(w, n, scale, x, y, stride); break;
        default: decode_rows_m<V, 1>(w, n, scale, x, y, stride); break;
    }
}

template <typename V, int NW, int M>
void block_dot_rows(const int8_t* w, const QuantizedRows& x, int64_t row, float* out) {
    if constexpr (NW == 1 && M == 1 && V::kStraightGroups) {
        straight_row<V>(w, x, row, out);
    } else {
        const int64_t K = x.cols;
        Block<V, NW, M> block;
        for (int r = 0; r < NW; ++r) block.w[r] = w + r * K;
        for (int i = 0; i < M; ++i) block.x[i] = x.values + (row + i) * K;
        __m256 acc[NW][M];
        for (int r = 0; r < NW; ++r)
            for (int i = 0; i < M; ++i) acc[r][i] = _mm256_setzero_ps();
        constexpr int64_t kStepsPerLine = 64 / V::kStep;
        for (int64_t g0 = 0, g = 0; g0 < K; g0 += kGroup, ++g) {
            const int64_t g1 = g0 + kGroup < K ? g0 + kGroup : K;
            block.clear();
            int64_t k = g0;
            // One cache line of each weight row per iteration, each row prefetched NW kilobytes ahead: with
            // one prefetch per block (the last row's) a batch of 8 rows of x, compute-bound, streamed its
            // weights from DRAM 13 % slower at two weight rows and 18 % at four (docs/benchmarks.md, issue 34).
            for (; k + 64 <= g1; k += 64) {
                for (int r = 0; r < NW; ++r)
                    _mm_prefetch(reinterpret_cast<const char*>(block.w[r] + k + NW * kPrefetchBytes), _MM_HINT_T0);
                for (int64_t u = 0; u < kStepsPerLine; ++u)
                    block.step(k + u * V::kStep, static_cast<int>(u % block.S));
            }
            for (; k < g1; k += V::kStep) block.step(k, 0);
            add_group(block, x, row, g, acc);
        }
        for (int r = 0; r < NW; ++r)
            for (int i = 0; i < M; ++i) out[r * kBlockRows + i] = lane_sum(acc[r][i]);
    }
}

template <typename V, int NW>
void block_dot_m(const int8_t* w, const QuantizedRows& x, int64_t row, int m, float* out) {
    switch (m) {
        case 4: block_dot_rows<V, NW, 4>(w, x, row, out); break;
        case 3: block_dot_rows<V, NW, 3>(w, x, row, out); break;
        case 2: block_dot_rows<V, NW, 2>(w, x, row, out); break;
        default: block_dot_rows<V, NW, 1>(w, x, row, out); break;
    }
}

template <typename V>
void block_dot(const int8_t* w, int nw, const QuantizedRows& x, int64_t row, int m, float* out) {
    switch (nw) {
        case 4: block_dot_m<V, 4>(w, x, row, m, out); break;
        case 2: block_dot_m<V, 2>(w, x, row, m, out); break;
        default:
            for (int r = 0; r < nw; ++r) block_dot_m<V, 1>(w + r * x.cols, x, row, m, out + r * kBlockRows);
            break;
    }
}

}  // namespace
}  // namespace qwen3tts::native
