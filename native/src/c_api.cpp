// A plain C entry for tests and benchmarks (Python ctypes): the product with any kernel set this CPU
// runs, without OpenVINO in between.
#include <cstdint>
#include <string>

#include "dispatch.hpp"

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

}  // extern "C"
