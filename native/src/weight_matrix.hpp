// One weight matrix of the fused code predictor: the bundle's INT8 or INT4 tensor, whichever it holds (a
// bundle may mix them: nncf keeps a matrix INT8 under a mixed policy, or where no INT4 group of 32 or more
// divides its input channels), and the product over a run of its output rows with the matching kernel (the
// INT8 one, product_int8, is every INT8 product's).
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

// y[i, n] = kernels.hpp's y (row stride w.rows) for every row i of x and the output rows n in [n_begin,
// n_end): blocks of `nw` weight rows, each against the rows of x kBlockRows at a time (a block's later
// passes read its weights from L1), kGemmRowsPerPass rows of x per walk over the weights so that their
// int16 copy stays in L2; one row of x on a set with DecodeRows takes the rows in one call. Every INT8
// product of native/: the op's (dispatch.cpp), the native talker's and the code predictor's.
void product_int8(const KernelSet& kernels, const Int8Matrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y);

// The same for a code-predictor matrix, INT8 (product_int8) or INT4 (kernels.hpp's y4; one to four rows of x
// on a set with DecodeRows4 in one call).
void product_rows(const KernelSet& kernels, const WeightMatrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y);

}  // namespace qwen3tts::native
