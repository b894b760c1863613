// sluice/detail/plugin.hpp — the plugin descriptor and the one-line SLUICE_PLUGIN entry point.
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_PLUGIN_HPP
#define SLUICE_DETAIL_PLUGIN_HPP

#include <sluice/detail/function.hpp>
#include <sluice/detail/host.hpp>
#include <sluice/detail/node.hpp>
#include <sluice/detail/store.hpp>
#include <sluice/sluice.h>

#include <algorithm>
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
  /// The oldest host minor that serves all of them (see detail::NodeFeatures).
  static constexpr uint32_t k_min_host_minor =
      std::max({0u, detail::NodeFeatures<Ts>::min_host_minor...});
};

/// The functions a plugin provides (see SLUICE_FUNCTIONS).
template <class... Fs>
struct FunctionList {
  /// Their descriptors, in static storage.
  static constexpr std::array<const sl_function_def*, sizeof...(Fs)> k_list{function<Fs>()...};
  /// The oldest host minor that serves all of them.
  static constexpr uint32_t k_min_host_minor =
      std::max({0u, detail::function_min_host_minor<Fs>()...});
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

/// The oldest host minor that serves what the plugin declares: the newest of its node
/// types' (NodeFeatures::min_host_minor) and functions' needs, 1.1 for checkpoint stores,
/// or SLUICE_MIN_HOST_MINOR when the plugin defines it higher before including sluice.hpp.
template <class Lists>
constexpr uint32_t min_host_minor_of() noexcept {
  uint32_t minor = std::max({Lists::nodes::k_min_host_minor, Lists::functions::k_min_host_minor,
                             Lists::stores::k_list.size() > 0 ? 1u : 0u});
#ifdef SLUICE_MIN_HOST_MINOR
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
