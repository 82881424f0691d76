// The code predictor's sampler, with exactly the semantics of the graph's (daemon/qwen3tts/model/graphs/
// code_predictor.py and gumbel_sampler.py): temperature, then top-k, then HF top-p, then Gumbel-max over
// host noise indexed by token id; greedy (argmax) at temperature <= 0; ties to the lower token id.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace qwen3tts::native {

// The noise is clamped into [kNoiseMin, kNoiseMax] so that the Gumbel term is finite (gumbel_sampler.py).
constexpr float kNoiseMin = 1.17549435e-38f;       // the smallest normal f32
constexpr float kNoiseMax = 1.0f - 5.96046448e-8f;  // 1 - 2^-24

struct SamplerSettings {
    float temperature;  // <= 0: greedy
    int64_t top_k;      // <= 0 or > vocab: off
    float top_p;        // >= 1: off
};

// One token id in [0, vocab) from `logits` [vocab] and `noise` [vocab] uniforms; `order` is scratch.
int64_t sample_token(const float* logits, const float* noise, int64_t vocab, const SamplerSettings& settings,
                     std::vector<std::pair<float, int32_t>>& order);

}  // namespace qwen3tts::native
