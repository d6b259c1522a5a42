#include "backend/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>

namespace ember {

namespace {
thread_local bool t_in_worker = false;
}

struct ThreadPool::Job {
    const std::function<void(std::size_t)>* fn;
    std::size_t n;
    std::atomic<std::size_t> next{0};
    std::atomic<std::size_t> done{0};
    std::mutex mu;
    std::condition_variable cv;
    std::exception_ptr error;
};

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
    if (threads < 1 || threads > 1024) throw std::invalid_argument("ThreadPool: threads must be in [1, 1024], got " + std::to_string(threads));
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
}

// Claims and runs indices of `job` until none are left. Returns true if this call finished the job.
bool ThreadPool::run_some(Job& job) {
    bool finished = false;
    for (;;) {
        std::size_t i = job.next.fetch_add(1);
        if (i >= job.n) break;
        try {
            (*job.fn)(i);
        } catch (...) {
            std::lock_guard<std::mutex> l(job.mu);
            if (!job.error) job.error = std::current_exception();
        }
        if (job.done.fetch_add(1) + 1 == job.n) finished = true;
    }
    if (finished) {
        std::lock_guard<std::mutex> l(job.mu);
        job.cv.notify_all();
    }
    return finished;
}

void ThreadPool::worker_loop() {
    t_in_worker = true;
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> l(mu_);
            cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
            if (stop_ && queue_.empty()) return;
            job = queue_.front();
            if (job->next.load() >= job->n) {  // fully claimed: drop it from the queue
                queue_.pop_front();
                continue;
            }
        }
        run_some(*job);
    }
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
    if (n == 0) return;
    if (n == 1 || workers_.empty() || t_in_worker) {
        for (std::size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    {
        std::lock_guard<std::mutex> l(mu_);
        queue_.push_back(job);
    }
    cv_.notify_all();
    run_some(*job);
    {
        std::unique_lock<std::mutex> l(job->mu);
        job->cv.wait(l, [&] { return job->done.load() == job->n; });
    }
    {
        std::lock_guard<std::mutex> l(mu_);
        auto it = std::find(queue_.begin(), queue_.end(), job);
        if (it != queue_.end()) queue_.erase(it);
    }
    if (job->error) std::rethrow_exception(job->error);
}

void ThreadPool::parallel_range(std::size_t n, std::size_t align, const std::function<void(std::size_t, std::size_t)>& fn) {
    if (n == 0) return;
    align = std::max<std::size_t>(1, align);
    const std::size_t parts = std::min<std::size_t>(static_cast<std::size_t>(threads_), (n + align - 1) / align);
    std::size_t chunk = (n + parts - 1) / parts;
    chunk = (chunk + align - 1) / align * align;
    const std::size_t count = (n + chunk - 1) / chunk;
    parallel_for(count, [&](std::size_t p) { fn(p * chunk, std::min(n, (p + 1) * chunk)); });
}

}  // namespace ember
