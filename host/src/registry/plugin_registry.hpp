// The plugin registry: every node type and named function the loaded plugins
// provide, indexed by name. Plugins the plugin cache describes may be registered
// deferred: the first lookup of a name one provides opens it (the find_* functions are
// const, lock, and may load a library). Descriptors are copied into host-side structs at
// registration, reading only the fields inside each struct's struct_size, so an
// older plugin with smaller structs works and the rest of the host never has
// to think about ABI versions.
#pragma once

#include "common/result.hpp"
#include "registry/plugin_cache.hpp"

#include <sluice/sluice.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host {

struct PluginInfo;
class Value;

struct ParamInfo {
  std::string name;
  int32_t type = 0;  // SL_PARAM_*
  bool required = false;
  std::optional<std::string> default_json;
  std::string doc;
  // Value constraints (ABI 1.2; absent for older plugins), checked at validate.
  bool non_empty = false;
  std::optional<int64_t> min_int, max_int;     // INT, DURATION
  std::optional<double> min_float, max_float;  // FLOAT
  bool min_exclusive = false;                  // FLOAT: > min_float
  std::vector<std::string> choices;            // STRING: one of these (empty: any)

  [[nodiscard]] bool has_constraints() const {
    return non_empty || min_int || max_int || min_float || max_float || !choices.empty();
  }
};

// The constraint of `p` that `v` breaks, as a message ("must be at least 1 (got 0)"), or
// nullopt when `v` satisfies every constraint. `v` has the param's type already.
std::optional<std::string> constraint_violation(const ParamInfo& p, const Value& v);
// The constraints of `p` in words ("at least 1; not empty"), empty when none.
std::string constraint_text(const ParamInfo& p);

struct NodeTypeInfo {
  std::string name;
  std::string doc;
  int32_t role = 0;  // SL_ROLE_*
  std::vector<ParamInfo> params;
  uint32_t flags = 0;
  int32_t min_inputs = 0;
  int32_t max_inputs = 0;
  // Side outputs (ABI 1.5: "late"), read as "ID.<name>"; the index is emit_side's.
  std::vector<std::string> side_outputs;
  sl_node_type vtable{};  // full-size copy; fields the plugin did not have are null
  const PluginInfo* plugin = nullptr;

  [[nodiscard]] const ParamInfo* find_param(std::string_view key) const;
  // The index of side output `name`, if the type has one.
  [[nodiscard]] std::optional<uint32_t> side_output(std::string_view name) const;
};

struct FunctionInfo {
  std::string name;
  std::string doc;
  int32_t kind = 0;  // SL_FUNCTION_*
  std::vector<ParamInfo> params;
  uint32_t min_arity = 1;
  uint32_t max_arity = 1;
  sl_function_def def{};  // full-size copy
  const PluginInfo* plugin = nullptr;

  [[nodiscard]] const ParamInfo* find_param(std::string_view key) const;
};

// A checkpoint store type (sl_plugin.stores, ABI 1.1; "fs" is built into the host).
struct StoreInfo {
  std::string name;
  std::string doc;
  std::vector<ParamInfo> params;
  sl_checkpoint_store vtable{};  // full-size copy
  const PluginInfo* plugin = nullptr;

  [[nodiscard]] const ParamInfo* find_param(std::string_view key) const;
};

struct PluginInfo {
  std::string name;
  std::string version;
  std::string doc;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  uint32_t min_host_minor = 0;    // the oldest host minor it says it needs
  std::filesystem::path file;     // "<builtin>" for plugins compiled into the host
  std::shared_ptr<void> library;  // keeps the shared object mapped
  std::vector<const NodeTypeInfo*> node_types;
  std::vector<const FunctionInfo*> functions;
  std::vector<const StoreInfo*> stores;
};

// Human name of a role / param type / function kind, as used in messages and docs.
std::string_view role_name(int32_t role);
std::string_view param_type_name(int32_t type);
std::string_view function_kind_name(int32_t kind);

class PluginRegistry {
 public:
  PluginRegistry() = default;
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Checks and registers a plugin's descriptor. All or nothing: a plugin with
  // one bad or duplicate entry is refused whole, with an error naming `file`
  // (and the other plugin's file for duplicates). `library` keeps the code
  // mapped as long as the registry lives.
  Status add_plugin(const sl_plugin* descriptor, const std::filesystem::path& file,
                    std::shared_ptr<void> library);

  // Opens a deferred plugin (PluginLoader's checks and dlopen) and says what it really
  // provides; PluginLoader sets it when it defers plugins.
  using DeferredOpener = std::function<Result<CachedPlugin>(const CachedPlugin&)>;
  void set_deferred_opener(DeferredOpener open);
  // Registers a plugin known from the plugin cache without opening it: the first find_*
  // of a name it provides (or a plugin added later that claims one of its names) opens it.
  // Its names count in node_type_names, function_names and store_names meanwhile.
  void defer(CachedPlugin plugin);
  // Whether a loaded or deferred plugin has the name of `plugin` or one of its names.
  [[nodiscard]] bool provides_any_of(const CachedPlugin& plugin) const;
  [[nodiscard]] size_t deferred_count() const;
  // Opens every deferred plugin (`sluiced plugins` lists them all).
  void open_deferred() const;
  // What went wrong opening deferred plugins since the last call (messages that name the
  // file), for the caller to report as it reports plugins refused at discovery.
  [[nodiscard]] std::vector<std::string> take_open_problems() const;

  [[nodiscard]] const NodeTypeInfo* find_node_type(std::string_view name) const;
  [[nodiscard]] const FunctionInfo* find_function(std::string_view name) const;
  [[nodiscard]] const StoreInfo* find_store(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> store_names() const;
  [[nodiscard]] const std::vector<std::unique_ptr<PluginInfo>>& plugins() const { return plugins_; }
  // Sorted names, for "valid types are: ..." messages.
  [[nodiscard]] std::vector<std::string> node_type_names(int32_t role) const;
  [[nodiscard]] std::vector<std::string> function_names() const;

  // The host table these plugins were handed at load (PluginLoader sets it). The
  // validator hands the same table to validate callbacks, so that config/ needs no
  // knowledge of where the table is defined (executor/host_api.hpp). Null until set.
  void set_host_api(const sl_host_api* host) { host_api_ = host; }
  [[nodiscard]] const sl_host_api* host_api() const { return host_api_; }

  // The directories the plugins were looked for in, in search order, and the install
  // default when it does not exist (so it was not searched). PluginLoader::load_search_path
  // records them; a registry filled otherwise (tests, tools) has none.
  void record_search(std::vector<std::filesystem::path> dirs,
                     std::filesystem::path missing_default);
  [[nodiscard]] bool search_recorded() const { return search_recorded_; }
  [[nodiscard]] const std::vector<std::filesystem::path>& searched_dirs() const {
    return searched_dirs_;
  }
  // Where the plugins were looked for and how to add a directory, for "no source types
  // are registered" and "unknown type" errors: "plugins were searched in A, B; add the
  // plugins' directory to the config's plugin_dirs, SLUICE_PLUGIN_PATH or --plugin-dir".
  [[nodiscard]] std::string search_hint() const;

 private:
  // Opens the first deferred plugin `wanted` accepts; false when none does.
  bool open_deferred_if(const std::function<bool(const CachedPlugin&)>& wanted) const;
  void open_one(CachedPlugin plugin) const;

  // Guards every member: lookups may open a deferred plugin, also from a task thread
  // (bind_function). Recursive: opening one adds a plugin from inside a lookup.
  mutable std::recursive_mutex mutex_;
  DeferredOpener open_deferred_;
  mutable std::vector<CachedPlugin> deferred_;
  mutable std::vector<std::string> open_problems_;
  const sl_host_api* host_api_ = nullptr;
  bool search_recorded_ = false;
  std::vector<std::filesystem::path> searched_dirs_;
  std::filesystem::path missing_default_dir_;
  std::vector<std::unique_ptr<PluginInfo>> plugins_;
  std::vector<std::unique_ptr<NodeTypeInfo>> node_types_;
  std::vector<std::unique_ptr<FunctionInfo>> functions_;
  std::map<std::string, const NodeTypeInfo*, std::less<>> node_types_by_name_;
  std::map<std::string, const FunctionInfo*, std::less<>> functions_by_name_;
  std::vector<std::unique_ptr<StoreInfo>> stores_;
  std::map<std::string, const StoreInfo*, std::less<>> stores_by_name_;
};

}  // namespace sluice::host
