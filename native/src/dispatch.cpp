#include "dispatch.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "weight_matrix.hpp"

namespace qwen3tts::native {
namespace {

// Output channels per scheduling unit (a multiple of every set's blocks).
constexpr int64_t kRowsPerTask = 16;

// Tuning by environment, for benchmarks only: QWEN3TTS_NATIVE_BLOCKS=<stream>,<gemm> (1, 2 or 4 each).
struct Blocks {
    int stream, gemm;
};
Blocks blocks_for(const KernelSet& kernels) {
    static const char* wanted = std::getenv("QWEN3TTS_NATIVE_BLOCKS");
    if (wanted != nullptr && wanted[0] >= '1' && wanted[0] <= '4' && wanted[1] == ',' && wanted[2] >= '1' &&
        wanted[2] <= '4')
        return {wanted[0] - '0', wanted[2] - '0'};
    return {kernels.stream_block, kernels.gemm_block};
}

// libgcc's checks include the OS having enabled the register state (XCR0) for AVX and AVX-512.
bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool cpu_has_avx_vnni() { return cpu_has_avx2() && __builtin_cpu_supports("avxvnni"); }
bool cpu_has_avx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
bool cpu_has_avx512_vnni() { return cpu_has_avx512() && __builtin_cpu_supports("avx512vnni"); }

const KernelSet& best_kernels() {
    if (cpu_has_avx512_vnni()) return avx512_vnni_kernels();
    if (cpu_has_avx512()) return avx512_kernels();
    if (cpu_has_avx_vnni()) return avx_vnni_kernels();
    if (cpu_has_avx2()) return avx2_kernels();
    return generic_kernels();
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
    const int64_t groups = num_groups(w.cols);
    thread_local std::vector<int16_t> values;  // the calling thread's scratch, reused call after call
    thread_local std::vector<float> scales;
    values.resize(static_cast<size_t>(m * w.cols));
    scales.resize(static_cast<size_t>(m * groups));
    quantize_rows(x, m, w.cols, values.data(), scales.data());
    const QuantizedRows rows{values.data(), scales.data(), m, w.cols, groups};
    const Blocks blocks = blocks_for(kernels);
    const int nw = m <= kStreamRowsMax ? blocks.stream : blocks.gemm;
    over_channels([&](int64_t n_begin, int64_t n_end) { product_int8(kernels, w, rows, n_begin, n_end, nw, y); });
}

}  // namespace qwen3tts::native
