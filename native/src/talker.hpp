// The talker's decoder step in one native call (issue 34, opt-in: devices.native_talker): for every chunk
// of an engine step (prefill chunks and one-row decodes mixed), the 28-layer Qwen3 stack of
// daemon/qwen3tts/model/graphs/talker.py over its own paged KV cache, then the final norm and codec_head
// at each chunk's last row. The INT8 matrices are the bundle's memory-mapped tensors (only pointers are
// kept); the small vectors are copied as f32. Products use kernels.hpp's arithmetic, so every kernel set
// gives bit-identical results.
//
// The KV cache is the talker's own (the plugin's layout is not shared): one array of rows [blocks, layers,
// 2 (key, value), kv_heads, block_size], a row being one position of one KV head, keys after q/k norm and
// RoPE. A row is head_dim IEEE halves, or (the default, as engine.kv_cache_precision: u8 for the plugin too)
// a scale and a zero point (f32) then head_dim bytes q, the value being (q - zero) * scale: per position
// and head, asymmetric, as OpenVINO quantizes its U8 cache. The engine's block tables index the first
// axis, so one block holds `block_size` positions of every layer.
// A KV head's positions are contiguous within a block, so attention reads each head's rows as one
// stream: with the heads of a position side by side, its rows lay 2 KiB apart and each was a cache
// miss the loop waited for (a step at 400 positions took 1.3-1.5x as long, docs/benchmarks.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "thread_pool.hpp"

namespace qwen3tts::native {

struct TalkerShape {
    int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, blocks, block_size;
    float eps;
    bool cache_u8;
};

// Bytes of one cached row (one position of one KV head): see the KV cache above.
inline int64_t cache_row_bytes(const TalkerShape& s) { return s.cache_u8 ? 8 + s.head_dim : 2 * s.head_dim; }

struct TalkerLayer {
    Int8Matrix qkv{}, o{}, gate_up{}, down{};
    std::vector<float> qkv_scale, o_scale, gate_up_scale, down_scale;
    std::vector<float> input_norm, post_norm, q_norm, k_norm;
};

struct TalkerWeights {
    std::vector<TalkerLayer> layers;
    Int8Matrix head{};  // codec_head [vocab, hidden]
    std::vector<float> head_scale, final_norm, inverse_frequencies;
};

// One step's chunks: chunk c has counts[c] new rows (positions pasts[c] ..), its block table is
// tables[table_begins[c] .. table_begins[c + 1]).
struct TalkerStep {
    int64_t chunks;
    const int64_t* counts;
    const int64_t* pasts;
    const int64_t* table_begins;  // [chunks + 1]
    const int32_t* tables;
    const float* embeddings;  // [sum counts, hidden]
    float* logits;            // [chunks, vocab]
    float* hidden;            // [chunks, hidden]
};

class Talker {
public:
    Talker(const TalkerShape& shape, const KernelSet& kernels, int threads);
    ~Talker();
    TalkerWeights& weights() { return weights_; }
    const TalkerShape& shape() const { return shape_; }
    const KernelSet& kernels() const { return kernels_; }
    int threads() const { return pool_.size(); }
    int64_t cache_bytes() const { return cache_bytes_; }
    std::string check() const;
    // "" or why the step was refused (nothing is written then).
    std::string step(const TalkerStep& in);

private:
    struct Scratch;
    struct Phase;
    std::string validate(const TalkerStep& in) const;
    Phase phase(int64_t index, Scratch& s) const;
    void run(int thread, Scratch& s);
    void open_phase(int64_t index, Scratch& s);
    void finish_phase(int64_t index, Scratch& s);
    void product_chunk(const Phase& p, int64_t chunk, Scratch& s) const;
    void norm_rows(const float* x, const std::vector<float>& gain, int64_t m, Scratch& s);
    void store_keys_values(int64_t layer, Scratch& s);
    void attend(int thread, int64_t layer, int64_t item, Scratch& s);
    uint8_t* cache_at(int64_t block, int64_t layer, int64_t kind, int64_t head, int64_t slot);
    void store_row(const float* x, uint8_t* row) const;

    TalkerShape shape_;
    const KernelSet& kernels_;
    TalkerWeights weights_;
    // left uninitialised: a position is always written before it is read, and the pages of blocks no
    // sequence has used yet stay out of the process's memory
    int64_t cache_bytes_;
    std::unique_ptr<uint8_t[]> cache_;
    ThreadPool pool_;
    std::unique_ptr<Scratch> scratch_;
};

}  // namespace qwen3tts::native
