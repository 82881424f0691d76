#include "dispatch.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

namespace qwen3tts::native {
namespace {

// Output channels per scheduling unit (a multiple of kBlock); rows of x per pass over a weight block
// (their int16 copies, 32 x K x 2 bytes, stay in L2 while a thread walks its weight rows).
constexpr int64_t kRowsPerTask = 16;
constexpr int64_t kXRowsPerPass = 32;

// libgcc's checks include the OS having enabled the register state (XCR0) for AVX and AVX-512.
bool cpu_has_avx2() { return __builtin_cpu_supports("avx2"); }
bool cpu_has_avx_vnni() { return cpu_has_avx2() && __builtin_cpu_supports("avxvnni"); }
bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }
bool cpu_has_avx512_vnni() { return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni"); }

const KernelSet& best_kernels() {
    if (cpu_has_avx512_vnni()) return avx512_vnni_kernels();
    if (cpu_has_avx512()) return avx512_kernels();
    if (cpu_has_avx_vnni()) return avx_vnni_kernels();
    if (cpu_has_avx2()) return avx2_kernels();
    return generic_kernels();
}

void output_rows(const KernelSet& kernels, const QuantizedRows& x, const Int8Matrix& w, int64_t n_begin,
                 int64_t n_end, float* y) {
    const int64_t K = w.cols, N = w.rows;
    float out[2 * kBlock];
    if (x.rows <= kStreamRowsMax) {  // decode steps: stream the weight rows one after the other
        for (int64_t n = n_begin; n < n_end; ++n) {
            for (int64_t m = 0; m < x.rows; m += kRowDotRows) {  // a row's later passes read it from L1
                const int rows = static_cast<int>(std::min<int64_t>(kRowDotRows, x.rows - m));
                kernels.row_dot(w.data + n * K, x, m, rows, out);
                for (int i = 0; i < rows; ++i) y[(m + i) * N + n] = out[i] * w.scale[n];
            }
        }
        return;
    }
    const int64_t blocked_end = n_begin + (n_end - n_begin) / kBlock * kBlock;
    for (int64_t m0 = 0; m0 < x.rows; m0 += kXRowsPerPass) {
        const int64_t m1 = std::min(x.rows, m0 + kXRowsPerPass);
        for (int64_t n = n_begin; n < blocked_end; n += kBlock) {
            for (int64_t m = m0; m < m1; m += 2) {  // this block's weights stay in L1 across the rows of x
                const int rows = m + 1 < m1 ? 2 : 1;
                kernels.block_dot(w.data + n * K, K, x, m, rows, out);
                for (int i = 0; i < rows; ++i)
                    for (int64_t r = 0; r < kBlock; ++r) y[(m + i) * N + n + r] = out[i * kBlock + r] * w.scale[n + r];
            }
        }
        for (int64_t n = blocked_end; n < n_end; ++n)
            for (int64_t m = m0; m < m1; ++m) y[m * N + n] = row_dot(w.data + n * K, x, m) * w.scale[n];
    }
}

}  // namespace

const KernelSet* kernels_named(const std::string& name) {
    if (name == "generic") return &generic_kernels();
    if (name == "avx2") return cpu_has_avx2() ? &avx2_kernels() : nullptr;
    if (name == "avx_vnni") return cpu_has_avx_vnni() ? &avx_vnni_kernels() : nullptr;
    if (name == "avx512") return cpu_has_avx512() ? &avx512_kernels() : nullptr;
    if (name == "avx512_vnni") return cpu_has_avx512_vnni() ? &avx512_vnni_kernels() : nullptr;
    return nullptr;
}

const KernelSet& active_kernels() {
    static const KernelSet& chosen = []() -> const KernelSet& {
        const char* wanted = std::getenv("QWEN3TTS_NATIVE_ISA");
        if (wanted != nullptr && *wanted != '\0') {
            if (const KernelSet* named = kernels_named(wanted)) return *named;
        }
        return best_kernels();
    }();
    return chosen;
}

void matmul(const KernelSet& chosen, const float* x, int64_t m, const Int8Matrix& w, float* y) {
    if (m <= 0 || w.rows <= 0) return;
    const KernelSet& kernels = w.cols % chosen.cols_multiple == 0 ? chosen : generic_kernels();
    const int64_t groups = num_groups(w.cols);
    thread_local std::vector<int16_t> values;  // the calling thread's scratch, reused call after call
    thread_local std::vector<float> scales;
    values.resize(static_cast<size_t>(m * w.cols));
    scales.resize(static_cast<size_t>(m * groups));
    quantize_rows(x, m, w.cols, values.data(), scales.data());
    const QuantizedRows rows{values.data(), scales.data(), m, w.cols, groups};
    const int64_t tasks = (w.rows + kRowsPerTask - 1) / kRowsPerTask;
    // static: one contiguous run of output channels per thread, so each streams its own weight rows
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, tasks),
        [&](const tbb::blocked_range<int64_t>& range) {
            const int64_t n_end = std::min(w.rows, range.end() * kRowsPerTask);
            output_rows(kernels, rows, w, range.begin() * kRowsPerTask, n_end, y);
        },
        tbb::static_partitioner());
}

}  // namespace qwen3tts::native
