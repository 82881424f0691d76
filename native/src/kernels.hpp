// Matrix products with 8-bit weights: the arithmetic of the CompressedMatMul op.
//
//   y[m, n] = scale[n] * sum over groups g of  xs[m, g] * (sum_{k in g} w[n, k] * xq[m, k])
//
// w is the INT8_SYM weight matrix nncf stores (one f32 scale per output channel). The activations x are
// quantized to int16 per group of kGroup input channels (xq = round(x / xs), xs = max|x| / 32767): the
// products of a group then sum exactly in int32, whatever the instruction set. That costs at most
// max|x in the group| / 65534 per activation, about 1/250 of what the INT8 weights already cost.
//
// The f32 part has one fixed order on every CPU, so that every kernel set returns bit-identical
// results: the integer products go into 8 lanes (lane j takes input channels k with (k - g0) mod 16 in
// {2j, 2j+1}, g0 the group's first channel: what vpmaddwd does on 256 bits); after each group, lane j
// adds float(its integer sum) * xs[m, g] to its f32 sum (a multiply, then an add: never fused); at the
// end the 8 lanes are added as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
#pragma once

#include <cstdint>

namespace qwen3tts::native {

constexpr int64_t kGroup = 128;  // input channels per activation scale (a multiple of 32)
constexpr int64_t kBlock = 4;    // output channels per PanelDot call (they share each load of x)
constexpr int64_t kLanes = 8;    // the arithmetic's integer / f32 lanes (above)

struct Int8Matrix {
    const int8_t* data;  // [rows, cols], row-major: one output channel per row
    const float* scale;  // [rows]
    int64_t rows;        // N: output channels
    int64_t cols;        // K: input channels
};

struct QuantizedRows {
    const int16_t* values;  // [rows, cols]
    const float* scales;    // [rows, groups]
    int64_t rows;           // M
    int64_t cols;           // K
    int64_t groups;         // ceil(K / kGroup)
};

inline int64_t num_groups(int64_t cols) { return (cols + kGroup - 1) / kGroup; }

// xq and xs of x [rows, cols] f32 (kernels_generic.cpp: plain x86-64, the same on every machine).
void quantize_rows(const float* x, int64_t rows, int64_t cols, int16_t* values, float* scales);

// out[i] = the sum above (without scale[n]) for ONE weight row and `m` (1 to kRowDotRows) rows of x
// starting at `row`. For few rows of x (decode steps): the weights are read as one sequential stream,
// prefetched ahead, which is what keeps a core at its memory bandwidth here (four interleaved row
// streams measured half of it on Zen 1).
using RowDot = void (*)(const int8_t* w, const QuantizedRows& x, int64_t row, int m, float* out);

// Many rows of x (prefill): compute, not bandwidth, bounds the product, and the int16 path measured
// 1.3-1.5x slower than the plugin's f32 GEMM there. So the weights are widened to an f32 panel once per
// kBlock rows and multiplied with the f32 activations as they are (no quantization), in one fixed order
// as well: 8 lanes, lane j takes k = j mod 8, one fused multiply-add per k in increasing k (a single
// rounding, the same in std::fma), then the lane tree above.
// out[i * kBlock + r] = sum_k panel[r * cols + k] * x[i * cols + k] for `m` (1 or 2) rows i of x.
using PanelDot = void (*)(const float* panel, const float* x, int64_t cols, int m, float* out);

struct KernelSet {
    const char* name;       // "generic", "avx2", "avx_vnni", "avx512", "avx512_vnni"
    int64_t cols_multiple;  // K must be a multiple of this for the kernels (else the generic set runs)
    RowDot row_dot;
    PanelDot panel_dot;
};

// Bytes ahead of the current weight that the streaming kernel prefetches (into the next rows).
constexpr int64_t kPrefetchBytes = 1024;
constexpr int kRowDotRows = 4;  // rows of x one RowDot call takes
constexpr int64_t kStreamRowsMax = 8;  // up to this many rows of x: int16 activations, weights streamed

// Defined in kernels_<isa>.cpp; each file is compiled with its own -m flags and only called on a CPU
// that reports those instructions (dispatch.cpp).
const KernelSet& generic_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx_vnni_kernels();
const KernelSet& avx512_kernels();
const KernelSet& avx512_vnni_kernels();

// One output channel in the same arithmetics (matrix ends that do not fill a block): the references.
float row_dot(const int8_t* w, const QuantizedRows& x, int64_t row);
float row_dot_f32(const int8_t* w, const float* x, int64_t cols);

}  // namespace qwen3tts::native
