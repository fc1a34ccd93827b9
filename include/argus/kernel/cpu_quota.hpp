// argus/kernel/cpu_quota.hpp -- kernel layer: the CPU time a Linux control group allows the
// process, in whole CPUs (detail::cgroup_cpu_limit), which the default thread count respects.
//
// A container started with `docker run --cpus=2`, a Kubernetes pod with a CPU limit, or a
// systemd unit with CPUQuota= sees every CPU of the machine in its affinity mask, but the
// kernel lets it run for only `quota` microseconds of every `period` (cgroup v2's cpu.max,
// v1's cpu.cfs_quota_us and cpu.cfs_period_us). A thread pool sized to the machine there is
// throttled: its threads use the quota up early in each period and then all wait for the
// next one, and a spinning pool (ours, OpenMP's) spends the quota spinning. So the default
// thread count is at most ceil(quota / period) of the most restrictive of the process's
// cgroup and its ancestors (as the JVM, .NET and Go >= 1.25 count theirs), and at least 1.
//
// Where the files are: /proc/self/cgroup names the process's cgroup in each hierarchy
// ("0::/path" for v2; "N:cpu,cpuacct:/path" for v1's cpu controller, preferred when present,
// as on hybrid systems, whose v2 hierarchy then has no cpu controller), /proc/self/mountinfo
// where that hierarchy is mounted and which of its directories the mount shows (a container
// sees its own cgroup as the mount's root). Anything missing, unreadable or malformed means
// "no limit known" (std::nullopt), never an error: the count then falls back to the affinity
// mask. Every path can be put under a root directory, so tests read made-up trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace argus::detail {

/// The text of a small file (under /proc or /sys: at most 64 KiB read), or nullopt where it
/// cannot be opened or read.
inline std::optional<std::string> read_small_file(const std::string& path) {
#if defined(__linux__)
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  bool ok = true;
  while (text.size() < 65536) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0) {
      ok = false;
      break;
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return text;
#else
  (void)path;
  return std::nullopt;
#endif
}

/// The next whitespace-separated field of `text` from `pos` on (empty at the end).
inline std::string_view next_field(std::string_view text, std::size_t& pos) noexcept {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n')) ++pos;
  const std::size_t start = pos;
  while (pos < text.size() && text[pos] != ' ' && text[pos] != '\t' && text[pos] != '\n') ++pos;
  return text.substr(start, pos - start);
}

/// A decimal integer that is the whole of `s` (an optional '-', then digits), or nullopt.
inline std::optional<std::int64_t> parse_integer(std::string_view s) noexcept {
  bool negative = false;
  if (!s.empty() && s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 18) return std::nullopt;  // 18 digits cannot overflow
  std::int64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

/// Whether `name` is one of the comma-separated items of `list`.
inline bool has_item(std::string_view list, std::string_view name) noexcept {
  while (true) {
    const std::size_t comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) return false;
    list.remove_prefix(comma + 1);
  }
}

/// A mountinfo path with its escapes (\040 for a space, \011, \012, \134) decoded.
inline std::string unescape_mount_path(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const auto digit = [](char c) { return c >= '0' && c <= '7'; };
      if (digit(s[i + 1]) && digit(s[i + 2]) && digit(s[i + 3])) {
        out.push_back(
            static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

/// Where the process's cpu controller lives: its cgroup's directory, the directory the
/// hierarchy is mounted at (the walk up to ancestors stops there), and whether it is the
/// unified (v2) hierarchy.
struct cgroup_cpu_controller {
  std::string directory;
  std::string mount_point;
  bool unified = false;
};

/// Finds the process's cpu controller from /proc/self/cgroup and /proc/self/mountinfo under
/// `root` ("" for the real ones), or nullopt where there is none (not Linux, no cgroup file
/// system, no cpu controller, malformed files).
inline std::optional<cgroup_cpu_controller> find_cgroup_cpu_controller(
    const std::string& root = "") {
  const auto cgroups = read_small_file(root + "/proc/self/cgroup");
  if (!cgroups) return std::nullopt;
  // "ID:controllers:path" per line; the path may itself hold ':'.
  std::optional<std::string> v1_path, v2_path;
  std::string_view rest = *cgroups;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    const std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos) continue;
    const std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, c1), controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string_view path = line.substr(c2 + 1);
    if (path.empty() || path.front() != '/') continue;
    if (id == "0" && controllers.empty())
      v2_path = std::string(path);
    else if (has_item(controllers, "cpu"))
      v1_path = std::string(path);
  }
  const bool unified = !v1_path;
  if (unified && !v2_path) return std::nullopt;
  const std::string& path = unified ? *v2_path : *v1_path;

  const auto mounts = read_small_file(root + "/proc/self/mountinfo");
  if (!mounts) return std::nullopt;
  // "ID parent major:minor root mount-point options [optional...] - type source super-options"
  rest = *mounts;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    std::size_t pos = 0;
    std::string_view field[5];
    for (auto& f : field) f = next_field(line, pos);
    if (field[4].empty()) continue;
    std::string_view type, super_options;
    for (std::string_view f = next_field(line, pos); !f.empty(); f = next_field(line, pos)) {
      if (f == "-") {
        type = next_field(line, pos);
        const std::string_view source = next_field(line, pos);
        super_options = next_field(line, pos);
        if (source.empty() || super_options.empty()) type = {};  // a line cut short
        break;
      }
    }
    const bool match =
        unified ? type == "cgroup2" : type == "cgroup" && has_item(super_options, "cpu");
    if (!match) continue;
    // The mount shows the hierarchy from mount_root down: the process's directory is its
    // path below that (a container's own cgroup is "/" in both, with a cgroup namespace, or
    // the same path in both, without one). A path outside the mount falls back to the
    // mount's top directory.
    const std::string mount_root = unescape_mount_path(field[3]);
    cgroup_cpu_controller found;
    found.unified = unified;
    found.mount_point = root + unescape_mount_path(field[4]);
    found.directory = found.mount_point;
    if (mount_root == "/") {
      if (path != "/") found.directory += path;
    } else if (path.size() >= mount_root.size() &&
               path.compare(0, mount_root.size(), mount_root) == 0 &&
               (path.size() == mount_root.size() || path[mount_root.size()] == '/')) {
      found.directory += path.substr(mount_root.size());
    }
    return found;
  }
  return std::nullopt;
}

/// The CPUs the quota of one cgroup directory allows, ceil(quota / period) (at least 1), or
/// nullopt for no limit or nothing readable.
inline std::optional<std::size_t> cgroup_directory_cpu_limit(const std::string& directory,
                                                             bool unified) {
  std::int64_t quota = -1, period = 0;
  if (unified) {  // cpu.max: "max 100000" or "150000 100000"
    const auto text = read_small_file(directory + "/cpu.max");
    if (!text) return std::nullopt;
    std::size_t pos = 0;
    const std::string_view q = next_field(*text, pos), p = next_field(*text, pos);
    if (q == "max") return std::nullopt;
    const auto qv = parse_integer(q), pv = parse_integer(p);
    if (!qv || !pv) return std::nullopt;
    quota = *qv;
    period = *pv;
  } else {  // cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us
    const auto q = read_small_file(directory + "/cpu.cfs_quota_us");
    const auto p = read_small_file(directory + "/cpu.cfs_period_us");
    if (!q || !p) return std::nullopt;
    std::size_t qpos = 0, ppos = 0;
    const auto qv = parse_integer(next_field(*q, qpos)), pv = parse_integer(next_field(*p, ppos));
    if (!qv || !pv) return std::nullopt;
    quota = *qv;
    period = *pv;
  }
  if (quota <= 0 || period <= 0) return std::nullopt;
  const std::int64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<std::size_t>(cpus < 1 ? 1 : cpus);
}

/// The CPUs the process's cgroup quotas allow: the smallest cgroup_directory_cpu_limit of its
/// cpu controller's directory and every ancestor up to the mount's top (a parent's limit
/// binds its children too), or nullopt where no quota is set or none can be read. `root`
/// puts every path under a directory (tests); "" reads the real files.
inline std::optional<std::size_t> cgroup_cpu_limit(const std::string& root = "") {
  const auto controller = find_cgroup_cpu_controller(root);
  if (!controller) return std::nullopt;
  std::optional<std::size_t> limit;
  std::string directory = controller->directory;
  while (true) {
    const auto here = cgroup_directory_cpu_limit(directory, controller->unified);
    if (here && (!limit || *here < *limit)) limit = here;
    if (directory.size() <= controller->mount_point.size()) break;
    const std::size_t slash = directory.rfind('/');
    if (slash == std::string::npos || slash < controller->mount_point.size()) break;
    directory.resize(slash);
  }
  return limit;
}

}  // namespace argus::detail
