// A fixed pool of worker threads that splits index ranges. Several callers may submit work at once
// (a context is shared between Python threads); a call made from inside a worker runs inline.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ember {

class ThreadPool {
public:
    /// `threads` is the total parallelism including the calling thread (so threads - 1 workers).
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return threads_; }

    /// Calls fn(i) for every i in [0, n), spread over the pool; returns when all are done.
    /// Exceptions thrown by fn are rethrown in the caller (the first one).
    void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn);

    /// Splits [0, n) into at most size() contiguous ranges (multiples of `align`) and calls fn(begin, end).
    void parallel_range(std::size_t n, std::size_t align, const std::function<void(std::size_t, std::size_t)>& fn);

private:
    struct Job;
    void worker_loop();
    static bool run_some(Job& job);

    int threads_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stop_ = false;
};

}  // namespace ember
