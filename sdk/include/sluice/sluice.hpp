// sluice.hpp — the header-only C++20 layer over the C ABI in sluice.h, namespace
// sluice::sdk. It is built only on sluice.h (as lauxlib sits on lua.h): a plugin written
// with it is still a plain sluice.h plugin, and nothing C++ crosses the boundary.
//
// A plugin is one small class per node type and one line that registers it:
//
//   #include <sluice/sluice.hpp>
//   using namespace sluice::sdk;
//
//   class Upper final : public Operator {          // an operator with one input
//    public:
//     static constexpr const char* k_name = "upper_prefix";
//     static constexpr const char* k_doc = "Upper-cases strings and prefixes them.";
//     static constexpr std::array k_params{
//         param("prefix", SL_PARAM_STRING, "\"\"", "Text put before each element.")};
//
//     Upper(Context, const Config& cfg) : prefix_(cfg.get_string("prefix")) {}
//
//     Status process_one(Context ctx, uint32_t, const sl_message& m) override {
//       std::string s = prefix_ + std::string(ValueRef(m.value).as_str());
//       for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
//       return ctx.emit(Value::string(s));
//     }
//
//    private:
//     std::string prefix_;
//   };
//
//   SLUICE_PLUGIN("example", "0.1.0", "An example plugin.", SLUICE_NODE_TYPES(Upper));
//
// The pieces, one header each under sluice/detail/:
//  - host.hpp:     host() — the sl_host_api table the entry point stored.
//  - status.hpp:   Status, Result<T>, Error, errno_status(); SLUICE_SDK_RETURN_IF_ERROR and
//                  SLUICE_SDK_ASSIGN_OR_RETURN. Callbacks return Status; exceptions are only
//                  for constructors and config errors, and every trampoline catches all of
//                  them at the plugin edge (nothing ever escapes into the host).
//  - value.hpp:    Value (owned, RAII over value_retain/value_release; inline kinds never
//                  call the host) and ValueRef (borrowed view), with factories and readers;
//                  ValueMap<T> (an unordered_map keyed by Value with the host's hash and
//                  equality, searched by ValueRef).
//  - context.hpp:  Context (emit, timers, post/wake, back-pressure, logging, bind_function;
//                  emit_mapped / emit_selected: a transformed or selected batch, each
//                  message keeping its key, headers, event time and key group), Function (a
//                  bound named function), Batch (incoming messages; gather_values), Config
//                  (typed getters whose errors say "node 'ID': key 'K' ...", and task_index,
//                  task_count, pipeline, checkpointing).
//
// C plugins have the same helpers in <sluice/sluice_util.h> (config getters, a map keyed by
// sl_value with snapshot encoding, emitting part of a batch); docs/PLUGIN_GUIDE.md, "SDK
// helpers".
//  - node.hpp:     param()/required() declarations; Source, Operator, Sink; node_type<T>().
//  - function.hpp: function<F>() for named functions, SimpleFunction for stateless ones.
//  - plugin.hpp:   SLUICE_PLUGIN, SLUICE_NODE_TYPES, SLUICE_FUNCTIONS.
//  - utf8.hpp:     valid_utf8(), append_utf8_replacing() (strings are valid UTF-8).
//
// Threading: everything runs on the calling task's executor thread unless marked
// thread-safe (Value copies and releases, host(), Context::post/wake/log are).
// sluice.hpp needs C++20 (std::span, concepts, designated initialisers): say so once,
// instead of a hundred errors from the lines below, which the include guard then skips.
// With CMake, linking Sluice::sdk asks for C++20 for C++ sources (cxx_std_20); with
// pkg-config, compile with -std=c++20. A C plugin includes <sluice/sluice.h> alone (C11).
#if !defined(__cplusplus)
#error "sluice/sluice.hpp is the C++ layer: a C plugin includes <sluice/sluice.h>"
#define SLUICE_SLUICE_HPP
#elif defined(_MSVC_LANG)
#if _MSVC_LANG < 202002L
#error "sluice/sluice.hpp needs C++20: compile with /std:c++20 (CMake: link Sluice::sdk)"
#define SLUICE_SLUICE_HPP
#endif
#elif __cplusplus < 202002L
#error "sluice/sluice.hpp needs C++20: compile with -std=c++20 (CMake: link Sluice::sdk)"
#define SLUICE_SLUICE_HPP
#endif

#ifndef SLUICE_SLUICE_HPP
#define SLUICE_SLUICE_HPP

#include <sluice/detail/context.hpp>
#include <sluice/detail/function.hpp>
#include <sluice/detail/host.hpp>
#include <sluice/detail/node.hpp>
#include <sluice/detail/plugin.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/detail/utf8.hpp>
#include <sluice/detail/value.hpp>
#include <sluice/sluice.h>

#endif  // SLUICE_SLUICE_HPP
