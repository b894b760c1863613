// `sluiced checkpoints CONFIG [--json]`.
#include "checkpoint/coordinator.hpp"
#include "checkpoint/format.hpp"
#include "checkpoint/fs_store.hpp"
#include "checkpoint/key_group_index.hpp"
#include "checkpoint/store.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "value/json.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace sluice::host::checkpoint {
namespace {

std::string iso_time(int64_t ns) {
  if (ns == 0) return "-";
  auto tp = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(tp)));
}

size_t encoded_size(const Value& v) {
  std::string out;
  encode_value(v, out);
  return out.size();
}

struct Row {
  EpochEntry entry;
  std::optional<Checkpoint> cp;
  std::string problem;
};

// The key groups a keyed node's saved state holds (SL_NODE_KEYED_STATE: its "groups" member
// maps each group, in decimal, to that group's state), ascending; empty for other nodes.
std::vector<int64_t> state_groups(const GraphSpec& spec, const NodeState& n) {
  std::vector<int64_t> out;
  const NodeSpec* node = spec.find(n.id);
  if (node == nullptr || node->info == nullptr || node->type != n.type ||
      (node->info->flags & SL_NODE_KEYED_STATE) == 0 || !n.state.is_object()) {
    return out;
  }
  const auto groups = n.state.get("groups");
  if (!groups || !groups->is_object()) return out;
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string_view name = groups->key_at(i);
    int64_t g = 0;
    bool digits = !name.empty() && name.size() < 10;
    for (char c : name) {
      digits = digits && c >= '0' && c <= '9';
      g = g * 10 + (c - '0');
    }
    if (digits) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Where each key group would be restored from now (KeyGroupIndex's rule: the committed entry
// with the highest claim, then the newest epoch), with who wrote that entry.
struct GroupHolder {
  std::string source;
  uint32_t group = 0;
  uint64_t claim = 0;
  uint64_t epoch = 0;
  std::string member;
  uint64_t highest_claim = 0;  // stored anywhere, committed or not
};

Result<std::vector<GroupHolder>> group_holders(const GraphSpec& spec,
                                               const std::vector<Row>& rows) {
  auto store = open_store(spec);
  if (!store.is_ok()) return store.status();
  KeyGroupIndex index(std::move(store).value());
  auto view = index.view();
  if (!view.is_ok()) return view.status();
  std::vector<GroupHolder> out;
  for (const auto& [key, high] : view->highest_claim) {
    GroupHolder h{key.first, key.second, 0, 0, "", high};
    if (auto held = view->holder.find(key); held != view->holder.end()) {
      h.claim = held->second.claim;
      h.epoch = held->second.epoch;
      for (const Row& r : rows) {
        if (r.entry.epoch == h.epoch && r.cp) h.member = r.cp->member;
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::string join_groups(const std::vector<int64_t>& groups) {
  return fmt::format("{}", fmt::join(groups, ", "));
}

// Prints the listing to stdout (text or JSON); problems to stderr. Returns the exit
// code: 1 when the store cannot be opened or listed, 2 without [checkpoint].
int list_checkpoints(const GraphSpec& spec, bool json) {
  if (!spec.checkpoint.enabled) {
    fmt::print(stderr, "{}: the pipeline has no [checkpoint] table: checkpointing is off\n",
               spec.file.string());
    return k_exit_invalid;
  }
  auto store = open_store(spec);
  if (!store.is_ok()) {
    fmt::print(stderr, "error: {}\n", store.status().message());
    return k_exit_runtime_error;
  }
  auto entries = store.value()->list();
  if (!entries.is_ok()) {
    fmt::print(stderr, "error: {}\n", entries.status().message());
    return k_exit_runtime_error;
  }
  std::vector<Row> rows;
  std::optional<uint64_t> restore_point;
  for (const EpochEntry& e : *entries) {
    Row row{e, std::nullopt, {}};
    auto bytes = store.value()->read(e.epoch);
    if (!bytes.is_ok()) {
      row.problem = bytes.status().message();
    } else if (auto cp = decode_checkpoint(bytes.value()); !cp.is_ok()) {
      row.problem = cp.status().message();
    } else {
      row.cp = std::move(cp).value();
      if (!restore_point) restore_point = e.epoch;
    }
    rows.push_back(std::move(row));
  }

  // Key groups (docs/SCALING.md): where each would be restored from. Only when some
  // checkpoint holds claims (a grouped source assigned them).
  std::vector<GroupHolder> holders;
  const bool any_claims = std::any_of(rows.begin(), rows.end(), [](const Row& r) {
    return r.cp && std::any_of(r.cp->tasks.begin(), r.cp->tasks.end(),
                               [](const TaskState& t) { return !t.claims.empty(); });
  });
  if (any_claims) {
    auto found = group_holders(spec, rows);
    if (found.is_ok()) {
      holders = std::move(found).value();
    } else {
      fmt::print(stderr, "warning: key groups: {}\n", found.status().message());
    }
  }

  if (json) {
    std::vector<Value> epochs;
    for (const Row& r : rows) {
      std::vector<std::pair<std::string, Value>> o;
      o.emplace_back("epoch", Value::integer(static_cast<int64_t>(r.entry.epoch)));
      int64_t time_ns = r.cp ? r.cp->time_ns : r.entry.time_ns;
      o.emplace_back("time", Value::string(iso_time(time_ns)));
      o.emplace_back("time_ns", Value::integer(time_ns));
      o.emplace_back("member",
                     r.cp && !r.cp->member.empty() ? Value::string(r.cp->member) : Value::null());
      o.emplace_back("bytes", Value::integer(static_cast<int64_t>(r.entry.size)));
      o.emplace_back("committed", Value::boolean(r.entry.committed));
      o.emplace_back("usable", Value::boolean(r.cp.has_value()));
      o.emplace_back("newest", Value::boolean(restore_point && *restore_point == r.entry.epoch));
      o.emplace_back("error", r.problem.empty() ? Value::null() : Value::string(r.problem));
      std::vector<Value> tasks;
      if (r.cp) {
        for (size_t t = 0; t < r.cp->tasks.size(); ++t) {
          std::vector<Value> nodes;
          for (const NodeState& n : r.cp->tasks[t].nodes) {
            std::vector<std::pair<std::string, Value>> no;
            no.emplace_back("id", Value::string(n.id));
            no.emplace_back("type", Value::string(n.type));
            no.emplace_back("source", Value::boolean(n.role == SL_ROLE_SOURCE));
            no.emplace_back("state_bytes",
                            Value::integer(static_cast<int64_t>(encoded_size(n.state))));
            if (n.role == SL_ROLE_SOURCE) no.emplace_back("position", n.state);
            if (auto groups = state_groups(spec, n); !groups.empty()) {
              std::vector<Value> gs;
              for (int64_t g : groups) gs.push_back(Value::integer(g));
              no.emplace_back("key_groups", Value::array(gs));
            }
            nodes.push_back(Value::object(no));
          }
          // The key groups the task held, per grouped source, with its claim on each.
          std::vector<Value> claims;
          for (const auto& [source, groups] : r.cp->tasks[t].claims) {
            for (const auto& [group, claim] : groups) {
              claims.push_back(Value::object(std::vector<std::pair<std::string, Value>>{
                  {"source", Value::string(source)},
                  {"group", Value::integer(group)},
                  {"claim", Value::integer(static_cast<int64_t>(claim))}}));
            }
          }
          std::vector<std::pair<std::string, Value>> to;
          to.emplace_back("task", Value::integer(static_cast<int64_t>(t)));
          to.emplace_back("finished", Value::boolean(r.cp->tasks[t].finished));
          to.emplace_back("nodes", Value::array(nodes));
          to.emplace_back("claims", Value::array(claims));
          tasks.push_back(Value::object(to));
        }
      }
      o.emplace_back("tasks", Value::array(tasks));
      epochs.push_back(Value::object(o));
    }
    std::vector<std::pair<std::string, Value>> root;
    root.emplace_back("pipeline", Value::string(spec.name));
    root.emplace_back("store", Value::string(spec.checkpoint.store));
    root.emplace_back("epochs", Value::array(epochs));
    std::vector<Value> groups;
    for (const GroupHolder& h : holders) {
      groups.push_back(Value::object(std::vector<std::pair<std::string, Value>>{
          {"source", Value::string(h.source)},
          {"group", Value::integer(h.group)},
          {"epoch", h.epoch ? Value::integer(static_cast<int64_t>(h.epoch)) : Value::null()},
          {"member", h.member.empty() ? Value::null() : Value::string(h.member)},
          {"claim", Value::integer(static_cast<int64_t>(h.claim))},
          {"highest_claim", Value::integer(static_cast<int64_t>(h.highest_claim))}}));
    }
    root.emplace_back("key_groups", Value::array(groups));
    fmt::print("{}\n", json_dump(Value::object(root).raw()));
    return k_exit_ok;
  }

  fmt::print("pipeline '{}': store '{}', {} epoch{}\n", spec.name, spec.checkpoint.store,
             rows.size(), rows.size() == 1 ? "" : "s");
  for (const Row& r : rows) {
    std::vector<std::string> tags;
    if (restore_point && *restore_point == r.entry.epoch) tags.emplace_back("newest usable");
    tags.emplace_back(r.entry.committed ? "committed" : "not committed");
    if (!r.cp) tags.emplace_back("UNUSABLE");
    const std::string member =
        r.cp && !r.cp->member.empty() ? fmt::format("  member '{}'", r.cp->member) : "";
    fmt::print("epoch {}  {}  {} bytes{}  ({})\n", r.entry.epoch,
               iso_time(r.cp ? r.cp->time_ns : r.entry.time_ns), r.entry.size, member,
               fmt::join(tags, ", "));
    if (!r.cp) {
      fmt::print("  {}\n", r.problem);
      continue;
    }
    for (size_t t = 0; t < r.cp->tasks.size(); ++t) {
      const TaskState& ts = r.cp->tasks[t];
      if (ts.finished) {
        fmt::print("  task {}: finished (no state)\n", t);
        continue;
      }
      fmt::print("  task {}:\n", t);
      for (const NodeState& n : ts.nodes) {
        if (n.role == SL_ROLE_SOURCE) {
          fmt::print("    source {} ({}): position {}\n", n.id, n.type, json_dump(n.state.raw()));
        } else if (auto groups = state_groups(spec, n); !groups.empty()) {
          fmt::print("    node {} ({}): {} bytes of state, key groups {}\n", n.id, n.type,
                     encoded_size(n.state), join_groups(groups));
        } else {
          fmt::print("    node {} ({}): {} bytes of state\n", n.id, n.type, encoded_size(n.state));
        }
      }
      for (const auto& [source, groups] : ts.claims) {
        std::vector<std::string> held;
        for (const auto& [group, claim] : groups) {
          held.push_back(fmt::format("{} (claim {})", group, claim));
        }
        fmt::print("    key groups of source {}: {}\n", source, fmt::join(held, ", "));
      }
    }
  }
  if (!holders.empty()) {
    fmt::print(
        "key groups (restored on assignment from the committed epoch with the highest "
        "claim, then the newest):\n");
    for (const GroupHolder& h : holders) {
      std::string newer =
          h.highest_claim > h.claim ? fmt::format("; claimed since with {}", h.highest_claim) : "";
      if (h.epoch == 0) {
        fmt::print("  source {} group {}: in no committed epoch{}\n", h.source, h.group, newer);
        continue;
      }
      fmt::print("  source {} group {}: epoch {}{}, claim {}{}\n", h.source, h.group, h.epoch,
                 h.member.empty() ? "" : fmt::format(" (member '{}')", h.member), h.claim, newer);
    }
  }
  return k_exit_ok;
}

}  // namespace
}  // namespace sluice::host::checkpoint

namespace sluice::host {
namespace {

// The service's state directory: StateDirectory=sluice in packaging/sluiced.service.in,
// which systemd always puts under /var/lib. SLUICE_SERVICE_STATE_DIR overrides it (a unit
// edited to another StateDirectory=, and the tests).
std::filesystem::path service_state_dir() {
  const char* env = std::getenv("SLUICE_SERVICE_STATE_DIR");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                        : std::filesystem::path("/var/lib/sluice");
}

bool is_installed_config(const std::filesystem::path& config) {
  std::error_code ec;
  return std::filesystem::equivalent(config, SLUICE_INSTALLED_CONFIG, ec);
}

struct FsDirSearch {
  std::optional<std::filesystem::path> found;
  std::vector<std::string> looked;  // "PATH (why it was a candidate): what was there"
};

// Where the "fs" store of `spec` keeps its files, seen from this shell. `run` under systemd
// resolves the default ($STATE_DIRECTORY/NAME) and a relative `dir` (the unit's
// WorkingDirectory) against /var/lib/sluice, while the same config read from a shell would
// give ./NAME.checkpoints: so outside systemd both places are candidates, the service's
// first when the config is the installed one. Only looks (stat): never creates anything.
FsDirSearch find_fs_dir(const GraphSpec& spec, const ConfigPaths& config) {
  std::optional<std::filesystem::path> dir;
  if (auto d = spec.checkpoint.options.get("dir"); d && d->is_string()) {
    dir = std::filesystem::path(std::string(d->as_str()));
  }
  struct Candidate {
    std::filesystem::path path;
    std::string why;
  };
  std::vector<Candidate> candidates;
  const bool systemd = std::getenv("STATE_DIRECTORY") != nullptr;
  if (dir && dir->is_absolute()) {
    candidates.push_back({*dir, "[checkpoint] dir"});
  } else if (systemd) {
    candidates.push_back({dir ? *dir : checkpoint::default_fs_dir(spec.name),
                          dir ? "[checkpoint] dir" : "$STATE_DIRECTORY/<name>"});
  } else {
    Candidate here{dir ? *dir : checkpoint::default_fs_dir(spec.name),
                   dir ? "[checkpoint] dir, from the current directory"
                       : "the default outside systemd, ./<name>.checkpoints"};
    Candidate service{service_state_dir() / (dir ? *dir : std::filesystem::path(spec.name)),
                      "the service's state directory"};
    if (std::any_of(config.begin(), config.end(), is_installed_config)) {
      candidates = {service, here};
    } else {
      candidates = {here, service};
    }
  }
  FsDirSearch out;
  for (const Candidate& c : candidates) {
    std::error_code ec;
    const auto status = std::filesystem::status(c.path, ec);
    std::string what;
    if (ec == std::errc::permission_denied) {
      what = "permission denied (run as root or as the service's user: sudo -u sluice ...)";
    } else if (status.type() == std::filesystem::file_type::directory) {
      out.found = std::filesystem::absolute(c.path, ec);
      if (ec) out.found = c.path;
      return out;
    } else if (status.type() == std::filesystem::file_type::not_found) {
      what = "does not exist";
    } else {
      what = ec ? ec.message() : "not a directory";
    }
    out.looked.push_back(fmt::format("{} ({}): {}", c.path.string(), c.why, what));
  }
  return out;
}

}  // namespace

int checkpoints_command(const ConfigPaths& config, bool json, const PluginDirs& dirs) {
  auto pipeline = load_and_report(config, dirs);
  if (!pipeline) return k_exit_invalid;
  GraphSpec& spec = pipeline->spec;
  if (spec.checkpoint.enabled && spec.checkpoint.store == "fs") {
    // Opening the fs store creates its directory (as `run` must): list only one that exists.
    FsDirSearch where = find_fs_dir(spec, config);
    if (!where.found) {
      fmt::print(stderr, "error: no checkpoint directory found for pipeline '{}'; looked in:\n",
                 spec.name);
      for (const std::string& line : where.looked) fmt::print(stderr, "  {}\n", line);
      return k_exit_runtime_error;
    }
    std::vector<std::pair<std::string, Value>> options;
    const Value& old = spec.checkpoint.options;
    for (size_t i = 0; old.is_object() && i < old.size(); ++i) {
      if (old.key_at(i) != "dir") options.emplace_back(std::string(old.key_at(i)), old.at(i));
    }
    options.emplace_back("dir", Value::string(where.found->string()));
    spec.checkpoint.options = Value::object(options);
    if (!json) fmt::print(stderr, "checkpoint directory: {}\n", where.found->string());
  }
  return checkpoint::list_checkpoints(spec, json);
}

}  // namespace sluice::host
