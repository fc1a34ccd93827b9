// argus/kernel/parallel.hpp -- kernel layer: the thread pool every parallel kernel uses.
//
// argus::set_num_threads / argus::num_threads choose how many threads a kernel may use
// (0, the default, means the CPUs the process may run on: its affinity mask, as OpenMP
// counts, or std::thread::hardware_concurrency() where there is none, and no more than its
// cgroups' CPU quota allows; read once).
// parallel_for(tasks, f) calls f(task, thread) once for every task in [0, tasks): the
// calling thread takes part as thread 0, and up to num_threads() - 1 persistent workers take
// the others. Workers are created on first need and reused by every later call; tasks are
// handed out one at a time from an atomic counter (dynamic scheduling, so uneven tasks
// balance). A call made from inside a task runs its tasks serially on the calling thread,
// which keeps the thread count bounded and cannot deadlock. The first exception thrown by f
// cancels the tasks not yet started and is rethrown to the caller once every running task
// has returned.
//
// Several user threads may call parallel_for (and so evaluate) at once. Each call is a job
// of its own: its caller works on it from start to end, and idle workers join whichever
// open job still has tasks, so no caller waits for another's job and the pool never holds
// more than max(num_threads()) - 1 workers. Which thread runs a task never changes what the
// task computes: kernels split work by num_threads() (read when the call starts), never by
// the threads that happen to join, so results are bitwise the same for a given thread count
// however many callers run at once. The steady state allocates nothing: a job lives on its
// caller's stack and is linked into the pool's list of open jobs.
//
// Waiting. A thread that sleeps on a condition variable takes tens of microseconds to wake
// (about 80 on a KVM guest, where the wake-up is an interrupt to a halted vCPU), which a
// forward pass of five parallel steps would pay ten times over. So a worker that runs out of
// work, and a caller whose helpers are still busy, first spin for up to spin_wait() (polling
// one atomic, with the CPU's pause hint) and only then block, as OpenMP runtimes do
// (OMP_WAIT_POLICY); back-to-back calls then start and end without a wake-up. The spin
// yields the core every few microseconds, so that on a machine with more runnable threads
// than cores (two programs, or ctest -j) it takes no time from them: without the yield, two
// programs each making calls of 64 short tasks ran 1.25x slower than with no spin at all.
// argus::set_spin_wait changes the 200 us default: 0 blocks at once (OMP_WAIT_POLICY=passive:
// for programs that share their cores and call argus rarely), a longer time keeps workers
// ready across longer gaps between calls, at the cost of that much CPU time after each.
#pragma once

#include "argus/kernel/cpu_quota.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace argus {

namespace detail {

/// The CPUs this thread may run on: the count of its affinity mask where the system has one
/// (Linux: what taskset, numactl, a cpuset or a container's CPU set leaves it, as OpenMP
/// runtimes count their default), else std::thread::hardware_concurrency(); at least 1. Read
/// anew on every call.
inline std::size_t available_cpus() noexcept {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<std::size_t>(n);
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

/// The CPUs the process may use: available_cpus(), and no more than its cgroups' CPU quota
/// allows (cgroup_cpu_limit, cpu_quota.hpp: `docker run --cpus=2`, a Kubernetes CPU limit,
/// systemd's CPUQuota=; rounded up, as the JVM, .NET and Go count theirs). Reads files under
/// /proc and /sys: tens of microseconds.
inline std::size_t usable_cpus() noexcept {
  const std::size_t cpus = available_cpus();
  try {
    const auto quota = cgroup_cpu_limit();
    return quota && *quota < cpus ? *quota : cpus;
  } catch (...) {  // std::bad_alloc while reading: no limit known
    return cpus;
  }
}

/// The default thread count: usable_cpus() when argus first needs it, then kept. (Read
/// once: std::thread::hardware_concurrency() reads a file under /sys on every call, 6-11 us
/// on a KVM guest, and num_threads() is asked several times per evaluation: a decode step of
/// the default MHA took 1.6-2.0x as long as with the count set; docs/reliability.md.)
inline std::size_t hardware_threads() noexcept {
  static const std::size_t n = usable_cpus();
  return n;
}

/// The most threads set_num_threads takes: larger counts are taken as this. Far above any
/// machine's CPUs, it keeps the kernels' arithmetic on thread counts (2 · threads items, one
/// scratch slot per thread) from overflowing: set_num_threads(SIZE_MAX) divided by zero.
inline constexpr std::size_t max_threads = 4096;

/// The value last given to set_num_threads (at most max_threads); 0 stands for the hardware
/// default.
inline std::atomic<std::size_t> requested_threads{0};

/// How long an idle worker, or a caller waiting for its helpers, spins before it blocks,
/// unless set_spin_wait says otherwise.
inline constexpr std::chrono::microseconds default_spin_wait{200};
/// The longest spin set_spin_wait accepts; longer requests are taken as this.
inline constexpr std::chrono::microseconds max_spin_wait{1'000'000};
/// The value last given to set_spin_wait, in microseconds (clamped to [0, max_spin_wait]).
inline std::atomic<std::int64_t> spin_wait_us{default_spin_wait.count()};

}  // namespace detail

/// Sets the number of threads argus kernels use from now on; 0 restores the default, the CPUs
/// the process may run on when argus first needed the count (detail::hardware_threads: the
/// affinity mask's CPUs on Linux, else std::thread::hardware_concurrency(), at most what the
/// cgroups' CPU quota allows, rounded up). Counts above detail::max_threads (4096) are taken as
/// 4096. Safe to call at any time from any thread: a parallel_for already running keeps the
/// count it started with.
inline void set_num_threads(std::size_t n) noexcept {
  detail::requested_threads.store(std::min(n, detail::max_threads), std::memory_order_relaxed);
}

/// The number of threads argus kernels use (at least 1).
inline std::size_t num_threads() noexcept {
  const std::size_t n = detail::requested_threads.load(std::memory_order_relaxed);
  return n == 0 ? detail::hardware_threads() : n;
}

/// Sets how long an idle worker of the thread pool, and a caller waiting for its workers to
/// finish, spin before they block (default 200 us). 0 blocks at once, as
/// OMP_WAIT_POLICY=passive: no CPU time spent after a parallel call, but about 80 us to wake
/// a worker (on a KVM guest) at the start of every one. Negative times count as 0, times
/// over one second as one second. Safe at any time from any thread; a wait already under
/// way keeps the time it started with.
inline void set_spin_wait(std::chrono::microseconds t) noexcept {
  const auto us = std::clamp<std::int64_t>(t.count(), 0, detail::max_spin_wait.count());
  detail::spin_wait_us.store(us, std::memory_order_relaxed);
}

/// The time set_spin_wait set (after clamping), or the default.
inline std::chrono::microseconds spin_wait() noexcept {
  return std::chrono::microseconds{detail::spin_wait_us.load(std::memory_order_relaxed)};
}

namespace detail {

/// Index of the current thread in the running parallel_for (0 outside any).
inline thread_local std::size_t parallel_thread_index = 0;
/// True while the current thread runs a task of some parallel_for.
inline thread_local bool inside_parallel_for = false;

/// The CPU's spin-wait hint (x86 pause), or nothing.
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Polls done() until it holds or spin_wait() has passed, yielding the core between rounds
/// of polls to any other thread that wants it; returns done().
template <class Done>
bool spin_until(Done done) noexcept {
  const std::chrono::microseconds spin = spin_wait();
  if (spin.count() == 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      spin_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::yield();
  }
}

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

/// One parallel_for call: the type-erased body, the shared task counter and, guarded by the
/// pool's mutex, its place in the pool's list of open jobs.
struct parallel_job {
  void (*body)(void* context, std::size_t task, std::size_t thread);
  void* context;
  std::size_t tasks;
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  // Guarded by thread_pool::mutex_.
  std::size_t helpers_wanted = 0;  // workers that may join: min(threads, tasks) - 1
  std::size_t helpers_joined = 0;  // workers that joined so far; the k-th is thread k
  // Of those, the ones still running tasks: changed under the mutex, read without it by the
  // caller spinning for it to reach 0 (after which no worker touches the job).
  std::atomic<std::size_t> helpers_busy{0};
  parallel_job* next_open = nullptr;

  /// True while tasks are left to take.
  bool has_tasks() const noexcept { return next.load(std::memory_order_relaxed) < tasks; }

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

/// The process-wide pool: workers created on demand, each waiting for an open job to join.
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
      opened_.fetch_add(1, std::memory_order_release);  // ends the spinning workers' spin
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  /// Runs `job` on the calling thread (as thread 0) and on up to threads - 1 workers, which
  /// get thread indices 1, 2, ... in the order they join. Jobs of different callers run
  /// side by side. pre: job.tasks >= 2, threads >= 2.
  void run(parallel_job& job, std::size_t threads) {
    const std::size_t helpers = std::min(threads, job.tasks) - 1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Grow the pool to `helpers` workers, busy or idle. When the system refuses a thread,
      // the job runs with the workers there are (with none, on the caller alone).
      try {
        while (workers_.size() < helpers) workers_.emplace_back([this] { worker(); });
      } catch (const std::system_error&) {
      }
      job.helpers_wanted = std::min(helpers, workers_.size());
      job.next_open = open_;
      open_ = &job;
      opened_.fetch_add(1, std::memory_order_release);  // wakes the spinning workers
    }
    // And as many sleeping ones as the job wants helpers, not all: a worker woken for nothing
    // spins before it sleeps again, which a pool grown for a larger thread count would pay
    // on every smaller call with every idle worker.
    for (std::size_t i = 0; i < job.helpers_wanted; ++i) wake_.notify_one();
    {
      parallel_region region(0);
      job.work(0);
    }
    // Every task is taken: close the job to newcomers, then wait for the helpers in it.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (parallel_job** p = &open_; *p != nullptr; p = &(*p)->next_open)
        if (*p == &job) {
          *p = job.next_open;
          break;
        }
    }
    auto helpers_done = [&] { return job.helpers_busy.load(std::memory_order_acquire) == 0; };
    if (spin_until(helpers_done)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, helpers_done);
  }

 private:
  thread_pool() = default;

  /// An open job that still wants helpers and has tasks left, or nullptr. pre: mutex_ held.
  parallel_job* job_to_join() const noexcept {
    for (parallel_job* j = open_; j != nullptr; j = j->next_open)
      if (j->helpers_joined < j->helpers_wanted && j->has_tasks()) return j;
    return nullptr;
  }

  void worker() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      parallel_job* job = nullptr;
      auto ready = [&] { return stop_ || (job = job_to_join()) != nullptr; };
      // Spin for a job opened after this look (the caller's next step, usually), then sleep
      // until one is. A worker woken too late for the job that woke it (its caller took every
      // task first) spins again before it sleeps: the caller's next job is likely near.
      while (!ready()) {
        const std::size_t seen = opened_.load(std::memory_order_relaxed);
        lock.unlock();
        spin_until([&] { return opened_.load(std::memory_order_acquire) != seen; });
        lock.lock();
        if (ready()) break;
        wake_.wait(lock);  // checked under the lock just before: no wake-up is lost
      }
      if (stop_) return;
      const std::size_t index = ++job->helpers_joined;
      job->helpers_busy.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      {
        parallel_region region(index);
        job->work(index);
      }
      lock.lock();
      // The job's caller may return as soon as this reaches 0: touch `job` no more after.
      if (job->helpers_busy.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_all();
    }
  }

  std::mutex mutex_;  // guards everything below and the pool fields of every open job
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  parallel_job* open_ = nullptr;  // jobs whose callers are still taking tasks, newest first
  bool stop_ = false;
  std::atomic<std::size_t> opened_{0};  // jobs opened so far (what spinning workers watch)
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

}  // namespace kernel

namespace detail {
/// parallel_for on its type-erased body (body(context, task, thread)): everything but the
/// call of the body is compiled once per program, not once per body type (every kernel,
/// evaluator step and test lambda that runs in parallel).
inline void parallel_for_erased(std::size_t tasks,
                                void (*body)(void* context, std::size_t task, std::size_t thread),
                                void* context) {
  if (tasks == 0) return;
  const std::size_t threads = argus::num_threads();
  if (inside_parallel_for || threads <= 1 || tasks == 1) {
    parallel_region region(parallel_thread_index);
    for (std::size_t task = 0; task < tasks; ++task) body(context, task, parallel_thread_index);
    return;
  }
  parallel_job job;
  job.body = body;
  job.context = context;
  job.tasks = tasks;
  thread_pool::instance().run(job, threads);
  if (job.error) std::rethrow_exception(job.error);
}
}  // namespace detail

namespace kernel {

/// Calls f(task, thread) for every task in [0, tasks), spread over num_threads() threads;
/// `thread` is in [0, parallel_slot_count()) and no two tasks run at once with the same
/// `thread`. Returns when every task has returned. Rethrows the first exception thrown by
/// f (tasks not yet started are then skipped). Called from inside a task, runs serially on
/// the calling thread, which keeps its thread index.
template <class F>
void parallel_for(std::size_t tasks, F&& f) {
  using body_type = std::remove_reference_t<F>;
  argus::detail::parallel_for_erased(
      tasks,
      [](void* context, std::size_t task, std::size_t thread) {
        (*static_cast<body_type*>(context))(task, thread);
      },
      const_cast<void*>(static_cast<const void*>(std::addressof(f))));
}

}  // namespace kernel
}  // namespace argus
