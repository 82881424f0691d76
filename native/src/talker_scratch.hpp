// The state of one talker step (talker.cpp sizes and runs it, talker_attention.cpp reads it): how the
// threads share a step is said at the top of talker.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "talker.hpp"

namespace qwen3tts::native {

constexpr int64_t kPhasesPerLayer = 5;  // qkv, attention, o, gate_up, down

struct Talker::Phase {
    const Int8Matrix* w;  // nullptr: attention
    float* y;             // [m, w->rows]
    int64_t m;            // rows of x
    int64_t chunk_rows;   // output rows per chunk
    int64_t chunks;
};

struct Talker::Scratch {
    TalkerStep in{};
    int64_t rows = 0, chunks = 0, context = 0;  // of the step being run
    int64_t phases = 0;
    std::atomic<uint64_t> counter{0};     // the open phase in the high 32 bits, its next chunk in the low
    std::atomic<int64_t> done{0};         // chunks of the open phase finished
    std::atomic<uint32_t> open_phase{0};  // what waiting threads watch
    std::atomic<int> sleepers{0};
    std::vector<int64_t> row_chunk, row_position, last_row;
    std::vector<float> rope_cos, rope_sin;  // [rows, head_dim / 2]: each row's angles, for every layer
    std::vector<float> x, h, qkv, q, attn, o, gate_up, down;
    std::vector<int16_t> xq;
    std::vector<float> xs;
    std::vector<std::vector<float>> per_thread;  // attention scores, widened key/value rows, queries
};

}  // namespace qwen3tts::native
