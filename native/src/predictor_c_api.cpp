// The C entry of the fused code predictor (predictor.hpp) for daemon/qwen3tts/runtime/native_decode/:
// create a predictor for a shape, hand it the bundle's tensors one by one (pointers to the INT8 or INT4
// matrices and f16 tables are kept, the small f32 vectors and scales are copied), check it, then one call
// per frame.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dispatch.hpp"
#include "predictor.hpp"

namespace {

using qwen3tts::native::Predictor;
using qwen3tts::native::WeightMatrix;

struct Handle {
    Predictor predictor;
    std::string message;  // the last check's or frame's refusal, for qwen3tts_cp_message
};

enum MatrixKind { kQkv, kO, kGateUp, kDown, kHead, kProjection };
enum VectorKind { kInputNorm, kPostNorm, kQNorm, kKNorm, kFinalNorm, kInverseFrequencies, kProjectionBias };

// The matrix `kind` / `index` names and the storage of its scales, or {nullptr, nullptr}.
std::pair<WeightMatrix*, std::vector<float>*> matrix_named(Predictor& p, int kind, int64_t index) {
    auto& w = p.weights();
    if (kind >= kQkv && kind <= kDown && index >= 0 && index < p.shape().layers) {
        auto& layer = w.layers[index];
        WeightMatrix* matrices[] = {&layer.qkv, &layer.o, &layer.gate_up, &layer.down};
        std::vector<float>* scales[] = {&layer.qkv_scale, &layer.o_scale, &layer.gate_up_scale, &layer.down_scale};
        return {matrices[kind], scales[kind]};
    }
    if (kind == kHead && index >= 0 && index < p.shape().steps) return {&w.heads[index], &w.head_scales[index]};
    if (kind == kProjection && index == 0) return {&w.projection, &w.projection_scale};
    return {nullptr, nullptr};
}

}  // namespace

#define API extern "C" __attribute__((visibility("default")))

// dims: hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, steps, input_size, talker_vocab.
// nullptr if this CPU cannot run kernel set `isa` or a dimension is not positive.
API void* qwen3tts_cp_create(const int64_t* dims, float eps, const char* isa, int threads) {
    const qwen3tts::native::KernelSet* kernels = qwen3tts::native::kernels_named(isa);
    for (int i = 0; i < 10; ++i)
        if (dims[i] <= 0) return nullptr;
    if (kernels == nullptr) return nullptr;
    const qwen3tts::native::PredictorShape shape{dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                                 dims[6], dims[7], dims[8], dims[9], eps};
    return new Handle{Predictor(shape, *kernels, threads), ""};
}

API void qwen3tts_cp_destroy(void* handle) { delete static_cast<Handle*>(handle); }

API const char* qwen3tts_cp_isa(void* handle) { return static_cast<Handle*>(handle)->predictor.kernels().name; }

API int qwen3tts_cp_threads(void* handle) { return static_cast<Handle*>(handle)->predictor.threads(); }

// An INT8 matrix [rows, cols] (kernels.hpp's Int8Matrix): 0, or -1 for an unknown kind or index. `data`
// must outlive the predictor; `scale` [rows] is copied.
API int qwen3tts_cp_set_matrix(void* handle, int kind, int64_t index, const int8_t* data, const float* scale,
                               int64_t rows, int64_t cols) {
    auto [matrix, storage] = matrix_named(static_cast<Handle*>(handle)->predictor, kind, index);
    if (matrix == nullptr || data == nullptr || scale == nullptr || rows <= 0 || cols <= 0) return -1;
    storage->assign(scale, scale + rows);
    *matrix = {};
    matrix->int8 = {data, storage->data(), rows, cols};
    return 0;
}

// An INT4 matrix [rows, cols] in groups of `group` input channels (kernels.hpp's Int4Matrix: `data` the
// packed nibbles, rows * cols / 2 bytes, which must outlive the predictor; `scale` [rows, cols / group] is
// copied): 0, or -1 for an unknown kind or index or a group the kernels do not take.
API int qwen3tts_cp_set_matrix4(void* handle, int kind, int64_t index, const uint8_t* data, const float* scale,
                                int64_t rows, int64_t cols, int64_t group) {
    auto [matrix, storage] = matrix_named(static_cast<Handle*>(handle)->predictor, kind, index);
    if (matrix == nullptr || data == nullptr || scale == nullptr || rows <= 0 || cols <= 0) return -1;
    if (!qwen3tts::native::int4_group_supported(group) || cols % group != 0) return -1;
    storage->assign(scale, scale + rows * (cols / group));
    *matrix = {};
    matrix->int4 = {data, storage->data(), rows, cols, group};
    return 0;
}

// 0, or -1 for an unknown kind or index; `values` [n] is copied.
API int qwen3tts_cp_set_vector(void* handle, int kind, int64_t index, const float* values, int64_t n) {
    Predictor& p = static_cast<Handle*>(handle)->predictor;
    auto& w = p.weights();
    std::vector<float>* target = nullptr;
    if (kind >= kInputNorm && kind <= kKNorm && index >= 0 && index < p.shape().layers) {
        auto& layer = w.layers[index];
        std::vector<float>* vectors[] = {&layer.input_norm, &layer.post_norm, &layer.q_norm, &layer.k_norm};
        target = vectors[kind];
    } else if (kind == kFinalNorm && index == 0) {
        target = &w.final_norm;
    } else if (kind == kInverseFrequencies && index == 0) {
        target = &w.inverse_frequencies;
    } else if (kind == kProjectionBias && index == 0) {
        target = &w.projection_bias;
    }
    if (target == nullptr || values == nullptr || n < 0) return -1;
    target->assign(values, values + n);
    return 0;
}

// An f16 embedding table [rows, cols]: index -1 the talker's (code 0), 0..steps-1 the code predictor's.
API int qwen3tts_cp_set_table(void* handle, int64_t index, const uint16_t* data, int64_t rows, int64_t cols) {
    Predictor& p = static_cast<Handle*>(handle)->predictor;
    auto& w = p.weights();
    if (index < -1 || index >= p.shape().steps || rows <= 0 || cols <= 0) return -1;
    (index == -1 ? w.talker_embedding : w.code_embeddings[index]) = {data, rows, cols};
    return 0;
}

// 0 if every tensor is in place; else -1 and qwen3tts_cp_message names what is missing.
API int qwen3tts_cp_check(void* handle) {
    Handle& h = *static_cast<Handle*>(handle);
    h.message = h.predictor.check();
    return h.message.empty() ? 0 : -1;
}

API const char* qwen3tts_cp_message(void* handle) { return static_cast<Handle*>(handle)->message.c_str(); }

// One frame for `rows` rows (shapes in predictor.hpp's FrameInputs / FrameOutputs; logits may be null).
// 0, or -1 with the reason in qwen3tts_cp_message (nothing is written then).
API int qwen3tts_cp_frame(void* handle, int64_t rows, const float* hidden, const int64_t* code0, const float* noise,
                          const float* temperature, const int64_t* top_k, const float* top_p, int64_t* codes,
                          float* next_embed, float* logits) {
    Handle& h = *static_cast<Handle*>(handle);
    const qwen3tts::native::FrameInputs in{rows, hidden, code0, noise, temperature, top_k, top_p};
    h.message = h.predictor.frame(in, {codes, next_embed, logits});
    return h.message.empty() ? 0 : -1;
}
