// One code-predictor frame (Predictor::run_frame and the serial work between its phases): mirrors
// daemon/qwen3tts/model/graphs/code_predictor.py step for step; predictor_scratch.hpp says how the
// threads share a frame.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "decode_math.hpp"
#include "predictor.hpp"
#include "predictor_scratch.hpp"

namespace qwen3tts::native {
namespace {

using math::dot;
using math::half_to_float;
using math::rms_norm;
using math::rope;
using math::silu;

void table_row(const F16Table& table, int64_t row, float* out) {
    const uint16_t* src = table.data + row * table.cols;
    for (int64_t i = 0; i < table.cols; ++i) out[i] = half_to_float(src[i]);
}

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

// Weight rows per kernel call: the kernel set's choice, or QWEN3TTS_NATIVE_BLOCKS=<stream>,<gemm> (as for
// the op, dispatch.cpp; benchmarks only: blocking never changes a result).
int weight_rows_per_block(const KernelSet& kernels, int64_t m, bool int4) {
    static const char* wanted = std::getenv("QWEN3TTS_NATIVE_BLOCKS");
    static const bool valid = wanted != nullptr && wanted[0] != 0 && std::strchr("124", wanted[0]) != nullptr &&
                              wanted[1] == ',' && wanted[2] != 0 && std::strchr("124", wanted[2]) != nullptr;
    if (valid) return (m <= kStreamRowsMax ? wanted[0] : wanted[2]) - '0';
    // On AMD cores one sequential weight stream per thread reads about twice as fast at one or two rows of
    // x as two or four interleaved ones: Zen 1 (README.md) and Zen 4 (docs/benchmarks.md, issue 34). Not
    // an INT4 row: half as long, with twice the instructions per byte (nibbles, a scale per group), its
    // kernel is bound by one row's dependency chain, and two rows a call took 0.75x the time on Zen 4.
    // Up to kDecodeRowsMax rows of x, a set with DecodeRows reads one weight row a time too: on Zen 4 the
    // INT8 frame at 3 and 4 rows took 0.76 and 0.81 of the time of two weight rows per call, the talker step
    // at 4 rows 0.74 (docs/benchmarks.md).
    static const bool amd = __builtin_cpu_is("amd");
    const bool one_stream = m <= 2 || (m <= kDecodeRowsMax && kernels.decode_rows != nullptr);
    if (amd && one_stream && !int4) return 1;
    return m <= kStreamRowsMax ? kernels.stream_block : kernels.gemm_block;
}

struct Predictor::Phase {
    const WeightMatrix* w;
    float* y;            // [m, w->rows()]
    int64_t m;           // rows of x
    int64_t chunk_rows;  // output rows per chunk
    int64_t chunks;
};

int64_t Predictor::phases_per_step() const {
    return (shape_.input_size != shape_.hidden ? 1 : 0) + 4 * shape_.layers + 1;
}

Predictor::Phase Predictor::phase(int64_t index, Scratch& s) const {
    const int64_t step = index / phases_per_step();
    int64_t r = index % phases_per_step();
    const int64_t m = s.active * (step == 0 ? 2 : 1);
    Phase p{};
    if (shape_.input_size != shape_.hidden && r-- == 0) {
        p = {&weights_.projection, s.projected.data(), m, 0, 0};
    } else if (r < 4 * shape_.layers) {
        const PredictorLayer& layer = weights_.layers[r / 4];
        const WeightMatrix* matrices[] = {&layer.qkv, &layer.o, &layer.gate_up, &layer.down};
        float* outputs[] = {s.qkv.data(), s.o.data(), s.gate_up.data(), s.down.data()};
        p = {matrices[r % 4], outputs[r % 4], m, 0, 0};
    } else {
        p = {&weights_.heads[step], s.logits.data(), s.active, 0, 0};
    }
    // a few chunks per thread, so that one slow thread leaves work for the others
    const int64_t threads = pool_.size();
    p.chunk_rows = std::min<int64_t>(256, std::max<int64_t>(16, round_up(p.w->rows() / (4 * threads), 16)));
    p.chunks = (p.w->rows() + p.chunk_rows - 1) / p.chunk_rows;
    return p;
}

void Predictor::run_frame(Scratch& s) {
    for (;;) {
        const uint64_t taken = s.counter.fetch_add(1, std::memory_order_acq_rel);
        const auto index = static_cast<uint32_t>(taken >> 32);
        if (index >= s.phases) return;
        const Phase p = phase(index, s);
        const auto chunk = static_cast<int64_t>(taken & 0xffffffffu);
        if (chunk >= p.chunks) {  // nothing left in this phase: wait for the next one
            wait_for_change(s.open_phase, index, s.sleepers);
            continue;
        }
        run_chunk(p, chunk, s);
        if (s.done.fetch_add(1, std::memory_order_acq_rel) + 1 == p.chunks) {
            finish_phase(index, s);
            open_phase(index + 1, s);
        }
    }
}

void Predictor::open_phase(int64_t index, Scratch& s) {
    s.done.store(0, std::memory_order_relaxed);
    s.counter.store(static_cast<uint64_t>(index) << 32, std::memory_order_release);
    s.open_phase.store(static_cast<uint32_t>(index) - 1, std::memory_order_relaxed);
    publish_change(s.open_phase, s.sleepers);  // now `index`
}

// y rows [c * chunk_rows, ...) for every row of the quantized input.
void Predictor::run_chunk(const Phase& p, int64_t chunk, Scratch& s) const {
    const WeightMatrix& w = *p.w;
    const KernelSet& kernels = w.cols() % kernels_.cols_multiple == 0 ? kernels_ : generic_kernels();
    const QuantizedRows rows{s.xq.data(), s.xs.data(), p.m, w.cols(), num_groups(w.cols()), s.xsplit.data()};
    const int64_t n_begin = chunk * p.chunk_rows, n_end = std::min(w.rows(), n_begin + p.chunk_rows);
    product_rows(kernels, w, rows, n_begin, n_end, weight_rows_per_block(kernels, p.m, w.is_int4()), p.y);
}

void Predictor::quantize(const float* x, int64_t m, int64_t cols, Scratch& s) {
    quantize_rows(x, m, cols, s.xq.data(), s.xs.data());
    if (s.int4 && cols % 32 == 0) split4_rows(s.xq.data(), m, cols, s.xsplit.data());  // INT4 matrices' K
}

// The serial work after phase `index`, ending with the next phase's input quantized.
void Predictor::finish_phase(int64_t index, Scratch& s) {
    const PredictorShape& p = shape_;
    const int64_t step = index / phases_per_step(), count = step == 0 ? 2 : 1, first = step == 0 ? 0 : step + 1;
    const int64_t m = s.active * count, H = p.hidden, I = p.intermediate;
    int64_t r = index % phases_per_step();
    if (p.input_size != p.hidden && r-- == 0) {  // small_to_mtp_projection done: add its bias
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < H; ++j) s.x[i * H + j] = s.projected[i * H + j] + weights_.projection_bias[j];
        layer_input(0, m, s);
        return;
    }
    if (r >= 4 * p.layers) {
        sample_and_embed(step, s);
        if (step + 1 < p.steps) start_step(step + 1, s);
        return;
    }
    const int64_t l = r / 4;
    switch (r % 4) {
        case 0:  // qkv
            attention(l, first, count, s);
            quantize(s.attn.data(), m, p.heads * p.head_dim, s);
            break;
        case 1:  // o_proj: the residual, then the MLP's norm
            for (int64_t i = 0; i < m * H; ++i) s.x[i] = s.x[i] + s.o[i];
            for (int64_t i = 0; i < m; ++i)
                rms_norm(&s.x[i * H], weights_.layers[l].post_norm.data(), H, p.eps, &s.h[i * H]);
            quantize(s.h.data(), m, H, s);
            break;
        case 2:  // gate_up
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < I; ++j)
                    s.h[i * I + j] = silu(s.gate_up[i * 2 * I + j]) * s.gate_up[i * 2 * I + I + j];
            quantize(s.h.data(), m, I, s);
            break;
        default:  // down_proj: the residual, then the next layer's norm or the final one
            for (int64_t i = 0; i < m * H; ++i) s.x[i] = s.x[i] + s.down[i];
            if (l + 1 < p.layers) {
                layer_input(l + 1, m, s);
            } else {
                for (int64_t row = 0; row < s.active; ++row)  // each row's last position
                    rms_norm(&s.x[(row * count + count - 1) * H], weights_.final_norm.data(), H, p.eps, &s.h[row * H]);
                quantize(s.h.data(), s.active, H, s);
            }
            break;
    }
}

// The inputs of `step` are in s.step_in: the projection's, or the first layer's.
void Predictor::start_step(int64_t step, Scratch& s) {
    const PredictorShape& p = shape_;
    const int64_t m = s.active * (step == 0 ? 2 : 1);
    if (step == 0) {  // two positions: the talker's hidden state, code 0's embedding
        const int64_t Hin = p.input_size;
        for (int64_t r = 0; r < s.active; ++r) {
            std::memcpy(&s.step_in[2 * r * Hin], s.in.hidden + r * Hin, sizeof(float) * Hin);
            table_row(weights_.talker_embedding, s.in.code0[r], &s.step_in[(2 * r + 1) * Hin]);
            std::memcpy(&s.embed_sum[r * Hin], &s.step_in[(2 * r + 1) * Hin], sizeof(float) * Hin);
        }
    }
    if (p.input_size != p.hidden) {
        quantize(s.step_in.data(), m, p.input_size, s);
        return;
    }
    std::memcpy(s.x.data(), s.step_in.data(), sizeof(float) * m * p.hidden);
    layer_input(0, m, s);
}

// The first product of `layer`: its input norm over the m positions of the step, quantized.
void Predictor::layer_input(int64_t layer, int64_t m, Scratch& s) {
    const PredictorShape& p = shape_;
    for (int64_t i = 0; i < m; ++i)
        rms_norm(&s.x[i * p.hidden], weights_.layers[layer].input_norm.data(), p.hidden, p.eps, &s.h[i * p.hidden]);
    quantize(s.h.data(), m, p.hidden, s);
}

// The new positions' keys and values into the cache, then every new position's attention over the cache.
void Predictor::attention(int64_t layer, int64_t first, int64_t count, Scratch& s) {
    const PredictorShape& p = shape_;
    const PredictorLayer& w = weights_.layers[layer];
    const int64_t hd = p.head_dim, q_width = p.heads * hd, kv = p.kv_heads * hd, groups = p.heads / p.kv_heads;
    const int64_t positions = p.steps + 1, width = q_width + 2 * kv;
    const float* inv = weights_.inverse_frequencies.data();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (int64_t r = 0; r < s.active; ++r) {
        float* cache_k = s.kv_k.data() + (r * p.layers + layer) * positions * kv;
        float* cache_v = s.kv_v.data() + (r * p.layers + layer) * positions * kv;
        for (int64_t i = 0; i < count; ++i) {
            const float* projected = s.qkv.data() + (r * count + i) * width;
            float* k = cache_k + (first + i) * kv;
            for (int64_t g = 0; g < p.kv_heads; ++g) {
                rms_norm(projected + q_width + g * hd, w.k_norm.data(), hd, p.eps, k + g * hd);
                rope(k + g * hd, hd, inv, first + i);
            }
            std::memcpy(cache_v + (first + i) * kv, projected + q_width + kv, sizeof(float) * kv);
        }
        for (int64_t i = 0; i < count; ++i) {
            const int64_t position = first + i;
            const float* projected = s.qkv.data() + (r * count + i) * width;
            float* attn = s.attn.data() + (r * count + i) * q_width;
            for (int64_t head = 0; head < p.heads; ++head) {
                float q[512];
                rms_norm(projected + head * hd, w.q_norm.data(), hd, p.eps, q);
                rope(q, hd, inv, position);
                for (int64_t d = 0; d < hd; ++d) q[d] = q[d] * scale;
                const int64_t g = head / groups;
                float* weights = s.probs.data();
                float largest = -INFINITY;
                for (int64_t t = 0; t <= position; ++t) {
                    weights[t] = dot(q, cache_k + t * kv + g * hd, hd);
                    largest = std::max(largest, weights[t]);
                }
                float total = 0.0f;
                for (int64_t t = 0; t <= position; ++t) total += (weights[t] = std::exp(weights[t] - largest));
                float* out = attn + head * hd;
                std::fill(out, out + hd, 0.0f);
                for (int64_t t = 0; t <= position; ++t) {
                    const float* v = cache_v + t * kv + g * hd;
                    const float share = weights[t] / total;
                    for (int64_t d = 0; d < hd; ++d) out[d] += share * v[d];
                }
            }
        }
    }
}

// Every row's code of `step` from its logits; its embedding is the next step's input and joins the sum.
void Predictor::sample_and_embed(int64_t step, Scratch& s) {
    const PredictorShape& p = shape_;
    const int64_t V = p.vocab, Hin = p.input_size;
    for (int64_t r = 0; r < s.active; ++r) {
        const float* logits = &s.logits[r * V];
        const SamplerSettings settings{s.in.temperature[r], s.in.top_k[r], s.in.top_p[r]};
        const int64_t code = sample_token(logits, s.in.noise + (r * p.steps + step) * V, V, settings, s.order);
        s.out.codes[r * p.steps + step] = code;
        if (s.out.logits != nullptr) std::memcpy(s.out.logits + (r * p.steps + step) * V, logits, sizeof(float) * V);
        float* next = &s.step_in[r * Hin];
        table_row(weights_.code_embeddings[step], code, next);
        for (int64_t j = 0; j < Hin; ++j) s.embed_sum[r * Hin + j] = s.embed_sum[r * Hin + j] + next[j];
    }
    if (step + 1 == p.steps) std::memcpy(s.out.next_embed, s.embed_sum.data(), sizeof(float) * s.active * Hin);
}

}  // namespace qwen3tts::native
