#include "weight_matrix.hpp"

#include <algorithm>

namespace qwen3tts::native {

void product_rows(const KernelSet& kernels, const WeightMatrix& w, const QuantizedRows& x, int64_t n_begin,
                  int64_t n_end, int nw, float* y) {
    const int64_t N = w.rows();
    if (x.rows == 1 && nw == 1 && !w.is_int4() && kernels.decode_rows != nullptr) {  // the rows in one call
        kernels.decode_rows(w.int8.data + n_begin * w.int8.cols, n_end - n_begin, w.int8.scale + n_begin, x, 0,
                            y + n_begin);
        return;
    }
    float out[kBlockRows * kBlockRows];
    for (int64_t n = n_begin; n < n_end; n += nw) {
        const int rows_w = static_cast<int>(std::min<int64_t>(nw, n_end - n));
        for (int64_t r0 = 0; r0 < x.rows; r0 += kBlockRows) {
            const int rows_x = static_cast<int>(std::min<int64_t>(kBlockRows, x.rows - r0));
            if (w.is_int4()) {  // the group scales are applied inside the kernel
                kernels.block_dot4(w.int4, n, rows_w, x, r0, rows_x, out);
                for (int r = 0; r < rows_w; ++r)
                    for (int i = 0; i < rows_x; ++i) y[(r0 + i) * N + n + r] = out[r * kBlockRows + i];
            } else {
                kernels.block_dot(w.int8.data + n * w.int8.cols, rows_w, x, r0, rows_x, out);
                for (int r = 0; r < rows_w; ++r)
                    for (int i = 0; i < rows_x; ++i)
                        y[(r0 + i) * N + n + r] = out[r * kBlockRows + i] * w.int8.scale[n + r];
            }
        }
    }
}

}  // namespace qwen3tts::native
