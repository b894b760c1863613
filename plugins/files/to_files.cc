// to_files: config, buckets, rolling and publishing; the checkpoint protocol and the
// recovery at start are in to_files_checkpoint.cc.
#include "to_files.hpp"

#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>
#include <utility>
#include <variant>

#include "../sinks/line_text.hpp"  // the JSON line text print and sink_to_textfile write

namespace sluice::files {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;
using sinks::append_json;

namespace {

constexpr int64_t k_ns_per_s = 1'000'000'000;
constexpr int64_t k_min_roll_check_ns = 10'000'000;
// A percent-encoded key longer than this makes a name past NAME_MAX (255) with the part
// suffix: an error of the element rather than a failed open.
constexpr size_t k_max_key_segment = 160;

PathTemplate parse_template(const Config& cfg) {
  auto parsed = PathTemplate::parse(cfg.get_string("path"));
  if (auto* problem = std::get_if<std::string>(&parsed)) cfg.fail("path", *problem);
  return std::get<PathTemplate>(std::move(parsed));
}

std::string default_prefix(std::string_view node_id) {
  std::string out(node_id);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return out.substr(0, 64);
}

void check_prefix(const Config& cfg, const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 64) cfg.fail("part_prefix", "must be 1 to 64 bytes long");
  for (char c : prefix) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) {
      cfg.fail("part_prefix", "may hold only letters, digits and '_' (got \"" + prefix +
                                  "\"): '-' and '.' "
                                  "separate the parts of a part file's name");
    }
  }
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

std::string random_run_id() {
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out(12, '0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = k_hex[(r >> (4 * i)) & 0xf];
  return out;
}

/// mkdir -p, fsyncing the parent of every directory it creates (a rename into it must
/// survive a power loss).
Status make_dirs(const std::string& path) {
  if (path.empty()) return {};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return {};
    return sdk::Status(SL_FAILED_PRECONDITION,
                       "to_files: '" + path + "' exists and is not a directory");
  }
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash);
  if (slash != std::string::npos && slash > 0) SLUICE_SDK_RETURN_IF_ERROR(make_dirs(parent));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return sdk::errno_status(errno, "to_files: cannot create the directory '" + path + "'");
  }
  const int fd = ::open(slash == 0 ? "/" : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return {};
}

}  // namespace

void ToFiles::validate(const Config& cfg) {
  const PathTemplate t = parse_template(cfg);
  const std::string dir = cfg.get_string("dir");
  if (cfg.has("key") && !t.uses_key()) {
    cfg.fail("key", "is set, but `path` has no {key} (\"" + cfg.get_string("path") + "\")");
  }
  if (cfg.has("key") && cfg.get_string("key").empty()) {
    cfg.fail("key", "must be \"@key\" or a field name");
  }
  const bool gzip = cfg.get_string("compression") == "gzip";
  if (!gzip && ends_with(t.extension(), ".gz")) {
    cfg.fail("path", "ends with \".gz\" but compression is \"none\" (set compression = \"gzip\")");
  }
  if (cfg.get_string("time") == "event" && !t.uses_time()) {
    cfg.fail("time", "is \"event\", but `path` has no strftime field (%Y, %H, ...)");
  }
  if (cfg.has("part_prefix")) check_prefix(cfg, cfg.get_string("part_prefix"));
  if (!cfg.check_environment()) return;
  // What start's mkdir -p needs: the nearest existing ancestor is a writable directory.
  std::string probe = dir;
  struct stat st {};
  while (::stat(probe.c_str(), &st) != 0) {
    const size_t slash = probe.rfind('/');
    probe = slash == std::string::npos ? "." : slash == 0 ? "/" : probe.substr(0, slash);
  }
  if (!S_ISDIR(st.st_mode)) cfg.fail("dir", "'" + probe + "' exists and is not a directory");
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    cfg.fail("dir", "the directory '" + probe + "' is not writable for this user");
  }
}

ToFiles::ToFiles(const sl_node_init& init, const Config& cfg)
    : dir_(cfg.get_string("dir")),
      template_(parse_template(cfg)),
      event_time_(cfg.get_choice("time", {"processing", "event"}) == 1),
      json_(cfg.get_choice("format", {"json", "text"}) == 0),
      gzip_(cfg.get_choice("compression", {"none", "gzip"}) == 1),
      level_(static_cast<int>(cfg.get_int("compression_level"))),
      roll_bytes_(static_cast<uint64_t>(cfg.get_int("roll_bytes"))),
      roll_interval_ns_(cfg.get_duration("roll_interval_ms").count() * 1'000'000),
      max_open_(static_cast<size_t>(cfg.get_int("max_open_files"))),
      prefix_(cfg.has("part_prefix") ? cfg.get_string("part_prefix")
                                     : default_prefix(sdk::Context(init.ctx).node_id())),
      task_(init.task_index),
      checkpointing_(cfg.checkpointing()),
      extension_(template_.extension()) {
  if (cfg.has("key") && cfg.get_string("key") != "@key") key_field_ = cfg.get_string("key");
  check_prefix(cfg, prefix_);
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (gzip_ && !ends_with(extension_, ".gz")) extension_ += ".gz";
  // The declared constraints, for a host that does not check them (before ABI 1.2).
  if (cfg.get_int("roll_bytes") < 1) cfg.fail("roll_bytes", "must be at least 1");
  if (cfg.get_int("max_open_files") < 1) cfg.fail("max_open_files", "must be at least 1");
}

Status ToFiles::start(Context ctx) {
  run_ = random_run_id();
  SLUICE_SDK_RETURN_IF_ERROR(make_dirs(dir_));
  SLUICE_SDK_RETURN_IF_ERROR(recover(ctx));
  if (roll_interval_ns_ > 0) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(
        k_roll_timer,
        std::chrono::nanoseconds(std::max(roll_interval_ns_ / 4, k_min_roll_check_ns))));
  }
  publish_metrics(ctx);
  return {};
}

Result<ToFiles::BucketName> ToFiles::bucket_of(Context ctx, const sl_message& m) {
  BucketName name;
  std::string key;
  if (template_.uses_key()) {
    std::optional<Value> field;
    ValueRef k(m.key);
    if (key_field_) {
      const ValueRef v(m.value);
      field = v.is_object() ? v.get(*key_field_) : std::nullopt;
      k = field ? ValueRef(field->raw()) : ValueRef();
    }
    if (k.is_null()) {
      key = "__null__";
    } else if (k.is_string()) {
      key = key_segment(k.as_str());
    } else {
      std::string text;
      append_json(text, k);
      key = key_segment(text);
    }
    if (key.size() > k_max_key_segment) {
      return sdk::invalid_argument("to_files: the key makes a path segment of " +
                                   std::to_string(key.size()) + " bytes (at most " +
                                   std::to_string(k_max_key_segment) + ")");
    }
  }
  if (template_.uses_time()) {
    int64_t ns = ctx.now_ns();
    if (event_time_) {
      if (m.timestamp_ns == SL_NO_TIMESTAMP) {
        return sdk::invalid_argument(
            "to_files: time = \"event\", but the element has no event timestamp (set one "
            "upstream, e.g. with timestamp_by)");
      }
      ns = m.timestamp_ns;
    }
    const int64_t second = ns >= 0 ? ns / k_ns_per_s : (ns - k_ns_per_s + 1) / k_ns_per_s;
    if (second != tm_second_) {
      const auto t = static_cast<std::time_t>(second);
      if (::gmtime_r(&t, &tm_) == nullptr) {
        return sdk::invalid_argument("to_files: the time " + std::to_string(ns) +
                                     " ns is outside what the calendar functions handle");
      }
      tm_second_ = second;
    }
    name.time_text = template_.time_text(tm_);
  }
  name.path = template_.render(key, task_, tm_);
  return name;
}

Status ToFiles::process(Context ctx, uint32_t /*input*/, sdk::Batch batch) {
  for (const sl_message& m : batch) {
    // The element's line and bucket first: an error of the element leaves nothing written.
    const ValueRef v(m.value);
    line_.clear();
    if (json_) {
      append_json(line_, v);
    } else if (v.is_string()) {
      line_.append(v.as_str());
    } else {
      return sdk::invalid_argument("to_files: format \"text\" writes strings only, got " +
                                   std::string(v.kind_name()) + " (use format = \"json\")");
    }
    line_.push_back('\n');
    SLUICE_SDK_ASSIGN_OR_RETURN(BucketName name, bucket_of(ctx, m));
    const std::string& path = name.path;
    const std::string& time_text = name.time_text;
    if (!event_time_ && template_.uses_time() && time_text != last_time_text_) {
      // Processing time moved to a new bucket: the older ones get no more lines.
      last_time_text_ = time_text;
      SLUICE_SDK_RETURN_IF_ERROR(
          close_buckets(ctx, [&](const Bucket& b) { return b.time_text != time_text; }));
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(Bucket * bucket, open_bucket(ctx, path, time_text));
    bucket->last_used = ++use_clock_;
    SLUICE_SDK_RETURN_IF_ERROR(bucket->file.append(line_));
    bytes_written_ += line_.size();
    ++records_total_;
    if (bucket->file.bytes_in() >= roll_bytes_) SLUICE_SDK_RETURN_IF_ERROR(close_bucket(ctx, path));
  }
  publish_metrics(ctx);
  return {};
}

Result<ToFiles::Bucket*> ToFiles::open_bucket(Context ctx, const std::string& path,
                                              const std::string& time_text) {
  if (auto it = buckets_.find(path); it != buckets_.end()) return &it->second;
  if (buckets_.size() >= max_open_) {
    auto lru = std::min_element(buckets_.begin(), buckets_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    const std::string victim = lru->first;
    SLUICE_SDK_RETURN_IF_ERROR(close_bucket(ctx, victim));
  }
  const size_t slash = path.rfind('/');
  const std::string sub = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string stem = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string name = stem + "." + prefix_ + "-" + std::to_string(task_) + "-" + run_ + "-" +
                           std::to_string(next_part_++) + extension_;
  Part part{sub + "." + name + ".inprogress", sub + name};
  if (!sub.empty()) SLUICE_SDK_RETURN_IF_ERROR(make_dirs(absolute(sub.substr(0, sub.size() - 1))));
  SLUICE_SDK_ASSIGN_OR_RETURN(PartFile file,
                              PartFile::create(absolute(part.in_progress), gzip_, level_));
  auto [it, inserted] = buckets_.emplace(
      path, Bucket{std::move(file), std::move(part), time_text, ctx.now_ns(), use_clock_});
  return &it->second;
}

Status ToFiles::close_bucket(Context ctx, const std::string& path) {
  auto it = buckets_.find(path);
  if (it == buckets_.end()) return {};
  Bucket bucket = std::move(it->second);
  buckets_.erase(it);
  SLUICE_SDK_RETURN_IF_ERROR(bucket.file.finish());
  if (checkpointing_) {
    finished_.push_back(std::move(bucket.part));
    return {};
  }
  return publish(ctx, bucket.part);
}

Status ToFiles::close_buckets(Context ctx, const std::function<bool(const Bucket&)>& pred) {
  std::vector<std::string> paths;
  for (const auto& [path, bucket] : buckets_) {
    if (pred(bucket)) paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());  // a reproducible order of the files' names
  for (const std::string& path : paths) SLUICE_SDK_RETURN_IF_ERROR(close_bucket(ctx, path));
  return {};
}

Status ToFiles::publish(Context /*ctx*/, const Part& part) {
  const std::string from = absolute(part.in_progress);
  const std::string to = absolute(part.final_name);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return sdk::errno_status(errno, "to_files: cannot rename '" + from + "' to '" + to + "'");
  }
  const size_t slash = to.rfind('/');
  const std::string dir = to.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sdk::errno_status(errno, "to_files: cannot open the directory '" + dir + "'");
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced) return sdk::errno_status(err, "to_files: cannot fsync the directory '" + dir + "'");
  struct stat st {};
  if (::stat(to.c_str(), &st) == 0) bytes_committed_ += static_cast<uint64_t>(st.st_size);
  ++files_committed_;
  return {};
}

Status ToFiles::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_roll_timer) return {};
  const int64_t now = ctx.now_ns();
  SLUICE_SDK_RETURN_IF_ERROR(
      close_buckets(ctx, [&](const Bucket& b) { return now - b.opened_ns >= roll_interval_ns_; }));
  publish_metrics(ctx);
  return ctx.timer_start(
      k_roll_timer, std::chrono::nanoseconds(std::max(roll_interval_ns_ / 4, k_min_roll_check_ns)));
}

Status ToFiles::finish(Context ctx) {
  // After the end-of-input checkpoint (with checkpoints): what arrives now is what operators
  // emit at finish. It is published too, so that the output is complete when the run ends.
  SLUICE_SDK_RETURN_IF_ERROR(close_buckets(ctx, [](const Bucket&) { return true; }));
  for (auto& [epoch, parts] : prepared_) {
    for (const Part& p : parts) SLUICE_SDK_RETURN_IF_ERROR(publish(ctx, p));
  }
  prepared_.clear();
  for (const Part& p : finished_) SLUICE_SDK_RETURN_IF_ERROR(publish(ctx, p));
  finished_.clear();
  publish_metrics(ctx);
  return {};
}

void ToFiles::stop(Context ctx) {
  if (checkpointing_) {
    // What no checkpoint covers stays in-progress: the restart deletes it and the replay
    // writes it again. The final checkpoint of a clean stop left nothing open.
    if (!buckets_.empty()) {
      ctx.log_info("to_files: " + std::to_string(buckets_.size()) +
                   " in-progress part files are left for the restart to delete (no "
                   "checkpoint covers their lines)");
    }
    buckets_.clear();
    return;
  }
  // Without checkpoints: at-least-once, so what was received is published.
  const Status st = close_buckets(ctx, [](const Bucket&) { return true; });
  if (!st.is_ok()) ctx.log_error(st.message());
}

void ToFiles::publish_metrics(Context ctx) const {
  ctx.gauge_set("files_records_total", "", static_cast<double>(records_total_));
  ctx.gauge_set("files_bytes_written_total", "", static_cast<double>(bytes_written_));
  ctx.gauge_set("files_committed_total", "", static_cast<double>(files_committed_));
  ctx.gauge_set("files_committed_bytes_total", "", static_cast<double>(bytes_committed_));
  ctx.gauge_set("files_open", "", static_cast<double>(buckets_.size()));
}

}  // namespace sluice::files
