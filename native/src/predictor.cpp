#include "predictor.hpp"
#include "predictor_scratch.hpp"

#include <algorithm>

namespace qwen3tts::native {

Predictor::Predictor(const PredictorShape& shape, const KernelSet& kernels, int threads)
    : shape_(shape), kernels_(kernels), pool_(threads), scratch_(std::make_unique<Scratch>()) {
    weights_.layers.resize(static_cast<size_t>(shape.layers));
    weights_.heads.resize(static_cast<size_t>(shape.steps));
    weights_.head_scales.resize(static_cast<size_t>(shape.steps));
    weights_.code_embeddings.resize(static_cast<size_t>(shape.steps));
}

Predictor::~Predictor() = default;

std::string Predictor::check() const {
    const PredictorShape& s = shape_;
    const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    if (s.head_dim % 2 != 0 || s.head_dim > 512 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0 || s.steps < 1)
        return "unsupported attention shape";
    auto matrix = [](const WeightMatrix& m, int64_t rows, int64_t cols, const std::string& what) -> std::string {
        if (m.empty() || (m.is_int4() ? m.int4.scale : m.int8.scale) == nullptr) return what + " missing";
        if (m.rows() != rows || m.cols() != cols) return what + " has the wrong shape";
        if (m.is_int4() && (!int4_group_supported(m.int4.group) || cols % m.int4.group != 0))
            return what + " is INT4 in groups of " + std::to_string(m.int4.group) + ", not 32, 64 or 128";
        return "";
    };
    auto vector = [](const std::vector<float>& v, int64_t n, const std::string& what) -> std::string {
        return static_cast<int64_t>(v.size()) == n ? "" : what + " missing or of the wrong length";
    };
    auto table = [](const F16Table& t, int64_t rows, int64_t cols, const std::string& what) -> std::string {
        return t.data != nullptr && t.rows == rows && t.cols == cols ? "" : what + " missing or of the wrong shape";
    };
    std::string why;
    for (int64_t l = 0; l < s.layers && why.empty(); ++l) {
        const PredictorLayer& layer = weights_.layers[l];
        const std::string at = "layer " + std::to_string(l) + " ";
        for (const std::string& found :
             {matrix(layer.qkv, q + 2 * kv, s.hidden, at + "qkv"), matrix(layer.o, s.hidden, q, at + "o_proj"),
              matrix(layer.gate_up, 2 * s.intermediate, s.hidden, at + "gate_up"),
              matrix(layer.down, s.hidden, s.intermediate, at + "down_proj"),
              vector(layer.input_norm, s.hidden, at + "input norm"), vector(layer.post_norm, s.hidden, at + "post norm"),
              vector(layer.q_norm, s.head_dim, at + "q norm"), vector(layer.k_norm, s.head_dim, at + "k norm")})
            if (why.empty()) why = found;
    }
    for (int64_t j = 0; j < s.steps && why.empty(); ++j) {
        why = matrix(weights_.heads[j], s.vocab, s.hidden, "lm_head " + std::to_string(j));
        if (why.empty()) why = table(weights_.code_embeddings[j], s.vocab, s.input_size, "codec embedding");
    }
    if (why.empty()) why = vector(weights_.final_norm, s.hidden, "final norm");
    if (why.empty()) why = vector(weights_.inverse_frequencies, s.head_dim / 2, "RoPE frequencies");
    if (why.empty()) why = table(weights_.talker_embedding, s.talker_vocab, s.input_size, "talker codec embedding");
    if (why.empty() && s.input_size != s.hidden) {
        why = matrix(weights_.projection, s.hidden, s.input_size, "small_to_mtp_projection");
        if (why.empty()) why = vector(weights_.projection_bias, s.hidden, "small_to_mtp_projection bias");
    }
    return why;
}

bool Predictor::reads_int4() const {
    bool any = weights_.projection.is_int4();
    for (const PredictorLayer& layer : weights_.layers)
        any = any || layer.qkv.is_int4() || layer.o.is_int4() || layer.gate_up.is_int4() || layer.down.is_int4();
    for (const WeightMatrix& head : weights_.heads) any = any || head.is_int4();
    return any;
}

std::string Predictor::frame(const FrameInputs& in, const FrameOutputs& out) {
    for (int64_t r = 0; r < in.rows; ++r)
        if (in.code0[r] < 0 || in.code0[r] >= shape_.talker_vocab)
            return "code0 " + std::to_string(in.code0[r]) + " is outside the talker's codec vocabulary";
    if (in.rows <= 0) return "";
    Scratch& s = *scratch_;
    if (s.rows < in.rows) {  // grows to the largest batch seen, then stays
        const PredictorShape& p = shape_;
        const int64_t m = 2 * in.rows, q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
        const int64_t widest = std::max({p.hidden, p.intermediate, q, p.input_size});
        s.rows = in.rows;
        s.x.resize(m * p.hidden);
        s.h.resize(m * widest);
        s.attn.resize(m * q);
        s.step_in.resize(m * p.input_size);
        s.embed_sum.resize(in.rows * p.input_size);
        s.probs.resize(p.steps + 1);
        s.xq.resize(m * widest);
        s.int4 = reads_int4();  // the weights are all set before the first frame (check())
        if (s.int4) s.xsplit.resize(m * widest);
        s.xs.resize(m * num_groups(widest));
        s.qkv.resize(m * (q + 2 * kv));
        s.o.resize(m * p.hidden);
        s.gate_up.resize(m * 2 * p.intermediate);
        s.down.resize(m * p.hidden);
        s.projected.resize(m * p.hidden);
        s.logits.resize(in.rows * p.vocab);
        s.kv_k.resize(in.rows * p.layers * (p.steps + 1) * kv);
        s.kv_v.resize(s.kv_k.size());
    }
    s.active = in.rows;
    s.in = in;
    s.out = out;
    s.phases = phases_per_step() * shape_.steps;
    start_step(0, s);
    open_phase(0, s);
    pool_.run([&](int) { run_frame(s); });
    return "";
}

}  // namespace qwen3tts::native
