// Which kernel set runs, and the threaded product over all output channels.
#pragma once

#include <cstdint>
#include <string>

#include "kernels.hpp"

namespace qwen3tts::native {

// The kernel set called `name` if this CPU can run it, else nullptr.
const KernelSet* kernels_named(const std::string& name);

// The fastest set this CPU runs, or the one the environment variable QWEN3TTS_NATIVE_ISA names
// (ignored, with the best set used, if this CPU cannot run it). Decided once per process.
const KernelSet& active_kernels();

// y [m, w.rows] = x [m, w.cols] times w^T, scaled per output channel (kernels.hpp's arithmetic); output
// channels split over the calling TBB arena's threads (inside the CPU plugin: the infer request's).
void matmul(const KernelSet& kernels, const float* x, int64_t m, const Int8Matrix& w, float* y);

}  // namespace qwen3tts::native
