#include "thread_pool.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>

namespace qwen3tts::native {
namespace {

// How long a waiter spins before it sleeps: long enough for the other threads to finish a matrix of
// one decode step (tens of microseconds), short enough not to steal a shared core for long.
constexpr auto kSpin = std::chrono::microseconds(50);

void futex_wait(const std::atomic<uint32_t>& word, uint32_t seen) {
    syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

void wait_for_change(const std::atomic<uint32_t>& word, uint32_t seen, std::atomic<int>& sleepers) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1; word.load(std::memory_order_acquire) == seen; ++i) {
        __builtin_ia32_pause();
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) {
            sleepers.fetch_add(1, std::memory_order_seq_cst);
            while (word.load(std::memory_order_seq_cst) == seen) futex_wait(word, seen);
            sleepers.fetch_sub(1, std::memory_order_seq_cst);
            return;
        }
    }
}

void publish_change(std::atomic<uint32_t>& word, std::atomic<int>& sleepers) {
    word.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(word);
}

void Barrier::wait() {
    const uint32_t seen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == parties_ - 1) {
        arrived_.store(0, std::memory_order_relaxed);
        publish_change(generation_, sleepers_);
        return;
    }
    wait_for_change(generation_, seen, sleepers_);
}

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads), barrier_(threads_) {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
    stop_.store(true, std::memory_order_seq_cst);
    publish_change(job_generation_, job_sleepers_);
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::run(const std::function<void(int)>& job) {
    job_ = &job;
    publish_change(job_generation_, job_sleepers_);
    job(0);
    barrier_.wait();  // every worker has finished its part
}

void ThreadPool::work(int index) {
    uint32_t seen = 0;
    for (;;) {
        wait_for_change(job_generation_, seen, job_sleepers_);
        seen = job_generation_.load(std::memory_order_acquire);
        if (stop_.load(std::memory_order_acquire)) return;
        (*job_)(index);
        barrier_.wait();
    }
}

}  // namespace qwen3tts::native
