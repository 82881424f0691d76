// The small f32 operations of the fused decode (predictor_frame.cpp, talker.cpp), in plain code compiled with the baseline
// flags and -ffp-contract=off: the same bits on every machine and kernel set.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace qwen3tts::native::math {

// IEEE half -> float, exactly.
inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        exponent = 113;
        while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Every half's float, by its bits: the talker's attention widens its f16 cache through this 256 KB table
// (exactly half_to_float, at a load per value instead of the branches).
inline const float* half_table() {
    static const float* table = [] {
        static float values[65536];
        for (uint32_t h = 0; h < 65536; ++h) values[h] = half_to_float(static_cast<uint16_t>(h));
        return values;
    }();
    return table;
}

// float -> IEEE half, rounded to nearest even; overflow to inf, NaN stays NaN.
inline uint16_t float_to_half(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) return sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds above 65504
    if (magnitude < 0x38800000u) {                         // a subnormal half (or zero)
        if (magnitude < 0x33000000u) return sign;
        const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        const int shift = 126 - static_cast<int>(magnitude >> 23);  // 14 .. 24
        uint32_t half = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1), midway = 1u << (shift - 1);
        if (rest > midway || (rest == midway && (half & 1u))) ++half;
        return sign | static_cast<uint16_t>(half);
    }
    uint32_t half = ((magnitude >> 13) - (112u << 10));
    const uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
}

// x * rsqrt(mean(x^2) + eps) * gain (layers.rms_norm)
inline void rms_norm(const float* x, const float* gain, int64_t n, float eps, float* out) {
    double squares = 0.0;
    for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(x[i]) * x[i];
    const float root = std::sqrt(static_cast<float>(squares / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] / root * gain[i];
}

// cos and sin of RoPE's angles at `position` (dim / 2 of each): one position's are the same for every
// head and layer, so the talker computes them once per row and step (rope_rotate).
inline void rope_angles(int64_t dim, const float* inverse_frequencies, int64_t position, float* c, float* s) {
    for (int64_t i = 0; i < dim / 2; ++i) {
        const float angle = static_cast<float>(position) * inverse_frequencies[i];
        c[i] = std::cos(angle), s[i] = std::sin(angle);
    }
}

// x * cos + rotate_half(x) * sin, in place (transformer.apply_rope), with rope_angles' cos and sin
inline void rope_rotate(float* x, int64_t dim, const float* c, const float* s) {
    const int64_t half = dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
    }
}

// the same at `position`, angles computed here (the code predictor's few positions)
inline void rope(float* x, int64_t dim, const float* inverse_frequencies, int64_t position) {
    float c[256], s[256];  // head_dim <= 512 (Talker::check, Predictor::check)
    rope_angles(dim, inverse_frequencies, position, c, s);
    rope_rotate(x, dim, c, s);
}

inline float silu(float g) { return g / (1.0f + std::exp(-g)); }

}  // namespace qwen3tts::native::math

namespace qwen3tts::native::math {

// sum a[i] * b[i] in 8 f32 chains added in one fixed tree (the same bits on every machine)
inline float dot(const float* a, const float* b, int64_t n) {
    float chains[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)  // written per block of 8 so that the compiler keeps the chains in vectors
        for (int j = 0; j < 8; ++j) chains[j] = chains[j] + a[i + j] * b[i + j];
    for (; i < n; ++i) chains[i % 8] = chains[i % 8] + a[i] * b[i];
    return ((chains[0] + chains[1]) + (chains[2] + chains[3])) + ((chains[4] + chains[5]) + (chains[6] + chains[7]));
}

}  // namespace qwen3tts::native::math
