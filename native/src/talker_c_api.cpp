// The C entry of the native talker (talker.hpp) for daemon/qwen3tts/runtime/native_decode/talker.py:
// create one for a shape (it allocates its KV cache), hand it the bundle's tensors, check it, then one
// call per engine talker step.
#include <cstdint>
#include <string>

#include "dispatch.hpp"
#include "talker.hpp"

namespace {

using qwen3tts::native::Talker;

struct Handle {
    Talker talker;
    std::string message;  // the last check's or step's refusal, for qwen3tts_talker_message
};

enum MatrixKind { kQkv, kO, kGateUp, kDown, kHead };
enum VectorKind { kInputNorm, kPostNorm, kQNorm, kKNorm, kFinalNorm, kInverseFrequencies };

}  // namespace

#define API extern "C" __attribute__((visibility("default")))

// dims: hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, blocks, block_size; cache_u8: 1 for
// the u8 KV cache, 0 for halves (talker.hpp). nullptr if this CPU cannot run kernel set `isa`, a dimension
// is not positive or the cache cannot be had.
API void* qwen3tts_talker_create(const int64_t* dims, float eps, const char* isa, int threads, int cache_u8) {
    const qwen3tts::native::KernelSet* kernels = qwen3tts::native::kernels_named(isa);
    for (int i = 0; i < 9; ++i)
        if (dims[i] <= 0) return nullptr;
    if (kernels == nullptr) return nullptr;
    const qwen3tts::native::TalkerShape shape{dims[0], dims[1], dims[2], dims[3], dims[4],
                                              dims[5], dims[6], dims[7], dims[8], eps, cache_u8 != 0};
    try {
        return new Handle{Talker(shape, *kernels, threads), ""};
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}

API void qwen3tts_talker_destroy(void* handle) { delete static_cast<Handle*>(handle); }

API const char* qwen3tts_talker_isa(void* handle) { return static_cast<Handle*>(handle)->talker.kernels().name; }

API int qwen3tts_talker_threads(void* handle) { return static_cast<Handle*>(handle)->talker.threads(); }

API int64_t qwen3tts_talker_cache_bytes(void* handle) { return static_cast<Handle*>(handle)->talker.cache_bytes(); }

// 1 if the KV cache holds u8 rows, 0 for halves (a library without this function predates the u8 cache).
API int qwen3tts_talker_cache_u8(void* handle) { return static_cast<Handle*>(handle)->talker.shape().cache_u8; }

// 0, or -1 for an unknown kind or index. `data` must outlive the talker; `scale` [rows] is copied.
API int qwen3tts_talker_set_matrix(void* handle, int kind, int64_t index, const int8_t* data, const float* scale,
                                   int64_t rows, int64_t cols) {
    Talker& t = static_cast<Handle*>(handle)->talker;
    auto& w = t.weights();
    qwen3tts::native::Int8Matrix* matrix = nullptr;
    std::vector<float>* storage = nullptr;
    if (kind >= kQkv && kind <= kDown && index >= 0 && index < t.shape().layers) {
        auto& layer = w.layers[index];
        qwen3tts::native::Int8Matrix* matrices[] = {&layer.qkv, &layer.o, &layer.gate_up, &layer.down};
        std::vector<float>* scales[] = {&layer.qkv_scale, &layer.o_scale, &layer.gate_up_scale, &layer.down_scale};
        matrix = matrices[kind], storage = scales[kind];
    } else if (kind == kHead && index == 0) {
        matrix = &w.head, storage = &w.head_scale;
    }
    if (matrix == nullptr || data == nullptr || scale == nullptr || rows <= 0 || cols <= 0) return -1;
    storage->assign(scale, scale + rows);
    *matrix = {data, storage->data(), rows, cols};
    return 0;
}

// 0, or -1 for an unknown kind or index; `values` [n] is copied.
API int qwen3tts_talker_set_vector(void* handle, int kind, int64_t index, const float* values, int64_t n) {
    Talker& t = static_cast<Handle*>(handle)->talker;
    auto& w = t.weights();
    std::vector<float>* target = nullptr;
    if (kind >= kInputNorm && kind <= kKNorm && index >= 0 && index < t.shape().layers) {
        auto& layer = w.layers[index];
        std::vector<float>* vectors[] = {&layer.input_norm, &layer.post_norm, &layer.q_norm, &layer.k_norm};
        target = vectors[kind];
    } else if (kind == kFinalNorm && index == 0) {
        target = &w.final_norm;
    } else if (kind == kInverseFrequencies && index == 0) {
        target = &w.inverse_frequencies;
    }
    if (target == nullptr || values == nullptr || n < 0) return -1;
    target->assign(values, values + n);
    return 0;
}

API int qwen3tts_talker_check(void* handle) {
    Handle& h = *static_cast<Handle*>(handle);
    h.message = h.talker.check();
    return h.message.empty() ? 0 : -1;
}

API const char* qwen3tts_talker_message(void* handle) { return static_cast<Handle*>(handle)->message.c_str(); }

// One step over `chunks` chunks (talker.hpp's TalkerStep). 0, or -1 with the reason in
// qwen3tts_talker_message (nothing is written then).
API int qwen3tts_talker_step(void* handle, int64_t chunks, const int64_t* counts, const int64_t* pasts,
                             const int64_t* table_begins, const int32_t* tables, const float* embeddings,
                             float* logits, float* hidden) {
    Handle& h = *static_cast<Handle*>(handle);
    const qwen3tts::native::TalkerStep step{chunks, counts, pasts, table_begins, tables, embeddings, logits, hidden};
    h.message = h.talker.step(step);
    return h.message.empty() ? 0 : -1;
}
