// argus/kernel/parallel.hpp -- kernel layer: the thread pool every parallel kernel uses.
//
// argus::set_num_threads / argus::num_threads choose how many threads a kernel may use
// (0, the default, means std::thread::hardware_concurrency()). parallel_for(tasks, f) calls
// f(task, thread) once for every task in [0, tasks): the calling thread takes part as thread
// 0, and up to num_threads() - 1 persistent workers take the others. Workers are created on
// first need and reused by every later call; tasks are handed out one at a time from an
// atomic counter (dynamic scheduling, so uneven tasks balance). A call made from inside a
// task runs its tasks serially on the calling thread, which keeps the thread count bounded
// and cannot deadlock. The first exception thrown by f cancels the tasks not yet started and
// is rethrown to the caller once every running task has returned.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace argus {

namespace detail {

inline std::size_t hardware_threads() noexcept {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

/// The value last given to set_num_threads; 0 stands for the hardware default.
inline std::atomic<std::size_t> requested_threads{0};

}  // namespace detail

/// Sets the number of threads argus kernels use from now on; 0 restores the default,
/// std::thread::hardware_concurrency(). Safe to call at any time from any thread: a
/// parallel_for already running keeps the count it started with.
inline void set_num_threads(std::size_t n) noexcept {
  detail::requested_threads.store(n, std::memory_order_relaxed);
}

/// The number of threads argus kernels use (at least 1).
inline std::size_t num_threads() noexcept {
  const std::size_t n = detail::requested_threads.load(std::memory_order_relaxed);
  return n == 0 ? detail::hardware_threads() : n;
}

namespace detail {

/// Index of the current thread in the running parallel_for (0 outside any).
inline thread_local std::size_t parallel_thread_index = 0;
/// True while the current thread runs a task of some parallel_for.
inline thread_local bool inside_parallel_for = false;

/// Marks the current thread as running tasks, as thread `index`, for its lifetime.
class parallel_region {
 public:
  explicit parallel_region(std::size_t index) noexcept
      : saved_index_(parallel_thread_index), saved_inside_(inside_parallel_for) {
    parallel_thread_index = index;
    inside_parallel_for = true;
  }
  parallel_region(const parallel_region&) = delete;
  parallel_region& operator=(const parallel_region&) = delete;
  ~parallel_region() {
    parallel_thread_index = saved_index_;
    inside_parallel_for = saved_inside_;
  }

 private:
  std::size_t saved_index_;
  bool saved_inside_;
};

/// One parallel_for call: the type-erased body and the shared task counter.
struct parallel_job {
  void (*body)(void* context, std::size_t task, std::size_t thread);
  void* context;
  std::size_t tasks;
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  /// Takes tasks until none is left; never throws.
  void work(std::size_t thread) noexcept {
    for (;;) {
      const std::size_t task = next.fetch_add(1, std::memory_order_relaxed);
      if (task >= tasks) return;
      try {
        body(context, task, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(tasks, std::memory_order_relaxed);  // cancel the tasks not yet taken
      }
    }
  }
};

/// The process-wide pool: workers 1, 2, ... created on demand, each waiting for the next job.
class thread_pool {
 public:
  static thread_pool& instance() {
    static thread_pool pool;
    return pool;
  }

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// Runs `job` on the calling thread (as thread 0) and on threads - 1 workers. Calls from
  /// different user threads take turns.
  void run(parallel_job& job, std::size_t threads) {
    std::lock_guard<std::mutex> turn(submit_mutex_);
    const std::size_t helpers = std::min(threads - 1, job.tasks - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (workers_.size() < helpers) {
        const std::size_t index = workers_.size() + 1;
        workers_.emplace_back([this, index, seen = generation_] { worker(index, seen); });
      }
      job_ = &job;
      helpers_ = helpers;
      busy_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    {
      parallel_region region(0);
      job.work(0);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
  }

 private:
  thread_pool() = default;

  void worker(std::size_t index, std::uint64_t seen) {
    parallel_region region(index);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index > helpers_) continue;  // this job asked for fewer threads
      parallel_job* job = job_;
      lock.unlock();
      job->work(index);
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex submit_mutex_;  // one job at a time
  std::mutex mutex_;         // guards everything below
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;  // workers_[k] is thread k + 1
  parallel_job* job_ = nullptr;
  std::size_t helpers_ = 0;  // workers taking part in the current job
  std::size_t busy_ = 0;     // of those, the ones not yet finished
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace detail

namespace kernel {

/// Number of distinct thread indices a parallel_for started now may pass to its body:
/// every index is below this. Size per-thread scratch with it (and do not change
/// num_threads() concurrently with the call).
inline std::size_t parallel_slot_count() noexcept {
  const std::size_t n = num_threads();
  return argus::detail::inside_parallel_for && argus::detail::parallel_thread_index >= n
             ? argus::detail::parallel_thread_index + 1
             : n;
}

/// Calls f(task, thread) for every task in [0, tasks), spread over num_threads() threads;
/// `thread` is in [0, parallel_slot_count()) and no two tasks run at once with the same
/// `thread`. Returns when every task has returned. Rethrows the first exception thrown by
/// f (tasks not yet started are then skipped). Called from inside a task, runs serially on
/// the calling thread, which keeps its thread index.
template <class F>
void parallel_for(std::size_t tasks, F&& f) {
  if (tasks == 0) return;
  const std::size_t threads = num_threads();
  if (argus::detail::inside_parallel_for || threads <= 1 || tasks == 1) {
    argus::detail::parallel_region region(argus::detail::parallel_thread_index);
    for (std::size_t task = 0; task < tasks; ++task) f(task, argus::detail::parallel_thread_index);
    return;
  }
  using body_type = std::remove_reference_t<F>;
  argus::detail::parallel_job job;
  job.body = [](void* context, std::size_t task, std::size_t thread) {
    (*static_cast<body_type*>(context))(task, thread);
  };
  job.context = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
  job.tasks = tasks;
  argus::detail::thread_pool::instance().run(job, threads);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace kernel
}  // namespace argus
