// to_files in the checkpoint protocol (docs/CHECKPOINTING.md, docs/CONNECTORS.md).
//
//   process             lines go to hidden in-progress part files; a roll finishes one
//                       (flush, fsync, close) and keeps it for the next commit
//   checkpoint_prepare  every open part file is finished too, their directories fsynced:
//                       all the epoch's lines are durable, none is visible
//   snapshot            {"parts": every finished file no commit published yet}
//   checkpoint_commit   each of those is renamed to its final name, its directory fsynced
//   start after restore the restored parts are published (the crash came between the
//                       checkpoint's store and the renames: a part still in progress is
//                       renamed, one already renamed is left), then every other in-progress
//                       file of this prefix and task is deleted: it belongs to an epoch no
//                       stored checkpoint holds, and the sources replay its lines. A fresh
//                       start with checkpoints deletes them all.
//
// No checkpoint_recover: a commit is a rename that the restart can always finish from the
// checkpoint's list, so the newest checkpoint always counts.
#include <sluice/sluice.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "to_files.hpp"

namespace sluice::files {

using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

constexpr std::string_view k_in_progress = ".inprogress";

bool is_hex(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}
bool is_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

Result<bool> ToFiles::checkpoint_prepare(Context ctx, uint64_t epoch) {
  SLUICE_SDK_RETURN_IF_ERROR(close_buckets(ctx, [](const Bucket&) { return true; }));
  // The directory entries of the finished files must be durable before the checkpoint that
  // lists them is stored: the commit (or the restart) renames them.
  std::vector<std::string> dirs;
  for (const Part& p : finished_) {
    const std::string abs = absolute(p.in_progress);
    std::string dir = abs.substr(0, abs.rfind('/'));
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
  }
  for (const std::string& dir : dirs) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return sdk::errno_status(err, "to_files: cannot fsync the directory '" + dir + "'");
    }
    ::close(fd);
  }
  if (!finished_.empty()) {
    auto& parts = prepared_[epoch];
    for (Part& p : finished_) parts.push_back(std::move(p));
    finished_.clear();
  }
  publish_metrics(ctx);
  return true;
}

Status ToFiles::checkpoint_commit(Context ctx, uint64_t epoch) {
  while (!prepared_.empty() && prepared_.begin()->first <= epoch) {
    std::vector<Part>& parts = prepared_.begin()->second;
    while (!parts.empty()) {
      SLUICE_SDK_RETURN_IF_ERROR(publish(ctx, parts.back()));
      parts.pop_back();
    }
    prepared_.erase(prepared_.begin());
  }
  publish_metrics(ctx);
  return {};
}

Result<Value> ToFiles::snapshot(Context /*ctx*/) {
  std::vector<Value> parts;
  for (const auto& [epoch, list] : prepared_) {
    for (const Part& p : list) {
      parts.push_back(Value::array({Value::string(p.in_progress), Value::string(p.final_name)}));
    }
  }
  return Value::object({{"parts", Value::array(std::span<const Value>(parts))}});
}

Status ToFiles::restore(Context /*ctx*/, ValueRef state) {
  const std::optional<Value> parts = state.is_object() ? state.get("parts") : std::nullopt;
  if (!parts || !parts->is_array()) {
    return sdk::invalid_argument("to_files: the saved state has no \"parts\" list");
  }
  for (size_t i = 0; i < parts->size(); ++i) {
    const Value p = (*parts)[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string()) {
      return sdk::invalid_argument("to_files: the saved state's part " + std::to_string(i) +
                                   " is not [in-progress, final]");
    }
    restored_.push_back({std::string(p[0].as_str()), std::string(p[1].as_str())});
  }
  return {};
}

bool ToFiles::own_in_progress(std::string_view name) const {
  // ".STEM.PREFIX-TASK-RUN-N.EXT.inprogress", matched from the end: STEM is free text (a
  // key), the rest is ours.
  if (name.size() < 2 || name.front() != '.' || !name.ends_with(k_in_progress)) return false;
  name.remove_suffix(k_in_progress.size());
  if (!name.ends_with(extension_)) return false;
  name.remove_suffix(extension_.size());
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || !is_digits(name.substr(dash + 1))) return false;
  name = name.substr(0, dash);
  dash = name.rfind('-');
  if (dash == std::string_view::npos || !is_hex(name.substr(dash + 1))) return false;
  name = name.substr(0, dash);
  const std::string own = "." + prefix_ + "-" + std::to_string(task_);
  return name.ends_with(own) && name.size() > own.size() + 1;
}

Status ToFiles::recover(Context ctx) {
  size_t published = 0;
  for (const Part& p : restored_) {
    struct stat st {};
    if (::stat(absolute(p.in_progress).c_str(), &st) == 0) {
      SLUICE_SDK_RETURN_IF_ERROR(publish(ctx, p));
      ++published;
    } else if (::stat(absolute(p.final_name).c_str(), &st) != 0) {
      ctx.log_error("to_files: '" + absolute(p.final_name) +
                    "', which the restored checkpoint holds, is gone, and so is its "
                    "in-progress file (deleted outside sluice?): its lines are lost");
    }
  }
  std::vector<std::string> keep;
  for (const Part& p : restored_) keep.push_back(absolute(p.in_progress));
  restored_.clear();
  // Every in-progress file of ours that no checkpoint covers.
  std::vector<std::filesystem::path> leftovers;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           dir_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    // Its own error code: another task may rename or delete an entry while this one lists
    // (only the listing's own errors fail the start).
    std::error_code entry_ec;
    if (it->is_regular_file(entry_ec) && own_in_progress(it->path().filename().native())) {
      leftovers.push_back(it->path());
    }
  }
  if (ec) {
    return sdk::Status(SL_UNAVAILABLE, "to_files: cannot list '" + dir_ +
                                           "' for leftover part files: " + ec.message());
  }
  size_t deleted = 0;
  for (const auto& path : leftovers) {
    if (std::find(keep.begin(), keep.end(), path.native()) != keep.end()) continue;
    if (!checkpointing_) continue;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return sdk::errno_status(errno, "to_files: cannot delete '" + path.native() + "'");
    }
    ++deleted;
  }
  if (published > 0 || deleted > 0) {
    ctx.log_info("to_files: recovered " + std::to_string(published) +
                 " part files the restored checkpoint covers (published), deleted " +
                 std::to_string(deleted) +
                 " in-progress files of epochs no checkpoint holds (their lines are replayed)");
  }
  if (!checkpointing_ && !leftovers.empty()) {
    ctx.log_warn("to_files: " + std::to_string(leftovers.size()) + " in-progress part files of '" +
                 prefix_ + "' task " + std::to_string(task_) + " are left in '" + dir_ +
                 "' by an earlier run that stopped without finishing them (without "
                 "checkpoints nothing says which lines they hold that came again; left as "
                 "they are), e.g. '" +
                 leftovers.front().native() + "'");
  }
  return {};
}

}  // namespace sluice::files
