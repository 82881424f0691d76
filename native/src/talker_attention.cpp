// The talker's attention (talker.hpp): q/k norms, RoPE and the cache writes after each layer's qkv
// product, then causal GQA attention over the paged cache (u8 or f16 rows, talker.hpp).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "decode_math.hpp"
#include "talker.hpp"
#include "talker_scratch.hpp"

namespace qwen3tts::native {
namespace {

// A u8 row's scale and zero point (its first 8 bytes; memcpy: a row need not be 4-byte aligned).
inline void row_header(const uint8_t* row, float& scale, float& zero) {
    std::memcpy(&scale, row, sizeof scale);
    std::memcpy(&zero, row + sizeof scale, sizeof zero);
}

// One cached row's values as floats, the portable way: halves through the table (exact either way: every
// half is a float), bytes as (q - zero) * scale, a subtraction then a product as the registers do below.
template <bool U8>
void widen_row(const uint8_t* row, int64_t hd, float* out) {
    if constexpr (U8) {
        float scale, zero;
        row_header(row, scale, zero);
        for (int64_t d = 0; d < hd; ++d) out[d] = (static_cast<float>(row[8 + d]) - zero) * scale;
    } else {
        const float* table = math::half_table();
        const auto* h = reinterpret_cast<const uint16_t*>(row);
        for (int64_t d = 0; d < hd; ++d) out[d] = table[h[d]];
    }
}

// One block's cached rows of one KV head (`count` positions, `row_bytes` apart) against the group's
// queries, two ways with the same arithmetic. Portable: each row widened (widen_row), then math::dot per
// head and `out[d] += share * row[d]` per position. AVX2 with F16C: the block's rows widened in registers
// once into `row` ([count, hd], for all heads of the group), the lanes of a register being math::dot's
// eight chains, and the values added eight elements a register in the same position order. Each is a
// multiply then an add, never fused (no FMA in these targets), so both round alike and the tests
// comparing every kernel set with the portable one bit for bit hold. (Widening the halves with vcvtph2ps
// instead of the table's load per value: the widening was about a fifth of a batch-8 decode step,
// docs/benchmarks.md.)
struct BlockMath {
    // scores[j * stride + i] = q_j . key_i, for heads j < groups and rows i < count
    void (*score)(const float* q, int64_t groups, const uint8_t* keys, int64_t row_bytes, int64_t count,
                  int64_t hd, float* scores, int64_t stride, float* row);
    // out_j[d] += shares[j * stride + i] * value_i[d], i ascending
    void (*add_values)(const float* shares, int64_t groups, int64_t stride, const uint8_t* values,
                       int64_t row_bytes, int64_t count, int64_t hd, float* out, int64_t out_stride, float* row);
};

template <bool U8>
void score_portable(const float* q, int64_t groups, const uint8_t* keys, int64_t row_bytes, int64_t count,
                    int64_t hd, float* scores, int64_t stride, float* row) {
    for (int64_t i = 0; i < count; ++i) {
        widen_row<U8>(keys + i * row_bytes, hd, row);
        for (int64_t j = 0; j < groups; ++j) scores[j * stride + i] = math::dot(q + j * hd, row, hd);
    }
}

template <bool U8>
void add_values_portable(const float* shares, int64_t groups, int64_t stride, const uint8_t* values,
                         int64_t row_bytes, int64_t count, int64_t hd, float* out, int64_t out_stride,
                         float* row) {
    for (int64_t i = 0; i < count; ++i) {
        widen_row<U8>(values + i * row_bytes, hd, row);
        for (int64_t j = 0; j < groups; ++j) {
            float* o = out + j * out_stride;
            const float share = shares[j * stride + i];
            for (int64_t d = 0; d < hd; ++d) o[d] += share * row[d];
        }
    }
}

// A row's zero point and scale broadcast (u8; unused for halves).
struct RowParams {
    __m256 zero, scale;
};

template <bool U8>
__attribute__((target("avx2,f16c"))) inline RowParams row_params(const uint8_t* row) {
    if constexpr (U8) {
        float scale, zero;
        row_header(row, scale, zero);
        return {_mm256_set1_ps(zero), _mm256_set1_ps(scale)};
    } else {
        return {_mm256_setzero_ps(), _mm256_setzero_ps()};
    }
}

// Eight values of a cached row from element d, widened in registers.
template <bool U8>
__attribute__((target("avx2,f16c"))) inline __m256 widen8(const uint8_t* row, int64_t d, const RowParams& p) {
    if constexpr (U8) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 8 + d));
        return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), p.zero), p.scale);
    } else {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
    }
}

// A block's `count` cached rows widened into `block` [count, hd] once for every head of the group, which
// all read the same rows (a u8 row's widening is four instructions per eight values, a half's one).
template <bool U8>
__attribute__((target("avx2,f16c"))) void widen_block(const uint8_t* rows, int64_t row_bytes, int64_t count,
                                                      int64_t hd, float* block) {
    for (int64_t i = 0; i < count; ++i) {
        const uint8_t* row = rows + i * row_bytes;
        const RowParams params = row_params<U8>(row);
        for (int64_t d = 0; d < hd; d += 8) _mm256_storeu_ps(block + i * hd + d, widen8<U8>(row, d, params));
    }
}

template <bool U8>
__attribute__((target("avx2,f16c"))) void score_simd(const float* q, int64_t groups, const uint8_t* keys,
                                                     int64_t row_bytes, int64_t count, int64_t hd,
                                                     float* scores, int64_t stride, float* block) {
    widen_block<U8>(keys, row_bytes, count, hd, block);
    for (int64_t i = 0; i < count; ++i) {
        const float* key = block + i * hd;
        for (int64_t j = 0; j < groups; ++j) {
            const float* qj = q + j * hd;
            __m256 chains = _mm256_setzero_ps();
            for (int64_t d = 0; d < hd; d += 8)
                chains = _mm256_add_ps(chains, _mm256_mul_ps(_mm256_loadu_ps(qj + d), _mm256_loadu_ps(key + d)));
            alignas(32) float c[8];
            _mm256_store_ps(c, chains);
            scores[j * stride + i] = ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
        }
    }
}

// R registers of out (8 R elements from d) through every row: R sums in flight hide the add's latency.
template <int R>
__attribute__((target("avx2,f16c"))) inline void add_values_lanes(const float* shares, const float* block,
                                                                  int64_t count, int64_t hd, int64_t d, float* o) {
    __m256 sums[R];
    for (int k = 0; k < R; ++k) sums[k] = _mm256_loadu_ps(o + d + 8 * k);
    for (int64_t i = 0; i < count; ++i) {
        const __m256 share = _mm256_set1_ps(shares[i]);
        for (int k = 0; k < R; ++k)
            sums[k] = _mm256_add_ps(sums[k], _mm256_mul_ps(share, _mm256_loadu_ps(block + i * hd + d + 8 * k)));
    }
    for (int k = 0; k < R; ++k) _mm256_storeu_ps(o + d + 8 * k, sums[k]);
}

template <bool U8>
__attribute__((target("avx2,f16c"))) void add_values_simd(const float* shares, int64_t groups, int64_t stride,
                                                          const uint8_t* values, int64_t row_bytes,
                                                          int64_t count, int64_t hd, float* out,
                                                          int64_t out_stride, float* block) {
    widen_block<U8>(values, row_bytes, count, hd, block);
    for (int64_t j = 0; j < groups; ++j) {
        float* o = out + j * out_stride;
        int64_t d = 0;
        for (; d + 32 <= hd; d += 32) add_values_lanes<4>(shares + j * stride, block, count, hd, d, o);
        for (; d < hd; d += 8) add_values_lanes<1>(shares + j * stride, block, count, hd, d, o);
    }
}

// The portable set keeps the portable way, so that the tests comparing every set with it bit for bit
// compare the two. libgcc's checks include the OS having enabled the AVX register state. A head size
// that is not a multiple of 8 (no released model) takes the portable way on every set.
BlockMath block_math(const KernelSet& kernels, int64_t hd, bool u8) {
    static const bool simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    if (simd && &kernels != &generic_kernels() && hd % 8 == 0)
        return u8 ? BlockMath{score_simd<true>, add_values_simd<true>}
                  : BlockMath{score_simd<false>, add_values_simd<false>};
    return u8 ? BlockMath{score_portable<true>, add_values_portable<true>}
              : BlockMath{score_portable<false>, add_values_portable<false>};
}

}  // namespace

uint8_t* Talker::cache_at(int64_t block, int64_t layer, int64_t kind, int64_t head, int64_t slot) {
    const TalkerShape& p = shape_;
    const int64_t row = (((block * p.layers + layer) * 2 + kind) * p.kv_heads + head) * p.block_size + slot;
    return cache_.get() + row * cache_row_bytes(p);
}

// One key or value of a position and KV head into its cached row: halves, or u8 over the row's own range,
// the zero point kept as a float (rounded to a whole number it added its own rounding: on the tiny
// talkers the step's error against the f32 cache grew past the plugin's u8 cache's, 6.0e-3 against 5.5e-3;
// unrounded 3.8-5.3e-3). A constant row takes a scale of 1 and comes back exactly.
void Talker::store_row(const float* x, uint8_t* row) const {
    const int64_t hd = shape_.head_dim;
    if (!shape_.cache_u8) {
        for (int64_t d = 0; d < hd; ++d) {
            const uint16_t h = math::float_to_half(x[d]);
            std::memcpy(row + 2 * d, &h, sizeof h);
        }
        return;
    }
    float low = x[0], high = x[0];
    for (int64_t d = 1; d < hd; ++d) low = std::min(low, x[d]), high = std::max(high, x[d]);
    float scale = (high - low) / 255.0f;
    if (!(scale > 0.0f)) scale = 1.0f;
    // Rounded by adding a half and truncating (std::nearbyint is a call into libm at this file's baseline
    // target), with one division per row: the cache writes are serial work between two phases.
    const float inverse = 1.0f / scale, zero = -low * inverse;
    for (int64_t d = 0; d < hd; ++d) {
        const float q = x[d] * inverse + zero + 0.5f;
        row[8 + d] = static_cast<uint8_t>(q >= 0.0f ? std::min(q, 255.0f) : 0.0f);  // (NaN: 0)
    }
    std::memcpy(row, &scale, sizeof scale);
    std::memcpy(row + sizeof scale, &zero, sizeof zero);
}

// q (normed, RoPE'd) into s.q; k (normed, RoPE'd) and v of every new position into the cache (store_row).
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
            store_row(k, cache_at(block, layer, 0, g, slot));
            store_row(projected + q_width + kv + g * hd, cache_at(block, layer, 1, g, slot));
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
    float* row = scores + groups * s.context;     // widened key or value rows, up to a block of them
    float* q = row + bs * hd;                     // [groups, hd], scaled
    float* out = &s.attn[r * q_width + g * groups * hd];  // [groups, hd]
    const int32_t* table = s.in.tables + s.in.table_begins[s.row_chunk[r]];
    const BlockMath math_of_blocks = block_math(kernels_, hd, p.cache_u8);
    const int64_t row_bytes = cache_row_bytes(p);
    for (int64_t j = 0; j < groups; ++j)
        for (int64_t d = 0; d < hd; ++d) q[j * hd + d] = s.q[r * q_width + (g * groups + j) * hd + d] * scale;
    for (int64_t t = 0; t < positions; t += bs)
        math_of_blocks.score(q, groups, cache_at(table[t / bs], layer, 0, g, 0), row_bytes,
                             std::min(bs, positions - t), hd, scores + t, s.context, row);
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
                                  row_bytes, std::min(bs, positions - t), hd, out, hd, row);
}

}  // namespace qwen3tts::native
