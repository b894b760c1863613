// sluice/detail/plugin.hpp — the plugin descriptor and the one-line SLUICE_PLUGIN entry point.
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_PLUGIN_HPP
#define SLUICE_DETAIL_PLUGIN_HPP

#include <sluice/detail/function.hpp>
#include <sluice/detail/host.hpp>
#include <sluice/detail/node.hpp>
#include <sluice/detail/store.hpp>
#include <sluice/sluice.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::sdk {

/// The node types a plugin provides (see SLUICE_NODE_TYPES).
template <class... Ts>
struct NodeTypeList {
  /// Their descriptors, in static storage.
  static constexpr std::array<const sl_node_type*, sizeof...(Ts)> k_list{node_type<Ts>()...};
};

/// The functions a plugin provides (see SLUICE_FUNCTIONS).
template <class... Fs>
struct FunctionList {
  /// Their descriptors, in static storage.
  static constexpr std::array<const sl_function_def*, sizeof...(Fs)> k_list{function<Fs>()...};
};

/// The checkpoint stores a plugin provides (see SLUICE_STORES). Since: ABI 1.1.
template <class... Ss>
struct StoreList {
  /// Their descriptors, in static storage.
  static constexpr std::array<const sl_checkpoint_store*, sizeof...(Ss)> k_list{store<Ss>()...};
};

namespace detail {

/// Merges the lists given to SLUICE_PLUGIN, in any order and number.
template <class... Lists>
struct PluginLists {
  using nodes = NodeTypeList<>;
  using functions = FunctionList<>;
  using stores = StoreList<>;
};
template <class... Ss, class... Rest>
struct PluginLists<StoreList<Ss...>, Rest...> {
  template <class L>
  struct prepend;
  template <class... Us>
  struct prepend<StoreList<Us...>> {
    using type = StoreList<Ss..., Us...>;
  };
  using nodes = typename PluginLists<Rest...>::nodes;
  using functions = typename PluginLists<Rest...>::functions;
  using stores = typename prepend<typename PluginLists<Rest...>::stores>::type;
};
template <class... Ts, class... Rest>
struct PluginLists<NodeTypeList<Ts...>, Rest...> {
  template <class L>
  struct prepend;
  template <class... Us>
  struct prepend<NodeTypeList<Us...>> {
    using type = NodeTypeList<Ts..., Us...>;
  };
  using nodes = typename prepend<typename PluginLists<Rest...>::nodes>::type;
  using functions = typename PluginLists<Rest...>::functions;
  using stores = typename PluginLists<Rest...>::stores;
};
template <class... Fs, class... Rest>
struct PluginLists<FunctionList<Fs...>, Rest...> {
  template <class L>
  struct prepend;
  template <class... Us>
  struct prepend<FunctionList<Us...>> {
    using type = FunctionList<Fs..., Us...>;
  };
  using nodes = typename PluginLists<Rest...>::nodes;
  using functions = typename prepend<typename PluginLists<Rest...>::functions>::type;
  using stores = typename PluginLists<Rest...>::stores;
};

template <class A>
constexpr auto data_or_null(const A& a) noexcept -> decltype(a.data()) {
  return a.empty() ? nullptr : a.data();
}

/// The oldest host minor that serves every declared callback, flag and constraint of a
/// node type: an older host would ignore them (no checkpoint calls, no watermarks, state
/// not moved with its key group, constraints unchecked), so it must refuse the plugin.
/// Calls made through Context at run time are not counted: they check the host themselves.
constexpr uint32_t params_minor(const sl_param* params, uint32_t count) noexcept {
  for (uint32_t i = 0; i < count; ++i) {
    if ((params[i].flags & ~static_cast<uint32_t>(SL_PARAM_REQUIRED)) != 0) return 2;
  }
  return 0;
}
constexpr uint32_t node_type_minor(const sl_node_type& t) noexcept {
  uint32_t minor = params_minor(t.params, t.param_count);
  auto need = [&minor](bool used, uint32_t since) {
    if (used && since > minor) minor = since;
  };
  need(t.checkpoint_prepare || t.checkpoint_commit || t.checkpoint_abort || t.checkpoint_recover,
       1);
  need(t.map_values || t.select_values, 1);
  need(t.validate != nullptr, 2);
  need(t.map_keys != nullptr, 3);
  need((t.flags & SL_NODE_KEYED_STATE) != 0, 4);
  need(t.on_watermark || t.side_output_count > 0 || (t.flags & SL_NODE_WATERMARKS) != 0, 5);
  return minor;
}
template <class Lists>
constexpr uint32_t min_host_minor_of() noexcept {
  uint32_t minor = Lists::stores::k_list.size() > 0 ? 1 : 0;
  for (const sl_node_type* t : Lists::nodes::k_list) {
    if (node_type_minor(*t) > minor) minor = node_type_minor(*t);
  }
  for (const sl_function_def* f : Lists::functions::k_list) {
    const uint32_t fm = f->validate ? 2 : params_minor(f->params, f->param_count);
    if (fm > minor) minor = fm;
  }
#ifdef SLUICE_MIN_HOST_MINOR
  // The plugin asks for more (it relies on a host call it cannot do without).
  if (SLUICE_MIN_HOST_MINOR > minor) minor = SLUICE_MIN_HOST_MINOR;
#endif
  return minor;
}

/// The descriptor SLUICE_PLUGIN returns (constant-initialised: no code runs at load).
template <class Lists>
constexpr sl_plugin make_plugin(const char* name, const char* version, const char* doc) noexcept {
  using Nodes = typename Lists::nodes;
  using Functions = typename Lists::functions;
  sl_plugin p{};
  p.struct_size = sizeof(sl_plugin);
  p.abi_major = SL_ABI_MAJOR;
  p.abi_minor = SL_ABI_MINOR;
  p.min_host_minor = min_host_minor_of<Lists>();
  p.name = name;
  p.version = version;
  p.doc = doc;
  p.node_types = data_or_null(Nodes::k_list);
  p.node_type_count = static_cast<uint32_t>(Nodes::k_list.size());
  p.functions = data_or_null(Functions::k_list);
  p.function_count = static_cast<uint32_t>(Functions::k_list.size());
  using Stores = typename Lists::stores;
  p.stores = data_or_null(Stores::k_list);
  p.store_count = static_cast<uint32_t>(Stores::k_list.size());
  return p;
}

/// Size of the ABI 1.0 host table: the SDK calls every function in it.
inline constexpr size_t k_host_api_size_1_0 = offsetof(sl_host_api, node_id) + sizeof(void*);

/// The body of the entry point: checks the host table, stores it for host(), returns the
/// descriptor (or NULL after logging why, for a host this SDK cannot work with).
inline const sl_plugin* plugin_entry(const sl_host_api* table, const sl_plugin* plugin) noexcept {
  if (table == nullptr) return nullptr;
  if (table->abi_major != SL_ABI_MAJOR || table->struct_size < k_host_api_size_1_0) {
    if (SL_HAS_FIELD(table, sl_host_api, log) && table->log != nullptr) {
      try {
        const std::string msg =
            std::string("plugin '") + plugin->name + "' needs a host with ABI " +
            std::to_string(SL_ABI_MAJOR) + ".x and a host table of at least " +
            std::to_string(k_host_api_size_1_0) + " bytes; this host has ABI " +
            std::to_string(table->abi_major) + "." + std::to_string(table->abi_minor) + " and " +
            std::to_string(table->struct_size) + " bytes";
        table->log(nullptr, SL_LOG_ERROR, msg.data(), msg.size());
      } catch (...) {  // NOLINT(bugprone-empty-catch): refusing is all that is left to do
      }
    }
    return nullptr;
  }
  set_host(table);
  return plugin;
}

}  // namespace detail
}  // namespace sluice::sdk

/// The node types of a plugin, for SLUICE_PLUGIN: SLUICE_NODE_TYPES(Map, Filter).
#define SLUICE_NODE_TYPES(...) ::sluice::sdk::NodeTypeList<__VA_ARGS__>
/// The functions of a plugin, for SLUICE_PLUGIN: SLUICE_FUNCTIONS(Add, Upper).
#define SLUICE_FUNCTIONS(...) ::sluice::sdk::FunctionList<__VA_ARGS__>
/// The checkpoint stores of a plugin, for SLUICE_PLUGIN: SLUICE_STORES(KafkaStore).
#define SLUICE_STORES(...) ::sluice::sdk::StoreList<__VA_ARGS__>

/// Defines the plugin's exported entry point `sluice_plugin_v1` (SL_PLUGIN_ENTRY_SYMBOL),
/// in one line at global scope of one source file:
///
///   SLUICE_PLUGIN("core_ops", "0.1.0", "streamz operators",
///                 SLUICE_NODE_TYPES(Map, Filter), SLUICE_FUNCTIONS(Add, Upper));
///
/// After name, version and one-line doc come any number of SLUICE_NODE_TYPES(...),
/// SLUICE_FUNCTIONS(...) and SLUICE_STORES(...) lists, in any order. The descriptor is a constant
/// (ABI major and minor of this header; min_host_minor the oldest host minor that serves what
/// the types declare, see min_host_minor_of, or SLUICE_MIN_HOST_MINOR when defined higher
/// before including sluice.hpp); the entry stores the host table for host().
#define SLUICE_PLUGIN(name, version, doc, ...)                                               \
  extern "C" SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host);           \
  extern "C" SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host) {          \
    static constexpr sl_plugin k_plugin =                                                    \
        ::sluice::sdk::detail::make_plugin<::sluice::sdk::detail::PluginLists<__VA_ARGS__>>( \
            name, version, doc);                                                             \
    return ::sluice::sdk::detail::plugin_entry(host, &k_plugin);                             \
  }                                                                                          \
  static_assert(true, "SLUICE_PLUGIN(...) is followed by a semicolon")

#endif  // SLUICE_DETAIL_PLUGIN_HPP
