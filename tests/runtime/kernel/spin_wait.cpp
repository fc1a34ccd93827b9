// labels: threads
// argus::set_spin_wait (kernel/parallel.hpp): how long an idle worker polls for the next job
// before it blocks. A module of its own so that its pool holds exactly one worker (the thread
// count stays 2), whose state it reads from /proc.
#include "argus/kernel/parallel.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {

/// Restores the defaults when a test case ends, whatever happens in it.
struct settings_guard {
  ~settings_guard() {
    argus::set_num_threads(0);
    argus::set_spin_wait(argus::detail::default_spin_wait);
  }
};

#if defined(__linux__)
/// The state of thread `tid` of this process, from /proc/self/task/<tid>/stat: 'R' running
/// or runnable, 'S' sleeping, ...; '?' if it cannot be read.
char thread_state(long tid) {
  std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(file, line);
  const std::size_t name_end = line.rfind(')');  // the name, in parentheses, may hold spaces
  return name_end != std::string::npos && name_end + 2 < line.size() ? line[name_end + 2] : '?';
}
#endif

}  // namespace

// set_spin_wait: clamped to [0, 1 s]; with 0 an idle worker sleeps at once, with a long spin
// it keeps polling, also when it was woken too late for the job that woke it. A thread's
// state in /proc tells which (R: running or runnable, as a spinning thread is even when
// other programs take its core; S: blocked), where CPU time would not under load.
BOOST_AUTO_TEST_CASE(spin_wait_is_clamped_and_zero_leaves_idle_workers_asleep) {
  settings_guard guard;
  using namespace std::chrono_literals;
  BOOST_TEST(argus::spin_wait().count() == 200);
  argus::set_spin_wait(-5us);
  BOOST_TEST(argus::spin_wait().count() == 0);
  argus::set_spin_wait(5s);
  BOOST_TEST(argus::spin_wait().count() == 1'000'000);
  argus::set_spin_wait(3ms);
  BOOST_TEST(argus::spin_wait().count() == 3000);
#if defined(__linux__)
  argus::set_num_threads(2);
  // Two tasks that wait for each other: the worker joins, and says who it is.
  auto both_threads = [] {
    std::atomic<int> started{0};
    std::atomic<long> worker{0};
    argus::kernel::parallel_for(2, [&](std::size_t, std::size_t thread) {
      started.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
      }
      if (thread != 0) worker = long(::syscall(SYS_gettid));
    });
    return worker.load();
  };
  // 64 short tasks, which the caller likely takes all before a sleeping worker wakes.
  auto short_tasks = [] {
    std::atomic<int> sum{0};
    argus::kernel::parallel_for(64, [&](std::size_t task, std::size_t) { sum += int(task); });
    BOOST_TEST(sum.load() == 63 * 64 / 2);
  };
  // The worker's state at 10 moments 2 ms apart, 20 ms after the call returned.
  auto states = [](long tid) {
    std::this_thread::sleep_for(20ms);
    std::string seen;
    for (int i = 0; i < 10; ++i, std::this_thread::sleep_for(2ms)) seen += thread_state(tid);
    return seen;
  };
  argus::set_spin_wait(1s);
  const long tid = both_threads();
  BOOST_TEST_REQUIRE(tid != 0);
  BOOST_TEST(states(tid) == "RRRRRRRRRR", "a worker told to spin for 1 s was not spinning");
  argus::set_spin_wait(0us);
  BOOST_TEST(both_threads() == tid);
  BOOST_TEST(states(tid) == "SSSSSSSSSS", "with set_spin_wait(0) an idle worker did not sleep");
  argus::set_spin_wait(1s);
  short_tasks();
  BOOST_TEST(states(tid) == "RRRRRRRRRR",
             "a worker woken too late for its job slept instead of spinning for 1 s");
  argus::set_spin_wait(0us);
  both_threads();  // ends the spin, and leaves the worker asleep for the tests after
#else
  BOOST_TEST_MESSAGE("the worker states need Linux's /proc; not checked here");
#endif
}

// A call wakes as many sleeping workers as it wants helpers, not the whole pool: a pool grown
// for 4 threads and then called with 2 leaves its other workers asleep, where each one woken
// for nothing would spin for spin_wait() before sleeping again. (After the case above, which
// needs a pool of one worker.)
BOOST_AUTO_TEST_CASE(a_call_wakes_only_the_workers_it_wants) {
  settings_guard guard;
  using namespace std::chrono_literals;
#if defined(__linux__)
  // `threads` tasks that wait for each other: every worker of the call joins; their thread ids.
  auto all_join = [](std::size_t threads) {
    argus::set_num_threads(threads);
    std::atomic<std::size_t> started{0};
    std::vector<long> ids(threads, 0);
    argus::kernel::parallel_for(threads, [&](std::size_t, std::size_t thread) {
      started.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (started.load() < threads && std::chrono::steady_clock::now() < deadline) {
      }
      ids[thread] = long(::syscall(SYS_gettid));
    });
    return ids;
  };
  argus::set_spin_wait(0us);
  const std::vector<long> four = all_join(4);  // the pool grows to 3 workers, all asleep after
  std::this_thread::sleep_for(20ms);
  argus::set_spin_wait(1s);
  all_join(2);  // one helper wanted: one worker woken
  std::this_thread::sleep_for(20ms);
  std::size_t spinning = 0;
  for (std::size_t t = 1; t < four.size(); ++t) spinning += thread_state(four[t]) == 'R' ? 1 : 0;
  BOOST_TEST(spinning == 1u,
             spinning << " of the pool's 3 workers spin after a call that wanted 1");
  argus::set_spin_wait(0us);
  all_join(4);  // ends the spin
#else
  BOOST_TEST_MESSAGE("the worker states need Linux's /proc; not checked here");
#endif
}
