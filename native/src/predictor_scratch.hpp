// The state of one code-predictor frame (predictor.cpp sizes it, predictor_frame.cpp runs it).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "predictor.hpp"

namespace qwen3tts::native {

// A frame is a sequence of phases, one matrix product each (per step: [projection,] per layer qkv, o,
// gate_up, down, then the step's head). A phase's output rows are cut into chunks that any thread takes
// (`counter`: the open phase in the high 32 bits, the next chunk in the low ones); the thread that
// finishes a phase's last chunk runs the small serial work after it (norms, RoPE, attention, SiLU*up,
// residuals, the sampler), quantizes the next phase's input once, and opens that phase. A thread the OS
// has descheduled therefore delays nobody unless it holds a chunk.
struct Predictor::Scratch {
    int64_t rows = 0;    // the largest batch the buffers hold
    int64_t active = 0;  // rows of the frame being run
    FrameInputs in{};
    FrameOutputs out{};
    int64_t phases = 0;  // phases of the frame
    std::atomic<uint64_t> counter{0};
    std::atomic<int64_t> done{0};         // chunks of the open phase finished
    std::atomic<uint32_t> open_phase{0};  // what waiting threads watch
    std::atomic<int> sleepers{0};
    // activations (written only by the thread finishing a phase)
    std::vector<float> x, h, attn, step_in, embed_sum, probs;
    std::vector<int16_t> xq, xsplit;  // the open phase's input, quantized, and in the INT4 kernels' order
    bool int4 = false;                // some matrix is INT4: xsplit is made (not for INT8 bundles)
    std::vector<float> xs;
    std::vector<std::pair<float, int32_t>> order;
    // phase outputs (written by chunks) and the in-frame KV cache [rows, layers, positions, kv width]
    std::vector<float> qkv, o, gate_up, down, projected, logits, kv_k, kv_v;
};

}  // namespace qwen3tts::native
