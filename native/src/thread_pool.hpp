// A persistent pool for the fused decode (predictor.cpp): the threads are made once, one job at a time
// runs on all of them (the caller is thread 0), and a barrier separates dependent matrices inside it.
// Waiting spins briefly (a barrier between two matrices costs ~1 us that way), then sleeps on a futex, so
// an idle daemon, or a machine with more busy threads than cores, does not burn a core.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace qwen3tts::native {

// All `parties` threads call wait(); none returns before the last one has arrived.
class Barrier {
public:
    explicit Barrier(int parties) : parties_(parties) {}
    void wait();

private:
    const int parties_;
    std::atomic<int> arrived_{0};
    std::atomic<uint32_t> generation_{0};
    std::atomic<int> sleepers_{0};
};

// Waits until `word` is no longer `seen`: spins a little, then sleeps (futex) with `sleepers` counted so
// that the waker makes a system call only when someone sleeps.
void wait_for_change(const std::atomic<uint32_t>& word, uint32_t seen, std::atomic<int>& sleepers);
// Makes `word` change and wakes its sleepers.
void publish_change(std::atomic<uint32_t>& word, std::atomic<int>& sleepers);

class ThreadPool {
public:
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return threads_; }
    // job(thread index) on every thread (the caller is index 0); returns when all have finished.
    void run(const std::function<void(int)>& job);
    // For use inside a job: blocks until every thread of the pool has reached it.
    void barrier() { barrier_.wait(); }

private:
    void work(int index);

    const int threads_;
    Barrier barrier_;
    const std::function<void(int)>* job_ = nullptr;
    std::atomic<uint32_t> job_generation_{0};
    std::atomic<int> job_sleepers_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::thread> workers_;
};

}  // namespace qwen3tts::native
