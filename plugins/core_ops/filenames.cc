// filenames: the paths matching a directory or glob, each emitted once.
#include <sluice/sluice.hpp>

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "periodic_sources.hpp"
#include "source_support.hpp"

namespace sluice::core_ops {

namespace {
// A path as a value: a string when it is valid UTF-8 (strings always are), else its bytes,
// which still open the same file (a replaced name would not).
Value path_value(const std::string& p) {
  return sdk::valid_utf8(p) ? Value::string(p) : Value::bytes(p);
}
}  // namespace

Filenames::Filenames(const sl_node_init& init, const Config& cfg)
    : path_(cfg.get_string("path")),
      poll_interval_(cfg.get_duration("poll_interval_ms")),
      watch_(cfg.get_bool("watch")),
      emits_(init.task_index == 0) {
  if (path_.empty()) cfg.fail("path", "must not be empty (give a directory or a glob pattern)");
  require_positive(cfg, "poll_interval_ms", poll_interval_.count());
}

Status Filenames::start(Context /*ctx*/) {
  // As streamz: a path with no wildcard that names a directory means every entry in it.
  pattern_ = path_;
  struct stat st {};
  if (path_.find_first_of("*?[") == std::string::npos && ::stat(path_.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    if (pattern_.back() != '/') pattern_ += '/';
    pattern_ += '*';
  }
  return {};
}

Status Filenames::scan() {
  glob_t g{};
  const int rc = ::glob(pattern_.c_str(), GLOB_NOSORT, nullptr, &g);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    ::globfree(&g);
    // GLOB_ABORTED does not happen without GLOB_ERR: unreadable directories are skipped, as
    // Python's glob skips them.
    return sdk::Status(SL_RESOURCE_EXHAUSTED,
                       "filenames: out of memory matching '" + pattern_ + "'");
  }
  std::vector<std::string> found;
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) {
    std::string p(g.gl_pathv[i]);
    if (!seen_.contains(p)) found.push_back(std::move(p));
  }
  ::globfree(&g);
  std::sort(found.begin(), found.end());  // byte order = code point order, as Python's sorted
  new_.assign(found.begin(), found.end());
  return {};
}

Result<SourceState> Filenames::poll(Context ctx, uint32_t budget) {
  if (!emits_) return SourceState::done;
  const int64_t now = ctx.now_ns();
  if (new_.empty() && (!scanned_ || (watch_ && now >= next_scan_ns_))) {
    SLUICE_SDK_RETURN_IF_ERROR(scan());
    scanned_ = true;
    next_scan_ns_ = now + std::chrono::nanoseconds(poll_interval_).count();
  }
  out_.clear();
  const size_t n = std::min<size_t>(std::max<uint32_t>(budget, 1), new_.size());
  for (size_t i = 0; i < n; ++i) {
    out_.push_back(path_value(new_.front()));
    seen_.insert(std::move(new_.front()));
    new_.pop_front();
  }
  const Status emitted = out_.empty() ? Status() : ctx.emit_values(out_);
  out_.clear();
  SLUICE_SDK_RETURN_IF_ERROR(emitted);
  if (!new_.empty()) return SourceState::more;
  if (!watch_) return SourceState::done;
  SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(
      k_timer, std::chrono::nanoseconds(std::max<int64_t>(next_scan_ns_ - now, 0))));
  return SourceState::idle;
}

Result<Value> Filenames::snapshot(Context /*ctx*/) {
  std::vector<Value> seen;
  seen.reserve(seen_.size());
  for (const std::string& p : seen_) seen.push_back(path_value(p));
  return Value::object({{"seen", Value::array(seen)}});
}

Status Filenames::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> seen = state.get("seen");
  if (!seen || !seen->is_array()) {
    return sdk::invalid_argument("filenames: checkpoint state has no 'seen' array: " +
                                 state.to_json());
  }
  seen_.clear();
  for (size_t i = 0; i < seen->size(); ++i) {
    const Value p = (*seen)[i];
    if (!p.is_string() && !p.is_bytes()) {
      return sdk::invalid_argument("filenames: checkpoint 'seen' holds a non-string: " +
                                   p.to_json());
    }
    seen_.emplace(p.as_str());
  }
  return {};
}

}  // namespace sluice::core_ops
