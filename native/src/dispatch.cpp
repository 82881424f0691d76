#include "dispatch.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

namespace qwen3tts::native {
namespace {

// Output channels per scheduling unit (a multiple of kBlock); rows of x per pass over a weight panel
// (16 x K x 4 bytes, at most 192 KiB: they stay in L2 while a thread walks its weight rows).
constexpr int64_t kRowsPerTask = 16;
constexpr int64_t kPanelRowsPerPass = 16;

// libgcc's checks include the OS having enabled the register state (XCR0) for AVX and AVX-512.
bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
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

// Few rows of x, quantized: each output channel's weight row streamed once, kRowDotRows rows of x per pass.
void streamed_rows(const KernelSet& kernels, const QuantizedRows& x, const Int8Matrix& w, int64_t n_begin,
                   int64_t n_end, float* y) {
    const int64_t K = w.cols, N = w.rows;
    float out[kRowDotRows];
    for (int64_t n = n_begin; n < n_end; ++n) {
        for (int64_t m = 0; m < x.rows; m += kRowDotRows) {  // a row's later passes read it from L1
            const int rows = static_cast<int>(std::min<int64_t>(kRowDotRows, x.rows - m));
            kernels.row_dot(w.data + n * K, x, m, rows, out);
            for (int i = 0; i < rows; ++i) y[(m + i) * N + n] = out[i] * w.scale[n];
        }
    }
}

// Many rows of x, f32: kBlock weight rows widened to an f32 panel, then kPanelRowsPerPass rows of x
// against it, two at a time.
void panel_rows(const KernelSet& kernels, const float* x, int64_t m_rows, const Int8Matrix& w, int64_t n_begin,
                int64_t n_end, float* y) {
    const int64_t K = w.cols, N = w.rows;
    const int64_t blocked_end = n_begin + (n_end - n_begin) / kBlock * kBlock;
    thread_local std::vector<float> panel;
    panel.resize(static_cast<size_t>(kBlock * K));
    float out[2 * kBlock];
    for (int64_t m0 = 0; m0 < m_rows; m0 += kPanelRowsPerPass) {
        const int64_t m1 = std::min(m_rows, m0 + kPanelRowsPerPass);
        for (int64_t n = n_begin; n < blocked_end; n += kBlock) {
            const int8_t* rows = w.data + n * K;
            for (int64_t i = 0; i < kBlock * K; ++i) panel[i] = static_cast<float>(rows[i]);
            for (int64_t m = m0; m < m1; m += 2) {
                const int count = m + 1 < m1 ? 2 : 1;
                kernels.panel_dot(panel.data(), x + m * K, K, count, out);
                for (int i = 0; i < count; ++i)
                    for (int64_t r = 0; r < kBlock; ++r) y[(m + i) * N + n + r] = out[i * kBlock + r] * w.scale[n + r];
            }
        }
        for (int64_t n = blocked_end; n < n_end; ++n)
            for (int64_t m = m0; m < m1; ++m) y[m * N + n] = row_dot_f32(w.data + n * K, x + m * K, K) * w.scale[n];
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
    const int64_t tasks = (w.rows + kRowsPerTask - 1) / kRowsPerTask;
    auto over_channels = [&](auto&& run) {
        // static: one contiguous run of output channels per thread, so each streams its own weight rows
        tbb::parallel_for(
            tbb::blocked_range<int64_t>(0, tasks),
            [&](const tbb::blocked_range<int64_t>& range) {
                run(range.begin() * kRowsPerTask, std::min(w.rows, range.end() * kRowsPerTask));
            },
            tbb::static_partitioner());
    };
    if (m > kStreamRowsMax) {
        over_channels([&](int64_t n_begin, int64_t n_end) { panel_rows(kernels, x, m, w, n_begin, n_end, y); });
        return;
    }
    const int64_t groups = num_groups(w.cols);
    thread_local std::vector<int16_t> values;  // the calling thread's scratch, reused call after call
    thread_local std::vector<float> scales;
    values.resize(static_cast<size_t>(m * w.cols));
    scales.resize(static_cast<size_t>(m * groups));
    quantize_rows(x, m, w.cols, values.data(), scales.data());
    const QuantizedRows rows{values.data(), scales.data(), m, w.cols, groups};
    over_channels([&](int64_t n_begin, int64_t n_end) { streamed_rows(kernels, rows, w, n_begin, n_end, y); });
}

}  // namespace qwen3tts::native
