// [checkpoint]: the host's keys (store, interval_ms, keep) and the chosen
// store's own keys, checked against the params the store declares (the
// built-in "fs" declares `dir`). docs/CHECKPOINTING.md describes them.
#include "config/detail/validator.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

namespace sluice::host::config_detail {
namespace {

// Why the fs store could not make or use `dir` at start (empty: it could): it must be a
// writable directory, or its nearest existing ancestor must be one.
std::string directory_problem(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path at = dir;
  while (!std::filesystem::exists(at, ec)) {
    if (!at.has_relative_path() || at.parent_path() == at) return {};
    at = at.has_parent_path() ? at.parent_path() : std::filesystem::path(".");
  }
  const std::string what = at == dir
                               ? fmt::format("'{}'", dir.string())
                               : fmt::format("cannot create '{}': '{}'", dir.string(), at.string());
  if (!std::filesystem::is_directory(at, ec)) return what + " is not a directory";
  if (::access(at.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("{} is not writable: {}", what, std::strerror(errno));
  }
  return {};
}

}  // namespace

void Validator::check_checkpoint(const toml::node& node) {
  const auto* table = node.as_table();
  if (!table) {
    error(pos(node.source()), "", "checkpoint",
          fmt::format("expected a table ([checkpoint]), got {}", toml_type_name(node)));
    return;
  }
  CheckpointSettings& cp = spec_.checkpoint;
  cp.enabled = true;
  cp.pos = pos(node.source());
  const auto entries = entries_in_file_order(*table);

  // The store first: it decides which other keys exist.
  for (const auto& e : entries) {
    if (e.key->str() != "store") continue;
    const auto* s = e.node->as_string();
    if (!s) {
      error(pos(e.node->source()), "", "checkpoint.store",
            fmt::format("expected string (a checkpoint store's name), got {}",
                        toml_type_name(*e.node)));
      return;
    }
    cp.store = s->get();
    if (!registry_.find_store(cp.store)) {
      error(pos(e.node->source()), "", "checkpoint.store",
            unknown_name_message("checkpoint store", cp.store, registry_.store_names(),
                                 "stores (built in, or from the loaded plugins)"));
      return;
    }
  }
  cp.store_info = registry_.find_store(cp.store);
  if (!cp.store_info) {
    error(cp.pos, "", "checkpoint.store",
          fmt::format("the checkpoint store '{}' is not registered", cp.store));
    return;
  }
  const StoreInfo& store = *cp.store_info;

  std::vector<std::string> valid{"store", "interval_ms", "keep", "member"};
  for (const ParamInfo& p : store.params) valid.push_back(p.name);
  std::vector<std::pair<std::string, Value>> options;
  std::vector<std::string> given;
  for (const auto& e : entries) {
    const std::string key(e.key->str());
    const std::string full_key = fmt::format("checkpoint.{}", key);
    const toml::node& v = *e.node;
    if (key == "store") continue;
    if (key == "interval_ms") {
      if (auto i = runtime_int(v, key, 1, std::numeric_limits<int64_t>::max(), "checkpoint")) {
        cp.interval_ms = *i;
      }
    } else if (key == "keep") {
      if (auto i = runtime_int(v, key, 1, 1'000'000, "checkpoint")) {
        cp.keep = static_cast<uint32_t>(*i);
      }
    } else if (key == "member") {
      if (const auto* m = v.as_string()) {
        if (auto problem = member_name_problem(m->get())) {
          error(pos(v.source()), "", full_key, *problem);
        } else {
          cp.member = m->get();
        }
      } else {
        error(pos(v.source()), "", full_key,
              fmt::format("expected string (this daemon's name among the daemons sharing the "
                          "store), got {}",
                          toml_type_name(v)));
      }
    } else if (const ParamInfo* p = store.find_param(key)) {
      given.push_back(key);
      auto value = check_value(*p, v, Where{"", full_key});
      if (!value) continue;
      if (store.name == "fs" && key == "dir") {
        const std::filesystem::path dir(std::string(value->as_str()));
        if (dir.empty()) {
          error(pos(v.source()), "", full_key, "must not be empty (omit it for the default)");
          continue;
        }
        if (std::any_of(dir.begin(), dir.end(), [](const auto& part) { return part == ".."; })) {
          error(
              pos(v.source()), "", full_key,
              fmt::format("'{}' must not contain '..' (give the directory itself)", dir.string()));
          continue;
        }
        if (options_.environment) {
          if (std::string problem = directory_problem(dir); !problem.empty()) {
            error(pos(v.source()), "", full_key, problem + " (start would fail)");
            continue;
          }
        }
      }
      options.emplace_back(key, std::move(*value));
    } else {
      error(pos(e.key->source()), "", full_key,
            unknown_name_message("key", key, valid,
                                 fmt::format("[checkpoint] keys (store '{}')", store.name)));
    }
  }
  for (const ParamInfo& p : store.params) {
    if (std::find(given.begin(), given.end(), p.name) != given.end()) continue;
    if (p.required) {
      error(cp.pos, "", fmt::format("checkpoint.{}", p.name),
            fmt::format("missing; store '{}' requires it ({})", store.name, p.doc));
    } else if (p.default_json) {
      if (auto d = parsed_default(p)) options.emplace_back(p.name, std::move(*d));
    }
  }
  cp.options = Value::object(options);
}

}  // namespace sluice::host::config_detail
