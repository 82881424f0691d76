// The read limit a memory-bound decode stage is judged against (daemon/qwen3tts/bench/read_limit.py).
//
// `threads` threads each stream their own contiguous part of one buffer with the widest loads the CPU
// has, adding them into four independent accumulators so that the loads are the only work; a pass ends
// when the last thread is done; the figure is the best of `passes` passes. The buffer is as large as the
// stage's weights: if those fit the last-level cache the passes read from it, else from DRAM, as the
// stage does. A small buffer is swept several times per pass (at least kMinPassBytes), so that a pass is
// long against the clock and the barriers. Which loads: chosen at run time (AVX-512, AVX2, else a
// portable loop of 64-bit words), in functions compiled for their target only (the library's baseline
// stays plain x86-64).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kStride = 256;               // bytes per loop iteration of every kernel
constexpr size_t kMinPassBytes = 64u << 20;  // smallest read per pass (tiny buffers are swept again)

using ReadKernel = uint64_t (*)(const unsigned char* data, size_t bytes);  // bytes: a multiple of kStride

__attribute__((target("avx512f"))) uint64_t read_avx512(const unsigned char* data, size_t bytes) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < bytes; i += kStride) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(data + i));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(data + i + 64));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(data + i + 128));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(data + i + 192));
    }
    // (stored and summed here: gcc 12's _mm512_reduce_add_epi64 warns about its own undefined idiom)
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    uint64_t sum = 0;
    for (uint64_t lane : lanes) sum += lane;
    return sum;
}

__attribute__((target("avx2"))) uint64_t read_avx2(const unsigned char* data, size_t bytes) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < bytes; i += kStride) {
        const unsigned char* p = data + i;
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 96)));
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 128)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 160)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 192)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 224)));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t read_generic(const unsigned char* data, size_t bytes) {
    const uint64_t* words = reinterpret_cast<const uint64_t*>(data);
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < bytes / 8; i += 4) {
        a0 += words[i];
        a1 += words[i + 1];
        a2 += words[i + 2];
        a3 += words[i + 3];
    }
    return a0 + a1 + a2 + a3;
}

struct Kernel {
    const char* name;
    ReadKernel read;
};

bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f"); }
bool cpu_has_avx2() { return __builtin_cpu_supports("avx2"); }

// The kernel called `name` ("" or "auto": the widest this CPU runs), or {nullptr, nullptr}.
Kernel kernel_named(const std::string& name) {
    const bool any = name.empty() || name == "auto";
    if ((any || name == "avx512") && cpu_has_avx512()) return {"avx512", read_avx512};
    if ((any || name == "avx2") && cpu_has_avx2()) return {"avx2", read_avx2};
    if (any || name == "generic") return {"generic", read_generic};
    return {nullptr, nullptr};
}

// A sense-reversing spin barrier: a pass's threads start together and the pass ends with the last one.
class SpinBarrier {
public:
    explicit SpinBarrier(int count) : count_(count), waiting_(0), sense_(false) {}
    void wait() {
        const bool sense = !sense_.load(std::memory_order_relaxed);
        if (waiting_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
            waiting_.store(0, std::memory_order_relaxed);
            sense_.store(sense, std::memory_order_release);
        } else {
            while (sense_.load(std::memory_order_acquire) != sense) std::this_thread::yield();
        }
    }

private:
    const int count_;
    std::atomic<int> waiting_;
    std::atomic<bool> sense_;
};

volatile uint64_t g_read_sums;  // the reads' sums end here, so no compiler drops the loads

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Measurement {
    size_t part_bytes;  // per thread, a multiple of kStride
    int sweeps;         // of each part per pass
    int passes;
    double best = 1e300;
    std::atomic<uint64_t> sink{0};
};

// One thread's life: touch its part (first touch puts the pages near it), then every pass between two
// barriers; thread 0 keeps the clock.
void run_thread(int index, unsigned char* buffer, Kernel kernel, Measurement& m, SpinBarrier& barrier) {
    unsigned char* part = buffer + index * m.part_bytes;
    std::memset(part, index + 1, m.part_bytes);
    uint64_t sum = 0;
    for (int pass = 0; pass <= m.passes; ++pass) {  // pass 0 warms the caches and the TLB, and is dropped
        barrier.wait();
        const double started = index == 0 ? seconds_now() : 0.0;
        for (int sweep = 0; sweep < m.sweeps; ++sweep) sum += kernel.read(part, m.part_bytes);
        barrier.wait();
        if (index == 0 && pass > 0) m.best = std::min(m.best, seconds_now() - started);
    }
    m.sink.fetch_add(sum, std::memory_order_relaxed);
}

}  // namespace

extern "C" {

// The read kernel `isa` names ("avx512", "avx2", "generic"; "" or "auto": the widest this CPU runs) if
// this CPU runs it, else nullptr.
__attribute__((visibility("default"))) const char* qwen3tts_native_read_kernel(const char* isa) {
    return kernel_named(isa == nullptr ? "" : isa).name;
}

// Best read bandwidth (bytes per second) of `threads` threads streaming a buffer of about `bytes` bytes
// (rounded up to whole 256-byte blocks per thread) with read kernel `isa`, over `passes` passes; writes
// the buffer size used to *buffer_bytes. Returns -1 if the arguments are out of range or this CPU cannot
// run `isa`, -2 if the buffer cannot be allocated.
__attribute__((visibility("default"))) double qwen3tts_native_read_bandwidth(const char* isa, int64_t bytes,
                                                                             int threads, int passes,
                                                                             int64_t* buffer_bytes) {
    const Kernel kernel = kernel_named(isa == nullptr ? "" : isa);
    if (kernel.read == nullptr || bytes <= 0 || threads < 1 || threads > 1024 || passes < 1) return -1;
    Measurement m;
    m.part_bytes = (static_cast<size_t>(bytes) / threads + kStride - 1) / kStride * kStride;
    const size_t total = m.part_bytes * threads;
    m.sweeps = static_cast<int>(std::max<size_t>(1, (kMinPassBytes + total - 1) / total));
    m.passes = passes;
    unsigned char* buffer = static_cast<unsigned char*>(std::aligned_alloc(64, total));
    if (buffer == nullptr) return -2;
    SpinBarrier barrier(threads);
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t)
        workers.emplace_back(run_thread, t, buffer, kernel, std::ref(m), std::ref(barrier));
    run_thread(0, buffer, kernel, m, barrier);
    for (std::thread& worker : workers) worker.join();
    std::free(buffer);
    if (buffer_bytes != nullptr) *buffer_bytes = static_cast<int64_t>(total);
    g_read_sums = m.sink.load();
    return static_cast<double>(total) * m.sweeps / m.best;
}

}  // extern "C"
