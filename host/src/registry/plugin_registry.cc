#include "registry/plugin_registry.hpp"

#include "value/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

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
    ParamInfo info{p.name, p.type, (p.flags & SL_PARAM_REQUIRED) != 0, std::nullopt,
                   str_or_empty(p.doc)};
    if (param_type_name(p.type) == "unknown") {
      return Status(SL_INVALID_ARGUMENT, fmt::format("{}: parameter '{}' has unknown type {}",
                                                     owner, info.name, p.type));
    }
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
      info.default_json = p.default_json;
    }
    out.push_back(std::move(info));
  }
  return out;
}

const ParamInfo* find_in(const std::vector<ParamInfo>& params, std::string_view key) {
  auto it =
      std::find_if(params.begin(), params.end(), [&](const ParamInfo& p) { return p.name == key; });
  return it == params.end() ? nullptr : &*it;
}

}  // namespace

const ParamInfo* NodeTypeInfo::find_param(std::string_view key) const {
  return find_in(params, key);
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
  const std::string where = file.string();
  if (!descriptor)
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: entry point returned NULL", where));
  if (descriptor->struct_size < offsetof(sl_plugin, function_count) + sizeof(uint32_t)) {
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
    if (!names_here.insert(t.name).second) {
      return Status(SL_ALREADY_EXISTS, fmt::format("{} is declared twice in the plugin", owner));
    }
    if (auto* other = find_node_type(t.name)) {
      return Status(SL_ALREADY_EXISTS,
                    fmt::format("{}: node type '{}' is already provided by plugin '{}' ({})", where,
                                t.name, other->plugin->name, other->plugin->file.string()));
    }
    SLUICE_ASSIGN_OR_RETURN(auto params, read_params(t.params, t.param_count, owner));
    auto info = std::make_unique<NodeTypeInfo>();
    info->name = t.name;
    info->doc = str_or_empty(t.doc);
    info->role = t.role;
    info->params = std::move(params);
    info->flags = t.flags;
    info->min_inputs = t.role == SL_ROLE_SOURCE ? 0 : t.min_inputs;
    info->max_inputs = t.role == SL_ROLE_SOURCE ? 0 : t.max_inputs;
    info->vtable = t;
    info->vtable.name = nullptr;  // strings live in the info; avoid two sources of truth
    info->vtable.doc = nullptr;
    info->vtable.params = nullptr;
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
  if (descriptor->struct_size >= offsetof(sl_plugin, store_count) + sizeof(uint32_t)) {
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

const NodeTypeInfo* PluginRegistry::find_node_type(std::string_view name) const {
  auto it = node_types_by_name_.find(name);
  return it == node_types_by_name_.end() ? nullptr : it->second;
}

const FunctionInfo* PluginRegistry::find_function(std::string_view name) const {
  auto it = functions_by_name_.find(name);
  return it == functions_by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> PluginRegistry::node_type_names(int32_t role) const {
  std::vector<std::string> out;
  for (const auto& [name, info] : node_types_by_name_) {
    if (info->role == role) out.push_back(name);
  }
  return out;
}

const StoreInfo* PluginRegistry::find_store(std::string_view name) const {
  auto it = stores_by_name_.find(name);
  return it == stores_by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> PluginRegistry::store_names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : stores_by_name_) out.push_back(name);
  return out;
}

std::vector<std::string> PluginRegistry::function_names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : functions_by_name_) out.push_back(name);
  return out;
}

}  // namespace sluice::host
