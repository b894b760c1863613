// What the keyed operators of core_ops share (aggregate in keyed.hpp, window in
// event_window.hpp; their per-group maps are sdk::ValueMap, searched by a borrowed key):
// owned copies of keys, the reducer they bind from `function` and `start` with its int fast
// path, and the key-group names of their snapshots. Defined in keyed.cc.
#pragma once

#include <sluice/sluice.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice::core_ops {

/// A key to keep in the state: strings and bytes are copied, so that a key that wraps a
/// foreign buffer (a Kafka payload) does not pin it for as long as the key lives.
sdk::Value owned_key(sdk::ValueRef key);

/// The name of a normalised FUNCTION spec (`name` or `{name, args}`); empty for Lua.
std::string_view function_name(const sdk::Value& spec);

/// A key group's number from its name in a snapshot's "groups" ("3"); nullopt when the name
/// is not a decimal number that fits.
std::optional<uint64_t> parse_key_group(std::string_view name);

/// The reducer of a keyed operator: `function` (called (acc, x)) bound once, with the
/// optional `start`. count and sum are this plugin's own functions (names are unique across
/// plugins), so their int steps are computed inline; anything else (floats, overflow,
/// errors) goes to the bound function, whose results and messages stay its own.
class Reducer {
 public:
  /// Binds `function` of `cfg` (a failure is already reported on `ctx`) and reads `start`.
  Reducer(sdk::Context ctx, const sdk::Config& cfg);

  /// The state after a first element `x`: function(start, x), or x itself without `start`.
  [[nodiscard]] sdk::Result<sdk::Value> first(sdk::ValueRef x) {
    sdk::Value acc = has_start_ ? start_ : sdk::Value::borrow(x);
    if (has_start_) SLUICE_SDK_RETURN_IF_ERROR(step(acc, x));
    return acc;
  }
  /// The next state of `acc` for `x` into `acc`; the reducer's failure otherwise (`acc`
  /// unchanged).
  sdk::Status step(sdk::Value& acc, sdk::ValueRef x) {
    const sl_value a = acc.raw();
    if (a.kind == SL_KIND_INT) {
      int64_t r = 0;
      if (fast_ == Fast::count && !__builtin_add_overflow(a.as.i, int64_t{1}, &r)) {
        acc = sdk::Value::integer(r);
        return {};
      }
      if (fast_ == Fast::sum && x.is_int() && !__builtin_add_overflow(a.as.i, x.raw().as.i, &r)) {
        acc = sdk::Value::integer(r);
        return {};
      }
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(acc, fn_.call(acc, x));
    return {};
  }

 private:
  enum class Fast : uint8_t { none, count, sum };  // reducers computed inline on ints

  sdk::Function fn_;
  Fast fast_ = Fast::none;
  bool has_start_ = false;
  sdk::Value start_;
};

}  // namespace sluice::core_ops
