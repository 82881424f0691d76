// One code-predictor frame on one thread of the pool (Predictor::run_frame): every thread runs the same
// sequence; matrix products are split over output rows, a barrier after each one. Mirrors
// daemon/qwen3tts/model/graphs/code_predictor.py step for step.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "predictor.hpp"
#include "predictor_scratch.hpp"

namespace qwen3tts::native {
namespace {

// IEEE half -> float, exactly (every half is a float); plain code, the same on every CPU.
float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal half: normalise
        exponent = 113;
        while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

void table_row(const F16Table& table, int64_t row, float* out) {
    const uint16_t* src = table.data + row * table.cols;
    for (int64_t i = 0; i < table.cols; ++i) out[i] = half_to_float(src[i]);
}

// x * rsqrt(mean(x^2) + eps) * gain over n values (layers.rms_norm)
void rms_norm(const float* x, const float* gain, int64_t n, float eps, float* out) {
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(x[i]) * x[i];
    const float root = std::sqrt(static_cast<float>(squares / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] / root * gain[i];
}

// x * cos + rotate_half(x) * sin at `position`, in place (transformer.apply_rope)
void rope(float* x, int64_t dim, const float* inverse_frequencies, int64_t position) {
    const int64_t half = dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(position) * inverse_frequencies[i];
        const float c = std::cos(angle), s = std::sin(angle), a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

using Private = Predictor::Scratch::Private;

// Weight rows per kernel call: the kernel set's choice, or QWEN3TTS_NATIVE_BLOCKS=<stream>,<gemm> (as for
// the op, dispatch.cpp; benchmarks only: blocking never changes a result).
int weight_rows_per_block(const KernelSet& kernels, int64_t m) {
    static const char* wanted = std::getenv("QWEN3TTS_NATIVE_BLOCKS");
    static const bool valid = wanted != nullptr && std::strchr("124", wanted[0]) != nullptr && wanted[0] != 0 &&
                              wanted[1] == ',' && wanted[2] != 0 && std::strchr("124", wanted[2]) != nullptr;
    if (valid) return (m <= kStreamRowsMax ? wanted[0] : wanted[2]) - '0';
    return m <= kStreamRowsMax ? kernels.stream_block : kernels.gemm_block;
}

// y [m, w.rows] (shared) = x [m, w.cols] times w^T, scaled: this thread's share of the output rows. Each
// thread quantizes x itself (the same bits everywhere) rather than waiting for one to do it.
void product(const KernelSet& chosen, int thread, int threads, const Int8Matrix& w, const float* x, int64_t m,
             Private& p, float* y) {
    const KernelSet& kernels = w.cols % chosen.cols_multiple == 0 ? chosen : generic_kernels();
    const int64_t groups = num_groups(w.cols);
    quantize_rows(x, m, w.cols, p.xq.data(), p.xs.data());
    const QuantizedRows rows{p.xq.data(), p.xs.data(), m, w.cols, groups};
    const int64_t share = round_up((w.rows + threads - 1) / threads, 16);
    const int64_t n_begin = std::min(w.rows, share * thread), n_end = std::min(w.rows, n_begin + share);
    const int nw = weight_rows_per_block(kernels, m);
    const int64_t K = w.cols, N = w.rows;
    float out[kBlockRows * kBlockRows];
    for (int64_t n = n_begin; n < n_end; n += nw) {
        const int rows_w = static_cast<int>(std::min<int64_t>(nw, n_end - n));
        for (int64_t r0 = 0; r0 < m; r0 += kBlockRows) {
            const int rows_x = static_cast<int>(std::min<int64_t>(kBlockRows, m - r0));
            kernels.block_dot(w.data + n * K, rows_w, rows, r0, rows_x, out);
            for (int r = 0; r < rows_w; ++r)
                for (int i = 0; i < rows_x; ++i) y[(r0 + i) * N + n + r] = out[r * kBlockRows + i] * w.scale[n + r];
        }
    }
}

float silu(float g) { return g / (1.0f + std::exp(-g)); }

}  // namespace

void Predictor::attention(int thread, int64_t layer, int64_t first, int64_t count, Scratch& s) {
    const PredictorShape& p = shape_;
    const PredictorLayer& w = weights_.layers[layer];
    Private& own = s.threads[thread];
    const int64_t hd = p.head_dim, q_width = p.heads * hd, kv = p.kv_heads * hd, groups = p.heads / p.kv_heads;
    const int64_t positions = p.steps + 1, width = q_width + 2 * kv;
    const float* inv = weights_.inverse_frequencies.data();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int64_t r = 0; r < s.active; ++r) {
        // this row's new keys and values, [count][2][kv]: q/k-normed and rotated
        float* fresh = own.kv_new.data() + r * count * 2 * kv;
        for (int64_t i = 0; i < count; ++i) {
            const float* projected = s.qkv.data() + (r * count + i) * width;
            float* k = fresh + i * 2 * kv;
            for (int64_t g = 0; g < p.kv_heads; ++g) {
                rms_norm(projected + q_width + g * hd, w.k_norm.data(), hd, p.eps, k + g * hd);
                rope(k + g * hd, hd, inv, first + i);
            }
            std::memcpy(k + kv, projected + q_width + kv, sizeof(float) * kv);
        }
        float* cache_k = s.kv_k.data() + (r * p.layers + layer) * positions * kv;
        float* cache_v = s.kv_v.data() + (r * p.layers + layer) * positions * kv;
        for (int64_t i = 0; i < count; ++i) {
            const int64_t position = first + i;
            const float* projected = s.qkv.data() + (r * count + i) * width;
            float* attn = own.attn.data() + (r * count + i) * q_width;
            for (int64_t head = 0; head < p.heads; ++head) {
                float q[512];
                rms_norm(projected + head * hd, w.q_norm.data(), hd, p.eps, q);
                rope(q, hd, inv, position);
                for (int64_t d = 0; d < hd; ++d) q[d] = q[d] * scale;
                const int64_t g = head / groups;
                auto key = [&](int64_t t) {  // earlier steps' positions from the cache, this step's fresh
                    return t < first ? cache_k + t * kv + g * hd : fresh + (t - first) * 2 * kv + g * hd;
                };
                auto value = [&](int64_t t) {
                    return t < first ? cache_v + t * kv + g * hd : fresh + (t - first) * 2 * kv + kv + g * hd;
                };
                float* weights = own.probs.data();
                float largest = -INFINITY;
                for (int64_t t = 0; t <= position; ++t) {
                    const float* k = key(t);
                    float dot = 0.0f;
                    for (int64_t d = 0; d < hd; ++d) dot += q[d] * k[d];
                    weights[t] = dot;
                    largest = std::max(largest, dot);
                }
                float total = 0.0f;
                for (int64_t t = 0; t <= position; ++t) total += (weights[t] = std::exp(weights[t] - largest));
                float* out = attn + head * hd;
                std::fill(out, out + hd, 0.0f);
                for (int64_t t = 0; t <= position; ++t) {
                    const float* v = value(t);
                    const float share = weights[t] / total;
                    for (int64_t d = 0; d < hd; ++d) out[d] += share * v[d];
                }
            }
        }
        if (thread == 0)  // the others read only positions before `first` from the cache: no race
            for (int64_t i = 0; i < count; ++i) {
                std::memcpy(cache_k + (first + i) * kv, fresh + i * 2 * kv, sizeof(float) * kv);
                std::memcpy(cache_v + (first + i) * kv, fresh + i * 2 * kv + kv, sizeof(float) * kv);
            }
    }
}

void Predictor::layer(int thread, int64_t l, int64_t first, int64_t count, Scratch& s) {
    const PredictorShape& p = shape_;
    const PredictorLayer& w = weights_.layers[l];
    Private& own = s.threads[thread];
    const int threads = pool_.size();
    const int64_t m = s.active * count, H = p.hidden, I = p.intermediate;
    for (int64_t i = 0; i < m; ++i) rms_norm(&own.x[i * H], w.input_norm.data(), H, p.eps, &own.h[i * H]);
    product(kernels_, thread, threads, w.qkv, own.h.data(), m, own, s.qkv.data());
    pool_.barrier();
    attention(thread, l, first, count, s);
    product(kernels_, thread, threads, w.o, own.attn.data(), m, own, s.o.data());
    pool_.barrier();
    for (int64_t i = 0; i < m * H; ++i) own.x[i] = own.x[i] + s.o[i];
    for (int64_t i = 0; i < m; ++i) rms_norm(&own.x[i * H], w.post_norm.data(), H, p.eps, &own.h[i * H]);
    product(kernels_, thread, threads, w.gate_up, own.h.data(), m, own, s.gate_up.data());
    pool_.barrier();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < I; ++j)
            own.h[i * I + j] = silu(s.gate_up[i * 2 * I + j]) * s.gate_up[i * 2 * I + I + j];
    product(kernels_, thread, threads, w.down, own.h.data(), m, own, s.down.data());
    pool_.barrier();
    for (int64_t i = 0; i < m * H; ++i) own.x[i] = own.x[i] + s.down[i];
}

void Predictor::run_frame(int thread, const FrameInputs& in, const FrameOutputs& out, Scratch& s) {
    const PredictorShape& p = shape_;
    Private& own = s.threads[thread];
    const int threads = pool_.size();
    const int64_t rows = in.rows, Hin = p.input_size, H = p.hidden, V = p.vocab;
    for (int64_t r = 0; r < rows; ++r) {  // step 0's two positions: the talker's hidden, code 0's embedding
        std::memcpy(&own.step_in[2 * r * Hin], in.hidden + r * Hin, sizeof(float) * Hin);
        table_row(weights_.talker_embedding, in.code0[r], &own.step_in[(2 * r + 1) * Hin]);
        std::memcpy(&own.embed_sum[r * Hin], &own.step_in[(2 * r + 1) * Hin], sizeof(float) * Hin);
    }
    for (int64_t step = 0; step < p.steps; ++step) {
        const int64_t count = step == 0 ? 2 : 1, first = step == 0 ? 0 : step + 1, m = rows * count;
        if (p.input_size != p.hidden) {  // small_to_mtp_projection (1.7B style)
            product(kernels_, thread, threads, weights_.projection, own.step_in.data(), m, own, s.projected.data());
            pool_.barrier();
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < H; ++j) own.x[i * H + j] = s.projected[i * H + j] + weights_.projection_bias[j];
        } else {
            std::memcpy(own.x.data(), own.step_in.data(), sizeof(float) * m * H);
        }
        for (int64_t l = 0; l < p.layers; ++l) layer(thread, l, first, count, s);
        for (int64_t r = 0; r < rows; ++r)  // the final norm of each row's last position
            rms_norm(&own.x[(r * count + count - 1) * H], weights_.final_norm.data(), H, p.eps, &own.h[r * H]);
        product(kernels_, thread, threads, weights_.heads[step], own.h.data(), rows, own, s.logits.data());
        pool_.barrier();
        for (int64_t r = thread; r < rows; r += threads) {  // rows over threads: each samples its own
            const float* logits = &s.logits[r * V];
            const SamplerSettings settings{in.temperature[r], in.top_k[r], in.top_p[r]};
            s.codes[r] = sample_token(logits, in.noise + (r * p.steps + step) * V, V, settings, own.order);
            out.codes[r * p.steps + step] = s.codes[r];
            if (out.logits != nullptr) std::memcpy(out.logits + (r * p.steps + step) * V, logits, sizeof(float) * V);
        }
        pool_.barrier();
        for (int64_t r = 0; r < rows; ++r) {  // the next input: this step's code's embedding, into the sum
            float* next = &own.step_in[r * Hin];
            table_row(weights_.code_embeddings[step], s.codes[r], next);
            for (int64_t j = 0; j < Hin; ++j) own.embed_sum[r * Hin + j] = own.embed_sum[r * Hin + j] + next[j];
        }
    }
    if (thread == 0) std::memcpy(out.next_embed, own.embed_sum.data(), sizeof(float) * rows * Hin);
}

}  // namespace qwen3tts::native
