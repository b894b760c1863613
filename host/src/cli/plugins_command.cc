// `sluiced plugins [--config CONFIG] [--json]`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "config/config_loader.hpp"
#include "config/config_values.hpp"
#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

namespace sluice::host {
namespace {

std::string param_line(const ParamInfo& p) {
  std::string requirement = p.required       ? "required"
                            : p.default_json ? fmt::format("default {}", *p.default_json)
                                             : "optional";
  const std::string constraints = constraint_text(p);
  return fmt::format("      {:<20} {:<12} {:<22} {}{}\n", p.name, param_type_name(p.type),
                     requirement, p.doc, constraints.empty() ? "" : " [" + constraints + "]");
}

std::string inputs_text(const NodeTypeInfo& t) {
  if (t.role == SL_ROLE_SOURCE) return "no inputs";
  if (t.max_inputs == SL_INPUTS_UNLIMITED) return fmt::format("{}+ inputs", t.min_inputs);
  if (t.min_inputs == t.max_inputs)
    return fmt::format("{} input{}", t.min_inputs, t.min_inputs == 1 ? "" : "s");
  return fmt::format("{}..{} inputs", t.min_inputs, t.max_inputs);
}

Value params_value(const std::vector<ParamInfo>& params) {
  std::vector<Value> items;
  for (const ParamInfo& p : params) {
    std::vector<std::pair<std::string, Value>> e;
    e.emplace_back("name", Value::string(p.name));
    e.emplace_back("type", Value::string(param_type_name(p.type)));
    e.emplace_back("required", Value::boolean(p.required));
    if (p.default_json) {
      auto d = json_parse(*p.default_json);
      e.emplace_back("default", d.is_ok() ? d.value() : Value());
    }
    e.emplace_back("doc", Value::string(p.doc));
    // Value constraints (ABI 1.2), only those declared.
    if (p.min_int) e.emplace_back("min", Value::integer(*p.min_int));
    if (p.max_int) e.emplace_back("max", Value::integer(*p.max_int));
    if (p.min_float) {
      e.emplace_back(p.min_exclusive ? "above" : "min", Value::floating(*p.min_float));
    }
    if (p.max_float) e.emplace_back("max", Value::floating(*p.max_float));
    if (p.non_empty) e.emplace_back("non_empty", Value::boolean(true));
    if (!p.choices.empty()) {
      std::vector<Value> choices;
      for (const auto& c : p.choices) choices.push_back(Value::string(c));
      e.emplace_back(p.type == SL_PARAM_FUNCTION ? "kinds" : "choices", Value::array(choices));
    }
    if (auto text = constraint_text(p); !text.empty()) {
      e.emplace_back("constraints", Value::string(text));
    }
    items.push_back(Value::object(e));
  }
  return Value::array(items);
}

// Every plugin with its version, ABI and file, and each node type and function with
// its parameters and docs.
std::string plugins_text(const PluginRegistry& registry) {
  std::string out;
  for (const auto& p : registry.plugins()) {
    out +=
        fmt::format("{} {} (ABI {}.{}, needs a host of {}.{} or newer)  {}\n", p->name, p->version,
                    p->abi_major, p->abi_minor, p->abi_major, p->min_host_minor, p->file.string());
    if (!p->doc.empty()) out += fmt::format("  {}\n", p->doc);
    for (const NodeTypeInfo* t : p->node_types) {
      std::string sides;
      for (const std::string& side : t->side_outputs) sides += ", side output " + side;
      out += fmt::format("\n  {} {} ({}{}{})\n", role_name(t->role), t->name, inputs_text(*t),
                         (t->flags & SL_NODE_STATEFUL) ? ", stateful" : "", sides);
      if (!t->doc.empty()) out += fmt::format("    {}\n", t->doc);
      for (const ParamInfo& param : t->params) out += param_line(param);
    }
    for (const FunctionInfo* f : p->functions) {
      out += fmt::format("\n  function {} ({})\n", f->name, function_kind_name(f->kind));
      if (!f->doc.empty()) out += fmt::format("    {}\n", f->doc);
      for (const ParamInfo& param : f->params) out += param_line(param);
    }
    out += "\n";
  }
  return out;
}

// The same as one JSON document, for tools (docs/CONFIG.md is generated from it).
std::string plugins_json(const PluginRegistry& registry) {
  std::vector<Value> plugins;
  for (const auto& p : registry.plugins()) {
    std::vector<Value> types;
    for (const NodeTypeInfo* t : p->node_types) {
      std::vector<std::pair<std::string, Value>> e;
      e.emplace_back("name", Value::string(t->name));
      e.emplace_back("role", Value::string(role_name(t->role)));
      e.emplace_back("doc", Value::string(t->doc));
      e.emplace_back("min_inputs", Value::integer(t->min_inputs));
      e.emplace_back("max_inputs", Value::integer(t->max_inputs));
      e.emplace_back("stateful", Value::boolean((t->flags & SL_NODE_STATEFUL) != 0));
      std::vector<Value> sides;
      for (const std::string& side : t->side_outputs) sides.push_back(Value::string(side));
      e.emplace_back("side_outputs", Value::array(sides));
      e.emplace_back("params", params_value(t->params));
      types.push_back(Value::object(e));
    }
    std::vector<Value> fns;
    for (const FunctionInfo* f : p->functions) {
      std::vector<std::pair<std::string, Value>> e;
      e.emplace_back("name", Value::string(f->name));
      e.emplace_back("kind", Value::string(function_kind_name(f->kind)));
      e.emplace_back("doc", Value::string(f->doc));
      e.emplace_back("params", params_value(f->params));
      fns.push_back(Value::object(e));
    }
    std::vector<std::pair<std::string, Value>> e;
    e.emplace_back("name", Value::string(p->name));
    e.emplace_back("version", Value::string(p->version));
    e.emplace_back("abi", Value::string(fmt::format("{}.{}", p->abi_major, p->abi_minor)));
    e.emplace_back("min_host_abi",
                   Value::string(fmt::format("{}.{}", p->abi_major, p->min_host_minor)));
    e.emplace_back("file", Value::string(p->file.string()));
    e.emplace_back("doc", Value::string(p->doc));
    e.emplace_back("node_types", Value::array(types));
    e.emplace_back("functions", Value::array(fns));
    plugins.push_back(Value::object(e));
  }
  std::vector<std::pair<std::string, Value>> root;
  root.emplace_back("plugins", Value::array(plugins));
  return json_dump(Value::object(root).raw()) + "\n";
}

}  // namespace

int plugins_command(const std::filesystem::path& config, bool json, const PluginDirs& dirs) {
  PluginDirs all = dirs;
  if (!config.empty()) {
    auto parsed = parse_config_file(config);
    print_diagnostics(parsed.diagnostics);
    if (!parsed.ok() || parsed.has_errors()) return k_exit_invalid;
    // As run would read it: plugin_dirs may name a variable (${PLUGINS}).
    const std::vector<Diagnostic> resolved =
        resolve_config_values(*parsed.value, process_environment());
    print_diagnostics(resolved);
    if (!resolved.empty()) return k_exit_invalid;
    auto from_config = config_plugin_dirs(*parsed.value);
    print_diagnostics(from_config.diagnostics);
    if (!from_config.ok() || from_config.has_errors()) return k_exit_invalid;
    all.insert(all.begin(), from_config.value->begin(), from_config.value->end());
  }
  // List what loaded even when some plugin was refused; the exit code says so.
  auto registry = std::make_unique<PluginRegistry>();
  PluginLoader loader(*registry, host_api_table());
  // Every plugin opens to be listed; the plugin cache is brought up to date on the way.
  loader.use_cache(PluginCache::default_path(), PluginCacheUse::refresh);
  auto problems = loader.load_search_path(plugin_search_path(all));
  for (const auto& p : problems) fmt::print(stderr, "error: plugin: {}\n", p.message);
  if (registry->plugins().empty()) {
    fmt::print(stderr, "no plugins were found: {}\n", registry->search_hint());
  }
  fmt::print("{}", json ? plugins_json(*registry) : plugins_text(*registry));
  return problems.empty() ? k_exit_ok : k_exit_invalid;
}

}  // namespace sluice::host
