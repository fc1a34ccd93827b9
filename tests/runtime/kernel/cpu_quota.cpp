// labels: threads
// detail::cgroup_cpu_limit on made-up /proc and /sys trees: cgroup v2 and v1, quotas set on
// the process's own cgroup or on an ancestor, containers (a cgroup namespace, or the host's
// path mounted as the container's root), escaped mount points, and every kind of missing or
// malformed file, which must read as "no limit" and never throw or crash.
#include "argus/kernel/cpu_quota.hpp"

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <unistd.h>
#endif

namespace fs = std::filesystem;

namespace {

/// A scratch directory standing for "/", removed with everything in it at the end.
struct fake_root {
  fs::path dir;
  fake_root() {
    static int count = 0;
    dir = fs::temp_directory_path() /
          ("argus_cpu_quota_" + std::to_string(static_cast<long>(::getpid())) + "_" +
           std::to_string(++count));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~fake_root() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fake_root(const fake_root&) = delete;
  fake_root& operator=(const fake_root&) = delete;

  /// Writes `text` to `path` (absolute, as on the machine) under this root.
  void write(const std::string& path, const std::string& text) const {
    const fs::path p = dir / fs::path(path).relative_path();
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root() const { return dir.string(); }
  /// The limit these files set; 0 for none.
  std::size_t limit() const { return argus::detail::cgroup_cpu_limit(root()).value_or(0); }
};

/// mountinfo lines as a systemd host (unified hierarchy at /sys/fs/cgroup) shows them.
const std::string v2_mountinfo =
    "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "26 28 0:24 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 26 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

/// mountinfo lines of a v1 (or hybrid) host: cpu and cpuacct share a mount.
const std::string v1_mountinfo =
    "24 30 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "25 24 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
    "cgroup2 rw\n"
    "33 24 0:31 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup "
    "rw,cpuset\n"
    "34 24 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:17 - cgroup "
    "cgroup "
    "rw,cpu,cpuacct\n";

}  // namespace

BOOST_AUTO_TEST_CASE(v2_quota_of_the_process_cgroup_rounded_up) {
  for (const auto& [max, cpus] : {std::pair<std::string, std::size_t>{"200000 100000", 2},
                                  {"150000 100000", 2},  // 1.5 CPUs: 2 threads
                                  {"50000 100000", 1},   // half a CPU: still 1
                                  {"1 100000", 1},
                                  {"800000 100000\n", 8},
                                  {"300000 50000", 6}}) {
    fake_root t;
    t.write("/proc/self/cgroup", "0::/system.slice/app.service\n");
    t.write("/proc/self/mountinfo", v2_mountinfo);
    t.write("/sys/fs/cgroup/system.slice/app.service/cpu.max", max);
    BOOST_TEST(t.limit() == cpus, "cpu.max " << max);
  }
}

BOOST_AUTO_TEST_CASE(v2_no_quota_is_no_limit) {
  fake_root t;
  t.write("/proc/self/cgroup", "0::/user.slice\n");
  t.write("/proc/self/mountinfo", v2_mountinfo);
  t.write("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  t.write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  BOOST_TEST(t.limit() == 0u);
}

// A parent's quota binds every cgroup below it: the smallest of the chain counts, whichever
// level sets it.
BOOST_AUTO_TEST_CASE(v2_the_tightest_ancestor_counts) {
  fake_root t;
  t.write("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  t.write("/proc/self/mountinfo", v2_mountinfo);
  t.write("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  t.write("/sys/fs/cgroup/kubepods/pod1/cpu.max", "300000 100000\n");
  t.write("/sys/fs/cgroup/kubepods/cpu.max", "1600000 100000\n");
  BOOST_TEST(t.limit() == 3);
  t.write("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "400000 100000\n");  // looser: parent wins
  BOOST_TEST(t.limit() == 3);
  t.write("/sys/fs/cgroup/kubepods/cpu.max", "200000 100000\n");  // tighter, two levels up
  BOOST_TEST(t.limit() == 2);
}

// With a cgroup namespace (Docker's default on v2) the process sees its container's cgroup as
// "/" and the mount shows exactly that directory; without one, the host path is in both.
BOOST_AUTO_TEST_CASE(v2_inside_a_container) {
  {
    fake_root t;
    t.write("/proc/self/cgroup", "0::/\n");
    t.write("/proc/self/mountinfo",
            "600 500 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw\n");
    t.write("/sys/fs/cgroup/cpu.max", "200000 100000\n");
    BOOST_TEST(t.limit() == 2);
  }
  {
    fake_root t;
    t.write("/proc/self/cgroup", "0::/docker/abc123\n");
    t.write("/proc/self/mountinfo",
            "600 500 0:26 /docker/abc123 /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 "
            "cgroup "
            "rw\n");
    t.write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
    t.write("/sys/fs/cgroup/docker/abc123/cpu.max", "900000 100000\n");  // not this process's
    BOOST_TEST(t.limit() == 1);
  }
  {  // a path the mount does not show: the mount's top directory
    fake_root t;
    t.write("/proc/self/cgroup", "0::/elsewhere\n");
    t.write("/proc/self/mountinfo",
            "600 500 0:26 /docker/abc123 /sys/fs/cgroup rw - cgroup2 cgroup rw\n");
    t.write("/sys/fs/cgroup/cpu.max", "300000 100000\n");
    BOOST_TEST(t.limit() == 3);
  }
  {  // "/docker/abc1234" is not below "/docker/abc123"
    fake_root t;
    t.write("/proc/self/cgroup", "0::/docker/abc1234\n");
    t.write("/proc/self/mountinfo",
            "600 500 0:26 /docker/abc123 /sys/fs/cgroup rw - cgroup2 cgroup rw\n");
    t.write("/sys/fs/cgroup/cpu.max", "300000 100000\n");
    t.write("/sys/fs/cgroup/4/cpu.max", "100000 100000\n");
    BOOST_TEST(t.limit() == 3);
  }
}

BOOST_AUTO_TEST_CASE(v1_cfs_quota) {
  fake_root t;
  t.write("/proc/self/cgroup",
          "12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n0::/docker/abc\n");
  t.write("/proc/self/mountinfo", v1_mountinfo);
  t.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
  t.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  BOOST_TEST(t.limit() == 3);
  t.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");  // no limit here
  BOOST_TEST(t.limit() == 0u);
  t.write("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_quota_us", "100000\n");  // the parent's
  t.write("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
  BOOST_TEST(t.limit() == 1);
  // On a hybrid host the v2 line is there too, but its hierarchy has no cpu controller: v1
  // counts, whatever cpu.max the unified mount holds.
  t.write("/sys/fs/cgroup/unified/docker/abc/cpu.max", "800000 100000\n");
  BOOST_TEST(t.limit() == 1);
}

BOOST_AUTO_TEST_CASE(v1_cpu_mounted_alone_and_at_an_escaped_path) {
  fake_root t;
  t.write("/proc/self/cgroup", "7:cpuacct:/a\n6:cpu:/a\n");
  t.write("/proc/self/mountinfo",
          "34 24 0:32 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
          "35 24 0:33 / /mnt/my\\040cgroups/cpu rw - cgroup cgroup rw,cpu\n");
  t.write("/mnt/my cgroups/cpu/a/cpu.cfs_quota_us", "400000");
  t.write("/mnt/my cgroups/cpu/a/cpu.cfs_period_us", "100000");
  t.write("/sys/fs/cgroup/cpuacct/a/cpu.cfs_quota_us", "100000");  // not the cpu controller
  t.write("/sys/fs/cgroup/cpuacct/a/cpu.cfs_period_us", "100000");
  BOOST_TEST(t.limit() == 4);
}

// Whatever is missing or malformed reads as "no limit known": the default thread count then
// falls back to the affinity mask. None of these may throw or crash.
BOOST_AUTO_TEST_CASE(missing_or_malformed_files_mean_no_limit) {
  BOOST_TEST(argus::detail::cgroup_cpu_limit("/nonexistent/argus/root").value_or(0) == 0u);
  const std::string good_cgroup = "0::/a\n";
  for (const std::string& cpu_max :
       std::vector<std::string>{"", "\n", "max", "garbage", "100000", "-100000 100000", "100000 0",
                                "100000 -1", "100000 abc", "1e5 100000", "99999999999999999999 1",
                                std::string("100000\0 100000", 14)}) {
    fake_root t;
    t.write("/proc/self/cgroup", good_cgroup);
    t.write("/proc/self/mountinfo", v2_mountinfo);
    t.write("/sys/fs/cgroup/a/cpu.max", cpu_max);
    BOOST_TEST(t.limit() == 0u, "cpu.max '" << cpu_max << "'");
  }
  for (const std::string& cgroup : std::vector<std::string>{
           "", "\n", "garbage", "0:", "0::", "0::relative/path\n", "1:cpu\n", "4:memory:/a\n"}) {
    fake_root t;
    t.write("/proc/self/cgroup", cgroup);
    t.write("/proc/self/mountinfo", v2_mountinfo + v1_mountinfo);
    t.write("/sys/fs/cgroup/cpu.max", "100000 100000");
    t.write("/sys/fs/cgroup/a/cpu.max", "100000 100000");
    BOOST_TEST(t.limit() == 0u, "/proc/self/cgroup '" << cgroup << "'");
  }
  for (const std::string& mountinfo : std::vector<std::string>{
           "", "30 26 0:26 / /sys/fs/cgroup\n", "30 26 0:26 / /sys/fs/cgroup rw - cgroup2\n",
           "30 26 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n",
           "30 26 0:26 / /sys/fs/cgroup rw cgroup2 cgroup2 rw\n"}) {
    fake_root t;
    t.write("/proc/self/cgroup", good_cgroup);
    t.write("/proc/self/mountinfo", mountinfo);
    t.write("/sys/fs/cgroup/a/cpu.max", "100000 100000");
    BOOST_TEST(t.limit() == 0u, "mountinfo '" << mountinfo << "'");
  }
  {  // no mountinfo at all
    fake_root t;
    t.write("/proc/self/cgroup", good_cgroup);
    BOOST_TEST(t.limit() == 0u);
  }
  {  // v1 with only one of its two files
    fake_root t;
    t.write("/proc/self/cgroup", "4:cpu,cpuacct:/\n");
    t.write("/proc/self/mountinfo", v1_mountinfo);
    t.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "100000");
    BOOST_TEST(t.limit() == 0u);
  }
}

// The machine's own files parse without throwing, and whatever they say is a count >= 1.
BOOST_AUTO_TEST_CASE(this_machine) {
  const auto limit = argus::detail::cgroup_cpu_limit();
  BOOST_TEST_MESSAGE(
      "cgroup CPU limit here: " << (limit ? std::to_string(*limit) : std::string("none")));
  if (limit) BOOST_TEST(*limit >= 1u);
}
