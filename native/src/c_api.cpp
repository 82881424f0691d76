// A plain C entry for tests and benchmarks (Python ctypes): the product with any kernel set this CPU
// runs, without OpenVINO in between.
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "weight_matrix.hpp"

extern "C" {

// The kernel set the op uses in this process ("generic", "avx2", "avx_vnni", "avx512", "avx512_vnni").
__attribute__((visibility("default"))) const char* qwen3tts_native_isa() {
    return qwen3tts::native::active_kernels().name;
}

// 1 if this CPU runs the kernel set `isa`, else 0.
__attribute__((visibility("default"))) int qwen3tts_native_supported(const char* isa) {
    return qwen3tts::native::kernels_named(isa) != nullptr;
}

// y [m, n] = (x [m, k] times w[n, k]^T) * scale[n] with kernel set `isa` (kernels.hpp's arithmetic).
// Returns 0, or -1 if this CPU cannot run `isa`.
__attribute__((visibility("default"))) int qwen3tts_native_matmul_i8(const char* isa, const float* x,
                                                                     int64_t m, const int8_t* w,
                                                                     const float* scale, int64_t n, int64_t k,
                                                                     float* y) {
    const qwen3tts::native::KernelSet* kernels = qwen3tts::native::kernels_named(isa);
    if (kernels == nullptr) return -1;
    const qwen3tts::native::Int8Matrix matrix{w, scale, n, k};
    qwen3tts::native::matmul(*kernels, x, m, matrix, y);
    return 0;
}

// y [m, n] = x [m, k] times the INT4 matrix w [n, k] (packed nibbles, scale [n, k / group]: kernels.hpp's
// Int4Matrix and y4) with kernel set `isa`, `nw` weight rows per kernel call (1, 2 or 4; blocking never
// changes a result), on the calling thread. Returns 0, or -1 if this CPU cannot run `isa` or an argument
// is out of range.
__attribute__((visibility("default"))) int qwen3tts_native_matmul_i4(const char* isa, const float* x, int64_t m,
                                                                     const uint8_t* w, const float* scale,
                                                                     int64_t n, int64_t k, int64_t group, int nw,
                                                                     float* y) {
    using namespace qwen3tts::native;
    const KernelSet* chosen = kernels_named(isa);
    if (chosen == nullptr || m <= 0 || n <= 0 || !int4_group_supported(group) || k % group != 0) return -1;
    if (nw != 1 && nw != 2 && nw != 4) return -1;
    const KernelSet& kernels = k % chosen->cols_multiple == 0 ? *chosen : generic_kernels();
    std::vector<int16_t> values(static_cast<size_t>(m * k));
    std::vector<float> scales(static_cast<size_t>(m * num_groups(k)));
    quantize_rows(x, m, k, values.data(), scales.data());
    std::vector<int16_t> split(values.size());
    split4_rows(values.data(), m, k, split.data());
    WeightMatrix matrix{};
    matrix.int4 = {w, scale, n, k, group};
    product_rows(kernels, matrix, {values.data(), scales.data(), m, k, num_groups(k), split.data()}, 0, n, nw, y);
    return 0;
}

}  // extern "C"
