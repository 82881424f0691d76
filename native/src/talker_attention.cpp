// The talker's attention (talker.hpp): q/k norms, RoPE and the cache writes after each layer's qkv
// product, then causal GQA attention over the paged f16 cache.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "decode_math.hpp"
#include "talker.hpp"
#include "talker_scratch.hpp"

namespace qwen3tts::native {
namespace {

// Cached halves to floats. The conversion is exact either way (every half is a float), so the F16C
// instruction and the table give the same values; vcvtph2ps does 8 per instruction where the table
// takes a load per value (the widening was about a fifth of a batch-8 decode step, docs/benchmarks.md).
void widen_by_table(const uint16_t* h, float* out, int64_t n) {
    const float* table = math::half_table();
    for (int64_t d = 0; d < n; ++d) out[d] = table[h[d]];
}


// One block's cached rows of one KV head (`count` positions, contiguous) against the group's queries,
// two ways with the same arithmetic. Portable: each row widened through the table, then math::dot per
// head and `out[d] += share * row[d]` per position. AVX with F16C: the row widened in registers, the
// lanes of a register being math::dot's eight chains, and the values added eight elements a register in
// the same position order. Each is a multiply then an add, never fused (no FMA in these targets), so both
// round alike and the tests comparing every kernel set with the portable one bit for bit hold.
struct BlockMath {
    // scores[j * stride + i] = q_j . key_i, for heads j < groups and rows i < count
    void (*score)(const float* q, int64_t groups, const uint16_t* keys, int64_t count, int64_t hd,
                  float* scores, int64_t stride, float* row);
    // out_j[d] += shares[j * stride + i] * value_i[d], i ascending
    void (*add_values)(const float* shares, int64_t groups, int64_t stride, const uint16_t* values,
                       int64_t count, int64_t hd, float* out, int64_t out_stride, float* row);
};

void score_by_table(const float* q, int64_t groups, const uint16_t* keys, int64_t count, int64_t hd,
                    float* scores, int64_t stride, float* row) {
    for (int64_t i = 0; i < count; ++i) {
        widen_by_table(keys + i * hd, row, hd);
        for (int64_t j = 0; j < groups; ++j) scores[j * stride + i] = math::dot(q + j * hd, row, hd);
    }
}

void add_values_by_table(const float* shares, int64_t groups, int64_t stride, const uint16_t* values,
                         int64_t count, int64_t hd, float* out, int64_t out_stride, float* row) {
    for (int64_t i = 0; i < count; ++i) {
        widen_by_table(values + i * hd, row, hd);
        for (int64_t j = 0; j < groups; ++j) {
            float* o = out + j * out_stride;
            const float share = shares[j * stride + i];
            for (int64_t d = 0; d < hd; ++d) o[d] += share * row[d];
        }
    }
}

__attribute__((target("avx,f16c"))) inline __m256 widen8(const uint16_t* h) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

__attribute__((target("avx,f16c"))) void score_by_f16c(const float* q, int64_t groups, const uint16_t* keys,
                                                        int64_t count, int64_t hd, float* scores, int64_t stride,
                                                        float*) {
    for (int64_t i = 0; i < count; ++i) {
        const uint16_t* key = keys + i * hd;
        for (int64_t j = 0; j < groups; ++j) {
            const float* qj = q + j * hd;
            __m256 chains = _mm256_setzero_ps();
            for (int64_t d = 0; d < hd; d += 8)
                chains = _mm256_add_ps(chains, _mm256_mul_ps(_mm256_loadu_ps(qj + d), widen8(key + d)));
            alignas(32) float c[8];
            _mm256_store_ps(c, chains);
            scores[j * stride + i] = ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
        }
    }
}

// R registers of out (8 R elements from d) through every row: R sums in flight hide the add's latency.
template <int R>
__attribute__((target("avx,f16c"))) inline void add_values_lanes(const float* shares, const uint16_t* values,
                                                                 int64_t count, int64_t hd, int64_t d, float* o) {
    __m256 sums[R];
    for (int k = 0; k < R; ++k) sums[k] = _mm256_loadu_ps(o + d + 8 * k);
    for (int64_t i = 0; i < count; ++i) {
        const __m256 share = _mm256_set1_ps(shares[i]);
        for (int k = 0; k < R; ++k)
            sums[k] = _mm256_add_ps(sums[k], _mm256_mul_ps(share, widen8(values + i * hd + d + 8 * k)));
    }
    for (int k = 0; k < R; ++k) _mm256_storeu_ps(o + d + 8 * k, sums[k]);
}

__attribute__((target("avx,f16c"))) void add_values_by_f16c(const float* shares, int64_t groups, int64_t stride,
                                                             const uint16_t* values, int64_t count, int64_t hd,
                                                             float* out, int64_t out_stride, float*) {
    for (int64_t j = 0; j < groups; ++j) {
        float* o = out + j * out_stride;
        int64_t d = 0;
        for (; d + 32 <= hd; d += 32) add_values_lanes<4>(shares + j * stride, values, count, hd, d, o);
        for (; d < hd; d += 8) add_values_lanes<1>(shares + j * stride, values, count, hd, d, o);
    }
}

// The portable set keeps the table, so that the tests comparing every set with it bit for bit compare
// the two ways. libgcc's checks include the OS having enabled the AVX register state. A head size that
// is not a multiple of 8 (no released model) takes the table on every set.
BlockMath block_math(const KernelSet& kernels, int64_t hd) {
    static const bool f16c = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    if (f16c && &kernels != &generic_kernels() && hd % 8 == 0) return {score_by_f16c, add_values_by_f16c};
    return {score_by_table, add_values_by_table};
}

}  // namespace

uint16_t* Talker::cache_at(int64_t block, int64_t layer, int64_t kind, int64_t head, int64_t slot) {
    const TalkerShape& p = shape_;
    const int64_t row = (((block * p.layers + layer) * 2 + kind) * p.kv_heads + head) * p.block_size + slot;
    return cache_.get() + row * p.head_dim;
}

// q (normed, RoPE'd) into s.q; k (normed, RoPE'd) and v of every new position into the cache as half.
void Talker::store_keys_values(int64_t layer, Scratch& s) {
    const TalkerShape& p = shape_;
    const TalkerLayer& w = weights_.layers[layer];
    const int64_t hd = p.head_dim, q_width = p.heads * hd, kv = p.kv_heads * hd, width = q_width + 2 * kv;
    const int64_t half = hd / 2;
    float k[512];
    for (int64_t r = 0; r < s.rows; ++r) {
        const float* projected = &s.qkv[r * width];
        const int64_t position = s.row_position[r], chunk = s.row_chunk[r];
        for (int64_t head = 0; head < p.heads; ++head) {
            float* out = &s.q[r * q_width + head * hd];
            math::rms_norm(projected + head * hd, w.q_norm.data(), hd, p.eps, out);
            math::rope_rotate(out, hd, &s.rope_cos[r * half], &s.rope_sin[r * half]);
        }
        const int64_t block = s.in.tables[s.in.table_begins[chunk] + position / p.block_size];
        const int64_t slot = position % p.block_size;
        for (int64_t g = 0; g < p.kv_heads; ++g) {
            math::rms_norm(projected + q_width + g * hd, w.k_norm.data(), hd, p.eps, k);
            math::rope_rotate(k, hd, &s.rope_cos[r * half], &s.rope_sin[r * half]);
            uint16_t* key = cache_at(block, layer, 0, g, slot);
            uint16_t* value = cache_at(block, layer, 1, g, slot);
            const float* projected_value = projected + q_width + kv + g * hd;
            for (int64_t d = 0; d < hd; ++d) key[d] = math::float_to_half(k[d]);
            for (int64_t d = 0; d < hd; ++d) value[d] = math::float_to_half(projected_value[d]);
        }
    }
}

// Causal attention of one new row for the query heads of one KV head (item = row * kv_heads + kv head)
// over its sequence's cached positions 0..its own, a block of rows at a time (BlockMath): each cached
// key and value row is widened once for all heads of the group; every head's sums run in the same order
// as alone.
void Talker::attend(int thread, int64_t layer, int64_t item, Scratch& s) {
    const TalkerShape& p = shape_;
    const int64_t hd = p.head_dim, q_width = p.heads * hd, groups = p.heads / p.kv_heads, bs = p.block_size;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t r = item / p.kv_heads, g = item % p.kv_heads, positions = s.row_position[r] + 1;
    float* scores = s.per_thread[thread].data();  // [groups, positions]
    float* row = scores + groups * s.context;     // one widened key or value row
    float* q = row + hd;                          // [groups, hd], scaled
    float* out = &s.attn[r * q_width + g * groups * hd];  // [groups, hd]
    const int32_t* table = s.in.tables + s.in.table_begins[s.row_chunk[r]];
    const BlockMath math_of_blocks = block_math(kernels_, hd);
    for (int64_t j = 0; j < groups; ++j)
        for (int64_t d = 0; d < hd; ++d) q[j * hd + d] = s.q[r * q_width + (g * groups + j) * hd + d] * scale;
    for (int64_t t = 0; t < positions; t += bs)
        math_of_blocks.score(q, groups, cache_at(table[t / bs], layer, 0, g, 0), std::min(bs, positions - t), hd,
                             scores + t, s.context, row);
    for (int64_t j = 0; j < groups; ++j) {
        float* head_scores = scores + j * s.context;
        float largest = -INFINITY, total = 0.0f;
        for (int64_t t = 0; t < positions; ++t) largest = std::max(largest, head_scores[t]);
        for (int64_t t = 0; t < positions; ++t) total += (head_scores[t] = std::exp(head_scores[t] - largest));
        for (int64_t t = 0; t < positions; ++t) head_scores[t] = head_scores[t] / total;
    }
    std::fill(out, out + groups * hd, 0.0f);
    for (int64_t t = 0; t < positions; t += bs)
        math_of_blocks.add_values(scores + t, groups, s.context, cache_at(table[t / bs], layer, 1, g, 0),
                                  std::min(bs, positions - t), hd, out, hd, row);
}

}  // namespace qwen3tts::native
