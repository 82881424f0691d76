// The buffers of one code-predictor frame (predictor.cpp sizes them, predictor_frame.cpp uses them).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "predictor.hpp"

namespace qwen3tts::native {

// Buffers of one frame: `shared` ones are written by their owner thread between barriers; each thread's
// `Private` one holds its own copy of the activations (every thread computes the small element-wise parts
// itself instead of waiting at one more barrier).
struct Predictor::Scratch {
    struct Private {
        std::vector<float> x, h, attn, step_in, embed_sum, kv_new, probs;
        std::vector<int16_t> xq;
        std::vector<float> xs;
        std::vector<std::pair<float, int32_t>> order;
    };
    int64_t rows = 0;    // the largest batch the buffers hold
    int64_t active = 0;  // rows of the frame being run
    std::vector<float> qkv, o, gate_up, down, projected, logits, kv_k, kv_v;
    std::vector<int64_t> codes;
    std::vector<Private> threads;
};


}  // namespace qwen3tts::native
