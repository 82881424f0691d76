// Portable code: activation quantization (the same on every machine), the reference kernel every SIMD
// set is tested against, and the path on CPUs without AVX2.
#include <cmath>

#include "kernels.hpp"

namespace qwen3tts::native {

void quantize_rows(const float* x, int64_t rows, int64_t cols, int16_t* values, float* scales) {
    const int64_t groups = num_groups(cols);
    for (int64_t m = 0; m < rows; ++m) {
        const float* xr = x + m * cols;
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t k0 = g * kGroup, k1 = k0 + kGroup < cols ? k0 + kGroup : cols;
            float largest = 0.0f;
            for (int64_t k = k0; k < k1; ++k) {
                const float a = std::fabs(xr[k]);
                if (a > largest || a != a) largest = a;  // a NaN becomes the scale, so it reaches y
            }
            // a group of zeros quantizes to zeros with scale 0
            const float inverse = largest > 0.0f ? 32767.0f / largest : (largest == 0.0f ? 0.0f : largest);
            for (int64_t k = k0; k < k1; ++k) {
                const float q = std::nearbyint(xr[k] * inverse);
                values[m * cols + k] = static_cast<int16_t>(std::fmax(-32767.0f, std::fmin(32767.0f, q)));
            }
            scales[m * groups + g] = largest / 32767.0f;
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

void block_dot_generic(const int8_t* w, int nw, const QuantizedRows& x, int64_t row, int m, float* out) {
    for (int r = 0; r < nw; ++r)
        for (int i = 0; i < m; ++i) out[r * kBlockRows + i] = row_dot(w + r * x.cols, x, row + i);
}

const KernelSet kGeneric{"generic", 1, block_dot_generic, 1, 1};

}  // namespace

const KernelSet& generic_kernels() { return kGeneric; }

}  // namespace qwen3tts::native
