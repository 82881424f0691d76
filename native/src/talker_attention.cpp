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

__attribute__((target("avx,f16c"))) void widen_by_f16c(const uint16_t* h, float* out, int64_t n) {
    int64_t d = 0;
    for (; d + 8 <= n; d += 8)
        _mm256_storeu_ps(out + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + d))));
    widen_by_table(h + d, out + d, n - d);
}

using Widen = void (*)(const uint16_t*, float*, int64_t);

// The portable set keeps the table, so that the tests comparing every set with it bit for bit compare
// the two widenings too. libgcc's checks include the OS having enabled the AVX register state.
Widen widen_halves(const KernelSet& kernels) {
    static const bool f16c = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    return f16c && &kernels != &generic_kernels() ? widen_by_f16c : widen_by_table;
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
// over its sequence's cached positions 0..its own: each cached key and value row is widened once for
// all heads of the group; every head's sums run in the same order as alone.
void Talker::attend(int thread, int64_t layer, int64_t item, Scratch& s) {
    const TalkerShape& p = shape_;
    const int64_t hd = p.head_dim, q_width = p.heads * hd, groups = p.heads / p.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t r = item / p.kv_heads, g = item % p.kv_heads, positions = s.row_position[r] + 1;
    float* scores = s.per_thread[thread].data();  // [groups, positions]
    float* row = scores + groups * s.context;     // one widened key or value row
    float* q = row + hd;                          // [groups, hd], scaled
    const int32_t* table = s.in.tables + s.in.table_begins[s.row_chunk[r]];
    const Widen widen = widen_halves(kernels_);
    for (int64_t j = 0; j < groups; ++j)
        for (int64_t d = 0; d < hd; ++d) q[j * hd + d] = s.q[r * q_width + (g * groups + j) * hd + d] * scale;
    for (int64_t t = 0; t < positions; ++t) {
        const uint16_t* key = cache_at(table[t / p.block_size], layer, 0, g, t % p.block_size);
        widen(key, row, hd);
        for (int64_t j = 0; j < groups; ++j) scores[j * s.context + t] = math::dot(q + j * hd, row, hd);
    }
    for (int64_t j = 0; j < groups; ++j) {
        float* head_scores = scores + j * s.context;
        float largest = -INFINITY, total = 0.0f;
        for (int64_t t = 0; t < positions; ++t) largest = std::max(largest, head_scores[t]);
        for (int64_t t = 0; t < positions; ++t) total += (head_scores[t] = std::exp(head_scores[t] - largest));
        for (int64_t t = 0; t < positions; ++t) head_scores[t] = head_scores[t] / total;
        float* out = &s.attn[r * q_width + (g * groups + j) * hd];
        std::fill(out, out + hd, 0.0f);
    }
    for (int64_t t = 0; t < positions; ++t) {
        const uint16_t* value = cache_at(table[t / p.block_size], layer, 1, g, t % p.block_size);
        widen(value, row, hd);
        for (int64_t j = 0; j < groups; ++j) {
            float* out = &s.attn[r * q_width + (g * groups + j) * hd];
            const float share = scores[j * s.context + t];
            for (int64_t d = 0; d < hd; ++d) out[d] += share * row[d];
        }
    }
}

}  // namespace qwen3tts::native
