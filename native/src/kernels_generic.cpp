// Portable code: activation quantization (the same on every machine), the reference kernels (INT8 and
// INT4) every SIMD set is tested against, and the path on CPUs without AVX2.
#include <emmintrin.h>

#include <cmath>

#include "kernels.hpp"

namespace qwen3tts::native {

namespace {

// One group by the rule stated once: the largest |x| (a NaN, if there is one, becomes the scale, so it
// reaches y), then xq = round(x / xs) clamped to +-32767. The reference for the SSE2 path below.
void quantize_group_scalar(const float* x, int64_t n, int16_t* values, float* scale) {
    float largest = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
        const float a = std::fabs(x[k]);
        if (a > largest || a != a) largest = a;
    }
    // a group of zeros quantizes to zeros with scale 0
    const float inverse = largest > 0.0f ? 32767.0f / largest : (largest == 0.0f ? 0.0f : largest);
    for (int64_t k = 0; k < n; ++k) {
        const float q = std::nearbyint(x[k] * inverse);
        values[k] = static_cast<int16_t>(std::fmax(-32767.0f, std::fmin(32767.0f, q)));
    }
    *scale = largest / 32767.0f;
}

// The same group, 8 values per step with SSE2 (part of x86-64 itself, so still the same code on every
// machine): the thread that closes a phase quantizes the next product's input while the others wait, and
// the scalar loop (three libm calls per value) was the largest serial cost of a batch-8 frame. Equal bit
// for bit: max is exact in any order; a group holding a NaN takes the scalar loop; clamping to +-32767
// before rounding gives what rounding then clamping gives (minps turns a NaN product, inf * 0, into
// 32767 as fmin does); cvtps2dq rounds to nearest even, as nearbyint does in the default mode.
void quantize_group(const float* x, int64_t n, int16_t* values, float* scale) {
    const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 most = _mm_setzero_ps(), unordered = _mm_setzero_ps();
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        const __m128 a = _mm_and_ps(_mm_loadu_ps(x + k), magnitude);
        most = _mm_max_ps(most, a);
        unordered = _mm_or_ps(unordered, _mm_cmpunord_ps(a, a));
    }
    if (_mm_movemask_ps(unordered) != 0) return quantize_group_scalar(x, n, values, scale);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, most);
    float largest = std::fmax(std::fmax(lanes[0], lanes[1]), std::fmax(lanes[2], lanes[3]));
    for (; k < n; ++k) {
        const float a = std::fabs(x[k]);
        if (a != a) return quantize_group_scalar(x, n, values, scale);
        if (a > largest) largest = a;
    }
    const float inverse = largest > 0.0f ? 32767.0f / largest : 0.0f;
    const __m128 times = _mm_set1_ps(inverse), high = _mm_set1_ps(32767.0f), low = _mm_set1_ps(-32767.0f);
    k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m128 a = _mm_max_ps(_mm_min_ps(_mm_mul_ps(_mm_loadu_ps(x + k), times), high), low);
        const __m128 b = _mm_max_ps(_mm_min_ps(_mm_mul_ps(_mm_loadu_ps(x + k + 4), times), high), low);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(values + k), _mm_packs_epi32(_mm_cvtps_epi32(a), _mm_cvtps_epi32(b)));
    }
    for (; k < n; ++k) {
        const float q = std::nearbyint(x[k] * inverse);
        values[k] = static_cast<int16_t>(std::fmax(-32767.0f, std::fmin(32767.0f, q)));
    }
    *scale = largest / 32767.0f;
}

}  // namespace

void quantize_rows(const float* x, int64_t rows, int64_t cols, int16_t* values, float* scales) {
    const int64_t groups = num_groups(cols);
    for (int64_t m = 0; m < rows; ++m)
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t k0 = g * kGroup, k1 = k0 + kGroup < cols ? k0 + kGroup : cols;
            quantize_group(x + m * cols + k0, k1 - k0, values + m * cols + k0, scales + m * groups + g);
        }
}

void split4_rows(const int16_t* values, int64_t rows, int64_t cols, int16_t* split) {
    for (int64_t m = 0; m < rows; ++m)
        for (int64_t base = m * cols, end = base + cols; base < end; base += 64) {
            const int64_t half = (end - base < 64 ? end - base : 64) / 2;
            for (int64_t e = 0; e < half; ++e) {
                split[base + e] = values[base + 2 * e];
                split[base + half + e] = values[base + 2 * e + 1];
            }
        }
}

float row_dot(const int8_t* w, const QuantizedRows& x, int64_t row) {
    const int16_t* xq = x.values + row * x.cols;
    const float* xs = x.scales + row * x.groups;
    float lanes[kLanes] = {};
    for (int64_t g0 = 0, g = 0; g0 < x.cols; g0 += kGroup, ++g) {
        const int64_t g1 = g0 + kGroup < x.cols ? g0 + kGroup : x.cols;
        int32_t sums[kLanes] = {};
        for (int64_t k = g0; k < g1; ++k) sums[(k - g0) % 16 / 2] += int32_t(w[k]) * int32_t(xq[k]);
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = lanes[j] + static_cast<float>(sums[j]) * xs[g];
    }
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

namespace {

// Channel k of an INT4 row (kernels.hpp's Int4Matrix): its nibble, as a 4-bit two's complement value.
int int4_at(const uint8_t* row, int64_t k) {
    const int nibble = (row[k / 2] >> (k % 2 * 4)) & 0x0f;
    return (nibble ^ 8) - 8;
}

}  // namespace

float row_dot4(const Int4Matrix& w, int64_t n, const QuantizedRows& x, int64_t row) {
    const uint8_t* wr = w.data + n * (w.cols / 2);
    const float* ws = w.scale + n * (w.cols / w.group);
    const int16_t* xq = x.values + row * x.cols;
    const float* xs = x.scales + row * x.groups;
    float lanes[kLanes] = {};
    for (int64_t g0 = 0, g = 0; g0 < w.cols; g0 += w.group, ++g) {
        int32_t sums[kLanes] = {};
        for (int64_t k = g0; k < g0 + w.group; ++k) sums[(k - g0) % 32 / 4] += int4_at(wr, k) * int32_t(xq[k]);
        const float c = ws[g] * xs[g0 / kGroup];
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] = lanes[j] + static_cast<float>(sums[j]) * c;
    }
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

namespace {

void block_dot_generic(const int8_t* w, int nw, const QuantizedRows& x, int64_t row, int m, float* out) {
    for (int r = 0; r < nw; ++r)
        for (int i = 0; i < m; ++i) out[r * kBlockRows + i] = row_dot(w + r * x.cols, x, row + i);
}

void block_dot4_generic(const Int4Matrix& w, int64_t n, int nw, const QuantizedRows& x, int64_t row, int m,
                        float* out) {
    for (int r = 0; r < nw; ++r)
        for (int i = 0; i < m; ++i) out[r * kBlockRows + i] = row_dot4(w, n + r, x, row + i);
}

const KernelSet kGeneric{"generic", 1, block_dot_generic, 1, 1, block_dot4_generic};

}  // namespace

const KernelSet& generic_kernels() { return kGeneric; }

}  // namespace qwen3tts::native
