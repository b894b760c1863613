// sluice/detail/function.hpp — function<F>(), which turns a struct into an sl_function_def
// of trampolines, and SimpleFunction for stateless functions written as a free function or
// lambda. Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_FUNCTION_HPP
#define SLUICE_DETAIL_FUNCTION_HPP

#include <sluice/detail/context.hpp>
#include <sluice/detail/node.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/detail/value.hpp>
#include <sluice/sluice.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <type_traits>

namespace sluice::sdk {

/// The positional arguments of an n-ary function call (borrowed for the call).
using Args = std::span<const ValueRef>;

namespace detail {

inline Result<Value> lift(Result<Value> r) { return r; }
inline Result<Value> lift(Value v) { return v; }
inline Result<Value> lift(bool b) { return Value::boolean(b); }
inline Result<Value> lift(Result<bool> r) {
  if (!r.is_ok()) return std::move(r).status();
  return Value::boolean(*r);
}

/// The C callbacks of function F: each one guards the plugin edge.
template <class F>
struct FunctionTrampolines {
  /// F holds per-binding state when it is constructible from its args.
  static constexpr bool k_bound = std::is_constructible_v<F, Context, const Config&> ||
                                  std::is_constructible_v<F, const Config&>;
  template <class... A>
  static constexpr bool k_takes = requires(F& f, A... a) {
    f.call(a...);
  };
  static constexpr bool k_unary_ctx = k_takes<Context, ValueRef>;
  static constexpr bool k_unary = k_takes<ValueRef>;
  static constexpr bool k_nary_ctx = k_takes<Context, Args>;
  static constexpr bool k_nary = k_takes<Args>;
  static constexpr bool k_batch = requires(F & f, Context c, Args in, std::span<Value> out) {
    { f.call_batch(c, in, out) } -> std::same_as<Status>;
  };
  static constexpr int32_t k_kind = [] {
    if constexpr (requires { F::k_kind; }) {
      return static_cast<int32_t>(F::k_kind);
    } else {
      return SL_FUNCTION_MAP;
    }
  }();
  /// Arity: F::k_min_arity / k_max_arity, else 1 for call(ValueRef) forms, 2 for reducers
  /// and 1..any for other Args forms.
  static constexpr uint32_t k_min_arity = [] {
    if constexpr (requires { F::k_min_arity; }) {
      return static_cast<uint32_t>(F::k_min_arity);
    } else {
      return (k_unary || k_unary_ctx || k_kind != SL_FUNCTION_REDUCER) ? 1u : 2u;
    }
  }();
  static constexpr uint32_t k_max_arity = [] {
    if constexpr (requires { F::k_max_arity; }) {
      return static_cast<uint32_t>(F::k_max_arity);
    } else {
      return (k_unary || k_unary_ctx) ? 1u : k_kind == SL_FUNCTION_REDUCER ? 2u : UINT32_MAX;
    }
  }();
  static_assert(k_unary_ctx || k_unary || k_nary_ctx || k_nary,
                "a function declares call(Context, ValueRef), call(ValueRef), "
                "call(Context, Args) or call(Args), returning Result<Value>, Value, "
                "Result<bool> or bool");

  template <class... A>
  static decltype(auto) invoke(void* self, A&&... a) {
    if constexpr (k_bound) {
      return static_cast<F*>(self)->call(std::forward<A>(a)...);
    } else {
      return F::call(std::forward<A>(a)...);
    }
  }

  static Result<Value> call_one(void* self, Context ctx, const sl_value* argv, uint32_t argc) {
    if (argc < k_min_arity || argc > k_max_arity || ((k_unary_ctx || k_unary) && argc != 1)) {
      return invalid_argument(std::string(F::k_name) + ": takes " + std::to_string(k_min_arity) +
                              (k_max_arity == k_min_arity  ? ""
                               : k_max_arity == UINT32_MAX ? " or more"
                                                           : " to " + std::to_string(k_max_arity)) +
                              " arguments, got " + std::to_string(argc));
    }
    if constexpr (k_unary_ctx || k_unary) {
      if constexpr (k_unary_ctx) {
        return lift(invoke(self, ctx, ValueRef(argv[0])));
      } else {
        return lift(invoke(self, ValueRef(argv[0])));
      }
    } else {
      const Args args(reinterpret_cast<const ValueRef*>(argv), argc);
      if constexpr (k_nary_ctx) {
        return lift(invoke(self, ctx, args));
      } else {
        return lift(invoke(self, args));
      }
    }
  }

  static sl_status bind(const sl_function_init* init, void** out_self) noexcept {
    *out_self = nullptr;
    return guard(init->ctx, [&]() -> Status {
      Config args(init->args, "node '" + std::string(Context(init->ctx).node_id()) +
                                  "': function '" + F::k_name + "'");
      if constexpr (std::is_constructible_v<F, Context, const Config&>) {
        *out_self = new F(Context(init->ctx), args);
      } else {
        *out_self = new F(args);
      }
      return {};
    });
  }
  static void unbind(void* self) noexcept { delete static_cast<F*>(self); }
  static sl_status validate(const sl_validate_init* init) noexcept {
    return run_validate(init, [&] { F::validate(Config(*init, F::k_name)); });
  }
  static sl_status call(void* self, sl_context* ctx, const sl_value* argv, uint32_t argc,
                        sl_value* out) noexcept {
    *out = sl_null();
    return guard(
        ctx,
        [&]() -> Status {
          SLUICE_SDK_ASSIGN_OR_RETURN(Value v, call_one(self, Context(ctx), argv, argc));
          *out = v.release();
          return {};
        },
        F::k_name);
  }
  static sl_status call_batch(void* self, sl_context* ctx, const sl_value* in, size_t count,
                              sl_value* out) noexcept {
    // Start every output slot as a null Value (same layout as sl_value), so F writes owned
    // Values and whatever it made is released if it fails part way.
    for (size_t i = 0; i < count; ++i) ::new (static_cast<void*>(out + i)) Value();
    auto* values = std::launder(reinterpret_cast<Value*>(out));
    const sl_status st = guard(
        ctx,
        [&]() -> Status {
          const Args args(reinterpret_cast<const ValueRef*>(in), count);
          if constexpr (k_bound) {
            return static_cast<F*>(self)->call_batch(Context(ctx), args, std::span(values, count));
          } else {
            return F::call_batch(Context(ctx), args, std::span(values, count));
          }
        },
        F::k_name);
    if (st != SL_OK) {
      for (size_t i = 0; i < count; ++i) values[i] = Value();  // on failure nothing is owned
    }
    return st;
  }
};

template <class F>
constexpr sl_function_def make_function_def() noexcept {
  static_assert(
      requires { F::k_name; }, "a function declares `static constexpr const char* k_name`");
  using Tr = FunctionTrampolines<F>;
  sl_function_def d{};
  d.struct_size = sizeof(sl_function_def);
  d.kind = Tr::k_kind;
  d.name = F::k_name;
  d.doc = doc_of<F>();
  d.params = params_of<F>();
  d.param_count = param_count_of<F>();
  d.min_arity = Tr::k_min_arity;
  d.max_arity = Tr::k_max_arity;
  if constexpr (Tr::k_bound) {
    d.bind = &Tr::bind;
    d.unbind = &Tr::unbind;
  }
  d.call = &Tr::call;
  if constexpr (requires(const Config& c) { F::validate(c); }) d.validate = &Tr::validate;
  if constexpr (Tr::k_batch) d.call_batch = &Tr::call_batch;
  return d;
}

/// The descriptor of function F, in static storage for the life of the plugin.
template <class F>
inline constexpr sl_function_def k_function_def = make_function_def<F>();

/// The oldest host minor that serves function F: 2 with a validate callback or a
/// constrained arg (an older host would not check them), else 0.
template <class F>
constexpr uint32_t function_min_host_minor() noexcept {
  if constexpr (requires(const Config& c) { F::validate(c); }) {
    return 2;
  } else {
    return params_min_host_minor<F>();
  }
}

}  // namespace detail

/// The sl_function_def of struct F, whose trampolines catch every failure at the plugin edge.
///
/// F declares:
///  - `static constexpr const char* k_name` (the name config uses) and `k_doc`;
///  - optionally `k_kind` (SL_FUNCTION_MAP by default, PREDICATE or REDUCER), `k_params`
///    (its args, as for node types), `k_min_arity` / `k_max_arity`;
///  - `call`, per element: `(Context, ValueRef)` or `(ValueRef)` for one argument,
///    `(Context, Args)` or `(Args)` for several (reducers get (state, element)); it returns
///    Result<Value>, Value, Result<bool> or bool, and runs on the binding node's executor;
///  - optionally the batch form `Status call_batch(Context, Args in, std::span<Value> out)`
///    filling out[i] = f(in[i]); the host prefers it when present;
///  - either nothing else (then `call`/`call_batch` are static: a stateless function), or a
///    constructor `(Context, const Config& args)` or `(const Config& args)`: then each
///    binding is an instance made from its validated args, and `call` is a member;
///  - optionally `static void validate(const Config& args)` (ABI 1.2): the checks of the
///    constructor that k_params constraints cannot express, run by `sluiced validate`
///    (see node_type()); keys named in Config::fail are arg names.
template <class F>
constexpr const sl_function_def* function() noexcept {
  return &detail::k_function_def<F>;
}

/// A string literal usable as a template argument (for SimpleFunction).
template <size_t N>
struct FixedString {
  /// Copies the literal, NUL included.
  constexpr FixedString(const char (&s)[N]) noexcept {  // NOLINT(google-explicit-constructor)
    for (size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  char text[N]{};  ///< The characters.
};

/// A stateless one-argument function from a free function or captureless lambda taking
/// (Context, ValueRef) or (ValueRef), e.g.
///   using IsEven = SimpleFunction<"is_even", "True for even ints.",
///       [](ValueRef x) { return x.is_int() && x.as_int() % 2 == 0; }, SL_FUNCTION_PREDICATE>;
/// and then list IsEven in SLUICE_FUNCTIONS(...). In a header included by several files,
/// pass a pointer to an inline free function instead of a lambda (each file would otherwise
/// see its own lambda type).
template <FixedString Name, FixedString Doc, auto Fn, int32_t Kind = SL_FUNCTION_MAP>
struct SimpleFunction {
  static constexpr const char* k_name = Name.text;  ///< Name used in config.
  static constexpr const char* k_doc = Doc.text;    ///< One-line description.
  static constexpr int32_t k_kind = Kind;           ///< SL_FUNCTION_*.
  /// Calls Fn.
  static auto call(Context ctx, ValueRef x) {
    if constexpr (std::is_invocable_v<decltype(Fn), Context, ValueRef>) {
      return Fn(ctx, x);
    } else {
      static_cast<void>(ctx);
      return Fn(x);
    }
  }
};

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_FUNCTION_HPP
