// Matrix products with 8-bit weights: the arithmetic of the CompressedMatMul op (and, below, its INT4 twin
// for the fused code predictor).
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
// end the 8 lanes are added as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)). Integer sums are
// exact in any order (|w xq| <= 127 * 32767, 128 of them stay far below 2^31), so a kernel may split a
// lane over several registers and add them at the group's end: blocking never changes a result.
#pragma once

#include <cstdint>

namespace qwen3tts::native {

constexpr int64_t kGroup = 128;  // input channels per activation scale (a multiple of 32)
constexpr int64_t kLanes = 8;    // the arithmetic's integer / f32 lanes (above)

struct Int8Matrix {
    const int8_t* data;  // [rows, cols], row-major: one output channel per row
    const float* scale;  // [rows]
    int64_t rows;        // N: output channels
    int64_t cols;        // K: input channels
};

// INT4_SYM weights as nncf stores them (a Constant i4 [rows, cols / group, group], read in place from the
// mapped file): channel k of row n is the 4-bit two's complement value (-8..7) in byte (n * cols + k) / 2,
// the low nibble for even k, the high one for odd k (OpenVINO's i4 layout); one f32 scale (the bundle's
// f16, widened) per row and group of `group` input channels. See y4 below.
struct Int4Matrix {
    const uint8_t* data;  // [rows, cols / 2]
    const float* scale;   // [rows, cols / group]
    int64_t rows;         // N: output channels
    int64_t cols;         // K: input channels, a multiple of group
    int64_t group;        // 32, 64 or 128 (int4_group_supported)
};

// The INT4 product, in the same family (the activations quantized as above, once per product input):
//
//   y4[m, n] = sum over weight groups g of  (ws[n, g] * xs[m, a(g)]) * (sum_{k in g} w[n, k] * xq[m, k])
//
// with a(g) the activation group that holds weight group g (a weight group divides kGroup, so it never
// straddles two). The integer products of a weight group go into 8 lanes, lane j taking the channels k with
// (k - g0) mod 32 in [4j, 4j + 4), g0 the weight group's first channel (not the INT8 lanes: this is what
// the kernels get when they unpack a row's bytes as they lie, below); after each weight group lane j adds
// float(its sum) * c, where c = ws[n, g] * xs[m, a(g)] is rounded to f32 once; the same tree adds the lanes
// at the end, and nothing multiplies after it (the weight scale is per group). |w xq| <= 8 * 32767: a
// group's sum is exact.
//
// The SIMD kernels sign-extend a row's bytes to int16 as they are (one instruction) and take each byte's
// high nibble with one shift, its low one with two: one register of even channels, one of odd ones. So
// they read x in that order too (split4_rows: per block of 64 channels, its 32 even channels, then its 32
// odd ones), made once per product input beside xq. Unpacking into channel order took a shuffle and two
// shifts per register and left the INT4 frame bound by instructions (docs/benchmarks.md).
inline bool int4_group_supported(int64_t group) { return group == 32 || group == 64 || group == 128; }

struct QuantizedRows {
    const int16_t* values;  // [rows, cols]
    const float* scales;    // [rows, groups]
    int64_t rows;           // M
    int64_t cols;           // K
    int64_t groups;         // ceil(K / kGroup)
    const int16_t* split = nullptr;  // [rows, cols]: values in split4_rows' order, for INT4 products
};

inline int64_t num_groups(int64_t cols) { return (cols + kGroup - 1) / kGroup; }

// xq and xs of x [rows, cols] f32 (kernels_generic.cpp: plain x86-64, the same on every machine).
void quantize_rows(const float* x, int64_t rows, int64_t cols, int16_t* values, float* scales);

// values [rows, cols] (cols a multiple of 32) in the INT4 kernels' order: each block of 64 channels (the
// last one of 32 if cols is an odd multiple of 32) as its even channels, then its odd ones.
void split4_rows(const int16_t* values, int64_t rows, int64_t cols, int16_t* split);

// out[r * kBlockRows + i] = the sum above (without scale[n]) for `nw` (1 to kBlockRows) consecutive
// weight rows starting at w (row stride x.cols) and `m` (1 to kBlockRows) rows of x starting at `row`.
// Every row count takes this path: the weights are read as one sequential stream per weight row,
// prefetched ahead, which keeps a core at its memory bandwidth for decode steps (four interleaved row
// streams measured half of it on Zen 1, so the AVX2 sets block one weight row when x has few rows);
// with many rows of x (prefill) a block of weight rows stays in registers while rows of x pass by, so
// each widened weight feeds up to kBlockRows x kBlockRows integer dot products.
using BlockDot = void (*)(const int8_t* w, int nw, const QuantizedRows& x, int64_t row, int m, float* out);

// out[r * kBlockRows + i] = y4[row + i, n + r] (above, complete: the group scales are inside) for `nw`
// (1 to kBlockRows) consecutive weight rows from row n of w and `m` (1 to kBlockRows) rows of x from `row`.
// Blocked and streamed as BlockDot is.
using BlockDot4 = void (*)(const Int4Matrix& w, int64_t n, int nw, const QuantizedRows& x, int64_t row, int m,
                           float* out);

// y[i * y_stride + r] = (the sum above for weight row r of w and row i of x) * scale[r], for r < n and every
// row i of x (at most kDecodeRowsMax): a decode step's product over a range of weight rows in one call, for
// a set whose one-row BlockDot is straight-line (dot_kernels.hpp's straight_row, which takes up to
// kDecodeRowsMax rows of x against one weight row). The same arithmetic as a BlockDot call per row; without
// the call, its dispatch and the caller's store between rows, the loop goes from one row's end to the next
// row's start as one stream (the product's kernel read 30-34 GB/s from DRAM where a flat probe loop of the same
// arithmetic read 35-50, docs/benchmarks.md).
using DecodeRows = void (*)(const int8_t* w, int64_t n, const float* scale, const QuantizedRows& x, float* y,
                            int64_t y_stride);
constexpr int64_t kDecodeRowsMax = 4;

// y[i * w.rows + r] = y4[i, r] (above) for every row i of x (1 to kDecodeRows4Max) and r in [n, n + count):
// DecodeRows for INT4 weights, each weight row read once for both rows of x (dot4_kernels.hpp). The INT4
// kernels (this and BlockDot4) read x.split, which every caller of a SIMD set fills.
using DecodeRows4 = void (*)(const Int4Matrix& w, int64_t n, int64_t count, const QuantizedRows& x, float* y);
constexpr int64_t kDecodeRows4Max = 4;

struct KernelSet {
    const char* name;       // "generic", "avx2", "avx_vnni", "avx512", "avx512_vnni"
    int64_t cols_multiple;  // K must be a multiple of this for the kernels (else the generic set runs)
    BlockDot block_dot;
    int stream_block;  // weight rows per block when x has at most kStreamRowsMax rows (decode steps)
    int gemm_block;    // weight rows per block with more rows of x (prefill)
    BlockDot4 block_dot4;
    DecodeRows decode_rows = nullptr;  // where the set has it: one row of x against one weight row a time
    DecodeRows4 decode_rows4 = nullptr;  // the same for INT4 weights
};

// Bytes ahead of the current weight that the kernels prefetch, per weight row of a block (dot_kernels.hpp).
constexpr int64_t kPrefetchBytes = 1024;
constexpr int kBlockRows = 4;          // most weight rows, and rows of x, one BlockDot call takes
constexpr int64_t kStreamRowsMax = 8;  // up to this many rows of x: stream_block weight rows per block
constexpr int64_t kGemmRowsPerPass = 128;  // rows of x per pass over the weights (their int16 copy in L2)

// Defined in kernels_<isa>.cpp; each file is compiled with its own -m flags and only called on a CPU
// that reports those instructions (dispatch.cpp).
const KernelSet& generic_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx_vnni_kernels();
const KernelSet& avx512_kernels();
const KernelSet& avx512_vnni_kernels();

// Weight rows per block_dot call for m rows of x in the fused decode (predictor_frame.cpp): the kernel
// set's stream_block or gemm_block, one on AMD cores at one or two rows of x of an INT8 matrix, or what
// QWEN3TTS_NATIVE_BLOCKS asks for. Blocking never changes a result.
int weight_rows_per_block(const KernelSet& kernels, int64_t m, bool int4 = false);

// One output channel in the same arithmetic: the reference every kernel set is tested against.
float row_dot(const int8_t* w, const QuantizedRows& x, int64_t row);

// y4[row, n] (above): the INT4 reference every kernel set is tested against.
float row_dot4(const Int4Matrix& w, int64_t n, const QuantizedRows& x, int64_t row);

}  // namespace qwen3tts::native
