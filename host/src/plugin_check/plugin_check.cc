#include "plugin_check/plugin_check.hpp"

#include "config/detail/toml_util.hpp"
#include "executor/host_api.hpp"
#include "plugin_check/checks.hpp"
#include "plugin_check/harness.hpp"
#include "registry/plugin_loader.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace sluice::host {
namespace {

using namespace plugin_check;
namespace fs = std::filesystem;

// The exit codes of cli/exit_codes.hpp (a module above this one).
constexpr int k_ok = 0;
constexpr int k_invalid = 2;
constexpr int k_failed = 3;

std::string at(const std::string& file, const toml::source_region& where) {
  SourcePos p = config_detail::pos_of(file, where);
  return fmt::format("{}:{}:{}", p.file, p.line, p.column);
}

// A --config or --bad-config file: [TYPE] params, [functions.NAME] args, [check.TYPE].
struct ConfigFile {
  std::string file;
  toml::table root;
  const toml::table* table(std::string_view section, std::string_view name) const {
    const toml::node* n = section.empty() ? root.get(name) : root.at_path(section).node();
    if (!section.empty()) n = n && n->is_table() ? n->as_table()->get(name) : nullptr;
    return n ? n->as_table() : nullptr;
  }
};

std::optional<ConfigFile> read_config(const fs::path& path, const PluginInfo& plugin) {
  ConfigFile cf;
  cf.file = path.string();
  try {
    cf.root = toml::parse_file(cf.file);
  } catch (const toml::parse_error& e) {
    fmt::print(stderr, "{}: error: {}\n", at(cf.file, e.source()), e.description());
    return std::nullopt;
  }
  auto known_type = [&](std::string_view name) {
    return std::any_of(plugin.node_types.begin(), plugin.node_types.end(),
                       [&](const NodeTypeInfo* t) { return t->name == name; });
  };
  auto known_function = [&](std::string_view name) {
    return std::any_of(plugin.functions.begin(), plugin.functions.end(),
                       [&](const FunctionInfo* f) { return f->name == name; });
  };
  bool ok = true;
  for (auto&& [key, node] : cf.root) {
    const std::string k(key.str());
    const toml::table* t = node.as_table();
    if (!t) {
      fmt::print(stderr, "{}: error: '{}' must be a table\n", at(cf.file, node.source()), k);
      ok = false;
      continue;
    }
    if (k == "functions" || k == "check") {
      for (auto&& [name, sub] : *t) {
        const std::string n(name.str());
        if (!sub.is_table() || !(k == "functions" ? known_function(n) : known_type(n))) {
          fmt::print(stderr, "{}: error: [{}.{}]: the plugin declares no {} '{}'\n",
                     at(cf.file, sub.source()), k, n, k == "functions" ? "function" : "node type",
                     n);
          ok = false;
        }
      }
    } else if (!known_type(k)) {
      fmt::print(stderr,
                 "{}: error: [{}]: the plugin declares no node type '{}' (functions go in "
                 "[functions.NAME], the kit's own settings in [check.TYPE])\n",
                 at(cf.file, node.source()), k, k);
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return cf;
}

// [check.TYPE] over the command line's defaults.
std::optional<CheckSettings> settings_for(const PluginCheckOptions& o, const ConfigFile* cf,
                                          const std::string& name, const fs::path& work) {
  CheckSettings s;
  s.readback = o.readback;
  s.exactly_once = o.exactly_once;
  s.timeout_ms = o.timeout_ms;
  s.work_dir = work / name;
  fs::create_directories(s.work_dir);
  const toml::table* t = cf ? cf->table("check", name) : nullptr;
  if (!t) return s;
  for (auto&& [key, node] : *t) {
    const std::string k(key.str());
    if (k == "input" && node.is_array()) {
      std::vector<Value> input;
      for (const toml::node& item : *node.as_array())
        input.push_back(config_detail::to_value(item));
      s.input = std::move(input);
    } else if (k == "readback" && node.is_string()) {
      s.readback = *node.value<std::string>();
    } else if (k == "exactly_once" && node.is_boolean()) {
      s.exactly_once = *node.value<bool>();
    } else if (k == "records" &&
               (node.value<std::string>() == "int" || node.value<std::string>() == "object")) {
      s.int_records = node.value<std::string>() == "int";
    } else if (k == "skip" && node.is_string() && !node.value<std::string>()->empty()) {
      s.skip = *node.value<std::string>();
    } else {
      fmt::print(stderr,
                 "{}: error: [check.{}] {}: expected input = [...], readback = \"CMD\", "
                 "exactly_once = BOOL, records = \"object\"|\"int\" or skip = \"REASON\"\n",
                 at(cf->file, key.source()), name, k);
      return std::nullopt;
    }
  }
  return s;
}

bool wanted(const PluginCheckOptions& o, const std::string& name) {
  return o.only.empty() || std::find(o.only.begin(), o.only.end(), name) != o.only.end();
}

void check_node_type(const std::shared_ptr<PluginRegistry>& registry, const NodeTypeInfo& type,
                     const ConfigFile* config, const ConfigFile* bad, const CheckSettings& s,
                     Subject& out) {
  check_declarations(type, out);
  const toml::table* params = config ? config->table("", type.name) : nullptr;
  const bool needs_config = std::any_of(type.params.begin(), type.params.end(),
                                        [](const ParamInfo& p) { return p.required; });
  const std::string config_file = config ? config->file : std::string();
  std::optional<GraphSpec> spec;
  if (needs_config && !params) {
    out.skip("create",
             fmt::format("needs config: required parameters; give [{}] in --config", type.name));
  } else {
    auto built = build_graph(registry, type, params, config_file,
                             type.role == SL_ROLE_SINK && (type.vtable.checkpoint_prepare ||
                                                           (type.flags & SL_NODE_STATEFUL)));
    if (!built.is_ok() && !params) {
      // No required key, but a validate callback wants some (one of two keys...).
      out.skip("create", fmt::format("needs config: the defaults do not pass validate ({}); "
                                     "give [{}] in --config",
                                     built.status().message(), type.name));
    } else if (!built.is_ok()) {
      out.fail("validate", fmt::format("the --config params do not pass validate:\n    {}",
                                       built.status().message()));
    } else {
      spec = std::move(built).value();
      out.pass("validate", params ? "the --config params pass" : "the defaults pass");
    }
  }
  if (bad) {
    if (const toml::table* bad_params = bad->table("", type.name)) {
      auto refused = build_graph(registry, type, bad_params, bad->file, false);
      if (!spec) {
        out.skip("bad config", "needs a config that creates (the node's own could not be built)");
      } else {
        check_bad_config(*spec, config_detail::to_value(*bad_params),
                         refused.is_ok() ? std::string() : refused.status().message(), s, out);
      }
    }
  }
  if (!spec) return;
  if (!s.skip.empty()) {
    out.skip("runtime checks", s.skip);
    return;
  }
  if (type.role == SL_ROLE_SOURCE) {
    out.skip("runtime checks", "a source is checked for its declarations and --bad-config only");
    return;
  }
  check_hostile_elements(*spec, s, out);
  const bool stateful =
      (type.flags & SL_NODE_STATEFUL) && type.vtable.snapshot && type.vtable.restore;
  if (type.role == SL_ROLE_OPERATOR && stateful) check_restore(*spec, s, out);
  if (type.role == SL_ROLE_SINK && (type.vtable.checkpoint_prepare || stateful)) {
    check_crash_recovery(*spec, s, out);
  }
}

}  // namespace

int run_plugin_check(const PluginCheckOptions& o) {
  auto registry = std::make_shared<PluginRegistry>();
  if (Status s = register_input_type(*registry); !s.is_ok()) {
    fmt::print(stderr, "error: {}\n", s.message());
    return k_invalid;
  }
  std::error_code exists_error;
  if (!fs::exists(o.plugin, exists_error)) {
    fmt::print(stderr, "error: {}: no such file\n", o.plugin.string());
    return k_invalid;
  }
  PluginLoader loader(*registry, host_api_table());
  if (Status s = loader.load_file(o.plugin); !s.is_ok()) {
    // The registry's refusal is the finding (flags against callbacks, bad defaults...).
    fmt::print("plugin {}\n  FAILED load: {}\n0 passed, 1 failed, 0 not exercised\n",
               o.plugin.string(), s.message());
    return k_failed;
  }
  const PluginInfo& plugin = *registry->plugins().back();
  std::optional<ConfigFile> config, bad;
  if (!o.config.empty() && !(config = read_config(o.config, plugin))) return k_invalid;
  if (!o.bad_config.empty() && !(bad = read_config(o.bad_config, plugin))) return k_invalid;

  fs::path work = o.work_dir;
  const bool own_work = work.empty();
  if (own_work) {
    std::string tmpl = (fs::temp_directory_path() / "sluice-plugin-check-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      fmt::print(stderr, "error: cannot make a work directory in {}\n",
                 fs::temp_directory_path().string());
      return k_invalid;
    }
    work = tmpl;
  }
  work = fs::absolute(work);
  fs::create_directories(work);
  // The nodes' own failures are the report's business; the host's log lines about them
  // would only repeat it.
  spdlog::set_level(spdlog::level::err);

  // Every [check.TYPE] is read before the first check runs, so that a typo stops the run
  // at once (exit 2) rather than after minutes of checks.
  std::map<std::string, CheckSettings, std::less<>> settings;
  std::vector<std::string> names;
  for (const NodeTypeInfo* type : plugin.node_types) names.push_back(type->name);
  for (const FunctionInfo* fn : plugin.functions) names.push_back(fn->name);
  for (const std::string& only : o.only) {
    if (std::find(names.begin(), names.end(), only) == names.end()) {
      fmt::print(stderr, "error: --only {}: the plugin declares no node type or function '{}'\n",
                 only, only);
      return k_invalid;
    }
  }
  for (const std::string& name : names) {
    if (!wanted(o, name)) continue;
    auto s = settings_for(o, config ? &*config : nullptr, name, work);
    if (!s) return k_invalid;
    settings.emplace(name, std::move(*s));
  }

  fmt::print("plugin {} {} (ABI {}.{})  {}\n", plugin.name, plugin.version, plugin.abi_major,
             plugin.abi_minor, plugin.file.string());
  std::fflush(stdout);
  std::vector<Subject> subjects;
  for (const NodeTypeInfo* type : plugin.node_types) {
    if (!wanted(o, type->name)) continue;
    const CheckSettings* s = &settings.at(type->name);
    Subject& subject = subjects.emplace_back();
    subject.kind = std::string(role_name(type->role));
    subject.name = type->name;
    check_node_type(registry, *type, config ? &*config : nullptr, bad ? &*bad : nullptr, *s,
                    subject);
    fmt::print("{}", render(subject));
    std::fflush(stdout);
  }
  for (const FunctionInfo* fn : plugin.functions) {
    if (!wanted(o, fn->name)) continue;
    const CheckSettings* s = &settings.at(fn->name);
    Subject& subject = subjects.emplace_back();
    subject.kind = "function";
    subject.name = fn->name;
    check_declarations(*fn, subject);
    const toml::table* args = config ? config->table("functions", fn->name) : nullptr;
    check_hostile_arguments(registry, *fn, args ? config_detail::to_value(*args) : Value(), *s,
                            subject);
    fmt::print("{}", render(subject));
    std::fflush(stdout);
  }
  const Totals totals = count(subjects);
  fmt::print("{} passed, {} failed, {} not exercised\n", totals.passed, totals.failed,
             totals.not_exercised);
  const size_t failed = totals.failed;
  if (own_work && failed == 0) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
  } else {
    fmt::print("work directory (what the sinks wrote): {}\n", work.string());
  }
  return failed == 0 ? k_ok : k_failed;
}

}  // namespace sluice::host
