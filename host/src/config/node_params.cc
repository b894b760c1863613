// Params of a node and arguments of named functions: both are checked against
// declared ParamInfo lists by the same rules, and defaults are filled in so
// plugins never see an absent optional key that has a default.
#include "config/detail/suggest.hpp"
#include "config/detail/validator.hpp"
#include "lua/lua_function.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace sluice::host::config_detail {
namespace {

// Keys the host owns in a node table; a param with such a name could never
// be set, so it is skipped rather than misread. `on_error` (the host's error
// policy) is the host's on operators and sinks only: a source may declare its
// own (from_kafka does, for records it cannot decode).
bool is_reserved(std::string_view key, int32_t role) {
  return key == "type" || key == "inputs" || (key == "on_error" && role != SL_ROLE_SOURCE);
}

// SL_PARAM_FUNCTION rule (sluice.h): `args` belongs to the param named
// `function`, `<name>_args` to any other.
std::string args_key_for(const ParamInfo& p) {
  return p.name == "function" ? std::string("args") : p.name + "_args";
}

bool looks_like_args_key(std::string_view key) {
  return key == "args" || (key.size() > 5 && key.substr(key.size() - 5) == "_args");
}

// A function param may be written in Lua instead (docs/LUA.md): `lua` for the
// param named `function`, `<name>_lua` for any other. Like args keys, these
// are not listed among a type's valid keys.
std::string lua_key_for(const ParamInfo& p) {
  return p.name == "function" ? std::string("lua") : p.name + "_lua";
}

bool looks_like_lua_key(std::string_view key) {
  return key == "lua" || (key.size() > 4 && key.substr(key.size() - 4) == "_lua");
}

// Where the text of a TOML string starts in the file, so that Lua's line
// numbers (and columns on the first line) are the file's. toml++ gives the
// region of the literal, delimiters included; a multi-line literal drops a
// newline right after its opening delimiter. Escapes (`\"`, `\n`) make the
// column, not the line, approximate.
lua::LuaSource lua_source_at(const toml::value<std::string>& node, const std::string& file) {
  const toml::source_region& region = node.source();
  lua::LuaSource source;
  source.code = node.get();
  source.file = file;
  source.line = region.begin.line;
  source.column = region.begin.column;
  if (region.end.line == region.begin.line) {
    const int64_t width = static_cast<int64_t>(region.end.column) - region.begin.column;
    const int64_t delimiter = (width - static_cast<int64_t>(source.code.size())) / 2;
    source.column += delimiter == 3 ? 3 : 1;
  } else {
    const auto newlines =
        static_cast<int64_t>(std::count(source.code.begin(), source.code.end(), '\n'));
    if (static_cast<int64_t>(region.end.line) - region.begin.line == newlines + 1) {
      source.line += 1;
      source.column = 1;
    } else {
      source.column += 3;
    }
  }
  return source;
}

// The longest duration whose nanoseconds fit in int64.
constexpr int64_t k_max_duration_ms = INT64_MAX / 1'000'000;

std::string with_doc(const ParamInfo& p) {
  std::string text = expected_text(p.type);
  if (!p.doc.empty()) text += ": " + p.doc;
  return text;
}

// "BASE; did you mean 'x'? valid LABEL are: a, b".
std::string with_valid_list(std::string base, std::string_view wrong,
                            const std::vector<std::string>& valid, std::string_view label) {
  std::string suggestion = did_you_mean(wrong, valid);
  return fmt::format("{}{}{} valid {} are: {}", base, suggestion, suggestion.empty() ? ";" : "",
                     label, join_names(valid));
}

std::string dotted(std::string_view prefix, std::string_view key) {
  return fmt::format("{}.{}", prefix, key);
}

}  // namespace

std::optional<Value> parse_interpolated(int32_t param_type, std::string_view text) {
  if (text.empty()) return std::nullopt;
  const char* end = text.data() + text.size();
  if (param_type == SL_PARAM_BOOL) {
    if (text == "true") return Value::boolean(true);
    if (text == "false") return Value::boolean(false);
    return std::nullopt;
  }
  if (param_type == SL_PARAM_INT || param_type == SL_PARAM_DURATION) {
    int64_t v = 0;
    auto [at, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || at != end) return std::nullopt;
    return Value::integer(v);
  }
  if (param_type == SL_PARAM_FLOAT) {
    double v = 0;
    auto [at, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || at != end || !std::isfinite(v)) return std::nullopt;
    return Value::floating(v);
  }
  return std::nullopt;
}

std::string expected_text(int32_t param_type) {
  switch (param_type) {
    case SL_PARAM_BOOL: return "bool";
    case SL_PARAM_INT: return "int";
    case SL_PARAM_FLOAT: return "float";
    case SL_PARAM_STRING: return "string";
    case SL_PARAM_ARRAY: return "array";
    case SL_PARAM_TABLE: return "table";
    case SL_PARAM_ANY: return "any value";
    case SL_PARAM_FUNCTION:
      return "a function name (string), a table { name = \"...\", args = { ... } }, or Lua "
             "code in the `lua` key";
    case SL_PARAM_DURATION: return "int (milliseconds)";
    default: return "unknown";
  }
}

Value Validator::check_node_params(const NodeSpec& node, const toml::table& table) {
  const NodeTypeInfo& info = *node.info;
  std::vector<std::string> valid{"type"};
  if (node.role != SL_ROLE_SOURCE) {
    valid.push_back("inputs");
    valid.push_back("on_error");
  }
  std::map<std::string, const ParamInfo*, std::less<>> args_keys;  // args key -> its function param
  for (const auto& p : info.params) {
    if (!is_reserved(p.name, node.role)) valid.push_back(p.name);
  }
  for (const auto& p : info.params) {
    if (is_reserved(p.name, node.role) || p.type != SL_PARAM_FUNCTION) continue;
    // A declared param wins over the args-key reading of the same name.
    if (info.find_param(args_key_for(p))) continue;
    args_keys.emplace(args_key_for(p), &p);
    valid.push_back(args_key_for(p));
  }
  std::map<std::string, const ParamInfo*, std::less<>> lua_keys;  // lua key -> its function param
  for (const auto& p : info.params) {
    if (is_reserved(p.name, node.role) || p.type != SL_PARAM_FUNCTION) continue;
    if (info.find_param(lua_key_for(p))) continue;
    lua_keys.emplace(lua_key_for(p), &p);
    valid.push_back(lua_key_for(p));
  }
  const std::string valid_label = fmt::format("keys for type '{}'", info.name);

  std::map<std::string, TableEntry, std::less<>> given;
  std::map<std::string, TableEntry, std::less<>> args_given;  // by function param name
  std::map<std::string, TableEntry, std::less<>> lua_given;   // by function param name
  for (const auto& e : entries_in_file_order(table)) {
    const std::string key(e.key->str());
    if (is_reserved(key, node.role)) continue;
    if (info.find_param(key)) {
      given.emplace(key, e);
    } else if (auto it = args_keys.find(key); it != args_keys.end()) {
      args_given.emplace(it->second->name, e);
    } else if (auto lua_it = lua_keys.find(key); lua_it != lua_keys.end()) {
      lua_given.emplace(lua_it->second->name, e);
    } else if (looks_like_lua_key(key)) {
      std::string owner = key == "lua" ? "function" : key.substr(0, key.size() - 4);
      error(pos(e.key->source()), node.id, key,
            with_valid_list(fmt::format("'{}' holds a Lua function for a function parameter named "
                                        "'{}', which type '{}' does not have",
                                        key, owner, info.name),
                            key, valid, valid_label));
    } else if (looks_like_args_key(key)) {
      std::string owner = key == "args" ? "function" : key.substr(0, key.size() - 5);
      error(pos(e.key->source()), node.id, key,
            with_valid_list(fmt::format("'{}' holds arguments for a function parameter named '{}', "
                                        "which type '{}' does not have",
                                        key, owner, info.name),
                            key, valid, valid_label));
    } else {
      error(pos(e.key->source()), node.id, key,
            unknown_name_message("key", key, valid, valid_label));
    }
  }

  std::vector<std::pair<std::string, Value>> entries;
  for (const auto& p : info.params) {
    if (is_reserved(p.name, node.role)) continue;
    const Where where{node.id, p.name};
    auto args_it = args_given.find(p.name);
    const TableEntry* sibling = args_it == args_given.end() ? nullptr : &args_it->second;
    std::optional<Value> value;
    if (auto lua_it = lua_given.find(p.name); lua_it != lua_given.end()) {
      const TableEntry& lua_entry = lua_it->second;
      const std::string lua_key = lua_key_for(p);
      bool ok = true;
      if (auto it = given.find(p.name); it != given.end()) {
        error(pos(lua_entry.key->source()), node.id, lua_key,
              fmt::format("both '{}' (a named function) and '{}' (a function in Lua) are given; "
                          "keep one",
                          p.name, lua_key));
        ok = false;
      }
      if (sibling) {
        error(pos(sibling->key->source()), node.id, std::string(sibling->key->str()),
              fmt::format("'{}' holds arguments for a named function, but '{}' is written in Lua "
                          "('{}'), which takes none; write the values into the Lua code",
                          sibling->key->str(), p.name, lua_key));
        ok = false;
      }
      if (ok) value = normalise_lua(*lua_entry.node, Where{node.id, lua_key});
    } else if (auto it = given.find(p.name); it != given.end()) {
      if (p.type == SL_PARAM_FUNCTION) {
        value = normalise_function(*it->second.node, sibling, where, args_key_for(p));
        if (value && !function_kind_fits(p, *value, pos(it->second.node->source()), where)) {
          value.reset();
        }
      } else {
        value = check_value(p, *it->second.node, where);
      }
    } else {
      if (sibling) {
        error(pos(sibling->key->source()), node.id, std::string(sibling->key->str()),
              fmt::format("function arguments are given, but '{}' (the function they are for) is "
                          "not set",
                          p.name));
      }
      if (p.required) {
        error(node.pos, node.id, p.name,
              p.type == SL_PARAM_FUNCTION
                  ? fmt::format("missing; type '{}' requires it ({}), or '{}' with a function in "
                                "Lua",
                                info.name, with_doc(p), lua_key_for(p))
                  : fmt::format("missing; type '{}' requires it ({})", info.name, with_doc(p)));
      } else if (p.default_json) {
        value =
            p.type == SL_PARAM_FUNCTION ? function_default(p, node.pos, where) : parsed_default(p);
      }
    }
    if (value) entries.emplace_back(p.name, std::move(*value));
  }
  return Value::object(entries);
}

std::optional<Value> Validator::check_value(const ParamInfo& param, const toml::node& value,
                                            const Where& where) {
  bool ok = false;
  switch (param.type) {
    case SL_PARAM_BOOL: ok = value.is_boolean(); break;
    case SL_PARAM_INT: ok = value.is_integer(); break;
    case SL_PARAM_FLOAT:
      // Plugins read one kind: `ratio = 1` arrives as 1.0 (converted below).
      ok = value.is_integer() || value.is_floating_point();
      break;
    case SL_PARAM_STRING: ok = value.is_string(); break;
    case SL_PARAM_ARRAY: ok = value.is_array(); break;
    case SL_PARAM_TABLE: ok = value.is_table(); break;
    case SL_PARAM_ANY: ok = true; break;
    case SL_PARAM_FUNCTION: {
      auto spec = normalise_function(value, nullptr, where, dotted(where.key, "args"));
      if (spec && !function_kind_fits(param, *spec, pos(value.source()), where))
        return std::nullopt;
      return spec;
    }
    case SL_PARAM_DURATION:
      if (const auto* i = value.as_integer(); i && i->get() < 0) {
        error(pos(value.source()), where.node_id, where.key,
              fmt::format("expected a non-negative int (milliseconds), got {}", i->get()));
        return std::nullopt;
      }
      // Plugins count time in int64 nanoseconds: a longer duration would wrap around.
      if (const auto* i = value.as_integer(); i && i->get() > k_max_duration_ms) {
        error(pos(value.source()), where.node_id, where.key,
              fmt::format("must be at most {} ms (about 292 years), got {}", k_max_duration_ms,
                          i->get()));
        return std::nullopt;
      }
      ok = value.is_integer();
      break;
    default: break;
  }
  std::optional<Value> from_variable;
  if (!ok && value.is_string() && doc_.interpolated.contains(&value)) {
    // `port = "${PORT}"`: a number or bool written as an interpolated string.
    from_variable = parse_interpolated(param.type, value.as_string()->get());
    if (!from_variable && (param.type == SL_PARAM_BOOL || param.type == SL_PARAM_INT ||
                           param.type == SL_PARAM_FLOAT || param.type == SL_PARAM_DURATION)) {
      error(pos(value.source()), where.node_id, where.key,
            fmt::format("expected {}; the value after ${{...}} interpolation does not parse as "
                        "one",
                        expected_text(param.type)));
      return std::nullopt;
    }
    if (from_variable && param.type == SL_PARAM_DURATION &&
        (from_variable->as_int() < 0 || from_variable->as_int() > k_max_duration_ms)) {
      error(pos(value.source()), where.node_id, where.key,
            fmt::format("expected a non-negative int (milliseconds) of at most {}, got {}",
                        k_max_duration_ms, from_variable->as_int()));
      return std::nullopt;
    }
    ok = from_variable.has_value();
  }
  if (!ok) {
    error(pos(value.source()), where.node_id, where.key,
          fmt::format("expected {}, got {}", expected_text(param.type), toml_type_name(value)));
    return std::nullopt;
  }
  Value out = from_variable ? std::move(*from_variable) : to_value(value);
  if (param.type == SL_PARAM_FLOAT && out.is_int()) {
    out = Value::floating(static_cast<double>(out.as_int()));
  }
  if (auto broken = constraint_violation(param, out)) {
    error(pos(value.source()), where.node_id, where.key, *broken);
    return std::nullopt;
  }
  return out;
}

bool Validator::function_kind_fits(const ParamInfo& param, const Value& spec, SourcePos at,
                                   const Where& where) {
  if (param.choices.empty()) return true;
  const auto name = spec.get("name");
  if (!name || !name->is_string()) return true;  // Lua: callable with any arity
  const FunctionInfo* fn = registry_.find_function(name->as_str());
  if (!fn) return true;  // reported already
  const std::string_view kind = function_kind_name(fn->kind);
  const auto& kinds = param.choices;
  if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return true;
  // A function that can be called with one element (a reducer with a one-argument form:
  // an array's sum) does what a map function does.
  if (fn->min_arity <= 1 && std::find(kinds.begin(), kinds.end(), "map") != kinds.end()) {
    return true;
  }
  std::string list;
  for (const auto& k : kinds) list += fmt::format("{}{}", list.empty() ? "" : " or ", k);
  error(at, where.node_id, where.key,
        fmt::format("must be a {} function; '{}' is a {}{}", list, fn->name, kind,
                    kind == "reducer" ? " (use accumulate)" : ""));
  return false;
}

std::optional<Value> Validator::normalise_function(const toml::node& spec,
                                                   const TableEntry* sibling_args,
                                                   const Where& where,
                                                   const std::string& args_key) {
  const toml::node* name_node = nullptr;
  const toml::node* args_node = nullptr;
  const TableEntry* lua_entry = nullptr;
  std::string args_label = args_key;
  bool ok = true;
  if (spec.is_string()) {
    name_node = &spec;
    if (sibling_args) args_node = sibling_args->node;
  } else if (const auto* table = spec.as_table()) {
    const auto entries = entries_in_file_order(*table);
    for (const auto& e : entries) {
      const std::string key(e.key->str());
      if (key == "lua") {
        lua_entry = &e;
      } else if (key == "name") {
        name_node = e.node;
      } else if (key == "args") {
        args_node = e.node;
      } else {
        error(pos(e.key->source()), where.node_id, dotted(where.key, key),
              with_valid_list(fmt::format("unknown key '{}' in a function table", key), key,
                              {"name", "args"}, "keys"));
        ok = false;
      }
    }
    args_label = dotted(where.key, "args");
    if (lua_entry) {  // { lua = "..." }: a function in Lua, which takes no args
      if (name_node || args_node) {
        error(pos(lua_entry->key->source()), where.node_id, dotted(where.key, "lua"),
              "a function table holds either 'name' (and 'args') or 'lua', not both");
        return std::nullopt;
      }
      if (sibling_args) {
        error(pos(sibling_args->key->source()), where.node_id,
              std::string(sibling_args->key->str()),
              fmt::format("'{}' is written in Lua, which takes no arguments; remove '{}'",
                          where.key, sibling_args->key->str()));
        return std::nullopt;
      }
      if (!ok) return std::nullopt;
      return normalise_lua(*lua_entry->node, Where{where.node_id, dotted(where.key, "lua")});
    }
    if (sibling_args) {
      error(
          pos(sibling_args->key->source()), where.node_id, std::string(sibling_args->key->str()),
          fmt::format("function arguments are given both here and in the table of '{}'; keep only "
                      "the table's 'args'",
                      where.key));
      ok = false;
    }
    if (!name_node) {
      error(pos(spec.source()), where.node_id, where.key,
            fmt::format(
                "function table has no 'name'; write {} = {{ name = \"...\", args = {{ ... }} }}",
                where.key));
      return std::nullopt;
    }
    if (!name_node->is_string()) {
      error(pos(name_node->source()), where.node_id, dotted(where.key, "name"),
            fmt::format("expected a function name (string), got {}", toml_type_name(*name_node)));
      return std::nullopt;
    }
  } else {
    error(
        pos(spec.source()), where.node_id, where.key,
        fmt::format("expected {}, got {}", expected_text(SL_PARAM_FUNCTION), toml_type_name(spec)));
    return std::nullopt;
  }

  const std::string name = name_node->as_string()->get();
  const FunctionInfo* fn = registry_.find_function(name);
  if (!fn) {
    auto names = registry_.function_names();
    error(pos(name_node->source()), where.node_id, where.key,
          names.empty()
              ? fmt::format("unknown function '{}'; no functions are registered; {}", name,
                            registry_.search_hint())
              : unknown_name_message("function", name, names, "functions") +
                    (registry_.search_recorded() ? "; " + registry_.search_hint() : std::string()));
    return std::nullopt;
  }
  const toml::table* args = nullptr;
  if (args_node) {
    args = args_node->as_table();
    if (!args) {
      error(pos(args_node->source()), where.node_id, args_label,
            fmt::format("expected a table of arguments for function '{}', got {}", name,
                        toml_type_name(*args_node)));
      return std::nullopt;
    }
  }
  SourcePos missing_pos = pos(args_node ? args_node->source() : spec.source());
  auto checked =
      check_function_args(*fn, args, std::move(missing_pos), Where{where.node_id, args_label});
  if (!checked || !ok) return std::nullopt;
  std::vector<std::pair<std::string, Value>> entries{{"name", Value::string(name)},
                                                     {"args", std::move(*checked)}};
  return Value::object(entries);
}

std::optional<Value> Validator::check_function_args(const FunctionInfo& fn, const toml::table* args,
                                                    SourcePos missing_pos, const Where& where) {
  std::vector<std::string> valid;
  for (const auto& p : fn.params) valid.push_back(p.name);
  bool ok = true;
  std::map<std::string, const toml::node*, std::less<>> given;
  if (args) {
    for (const auto& e : entries_in_file_order(*args)) {
      const std::string key(e.key->str());
      if (fn.find_param(key)) {
        given.emplace(key, e.node);
        continue;
      }
      error(pos(e.key->source()), where.node_id, dotted(where.key, key),
            valid.empty()
                ? fmt::format("unknown argument; function '{}' takes no arguments", fn.name)
                : unknown_name_message("argument", key, valid,
                                       fmt::format("arguments of function '{}'", fn.name)));
      ok = false;
    }
  }
  std::vector<std::pair<std::string, Value>> entries;
  for (const auto& p : fn.params) {
    const Where arg_where{where.node_id, dotted(where.key, p.name)};
    std::optional<Value> value;
    if (auto it = given.find(p.name); it != given.end()) {
      value = check_value(p, *it->second, arg_where);
      if (!value) ok = false;
    } else if (p.required) {
      error(missing_pos, where.node_id, arg_where.key,
            fmt::format("missing; function '{}' requires it ({})", fn.name, with_doc(p)));
      ok = false;
    } else if (p.default_json) {
      value = p.type == SL_PARAM_FUNCTION ? function_default(p, missing_pos, arg_where)
                                          : parsed_default(p);
    }
    if (value) entries.emplace_back(p.name, std::move(*value));
  }
  if (!ok) return std::nullopt;
  Value checked = Value::object(entries);
  if (fn.def.validate) {
    const size_t errors_before = error_count();
    sl_validate_init init{};
    init.struct_size = sizeof init;
    init.config = checked.raw();
    init.node_id = {where.node_id.data(), where.node_id.size()};
    init.task_count = spec_.runtime.tasks;
    init.checkpointing = spec_.checkpoint.enabled ? 1 : 0;
    init.pipeline = {spec_.name.data(), spec_.name.size()};
    init.environment = options_.environment ? 1 : 0;
    auto where_is = [&](std::string_view key) -> SourcePos {
      if (args) {
        for (const auto& e : entries_in_file_order(*args)) {
          if (e.key->str() == key) return pos(e.node->source());
        }
      }
      return missing_pos;
    };
    run_validator(fn.def.validate, init, where_is, where.node_id, where.key,
                  fmt::format("function '{}'", fn.name));
    if (error_count() != errors_before) return std::nullopt;
  }
  return checked;
}

namespace {

// What a validate callback reported, collected through sl_validate_init.report.
struct Reports {
  std::vector<std::pair<std::string, std::string>> items;  // key, message
};

// A plugin may report without limit or echo a huge value: keep what a reader can use.
constexpr size_t k_max_reports = 50;
constexpr size_t k_max_report_text = 2000;

void collect_report(void* arg, const char* key, size_t key_len, const char* msg,
                    size_t msg_len) noexcept {
  auto* reports = static_cast<Reports*>(arg);
  if (reports == nullptr || reports->items.size() >= k_max_reports) return;
  try {
    std::string k = key ? std::string(key, std::min(key_len, k_max_report_text)) : std::string();
    std::string m = msg ? std::string(msg, std::min(msg_len, k_max_report_text)) : std::string();
    if (msg && msg_len > k_max_report_text) m += "...";
    reports->items.emplace_back(std::move(k), std::move(m));
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; the status still fails
  }
}

}  // namespace

size_t Validator::error_count() const {
  return static_cast<size_t>(std::count_if(diags_.begin(), diags_.end(), [](const Diagnostic& d) {
    return d.severity == Severity::error;
  }));
}

void Validator::run_validator(sl_status (*validate)(const sl_validate_init*),
                              sl_validate_init& init,
                              const std::function<SourcePos(std::string_view key)>& where_is,
                              std::string_view node_id, std::string_view key_prefix,
                              std::string_view what) {
  if (!registry_.host_api()) {
    // Only a registry filled by hand (compiled-in plugins, tests) can lack one.
    error(where_is(""), node_id, std::string(key_prefix),
          fmt::format("{} has a validate callback, but the plugin registry has no host table "
                      "to hand it (PluginRegistry::set_host_api)",
                      what));
    return;
  }
  Reports reports;
  init.host = registry_.host_api();
  init.report = &collect_report;
  init.report_arg = &reports;
  const sl_status status = validate(&init);
  for (auto& [key, message] : reports.items) {
    // A reported key may be dotted ("literals.0"): its position is its first part's.
    const std::string_view head = std::string_view(key).substr(0, key.find('.'));
    std::string full = key_prefix.empty() || key.empty()
                           ? (key.empty() ? std::string(key_prefix) : key)
                           : fmt::format("{}.{}", key_prefix, key);
    error(where_is(head), node_id, std::move(full), std::move(message));
  }
  if (status != SL_OK && reports.items.empty()) {
    error(
        where_is(""), node_id, std::string(key_prefix),
        fmt::format("{} refused its config ({}) without saying why", what, sl_status_name(status)));
  }
}

void Validator::run_node_validators() {
  std::set<std::string, std::less<>> with_errors;  // copies: diags_ grows below
  for (const auto& d : diags_) {
    if (d.severity == Severity::error && !d.node_id.empty()) with_errors.insert(d.node_id);
  }
  for (const auto& node : spec_.nodes) {
    if (!node.info || !node.info->vtable.validate || with_errors.count(node.id)) continue;
    std::vector<sl_str> input_ids;
    for (const auto& ref : node.inputs) input_ids.push_back({ref.id.data(), ref.id.size()});
    sl_validate_init init{};
    init.struct_size = sizeof init;
    init.config = node.config.raw();
    init.node_id = {node.id.data(), node.id.size()};
    init.input_count = static_cast<uint32_t>(input_ids.size());
    init.input_ids = input_ids.empty() ? nullptr : input_ids.data();
    init.task_count = spec_.runtime.tasks;
    init.checkpointing = spec_.checkpoint.enabled ? 1 : 0;
    init.pipeline = {spec_.name.data(), spec_.name.size()};
    init.environment = options_.environment ? 1 : 0;
    auto where_is = [&](std::string_view key) -> SourcePos {
      if (key.empty()) return node.pos;
      auto it = node.key_pos.find(key);
      if (it != node.key_pos.end()) return it->second;
      // A function param given in Lua or with sibling args: point at what is there.
      for (const auto* alt : {"_lua", "_args"}) {
        it = node.key_pos.find(fmt::format("{}{}", key, alt));
        if (it != node.key_pos.end()) return it->second;
      }
      return node.pos;
    };
    run_validator(node.info->vtable.validate, init, where_is, node.id, "",
                  fmt::format("type '{}'", node.info->name));
  }
}

std::optional<Value> Validator::parsed_default(const ParamInfo& param) {
  // The registry checked at load time that the default parses and fits.
  auto parsed = json_parse(*param.default_json);
  if (!parsed.is_ok()) return std::nullopt;
  Value v = std::move(parsed).value();
  if (param.type == SL_PARAM_FLOAT && v.is_int())
    return Value::floating(static_cast<double>(v.as_int()));
  return v;
}

std::optional<Value> Validator::function_default(const ParamInfo& param, SourcePos at,
                                                 const Where& where) {
  auto parsed = parsed_default(param);
  if (!parsed) return std::nullopt;
  std::string name;
  std::optional<Value> given_args;
  if (parsed->is_string()) {
    name = std::string(parsed->as_str());
  } else if (auto n = parsed->get("name"); n && n->is_string()) {
    name = std::string(n->as_str());
    if (auto a = parsed->get("args"); a && a->is_object()) given_args = std::move(*a);
  } else {
    error(at, where.node_id, where.key,
          fmt::format("the plugin's default '{}' is not a function spec; set '{}' explicitly",
                      *param.default_json, where.key));
    return std::nullopt;
  }
  const FunctionInfo* fn = registry_.find_function(name);
  if (!fn) {
    error(at, where.node_id, where.key,
          fmt::format("the default function '{}' is not provided by any loaded plugin; set '{}' "
                      "explicitly or load the plugin that provides '{}'",
                      name, where.key, name));
    return std::nullopt;
  }
  std::vector<std::pair<std::string, Value>> args;
  for (const auto& p : fn->params) {
    std::optional<Value> value;
    if (given_args) value = given_args->get(p.name);
    if (!value && p.default_json) value = parsed_default(p);
    if (value) args.emplace_back(p.name, std::move(*value));
  }
  std::vector<std::pair<std::string, Value>> entries{{"name", Value::string(name)},
                                                     {"args", Value::object(args)}};
  return Value::object(entries);
}

std::optional<Value> Validator::normalise_lua(const toml::node& code, const Where& where) {
  const auto* text = code.as_string();
  if (!text) {
    error(pos(code.source()), where.node_id, where.key,
          fmt::format("expected Lua code (a string: an expression of x, or function(x) ... end), "
                      "got {}",
                      toml_type_name(code)));
    return std::nullopt;
  }
  const auto& from = code.source().path;  // merged config files: the node's own file
  const lua::LuaSource source = lua_source_at(*text, from && !from->empty() ? *from : file_);
  // A fresh sandbox per check: the chunk runs (it only builds the function)
  // and nothing of it outlives validation.
  lua::LuaRuntime runtime;
  if (auto problem = lua::check_source(runtime, source)) {
    error(SourcePos{source.file, static_cast<uint32_t>(problem->line),
                    static_cast<uint32_t>(problem->column)},
          where.node_id, where.key, "Lua: " + problem->message);
    return std::nullopt;
  }
  return lua::lua_spec(source);
}

}  // namespace sluice::host::config_detail
