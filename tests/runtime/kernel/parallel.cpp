// labels: threads
#include "argus/kernel/parallel.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>  // environ
#endif

namespace {

/// Restores the default thread count when a test case ends, whatever happens in it.
struct thread_count_guard {
  ~thread_count_guard() { argus::set_num_threads(0); }
};

/// Restores the default spin time when a test case ends.
struct spin_wait_guard {
  ~spin_wait_guard() { argus::set_spin_wait(argus::detail::default_spin_wait); }
};

}  // namespace

/// The CPUs in the calling thread's affinity mask (Linux), else the hardware count.
static std::size_t cpus_of_this_thread() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  BOOST_TEST_REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  return static_cast<std::size_t>(CPU_COUNT(&set));
#else
  const std::size_t hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
#endif
}

/// The default thread count this process should have: the number its parent passed after
/// "--" when it started this program as a child (the cases below), else the CPUs in the
/// affinity mask, at most the cgroups' CPU quota (parsed as unit.kernel.cpu_quota checks).
static std::size_t expected_default_threads() {
  const auto& suite = boost::unit_test::framework::master_test_suite();
  if (suite.argc > 1) return static_cast<std::size_t>(std::stoul(suite.argv[1]));
  const std::size_t cpus = cpus_of_this_thread();  // as the test starts: no case narrows it
  const auto quota = argus::detail::cgroup_cpu_limit();
  return quota && *quota < cpus ? *quota : cpus;
}

BOOST_AUTO_TEST_CASE(default_thread_count_is_the_cpus_the_process_may_use) {
  thread_count_guard guard;
  argus::set_num_threads(0);
  const std::size_t cpus = expected_default_threads();
  BOOST_TEST(argus::num_threads() == cpus);
  argus::set_num_threads(3);
  BOOST_TEST(argus::num_threads() == 3u);
  BOOST_TEST(argus::kernel::parallel_slot_count() == 3u);
  argus::set_num_threads(0);
  BOOST_TEST(argus::num_threads() == cpus);
}

#if defined(__linux__)
/// Starts this program again as a child running only the default-count case, which expects
/// `expected` threads; returns its exit status (-1 where it could not start).
static int run_default_case_in_child(std::size_t expected) {
  char name[] = "unit.kernel.parallel";
  char only[] = "--run_test=default_thread_count_is_the_cpus_the_process_may_use";
  char separator[] = "--";
  std::string count = std::to_string(expected);
  char* child_argv[] = {name, only, separator, count.data(), nullptr};
  pid_t child = 0;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, child_argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
#endif

#if defined(__linux__)
// Under taskset, a cpuset or a container's CPU set, the default counts the CPUs the process
// may run on, not the machine's (16 threads on 2 CPUs would be oversubscribed). The count is
// read when argus first needs it and then kept: narrowing the mask afterwards leaves
// num_threads() as it was, while available_cpus() reads the mask anew.
BOOST_AUTO_TEST_CASE(available_cpus_counts_the_affinity_mask) {
  thread_count_guard guard;
  argus::set_num_threads(0);
  const std::size_t before = argus::num_threads();
  cpu_set_t all;
  CPU_ZERO(&all);
  BOOST_TEST_REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
  BOOST_TEST(argus::detail::available_cpus() == static_cast<std::size_t>(CPU_COUNT(&all)));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  BOOST_TEST_REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);  // this thread only
  const std::size_t narrowed = argus::detail::available_cpus();
  const std::size_t kept = argus::num_threads();
  // A process started under the narrowed mask (a child inherits its parent thread's) takes
  // it as its default: this program again, running the case above with 1 expected (the
  // machine's count before the affinity mask was counted).
  const int status = run_default_case_in_child(1);
  BOOST_TEST_REQUIRE(sched_setaffinity(0, sizeof all, &all) == 0);
  BOOST_TEST(narrowed == 1u);
  BOOST_TEST(kept == before);
  BOOST_TEST(status == 0, "the default test under one CPU: exit status " << status);
}

/// Writes `text` to the file at `path`; whether the whole of it was written.
static bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

// A container's CPU quota (docker --cpus=1, a Kubernetes CPU limit) leaves every CPU in the
// affinity mask but lets the process run for one CPU's time: the default counts the quota
// (16 spinning threads on a 1-CPU quota would be throttled). The case makes such a cgroup
// (a child of this process's, quota = period: one CPU), enters it, starts this program in it
// running the default-count case with 1 expected, and goes back. It needs a cgroup hierarchy
// it may write (root with v1's cpu controller, or a delegated v2 subtree with cpu enabled);
// elsewhere it says so and stops, and unit.kernel.cpu_quota's made-up trees still check
// the parsing.
BOOST_AUTO_TEST_CASE(default_thread_count_follows_a_cgroup_cpu_quota) {
  const auto controller = argus::detail::find_cgroup_cpu_controller();
  if (!controller) {
    BOOST_TEST_MESSAGE("no cgroup cpu controller here: nothing to check");
    return;
  }
  const std::string home = controller->directory;
  const std::string dir = home + "/argus_test_quota_" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0) {
    BOOST_TEST_MESSAGE("cannot make a cgroup under " << home << " (" << std::strerror(errno)
                                                     << "): nothing to check");
    return;
  }
  const auto limit_before = argus::detail::cgroup_cpu_limit();
  struct remove_cgroup {  // leaves the cgroup (if entered) and removes it, whatever happens
    std::string home, dir;
    ~remove_cgroup() {
      write_file(home + "/cgroup.procs", std::to_string(::getpid()));
      ::rmdir(dir.c_str());
    }
  } cleanup{home, dir};
  const bool quota_set = controller->unified ? write_file(dir + "/cpu.max", "100000 100000")
                                             : write_file(dir + "/cpu.cfs_period_us", "100000") &&
                                                   write_file(dir + "/cpu.cfs_quota_us", "100000");
  if (!quota_set || !write_file(dir + "/cgroup.procs", std::to_string(::getpid()))) {
    BOOST_TEST_MESSAGE("cannot set a quota on or enter " << dir << ": nothing to check");
    return;
  }
  const auto limit = argus::detail::cgroup_cpu_limit();
  const std::size_t usable = argus::detail::usable_cpus();
  const int status = run_default_case_in_child(1);
  BOOST_TEST_REQUIRE(write_file(home + "/cgroup.procs", std::to_string(::getpid())));
  BOOST_TEST(limit.value_or(0) == 1u);
  BOOST_TEST(usable == 1u);
  BOOST_TEST(status == 0, "the default test under a one-CPU quota: exit status " << status);
  BOOST_TEST(argus::detail::cgroup_cpu_limit().value_or(0) ==
             limit_before.value_or(0));  // back where it started
}
#endif

BOOST_AUTO_TEST_CASE(every_task_runs_exactly_once) {
  thread_count_guard guard;
  for (std::size_t threads = 1; threads <= 4; ++threads) {
    argus::set_num_threads(threads);  // changed at run time, between calls
    for (std::size_t tasks : {0u, 1u, 2u, 3u, 7u, 64u, 1000u}) {
      std::vector<std::atomic<int>> runs(tasks);
      std::vector<std::atomic<int>> per_thread(argus::kernel::parallel_slot_count());
      std::atomic<int> bad_index{0};  // Boost.Test assertions are not thread-safe: count here
      argus::kernel::parallel_for(tasks, [&](std::size_t task, std::size_t thread) {
        if (thread >= per_thread.size()) {
          bad_index.fetch_add(1);
          return;
        }
        runs[task].fetch_add(1);
        per_thread[thread].fetch_add(1);
      });
      BOOST_TEST(bad_index.load() == 0);
      int total = 0;
      for (auto& r : runs) {
        BOOST_TEST(r.load() == 1);
        total += r.load();
      }
      int by_thread = 0;
      for (auto& r : per_thread) by_thread += r.load();
      BOOST_TEST(total == static_cast<int>(tasks));
      BOOST_TEST(by_thread == static_cast<int>(tasks));
    }
  }
}

BOOST_AUTO_TEST_CASE(uses_several_threads_and_reuses_them) {
  thread_count_guard guard;
  argus::set_num_threads(4);
  std::set<std::thread::id> first, second;
  std::mutex m;
  // Slow tasks, so that every worker gets some.
  auto body = [&](std::set<std::thread::id>& ids) {
    return [&](std::size_t, std::size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    };
  };
  argus::kernel::parallel_for(64, body(first));
  argus::kernel::parallel_for(64, body(second));
  BOOST_TEST(first.size() > 1u);
  BOOST_TEST(first.size() <= 4u);
  // Workers persist: the second call runs on threads of the first (no new threads).
  for (const auto& id : second) BOOST_TEST(first.count(id) == 1u);
}

// Idle workers spin for a while (argus::spin_wait(), 200 us by default) and then sleep; a
// caller whose helpers are still busy does the same. Whichever state the next job finds them
// in, they must join it, and the caller must not return before its helpers' tasks have
// ended: with the default spin, with none (every wait blocks at once) and with a long one.
BOOST_AUTO_TEST_CASE(workers_join_after_spinning_or_sleeping_and_callers_wait_for_them) {
  thread_count_guard guard;
  spin_wait_guard spin_guard;
  argus::set_num_threads(2);
  using namespace std::chrono_literals;
  for (const auto spin : {argus::detail::default_spin_wait, 0us, 5000us})
    for (const auto gap : {0us, 50us, 2000us, 20000us}) {
      argus::set_spin_wait(spin);
      for (const auto helper_time : {0us, 50us, 5000us}) {
        std::atomic<int> started{0};
        std::atomic<bool> timed_out{false}, helper_done{false};
        // Two tasks that each wait until both have started: only two threads at once finish.
        argus::kernel::parallel_for(2, [&](std::size_t, std::size_t thread) {
          started.fetch_add(1);
          const auto deadline = std::chrono::steady_clock::now() + 10s;
          while (started.load() < 2)
            if (std::chrono::steady_clock::now() > deadline) {
              timed_out = true;
              break;
            }
          if (thread != 0) {  // a helper outlasts the caller's task
            std::this_thread::sleep_for(helper_time);
            helper_done = true;
          }
        });
        BOOST_TEST(!timed_out.load(), "a worker did not join after a gap of "
                                          << gap.count() << " us (spin " << spin.count() << " us)");
        BOOST_TEST(helper_done.load(), "the caller returned before its helper (gap "
                                           << gap.count() << " us, helper " << helper_time.count()
                                           << " us, spin " << spin.count() << " us)");
        std::this_thread::sleep_for(gap);
      }
    }
}

BOOST_AUTO_TEST_CASE(thread_index_is_exclusive) {
  thread_count_guard guard;
  argus::set_num_threads(3);
  std::vector<std::atomic<int>> in_use(argus::kernel::parallel_slot_count());
  std::atomic<int> clashes{0};
  argus::kernel::parallel_for(300, [&](std::size_t, std::size_t thread) {
    if (in_use[thread].fetch_add(1) != 0) clashes.fetch_add(1);
    std::this_thread::yield();
    in_use[thread].fetch_sub(1);
  });
  BOOST_TEST(clashes.load() == 0);
}

BOOST_AUTO_TEST_CASE(nested_parallel_for_runs_serially_and_completes) {
  thread_count_guard guard;
  for (std::size_t threads = 1; threads <= 4; ++threads) {
    argus::set_num_threads(threads);
    constexpr std::size_t outer = 16, inner = 50;
    std::vector<std::atomic<int>> runs(outer * inner);
    std::atomic<int> foreign_thread{0};
    argus::kernel::parallel_for(outer, [&](std::size_t o, std::size_t thread) {
      const auto me = std::this_thread::get_id();
      argus::kernel::parallel_for(inner, [&](std::size_t i, std::size_t inner_thread) {
        // Serial: same OS thread, same thread index as the enclosing task.
        if (std::this_thread::get_id() != me || inner_thread != thread) foreign_thread.fetch_add(1);
        runs[o * inner + i].fetch_add(1);
      });
    });
    for (auto& r : runs) BOOST_TEST(r.load() == 1);
    BOOST_TEST(foreign_thread.load() == 0);
  }
}

BOOST_AUTO_TEST_CASE(exception_propagates_to_the_caller) {
  thread_count_guard guard;
  for (std::size_t threads = 1; threads <= 4; ++threads) {
    argus::set_num_threads(threads);
    std::atomic<int> ran{0};
    BOOST_CHECK_THROW(argus::kernel::parallel_for(100,
                                                  [&](std::size_t task, std::size_t) {
                                                    ran.fetch_add(1);
                                                    if (task == 17)
                                                      throw std::runtime_error("task 17");
                                                  }),
                      std::runtime_error);
    BOOST_TEST(ran.load() >= 1);
    // The pool is still usable afterwards.
    std::atomic<int> after{0};
    argus::kernel::parallel_for(10, [&](std::size_t, std::size_t) { after.fetch_add(1); });
    BOOST_TEST(after.load() == 10);
  }
}

BOOST_AUTO_TEST_CASE(exception_from_a_nested_call_propagates) {
  thread_count_guard guard;
  argus::set_num_threads(2);
  BOOST_CHECK_THROW(argus::kernel::parallel_for(8,
                                                [&](std::size_t, std::size_t) {
                                                  argus::kernel::parallel_for(
                                                      4, [](std::size_t i, std::size_t) {
                                                        if (i == 3) throw std::logic_error("inner");
                                                      });
                                                }),
                    std::logic_error);
}

BOOST_AUTO_TEST_CASE(concurrent_callers_all_complete) {
  thread_count_guard guard;
  argus::set_num_threads(2);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep)
        argus::kernel::parallel_for(10, [&](std::size_t, std::size_t) { total.fetch_add(1); });
    });
  for (auto& t : callers) t.join();
  BOOST_TEST(total.load() == 3 * 20 * 10);
}

BOOST_AUTO_TEST_CASE(a_caller_never_waits_for_another_callers_job) {
  // Caller A's tasks block until caller B's parallel_for has returned. If calls took turns
  // (one job in the pool at a time), B would wait for A and A for B: the tasks give up
  // after 20 s so that the failure is a test failure, not a hang.
  thread_count_guard guard;
  argus::set_num_threads(2);
  std::atomic<bool> b_done{false}, a_started{false};
  std::atomic<int> a_timed_out{0}, b_runs{0};
  std::thread a([&] {
    argus::kernel::parallel_for(2, [&](std::size_t, std::size_t) {
      a_started.store(true);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!b_done.load()) {
        if (std::chrono::steady_clock::now() > deadline) {
          a_timed_out.fetch_add(1);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  });
  while (!a_started.load()) std::this_thread::yield();
  argus::kernel::parallel_for(50, [&](std::size_t, std::size_t) { b_runs.fetch_add(1); });
  b_done.store(true);
  a.join();
  BOOST_TEST(b_runs.load() == 50);
  BOOST_TEST(a_timed_out.load() == 0);
}

BOOST_AUTO_TEST_CASE(concurrent_callers_get_exclusive_thread_indices_within_their_job) {
  // Four callers, three threads each: within one job no two tasks share a thread index at
  // once, and every index is below parallel_slot_count().
  thread_count_guard guard;
  argus::set_num_threads(3);
  std::atomic<int> clashes{0}, bad_index{0}, total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<std::atomic<int>> in_use(argus::kernel::parallel_slot_count());
        argus::kernel::parallel_for(40, [&](std::size_t, std::size_t thread) {
          if (thread >= in_use.size()) {
            bad_index.fetch_add(1);
            return;
          }
          if (in_use[thread].fetch_add(1) != 0) clashes.fetch_add(1);
          std::this_thread::yield();
          in_use[thread].fetch_sub(1);
          total.fetch_add(1);
        });
      }
    });
  for (auto& t : callers) t.join();
  BOOST_TEST(clashes.load() == 0);
  BOOST_TEST(bad_index.load() == 0);
  BOOST_TEST(total.load() == 4 * 50 * 40);
}
