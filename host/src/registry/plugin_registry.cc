#include "registry/plugin_registry.hpp"

#include "value/json.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

namespace sluice::host {
namespace {

// Copies the first `declared` bytes of a plugin struct into a zeroed host-size
// struct: fields the plugin was built without read as zero/NULL.
template <class T>
T copy_prefix(const T* src) {
  T out{};
  size_t n = std::min<size_t>(src->struct_size, sizeof(T));
  std::memcpy(static_cast<void*>(&out), src, n);
  out.struct_size = sizeof(T);
  return out;
}

std::string str_or_empty(const char* s) { return s ? std::string(s) : std::string(); }

bool valid_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* p = s; *p; ++p) {
    char c = *p;
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  }
  return true;
}

bool default_matches(int32_t type, const Value& v) {
  switch (type) {
    case SL_PARAM_BOOL: return v.is_bool();
    case SL_PARAM_INT:
    case SL_PARAM_DURATION: return v.is_int();
    case SL_PARAM_FLOAT: return v.is_int() || v.is_float();
    case SL_PARAM_STRING: return v.is_string();
    case SL_PARAM_ARRAY: return v.is_array();
    case SL_PARAM_TABLE: return v.is_object();
    case SL_PARAM_FUNCTION: return v.is_string() || v.is_object();
    case SL_PARAM_ANY: return true;
    default: return false;
  }
}

// The constraints of one param (ABI 1.2): flags say which fields are set; a constraint that
// does not fit the param's type, or cannot hold, is refused.
Status read_constraints(const sl_param& p, uint32_t stride, std::string_view owner,
                        ParamInfo& info) {
  auto refuse = [&](std::string_view why) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: parameter '{}' {}", owner, info.name, why));
  };
  // A plugin built before 1.2 gave these bits no meaning: read them only from a 1.2 struct.
  // Flags a later minor may add are ignored, as an older host ignores appended fields.
  if (stride < offsetof(sl_param, choices) + sizeof(const char*)) return Status::ok();
  const bool is_int = p.type == SL_PARAM_INT || p.type == SL_PARAM_DURATION;
  const bool is_float = p.type == SL_PARAM_FLOAT;
  if (p.flags & SL_PARAM_NON_EMPTY) {
    if (p.type != SL_PARAM_STRING && p.type != SL_PARAM_ARRAY && p.type != SL_PARAM_TABLE) {
      return refuse("is declared non-empty, which only strings, arrays and tables can be");
    }
    info.non_empty = true;
  }
  for (const bool is_min : {true, false}) {
    if (!(p.flags & (is_min ? SL_PARAM_HAS_MIN : SL_PARAM_HAS_MAX))) continue;
    const char* what = is_min ? "a minimum" : "a maximum";
    if (!is_int && !is_float) {
      return refuse(
          fmt::format("declares {}, which only int, float and duration params have", what));
    }
    if (is_int) {
      (is_min ? info.min_int : info.max_int) = is_min ? p.min_int : p.max_int;
    } else {
      const double bound = is_min ? p.min_float : p.max_float;
      if (std::isnan(bound)) return refuse(fmt::format("declares {} that is NaN", what));
      (is_min ? info.min_float : info.max_float) = bound;
    }
  }
  if (p.flags & SL_PARAM_MIN_EXCLUSIVE) {
    if (!is_float || !(p.flags & SL_PARAM_HAS_MIN)) {
      return refuse("is declared min-exclusive without a float minimum");
    }
    info.min_exclusive = true;
  }
  if ((info.min_int && info.max_int && *info.min_int > *info.max_int) ||
      (info.min_float && info.max_float && *info.min_float > *info.max_float)) {
    return refuse("declares a minimum above its maximum");
  }
  if (p.flags & SL_PARAM_HAS_CHOICES) {
    if (p.type != SL_PARAM_STRING && p.type != SL_PARAM_FUNCTION) {
      return refuse("declares choices, which only strings (and functions: kinds) have");
    }
    if (!p.choices) {
      return refuse("declares choices but gives none");
    }
    std::string_view all(p.choices);
    while (true) {
      const size_t bar = all.find('|');
      info.choices.emplace_back(all.substr(0, bar));
      if (bar == std::string_view::npos) break;
      all.remove_prefix(bar + 1);
    }
    if (p.type == SL_PARAM_FUNCTION) {
      for (const auto& kind : info.choices) {
        if (kind != "map" && kind != "predicate" && kind != "reducer") {
          return refuse(
              fmt::format("declares function kind '{}' (valid: map, predicate, reducer)", kind));
        }
      }
    }
  }
  return Status::ok();
}

// A node type's side outputs (ABI 1.5): names of [a-z0-9_], unique, not "dead_letter" (the
// host's own output), at most 16 (a bound on what a plugin can make the host allocate).
Result<std::vector<std::string>> read_side_outputs(const sl_node_type& t,
                                                   const std::string& owner) {
  constexpr uint32_t k_max_side_outputs = 16;
  std::vector<std::string> names;
  if (t.side_output_count == 0) return names;
  if (t.side_outputs == nullptr || t.side_output_count > k_max_side_outputs) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("{} declares {} side outputs {}", owner, t.side_output_count,
                              t.side_outputs == nullptr ? "but no names" : "(at most 16)"));
  }
  for (uint32_t i = 0; i < t.side_output_count; ++i) {
    const char* raw = t.side_outputs[i];
    const std::string_view name = raw != nullptr ? std::string_view(raw) : std::string_view();
    const bool valid =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        });
    if (!valid || name == "dead_letter") {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: side output #{} must be a name of a-z, 0-9 and _ (not "
                                "\"dead_letter\")",
                                owner, i));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: side output '{}' is declared twice", owner, name));
    }
    names.emplace_back(name);
  }
  return names;
}

// Reads a param array using the first element's struct_size as the stride.
Result<std::vector<ParamInfo>> read_params(const sl_param* params, uint32_t count,
                                           std::string_view owner) {
  std::vector<ParamInfo> out;
  if (count == 0) return out;
  if (!params) return Status(SL_INVALID_ARGUMENT, fmt::format("{}: params is NULL", owner));
  uint32_t stride = params->struct_size;
  if (stride < offsetof(sl_param, doc) + sizeof(const char*)) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("{}: sl_param.struct_size {} is too small", owner, stride));
  }
  std::set<std::string, std::less<>> seen;
  for (uint32_t i = 0; i < count; ++i) {
    const auto* raw = reinterpret_cast<const sl_param*>(reinterpret_cast<const char*>(params) +
                                                        size_t{i} * stride);
    sl_param p = copy_prefix(raw);
    if (!valid_name(p.name)) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: parameter #{} has no valid name", owner, i));
    }
    ParamInfo info;
    info.name = p.name;
    info.type = p.type;
    info.required = (p.flags & SL_PARAM_REQUIRED) != 0;
    info.doc = str_or_empty(p.doc);
    if (param_type_name(p.type) == "unknown") {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{}: parameter '{}' has unknown type {}",
                                                     owner, info.name, p.type));
    }
    SLUICE_RETURN_IF_ERROR(read_constraints(p, stride, owner, info));
    if (!seen.insert(info.name).second) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: parameter '{}' is declared twice", owner, info.name));
    }
    if (p.default_json) {
      auto parsed = json_parse(p.default_json);
      if (!parsed.is_ok() || !default_matches(p.type, parsed.value())) {
        return Status(SL_INVALID_ARGUMENT,
                      fmt::format("{}: parameter '{}' has default '{}' that is not a valid {}",
                                  owner, info.name, p.default_json, param_type_name(p.type)));
      }
      if (auto broken = constraint_violation(info, parsed.value())) {
        return Status(SL_INVALID_ARGUMENT,
                      fmt::format("{}: parameter '{}' has default '{}' that breaks its own "
                                  "constraint: {}",
                                  owner, info.name, p.default_json, *broken));
      }
      info.default_json = p.default_json;
    }
    out.push_back(std::move(info));
  }
  return out;
}

// The state flags and the callbacks that serve them must agree. Each mismatch was a silent
// loss before: a type with snapshot/restore but no SL_NODE_STATEFUL was never saved, and one
// with the flag but no snapshot was skipped at every checkpoint.
Status check_state_callbacks(const sl_node_type& t, const std::string& owner) {
  const bool stateful = (t.flags & SL_NODE_STATEFUL) != 0;
  const bool keyed = (t.flags & SL_NODE_KEYED_STATE) != 0;
  auto refuse = [&](std::string_view why) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{} {}", owner, why));
  };
  if ((t.snapshot != nullptr) != (t.restore != nullptr)) {
    return refuse(t.snapshot ? "sets snapshot but not restore: a stateful type needs both"
                             : "sets restore but not snapshot: a stateful type needs both");
  }
  if (stateful && !t.snapshot) {
    return refuse("has the flag SL_NODE_STATEFUL but no snapshot and restore callbacks");
  }
  if (!stateful && t.snapshot) {
    return refuse(
        "sets snapshot and restore without the flag SL_NODE_STATEFUL, so its state would "
        "never be saved: add the flag (the C++ SDK sets it from the overrides)");
  }
  if (keyed && !stateful) return refuse("has SL_NODE_KEYED_STATE without SL_NODE_STATEFUL");
  if (keyed && (!t.restore_group || !t.drop_group)) {
    return refuse("has SL_NODE_KEYED_STATE but not both restore_group and drop_group");
  }
  if (!keyed && (t.restore_group || t.drop_group)) {
    return refuse("sets restore_group or drop_group without the flag SL_NODE_KEYED_STATE");
  }
  return Status::ok();
}

const ParamInfo* find_in(const std::vector<ParamInfo>& params, std::string_view key) {
  auto it =
      std::find_if(params.begin(), params.end(), [&](const ParamInfo& p) { return p.name == key; });
  return it == params.end() ? nullptr : &*it;
}

}  // namespace

std::optional<std::string> constraint_violation(const ParamInfo& p, const Value& v) {
  if (p.non_empty) {
    if ((v.is_string() && v.as_str().empty()) ||
        ((v.is_array() || v.is_object()) && v.size() == 0)) {
      return std::string("must not be empty");
    }
  }
  if (v.is_int() && (p.type == SL_PARAM_INT || p.type == SL_PARAM_DURATION)) {
    const int64_t i = v.as_int();
    if (p.min_int && p.max_int && (i < *p.min_int || i > *p.max_int)) {
      return fmt::format("must be {}..{} (got {})", *p.min_int, *p.max_int, i);
    }
    if (p.min_int && i < *p.min_int)
      return fmt::format("must be at least {} (got {})", *p.min_int, i);
    if (p.max_int && i > *p.max_int)
      return fmt::format("must be at most {} (got {})", *p.max_int, i);
  }
  if (p.type == SL_PARAM_FLOAT && (v.is_int() || v.is_float())) {
    const double f = v.is_int() ? static_cast<double>(v.as_int()) : v.as_float();
    if ((p.min_float || p.max_float) && std::isnan(f)) return std::string("must not be nan");
    if (p.min_float && (p.min_exclusive ? !(f > *p.min_float) : f < *p.min_float)) {
      return fmt::format("must be {} {} (got {})", p.min_exclusive ? "above" : "at least",
                         *p.min_float, f);
    }
    if (p.max_float && f > *p.max_float) {
      return fmt::format("must be at most {} (got {})", *p.max_float, f);
    }
  }
  if (!p.choices.empty() && v.is_string() && p.type == SL_PARAM_STRING) {
    const std::string_view s = v.as_str();
    if (std::find(p.choices.begin(), p.choices.end(), s) == p.choices.end()) {
      std::string list;
      for (const auto& c : p.choices) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", c);
      // An echoed value is capped: a config may hold a huge string.
      const std::string_view shown = s.substr(0, 64);
      return fmt::format("must be one of {} (got \"{}{}\")", list, shown,
                         s.size() > shown.size() ? "..." : "");
    }
  }
  return std::nullopt;
}

std::string constraint_text(const ParamInfo& p) {
  std::vector<std::string> parts;
  if (p.min_int && p.max_int) {
    parts.push_back(fmt::format("{}..{}", *p.min_int, *p.max_int));
  } else if (p.min_int) {
    parts.push_back(fmt::format(">= {}", *p.min_int));
  } else if (p.max_int) {
    parts.push_back(fmt::format("<= {}", *p.max_int));
  }
  if (p.min_float)
    parts.push_back(fmt::format("{} {}", p.min_exclusive ? ">" : ">=", *p.min_float));
  if (p.max_float) parts.push_back(fmt::format("<= {}", *p.max_float));
  if (p.non_empty) parts.push_back("not empty");
  if (!p.choices.empty()) {
    std::string list;
    for (const auto& c : p.choices) list += (list.empty() ? "" : " | ") + c;
    parts.push_back((p.type == SL_PARAM_FUNCTION ? "a function of kind " : "one of ") + list);
  }
  std::string out;
  for (const auto& s : parts) out += (out.empty() ? "" : "; ") + s;
  return out;
}

const ParamInfo* NodeTypeInfo::find_param(std::string_view key) const {
  return find_in(params, key);
}
std::optional<uint32_t> NodeTypeInfo::side_output(std::string_view name) const {
  auto it = std::find(side_outputs.begin(), side_outputs.end(), name);
  if (it == side_outputs.end()) return std::nullopt;
  return static_cast<uint32_t>(it - side_outputs.begin());
}
const ParamInfo* FunctionInfo::find_param(std::string_view key) const {
  return find_in(params, key);
}
const ParamInfo* StoreInfo::find_param(std::string_view key) const { return find_in(params, key); }

std::string_view role_name(int32_t role) {
  switch (role) {
    case SL_ROLE_SOURCE: return "source";
    case SL_ROLE_OPERATOR: return "operator";
    case SL_ROLE_SINK: return "sink";
    default: return "unknown";
  }
}

std::string_view param_type_name(int32_t type) {
  switch (type) {
    case SL_PARAM_BOOL: return "bool";
    case SL_PARAM_INT: return "int";
    case SL_PARAM_FLOAT: return "float";
    case SL_PARAM_STRING: return "string";
    case SL_PARAM_ARRAY: return "array";
    case SL_PARAM_TABLE: return "table";
    case SL_PARAM_ANY: return "any";
    case SL_PARAM_FUNCTION: return "function";
    case SL_PARAM_DURATION: return "duration_ms";
    default: return "unknown";
  }
}

std::string_view function_kind_name(int32_t kind) {
  switch (kind) {
    case SL_FUNCTION_MAP: return "map";
    case SL_FUNCTION_PREDICATE: return "predicate";
    case SL_FUNCTION_REDUCER: return "reducer";
    default: return "unknown";
  }
}

Status PluginRegistry::add_plugin(const sl_plugin* descriptor, const std::filesystem::path& file,
                                  std::shared_ptr<void> library) {
  std::lock_guard lock(mutex_);
  const std::string where = file.string();
  if (!descriptor)
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: entry point returned NULL", where));
  if (!SL_HAS_FIELD(descriptor, sl_plugin, function_count)) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: sl_plugin.struct_size {} is too small",
                                                   where, descriptor->struct_size));
  }
  sl_plugin d = copy_prefix(descriptor);
  if (d.abi_major != SL_ABI_MAJOR) {
    return Status(
        SL_FAILED_PRECONDITION,
        fmt::format("{}: plugin was built for sluice ABI {}.{}, this host speaks ABI {}.{} "
                    "(major versions must match; rebuild the plugin against this SDK)",
                    where, d.abi_major, d.abi_minor, SL_ABI_MAJOR, SL_ABI_MINOR));
  }
  if (d.min_host_minor > SL_ABI_MINOR) {
    return Status(
        SL_FAILED_PRECONDITION,
        fmt::format("{}: plugin needs a host with ABI {}.{} or newer, this host speaks {}.{}",
                    where, d.abi_major, d.min_host_minor, SL_ABI_MAJOR, SL_ABI_MINOR));
  }
  if (!valid_name(d.name))
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: plugin has no valid name", where));
  // A deferred plugin of the same name is opened first, so that the duplicate is refused
  // as it would be had every plugin been opened at discovery (so are the names below:
  // the find_* calls open the deferred plugin that provides one).
  while (open_deferred_if([&](const CachedPlugin& c) { return c.name == d.name; })) {
  }
  for (const auto& p : plugins_) {
    if (p->name == d.name) {
      return Status(SL_ALREADY_EXISTS, fmt::format("{}: plugin '{}' is already loaded from {}",
                                                   where, d.name, p->file.string()));
    }
  }

  auto plugin = std::make_unique<PluginInfo>();
  plugin->name = d.name;
  plugin->version = str_or_empty(d.version);
  plugin->doc = str_or_empty(d.doc);
  plugin->abi_major = d.abi_major;
  plugin->abi_minor = d.abi_minor;
  plugin->min_host_minor = d.min_host_minor;
  plugin->file = file;
  plugin->library = std::move(library);

  // Build everything first, register only when the whole plugin is valid.
  std::vector<std::unique_ptr<NodeTypeInfo>> types;
  std::set<std::string, std::less<>> names_here;
  for (uint32_t i = 0; i < d.node_type_count; ++i) {
    const sl_node_type* raw = d.node_types ? d.node_types[i] : nullptr;
    if (!raw)
      return Status(SL_INVALID_ARGUMENT, fmt::format("{}: node type #{} is NULL", where, i));
    sl_node_type t = copy_prefix(raw);
    if (!valid_name(t.name)) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: node type #{} has no valid name", where, i));
    }
    std::string owner = fmt::format("{}: node type '{}'", where, t.name);
    if (role_name(t.role) == "unknown") {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{} has unknown role {}", owner, t.role));
    }
    if (!t.create || !t.destroy) {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{} lacks create or destroy", owner));
    }
    if (t.role == SL_ROLE_SOURCE && !t.poll) {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{} is a source without poll", owner));
    }
    if (t.role != SL_ROLE_SOURCE && !t.process) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{} is an {} without process", owner, role_name(t.role)));
    }
    if (t.role != SL_ROLE_SOURCE && (t.min_inputs < 1 || (t.max_inputs != SL_INPUTS_UNLIMITED &&
                                                          t.max_inputs < t.min_inputs))) {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{} declares invalid input counts {}..{}",
                                                     owner, t.min_inputs, t.max_inputs));
    }
    SLUICE_RETURN_IF_ERROR(check_state_callbacks(t, owner));
    if (!names_here.insert(t.name).second) {
      return Status(SL_ALREADY_EXISTS, fmt::format("{} is declared twice in the plugin", owner));
    }
    if (auto* other = find_node_type(t.name)) {
      return Status(SL_ALREADY_EXISTS,
                    fmt::format("{}: node type '{}' is already provided by plugin '{}' ({})", where,
                                t.name, other->plugin->name, other->plugin->file.string()));
    }
    SLUICE_ASSIGN_OR_RETURN(auto params, read_params(t.params, t.param_count, owner));
    SLUICE_ASSIGN_OR_RETURN(auto side_outputs, read_side_outputs(t, owner));
    auto info = std::make_unique<NodeTypeInfo>();
    info->name = t.name;
    info->doc = str_or_empty(t.doc);
    info->role = t.role;
    info->params = std::move(params);
    info->flags = t.flags;
    info->min_inputs = t.role == SL_ROLE_SOURCE ? 0 : t.min_inputs;
    info->max_inputs = t.role == SL_ROLE_SOURCE ? 0 : t.max_inputs;
    info->side_outputs = std::move(side_outputs);
    info->vtable = t;
    info->vtable.name = nullptr;  // strings live in the info; avoid two sources of truth
    info->vtable.doc = nullptr;
    info->vtable.params = nullptr;
    info->vtable.side_outputs = nullptr;
    info->plugin = plugin.get();
    types.push_back(std::move(info));
  }

  std::vector<std::unique_ptr<FunctionInfo>> fns;
  std::set<std::string, std::less<>> fn_names_here;
  for (uint32_t i = 0; i < d.function_count; ++i) {
    const sl_function_def* raw = d.functions ? d.functions[i] : nullptr;
    if (!raw) return Status(SL_INVALID_ARGUMENT, fmt::format("{}: function #{} is NULL", where, i));
    sl_function_def f = copy_prefix(raw);
    if (!valid_name(f.name)) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{}: function #{} has no valid name", where, i));
    }
    std::string owner = fmt::format("{}: function '{}'", where, f.name);
    if (function_kind_name(f.kind) == "unknown") {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{} has unknown kind {}", owner, f.kind));
    }
    if (!f.call) return Status(SL_INVALID_ARGUMENT, fmt::format("{} has no call", owner));
    if (f.max_arity < f.min_arity) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("{} declares arity {}..{}", owner, f.min_arity, f.max_arity));
    }
    if (!fn_names_here.insert(f.name).second) {
      return Status(SL_ALREADY_EXISTS, fmt::format("{} is declared twice in the plugin", owner));
    }
    if (auto* other = find_function(f.name)) {
      return Status(SL_ALREADY_EXISTS,
                    fmt::format("{}: function '{}' is already provided by plugin '{}' ({})", where,
                                f.name, other->plugin->name, other->plugin->file.string()));
    }
    SLUICE_ASSIGN_OR_RETURN(auto params, read_params(f.params, f.param_count, owner));
    auto info = std::make_unique<FunctionInfo>();
    info->name = f.name;
    info->doc = str_or_empty(f.doc);
    info->kind = f.kind;
    info->params = std::move(params);
    info->min_arity = f.min_arity;
    info->max_arity = f.max_arity;
    info->def = f;
    info->def.name = nullptr;
    info->def.doc = nullptr;
    info->def.params = nullptr;
    info->plugin = plugin.get();
    fns.push_back(std::move(info));
  }

  // ABI 1.1: checkpoint stores, read only when the descriptor is large enough.
  std::vector<std::unique_ptr<StoreInfo>> stores;
  if (SL_HAS_FIELD(descriptor, sl_plugin, store_count)) {
    std::set<std::string, std::less<>> store_names_here;
    for (uint32_t i = 0; i < d.store_count; ++i) {
      const sl_checkpoint_store* raw = d.stores ? d.stores[i] : nullptr;
      if (!raw) return Status(SL_INVALID_ARGUMENT, fmt::format("{}: store #{} is NULL", where, i));
      sl_checkpoint_store st = copy_prefix(raw);
      if (!valid_name(st.name)) {
        return Status(SL_INVALID_ARGUMENT,
                      fmt::format("{}: store #{} has no valid name", where, i));
      }
      std::string owner = fmt::format("{}: checkpoint store '{}'", where, st.name);
      if (!st.open || !st.close || !st.write || !st.mark_committed || !st.read || !st.list ||
          !st.remove) {
        return Status(SL_INVALID_ARGUMENT,
                      fmt::format("{} lacks one of open, close, write, mark_committed, read, "
                                  "list, remove",
                                  owner));
      }
      if (!store_names_here.insert(st.name).second || find_store(st.name)) {
        const StoreInfo* other = find_store(st.name);
        return Status(
            SL_ALREADY_EXISTS,
            other ? fmt::format("{}: checkpoint store '{}' is already provided by "
                                "plugin '{}' ({})",
                                where, st.name, other->plugin->name, other->plugin->file.string())
                  : fmt::format("{} is declared twice in the plugin", owner));
      }
      SLUICE_ASSIGN_OR_RETURN(auto params, read_params(st.params, st.param_count, owner));
      auto info = std::make_unique<StoreInfo>();
      info->name = st.name;
      info->doc = str_or_empty(st.doc);
      info->params = std::move(params);
      info->vtable = st;
      info->vtable.name = nullptr;
      info->vtable.doc = nullptr;
      info->vtable.params = nullptr;
      info->plugin = plugin.get();
      stores.push_back(std::move(info));
    }
  }

  for (auto& st : stores) {
    plugin->stores.push_back(st.get());
    stores_by_name_.emplace(st->name, st.get());
    stores_.push_back(std::move(st));
  }
  for (auto& t : types) {
    plugin->node_types.push_back(t.get());
    node_types_by_name_.emplace(t->name, t.get());
    node_types_.push_back(std::move(t));
  }
  for (auto& f : fns) {
    plugin->functions.push_back(f.get());
    functions_by_name_.emplace(f->name, f.get());
    functions_.push_back(std::move(f));
  }
  plugins_.push_back(std::move(plugin));
  return Status::ok();
}

void PluginRegistry::set_deferred_opener(DeferredOpener open) {
  std::lock_guard lock(mutex_);
  open_deferred_ = std::move(open);
}

void PluginRegistry::defer(CachedPlugin plugin) {
  std::lock_guard lock(mutex_);
  deferred_.push_back(std::move(plugin));
}

bool PluginRegistry::provides_any_of(const CachedPlugin& plugin) const {
  std::lock_guard lock(mutex_);
  auto shares_a_name = [&](const CachedPlugin& other) {
    auto common = [](const auto& a, const auto& b) {
      return std::any_of(a.begin(), a.end(), [&](const auto& x) {
        return std::find(b.begin(), b.end(), x) != b.end();
      });
    };
    std::vector<std::string> types, other_types;
    for (const auto& t : plugin.node_types) types.push_back(t.first);
    for (const auto& t : other.node_types) other_types.push_back(t.first);
    return other.name == plugin.name || common(types, other_types) ||
           common(plugin.functions, other.functions) || common(plugin.stores, other.stores);
  };
  if (std::any_of(deferred_.begin(), deferred_.end(), shares_a_name)) return true;
  return std::any_of(plugins_.begin(), plugins_.end(),
                     [&](const auto& p) { return p->name == plugin.name; }) ||
         std::any_of(plugin.node_types.begin(), plugin.node_types.end(),
                     [&](const auto& t) { return node_types_by_name_.contains(t.first); }) ||
         std::any_of(plugin.functions.begin(), plugin.functions.end(),
                     [&](const auto& f) { return functions_by_name_.contains(f); }) ||
         std::any_of(plugin.stores.begin(), plugin.stores.end(),
                     [&](const auto& st) { return stores_by_name_.contains(st); });
}

size_t PluginRegistry::deferred_count() const {
  std::lock_guard lock(mutex_);
  return deferred_.size();
}

void PluginRegistry::open_deferred() const {
  std::lock_guard lock(mutex_);
  while (open_deferred_if([](const CachedPlugin&) { return true; })) {
  }
}

std::vector<std::string> PluginRegistry::take_open_problems() const {
  std::lock_guard lock(mutex_);
  return std::exchange(open_problems_, {});
}

bool PluginRegistry::open_deferred_if(
    const std::function<bool(const CachedPlugin&)>& wanted) const {
  auto it = std::find_if(deferred_.begin(), deferred_.end(), wanted);
  if (it == deferred_.end()) return false;
  CachedPlugin plugin = std::move(*it);
  deferred_.erase(it);  // before opening: the open may look names up again
  open_one(std::move(plugin));
  return true;
}

void PluginRegistry::open_one(CachedPlugin plugin) const {
  if (!open_deferred_) {
    open_problems_.push_back(
        fmt::format("{}: deferred plugin, and nothing to open it with", plugin.file.string()));
    return;
  }
  Result<CachedPlugin> opened = open_deferred_(plugin);
  if (!opened.is_ok()) {
    open_problems_.emplace_back(opened.status().message());
    return;
  }
  if (!opened->same_names(plugin)) {
    // The cache was wrong about this file (a plugin that registers what it finds at load,
    // or an edited cache): then it may be wrong about others too. Open them all, as
    // without a cache; the opener has corrected the cache for the next start.
    spdlog::warn(
        "plugin cache: {} provides other names than the cache said; opening every "
        "plugin",
        plugin.file.string());
    while (open_deferred_if([](const CachedPlugin&) { return true; })) {
    }
  }
}

const NodeTypeInfo* PluginRegistry::find_node_type(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (bool opened = true; opened;) {
    if (auto it = node_types_by_name_.find(name); it != node_types_by_name_.end()) {
      return it->second;
    }
    opened = open_deferred_if([&](const CachedPlugin& c) {
      return std::any_of(c.node_types.begin(), c.node_types.end(),
                         [&](const auto& t) { return t.first == name; });
    });
  }
  return nullptr;
}

const FunctionInfo* PluginRegistry::find_function(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (bool opened = true; opened;) {
    if (auto it = functions_by_name_.find(name); it != functions_by_name_.end()) return it->second;
    opened = open_deferred_if([&](const CachedPlugin& c) {
      return std::find(c.functions.begin(), c.functions.end(), name) != c.functions.end();
    });
  }
  return nullptr;
}

const StoreInfo* PluginRegistry::find_store(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (bool opened = true; opened;) {
    if (auto it = stores_by_name_.find(name); it != stores_by_name_.end()) return it->second;
    opened = open_deferred_if([&](const CachedPlugin& c) {
      return std::find(c.stores.begin(), c.stores.end(), name) != c.stores.end();
    });
  }
  return nullptr;
}

namespace {
// Sorted and without repeats: loaded names and those of deferred plugins together.
std::vector<std::string> sorted_unique(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}
}  // namespace

std::vector<std::string> PluginRegistry::node_type_names(int32_t role) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, info] : node_types_by_name_) {
    if (info->role == role) out.push_back(name);
  }
  for (const auto& d : deferred_) {
    for (const auto& [name, r] : d.node_types) {
      if (r == role) out.push_back(name);
    }
  }
  return sorted_unique(std::move(out));
}

std::vector<std::string> PluginRegistry::store_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, info] : stores_by_name_) out.push_back(name);
  for (const auto& d : deferred_) out.insert(out.end(), d.stores.begin(), d.stores.end());
  return sorted_unique(std::move(out));
}

std::vector<std::string> PluginRegistry::function_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, info] : functions_by_name_) out.push_back(name);
  for (const auto& d : deferred_) out.insert(out.end(), d.functions.begin(), d.functions.end());
  return sorted_unique(std::move(out));
}

void PluginRegistry::record_search(std::vector<std::filesystem::path> dirs,
                                   std::filesystem::path missing_default) {
  search_recorded_ = true;
  for (auto& d : dirs) {
    if (std::find(searched_dirs_.begin(), searched_dirs_.end(), d) == searched_dirs_.end()) {
      searched_dirs_.push_back(std::move(d));
    }
  }
  if (!missing_default.empty()) missing_default_dir_ = std::move(missing_default);
}

std::string PluginRegistry::search_hint() const {
  std::string out;
  if (!search_recorded_) {
    return "add the plugins' directory to the config's plugin_dirs, SLUICE_PLUGIN_PATH "
           "(colon-separated) or --plugin-dir";
  }
  if (searched_dirs_.empty()) {
    out = "no plugin directory was searched";
  } else {
    out = "plugins were searched in ";
    for (size_t i = 0; i < searched_dirs_.size(); ++i) {
      out += (i == 0 ? "" : ", ") + searched_dirs_[i].string();
    }
  }
  if (!missing_default_dir_.empty()) {
    out += fmt::format(" (the install default {} does not exist)", missing_default_dir_.string());
  }
  return out +
         "; add the plugins' directory to the config's plugin_dirs, SLUICE_PLUGIN_PATH "
         "(colon-separated) or --plugin-dir";
}

}  // namespace sluice::host
