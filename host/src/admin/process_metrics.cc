#include "admin/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace sluice::host {

namespace {

struct ProcStat {
  double cpu_seconds = 0;  // utime + stime
  double start_ticks = 0;  // since boot, in clock ticks
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

// /proc/self/stat (proc(5)): the command (field 2) may hold spaces and parentheses, so the
// fields are counted from the last ')'.
std::optional<ProcStat> read_stat() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest),
                             std::istream_iterator<std::string>()};
  // f[0] is field 3 (state): field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  if (ticks <= 0 || page <= 0) return std::nullopt;
  try {
    ProcStat s;
    s.cpu_seconds = static_cast<double>(std::stoull(f[11]) + std::stoull(f[12])) /
                    static_cast<double>(ticks);                  // utime, stime (14, 15)
    s.start_ticks = static_cast<double>(std::stoull(f[19]));     // starttime (22)
    s.virtual_bytes = static_cast<double>(std::stoull(f[20]));   // vsize (23)
    s.resident_bytes = static_cast<double>(std::stoll(f[21])) *  // rss (24), in pages
                       static_cast<double>(page);
    return s;
  } catch (...) {  // a malformed field: leave the families out
    return std::nullopt;
  }
}

// The boot time (Unix seconds): "btime" in /proc/stat.
std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (fields >> key >> value && key == "btime") return value;
  }
  return std::nullopt;
}

std::optional<double> open_fds() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec);
  if (ec) return std::nullopt;
  double n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return std::nullopt;
    ++n;
  }
  return n - 1;  // the iterator's own descriptor on the directory
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            double value) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                 type, name, value);
}

}  // namespace

std::string render_process_metrics() {
  std::string out;
  if (auto s = read_stat()) {
    family(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.", s->cpu_seconds);
    family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
           s->virtual_bytes);
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           s->resident_bytes);
    if (auto boot = boot_time()) {
      family(out, "process_start_time_seconds", "gauge",
             "Start time of the process since unix epoch in seconds.",
             *boot + s->start_ticks / static_cast<double>(sysconf(_SC_CLK_TCK)));
    }
  }
  if (auto fds = open_fds()) {
    family(out, "process_open_fds", "gauge", "Number of open file descriptors.", *fds);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
           static_cast<double>(limit.rlim_cur));
  }
  return out;
}

}  // namespace sluice::host
