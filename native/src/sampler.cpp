#include "sampler.hpp"

#include <algorithm>
#include <cmath>

namespace qwen3tts::native {
namespace {

float gumbel(float uniform) {
    const float u = std::fmin(kNoiseMax, std::fmax(kNoiseMin, uniform));
    return -std::log(-std::log(u));
}

// argmax with ties to the lower id (numpy / a stable TopK of width 1)
int64_t argmax(const float* values, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (values[i] > values[best]) best = i;
    return best;
}

// Larger logit first; equal logits by lower id (a stable descending TopK).
bool ranks_before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// How many of the `kept` ranked tokens HF top-p keeps: a token stays while the probability mass of the
// tokens ranked strictly above it is < top_p (softmax over the kept scaled logits); the best always stays.
int64_t top_p_count(const std::vector<std::pair<float, int32_t>>& order, int64_t kept, float temperature,
                    float top_p) {
    if (top_p >= 1.0f) return kept;
    std::vector<float> probs(static_cast<size_t>(kept));
    const float largest = order[0].first / temperature;
    float total = 0.0f;
    for (int64_t i = 0; i < kept; ++i) {
        probs[i] = std::exp(order[i].first / temperature - largest);
        total += probs[i];
    }
    float above = 0.0f;
    for (int64_t i = 0; i < kept; ++i) {
        if (i > 0 && !(above < top_p)) return i;
        above += probs[i] / total;
    }
    return kept;
}

}  // namespace

int64_t sample_token(const float* logits, const float* noise, int64_t vocab, const SamplerSettings& settings,
                     std::vector<std::pair<float, int32_t>>& order) {
    if (!(settings.temperature > 0.0f)) return argmax(logits, vocab);
    const float temperature = settings.temperature;
    const bool top_k_off = settings.top_k <= 0 || settings.top_k > vocab;
    if (top_k_off && settings.top_p >= 1.0f) {  // every token kept: Gumbel-max in id order
        int64_t best = 0;
        float best_score = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v) {
            const float score = logits[v] / temperature + gumbel(noise[v]);
            if (v == 0 || score > best_score) best = v, best_score = score;
        }
        return best;
    }
    const int64_t k = top_k_off ? vocab : settings.top_k;
    order.resize(static_cast<size_t>(vocab));
    for (int64_t v = 0; v < vocab; ++v) order[v] = {logits[v], static_cast<int32_t>(v)};
    std::partial_sort(order.begin(), order.begin() + k, order.end(), ranks_before);
    const int64_t kept = top_p_count(order, k, temperature, settings.top_p);
    // Gumbel-max over the kept tokens in rank order (the graph's stable TopK over its sorted scores)
    int64_t best = 0;
    float best_score = -INFINITY;
    for (int64_t i = 0; i < kept; ++i) {
        const float score = order[i].first / temperature + gumbel(noise[order[i].second]);
        if (i == 0 || score > best_score) best = i, best_score = score;
    }
    return order[best].second;
}

}  // namespace qwen3tts::native
