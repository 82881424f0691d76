// One weight matrix of the fused code predictor: the bundle's INT8 or INT4 tensor, whichever it holds (a
// bundle may mix them: nncf keeps a matrix INT8 under a mixed policy, or where no INT4 group of 32 or more
// divides its input channels), and the product over a run of its output rows with the matching kernel.
#pragma once

#include <cstdint>

#include "kernels.hpp"

namespace qwen3tts::native {

struct WeightMatrix {
    Int8Matrix int8{};  // in use if int8.data is set
    Int4Matrix int4{};  // in use if int4.data is set (never both: the setters clear the other)

    bool is_int4() const { return int4.data != nullptr; }
    bool empty() const { return int8.data == nullptr && int4.data == nullptr; }
    int64_t rows() const { return is_int4() ? int4.rows : int8.rows; }
    int64_t cols() const { return is_int4() ? int4.cols : int8.cols; }
};

// y[i, n] (row stride w.rows()) for every row i of x and the output rows n in [n_begin, n_end), `nw`
// weight rows per kernel call (weight_rows_per_block): kernels.hpp's y for INT8, y4 for INT4.
void product_rows(const KernelSet& kernels, const WeightMatrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y);

}  // namespace qwen3tts::native
