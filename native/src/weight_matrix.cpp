#include "weight_matrix.hpp"

#include <algorithm>

namespace qwen3tts::native {

void product_int8(const KernelSet& kernels, const Int8Matrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y) {
    const int64_t N = w.rows, K = w.cols;
    const bool decode = x.rows >= 1 && x.rows <= kDecodeRowsMax;  // a decode step: its rows in one call
    if (decode && nw == 1 && kernels.decode_rows != nullptr) {
        kernels.decode_rows(w.data + n_begin * K, n_end - n_begin, w.scale + n_begin, x, y + n_begin, N);
        return;
    }
    float out[kBlockRows * kBlockRows];
    for (int64_t pass = 0; pass < x.rows; pass += kGemmRowsPerPass) {  // rows of x that stay in L2 meanwhile
        const int64_t pass_end = std::min(x.rows, pass + kGemmRowsPerPass);
        for (int64_t n = n_begin; n < n_end; n += nw) {
            const int rows_w = static_cast<int>(std::min<int64_t>(nw, n_end - n));
            for (int64_t r0 = pass; r0 < pass_end; r0 += kBlockRows) {
                const int rows_x = static_cast<int>(std::min<int64_t>(kBlockRows, pass_end - r0));
                kernels.block_dot(w.data + n * K, rows_w, x, r0, rows_x, out);
                for (int r = 0; r < rows_w; ++r)
                    for (int i = 0; i < rows_x; ++i) y[(r0 + i) * N + n + r] = out[r * kBlockRows + i] * w.scale[n + r];
            }
        }
    }
}

void product_rows(const KernelSet& kernels, const WeightMatrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y) {
    if (!w.is_int4()) return product_int8(kernels, w.int8, x, n_begin, n_end, nw, y);
    if (x.rows >= 1 && x.rows <= kDecodeRows4Max && kernels.decode_rows4 != nullptr) {  // as product_int8
        kernels.decode_rows4(w.int4, n_begin, n_end - n_begin, x, y);
        return;
    }
    const int64_t N = w.rows();
    float out[kBlockRows * kBlockRows];
    for (int64_t n = n_begin; n < n_end; n += nw) {
        const int rows_w = static_cast<int>(std::min<int64_t>(nw, n_end - n));
        for (int64_t r0 = 0; r0 < x.rows; r0 += kBlockRows) {
            const int rows_x = static_cast<int>(std::min<int64_t>(kBlockRows, x.rows - r0));
            kernels.block_dot4(w.int4, n, rows_w, x, r0, rows_x, out);  // the group scales are applied inside
            for (int r = 0; r < rows_w; ++r)
                for (int i = 0; i < rows_x; ++i) y[(r0 + i) * N + n + r] = out[r * kBlockRows + i];
        }
    }
}

}  // namespace qwen3tts::native
