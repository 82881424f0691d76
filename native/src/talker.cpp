// Talker::step: one engine talker step on the persistent pool, as the code predictor's frame runs
// (predictor_scratch.hpp): a step is a sequence of phases (per layer the qkv product, attention, o,
// gate_up, down; then codec_head); a phase is cut into chunks any thread takes (output rows of a product,
// one row and KV head of attention), and the thread that finishes a phase's last chunk does the serial
// work after it (norms, RoPE, the cache writes, SiLU*up, residuals, quantizing the next input) and opens
// the next phase. So a thread the OS has descheduled delays nobody unless it holds a chunk (a static split
// with a barrier per product measured 9x slower with 2 threads on a loaded machine, docs/benchmarks.md).
#include "talker.hpp"
#include "talker_scratch.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "decode_math.hpp"
#include "weight_matrix.hpp"

namespace qwen3tts::native {

Talker::Talker(const TalkerShape& shape, const KernelSet& kernels, int threads)
    : shape_(shape),
      kernels_(kernels),
      cache_bytes_(shape.blocks * shape.layers * 2 * shape.block_size * shape.kv_heads * cache_row_bytes(shape)),
      cache_(new uint8_t[static_cast<size_t>(cache_bytes_)]),
      pool_(threads),
      scratch_(std::make_unique<Scratch>()) {
    weights_.layers.resize(static_cast<size_t>(shape.layers));
}

Talker::~Talker() = default;

std::string Talker::check() const {
    const TalkerShape& s = shape_;
    const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    if (s.head_dim % 2 != 0 || s.head_dim > 512 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
        return "unsupported attention shape";
    auto matrix = [](const Int8Matrix& m, int64_t rows, int64_t cols, const std::string& what) -> std::string {
        if (m.data == nullptr || m.scale == nullptr) return what + " missing";
        return m.rows == rows && m.cols == cols ? "" : what + " has the wrong shape";
    };
    auto vector = [](const std::vector<float>& v, int64_t n, const std::string& what) -> std::string {
        return static_cast<int64_t>(v.size()) == n ? "" : what + " missing or of the wrong length";
    };
    std::string why;
    for (int64_t l = 0; l < s.layers && why.empty(); ++l) {
        const TalkerLayer& layer = weights_.layers[l];
        const std::string at = "layer " + std::to_string(l) + " ";
        for (const std::string& found :
             {matrix(layer.qkv, q + 2 * kv, s.hidden, at + "qkv"), matrix(layer.o, s.hidden, q, at + "o_proj"),
              matrix(layer.gate_up, 2 * s.intermediate, s.hidden, at + "gate_up"),
              matrix(layer.down, s.hidden, s.intermediate, at + "down_proj"),
              vector(layer.input_norm, s.hidden, at + "input norm"), vector(layer.post_norm, s.hidden, at + "post norm"),
              vector(layer.q_norm, s.head_dim, at + "q norm"), vector(layer.k_norm, s.head_dim, at + "k norm")})
            if (why.empty()) why = found;
    }
    if (why.empty()) why = matrix(weights_.head, s.vocab, s.hidden, "codec_head");
    if (why.empty()) why = vector(weights_.final_norm, s.hidden, "final norm");
    if (why.empty()) why = vector(weights_.inverse_frequencies, s.head_dim / 2, "RoPE frequencies");
    return why;
}

std::string Talker::validate(const TalkerStep& in) const {
    if (in.chunks < 0) return "a negative chunk count";
    for (int64_t c = 0; c < in.chunks; ++c) {
        const std::string at = "chunk " + std::to_string(c) + ": ";
        if (in.counts[c] < 1 || in.pasts[c] < 0) return at + "needs >= 1 new position and past_len >= 0";
        const int64_t needed = (in.pasts[c] + in.counts[c] + shape_.block_size - 1) / shape_.block_size;
        const int64_t begin = in.table_begins[c], length = in.table_begins[c + 1] - begin;
        if (begin < 0 || length < needed)
            return at + "its block table holds " + std::to_string(length) + " blocks, " +
                   std::to_string(needed) + " needed";
        for (int64_t b = 0; b < needed; ++b)
            if (in.tables[begin + b] < 0 || in.tables[begin + b] >= shape_.blocks)
                return at + "block id " + std::to_string(in.tables[begin + b]) + " outside 0.." +
                       std::to_string(shape_.blocks - 1);
    }
    return "";
}

std::string Talker::step(const TalkerStep& in) {
    std::string why = validate(in);
    if (!why.empty() || in.chunks == 0) return why;
    const TalkerShape& p = shape_;
    Scratch& s = *scratch_;
    s.in = in;
    s.chunks = in.chunks;
    s.row_chunk.clear(), s.row_position.clear(), s.last_row.clear();
    s.context = 0;
    for (int64_t c = 0; c < in.chunks; ++c) {
        for (int64_t i = 0; i < in.counts[c]; ++i) {
            s.row_chunk.push_back(c);
            s.row_position.push_back(in.pasts[c] + i);
        }
        s.last_row.push_back(static_cast<int64_t>(s.row_chunk.size()) - 1);
        s.context = std::max(s.context, in.pasts[c] + in.counts[c]);
    }
    const int64_t m = s.rows = static_cast<int64_t>(s.row_chunk.size());
    const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
    const int64_t widest = std::max({p.hidden, p.intermediate, q});
    s.x.resize(m * p.hidden), s.h.resize(m * widest), s.qkv.resize(m * (q + 2 * kv)), s.q.resize(m * q);
    s.attn.resize(m * q), s.o.resize(m * p.hidden), s.gate_up.resize(m * 2 * p.intermediate);
    s.down.resize(m * p.hidden), s.xq.resize(m * widest), s.xs.resize(m * num_groups(widest));
    s.rope_cos.resize(m * p.head_dim / 2), s.rope_sin.resize(m * p.head_dim / 2);
    for (int64_t i = 0; i < m; ++i)  // once per step, not per layer and head (sincosf was ~5 % at batch 8)
        math::rope_angles(p.head_dim, weights_.inverse_frequencies.data(), s.row_position[i],
                          &s.rope_cos[i * p.head_dim / 2], &s.rope_sin[i * p.head_dim / 2]);
    s.per_thread.resize(pool_.size());
    for (auto& buffer : s.per_thread)  // scores, a block of widened rows, the group's queries (attend)
        buffer.resize((p.heads / p.kv_heads) * (s.context + p.head_dim) + p.block_size * p.head_dim);
    std::copy(in.embeddings, in.embeddings + m * p.hidden, s.x.begin());
    norm_rows(s.x.data(), weights_.layers[0].input_norm, m, s);
    s.phases = kPhasesPerLayer * p.layers + 1;
    open_phase(0, s);
    pool_.run([&](int thread) { run(thread, s); });
    return "";
}

Talker::Phase Talker::phase(int64_t index, Scratch& s) const {
    const int64_t threads = pool_.size();
    if (index % kPhasesPerLayer == 1 && index < kPhasesPerLayer * shape_.layers)  // attention
        return {nullptr, nullptr, s.rows, 1, s.rows * shape_.kv_heads};
    Phase p{};
    if (index == kPhasesPerLayer * shape_.layers) {
        p = {&weights_.head, s.in.logits, s.chunks, 0, 0};
    } else {
        const TalkerLayer& layer = weights_.layers[index / kPhasesPerLayer];
        switch (index % kPhasesPerLayer) {
            case 0: p = {&layer.qkv, s.qkv.data(), s.rows, 0, 0}; break;
            case 2: p = {&layer.o, s.o.data(), s.rows, 0, 0}; break;
            case 3: p = {&layer.gate_up, s.gate_up.data(), s.rows, 0, 0}; break;
            default: p = {&layer.down, s.down.data(), s.rows, 0, 0}; break;
        }
    }
    // a few chunks per thread, so that one slow thread leaves work for the others
    p.chunk_rows = std::min<int64_t>(256, std::max<int64_t>(16, (p.w->rows / (4 * threads) + 15) / 16 * 16));
    p.chunks = (p.w->rows + p.chunk_rows - 1) / p.chunk_rows;
    return p;
}

void Talker::run(int thread, Scratch& s) {
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
        if (p.w == nullptr) {
            attend(thread, index / kPhasesPerLayer, chunk, s);
        } else {
            product_chunk(p, chunk, s);
        }
        if (s.done.fetch_add(1, std::memory_order_acq_rel) + 1 == p.chunks) {
            finish_phase(index, s);
            open_phase(index + 1, s);
        }
    }
}

void Talker::open_phase(int64_t index, Scratch& s) {
    s.done.store(0, std::memory_order_relaxed);
    s.counter.store(static_cast<uint64_t>(index) << 32, std::memory_order_release);
    s.open_phase.store(static_cast<uint32_t>(index) - 1, std::memory_order_relaxed);
    publish_change(s.open_phase, s.sleepers);  // now `index`
}

// The serial work after phase `index`, ending with the next phase's input ready.
void Talker::finish_phase(int64_t index, Scratch& s) {
    const TalkerShape& p = shape_;
    if (index >= kPhasesPerLayer * p.layers) return;  // codec_head: the logits are out
    const int64_t m = s.rows, H = p.hidden, I = p.intermediate, l = index / kPhasesPerLayer;
    switch (index % kPhasesPerLayer) {
        case 0:  // qkv: q ready for attention, k and v into the cache
            store_keys_values(l, s);
            break;
        case 1:  // attention
            quantize_rows(s.attn.data(), m, p.heads * p.head_dim, s.xq.data(), s.xs.data());
            break;
        case 2:  // o_proj: the residual, then the MLP's norm
            for (int64_t i = 0; i < m * H; ++i) s.x[i] = s.x[i] + s.o[i];
            norm_rows(s.x.data(), weights_.layers[l].post_norm, m, s);
            break;
        case 3:  // gate_up
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < I; ++j)
                    s.h[i * I + j] = math::silu(s.gate_up[i * 2 * I + j]) * s.gate_up[i * 2 * I + I + j];
            quantize_rows(s.h.data(), m, I, s.xq.data(), s.xs.data());
            break;
        default:  // down_proj: the residual, then the next layer's norm or the closing one
            for (int64_t i = 0; i < m * H; ++i) s.x[i] = s.x[i] + s.down[i];
            if (l + 1 < p.layers) {
                norm_rows(s.x.data(), weights_.layers[l + 1].input_norm, m, s);
            } else {  // each chunk's last row: the closing norm is the hidden output and codec_head's input
                for (int64_t c = 0; c < s.chunks; ++c)
                    math::rms_norm(&s.x[s.last_row[c] * H], weights_.final_norm.data(), H, p.eps, s.in.hidden + c * H);
                quantize_rows(s.in.hidden, s.chunks, H, s.xq.data(), s.xs.data());
            }
            break;
    }
}

// The normed rows of x into h, quantized as the next product's input.
void Talker::norm_rows(const float* x, const std::vector<float>& gain, int64_t m, Scratch& s) {
    const int64_t H = shape_.hidden;
    for (int64_t i = 0; i < m; ++i) math::rms_norm(x + i * H, gain.data(), H, shape_.eps, &s.h[i * H]);
    quantize_rows(s.h.data(), m, H, s.xq.data(), s.xs.data());
}

// Output rows [chunk * chunk_rows, ...) of y [m, w.rows] = x w^T for every row of the quantized input.
void Talker::product_chunk(const Phase& p, int64_t chunk, Scratch& s) const {
    const Int8Matrix& w = *p.w;
    const KernelSet& kernels = w.cols % kernels_.cols_multiple == 0 ? kernels_ : generic_kernels();
    const QuantizedRows rows{s.xq.data(), s.xs.data(), p.m, w.cols, num_groups(w.cols)};
    const int64_t n_begin = chunk * p.chunk_rows, n_end = std::min(w.rows, n_begin + p.chunk_rows);
    product_int8(kernels, w, rows, n_begin, n_end, weight_rows_per_block(kernels, p.m), p.y);
}

}  // namespace qwen3tts::native
