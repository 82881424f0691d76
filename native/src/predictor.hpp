// The code predictor's whole frame in one native call (the fused decode of issue 34): for N rows, the 15
// unrolled steps of daemon/qwen3tts/model/graphs/code_predictor.py (5 Qwen3 layers over a 16-position
// in-frame KV, the per-step lm_head, the sampler) and the summed codec embeddings, on a persistent
// thread pool. The INT8 or INT4 matrices (weight_matrix.hpp) are the bundle's own memory-mapped tensors
// (only pointers are kept); the small vectors (norm gains, scales, biases) are copied as f32; the f16
// embedding tables are read per row. Matrix products use kernels.hpp's arithmetic, so every kernel set
// gives bit-identical frames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "sampler.hpp"
#include "thread_pool.hpp"
#include "weight_matrix.hpp"

namespace qwen3tts::native {

struct PredictorShape {
    int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, steps, input_size, talker_vocab;
    float eps;
};

struct PredictorLayer {
    WeightMatrix qkv{}, o{}, gate_up{}, down{};
    std::vector<float> qkv_scale, o_scale, gate_up_scale, down_scale;  // the matrices' own scale storage
    std::vector<float> input_norm, post_norm, q_norm, k_norm;
};

struct F16Table {
    const uint16_t* data = nullptr;  // [rows, cols] IEEE half
    int64_t rows = 0, cols = 0;
};

struct PredictorWeights {
    std::vector<PredictorLayer> layers;
    std::vector<WeightMatrix> heads;  // [steps] lm_head
    std::vector<std::vector<float>> head_scales;
    std::vector<float> final_norm;
    std::vector<float> inverse_frequencies;  // [head_dim / 2] RoPE
    WeightMatrix projection{};                // small_to_mtp_projection (empty: none)
    std::vector<float> projection_scale, projection_bias;
    F16Table talker_embedding;                // code 0 -> [input_size]
    std::vector<F16Table> code_embeddings;    // [steps]: code j+1 -> [input_size]
};

struct FrameInputs {
    int64_t rows;
    const float* hidden;       // [rows, input_size]
    const int64_t* code0;      // [rows]
    const float* noise;        // [rows, steps, vocab]
    const float* temperature;  // [rows]
    const int64_t* top_k;      // [rows]
    const float* top_p;        // [rows]
};

struct FrameOutputs {
    int64_t* codes;     // [rows, steps]
    float* next_embed;  // [rows, input_size]
    float* logits;      // [rows, steps, vocab], or nullptr
};

class Predictor {
public:
    struct Scratch;  // predictor_scratch.hpp
    Predictor(const PredictorShape& shape, const KernelSet& kernels, int threads);
    ~Predictor();
    PredictorWeights& weights() { return weights_; }
    const PredictorShape& shape() const { return shape_; }
    const KernelSet& kernels() const { return kernels_; }
    int threads() const { return pool_.size(); }
    // "" if every tensor is in place with the shapes of `shape`, else what is missing or wrong.
    std::string check() const;
    // One frame; "" or why the inputs were refused (a code 0 out of range).
    std::string frame(const FrameInputs& in, const FrameOutputs& out);

private:
    struct Phase;
    int64_t phases_per_step() const;
    bool reads_int4() const;  // some code-predictor matrix is INT4 (its input needs split4_rows)
    Phase phase(int64_t index, Scratch& s) const;
    void run_frame(Scratch& s);
    void run_chunk(const Phase& phase, int64_t chunk, Scratch& s) const;
    void finish_phase(int64_t index, Scratch& s);
    void open_phase(int64_t index, Scratch& s);
    void start_step(int64_t step, Scratch& s);
    void layer_input(int64_t layer, int64_t m, Scratch& s);
    void attention(int64_t layer, int64_t first, int64_t count, Scratch& s);
    void sample_and_embed(int64_t step, Scratch& s);
    void quantize(const float* x, int64_t m, int64_t cols, Scratch& s);

    PredictorShape shape_;
    const KernelSet& kernels_;
    PredictorWeights weights_;
    ThreadPool pool_;
    std::unique_ptr<Scratch> scratch_;
};

}  // namespace qwen3tts::native
