// Element-wise operators of the core_ops plugin: map and filter, both driven by a named
// function and called with its batch form.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace sluice::core_ops {

/// `map`: each element replaced by function(element); key, headers and timestamp are kept.
class Map final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "map";
  static constexpr const char* k_doc =
      "Emits function(x) for each element x, keeping each message's key, headers and event "
      "time (streamz map). `function` names a map (or predicate) function; its arguments go "
      "in `args`, e.g. function = \"add\", args = { value = 1 }.";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION, "The function to apply to each element."),
  };

  Map(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  sdk::Function fn_;
  std::vector<sl_value> in_;  // per-batch scratch, reused
  std::vector<sdk::Value> out_;
  std::vector<sl_message> messages_;
};

/// `filter`: the elements whose predicate result (or own value) is truthy.
class Filter final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "filter";
  static constexpr const char* k_doc =
      "Keeps the elements for which `function` returns a truthy result (streamz filter). "
      "Without `function`, keeps the elements that are themselves truthy, as Python's "
      "filter(None, ...): null, false, 0, 0.0, \"\", empty bytes, arrays and objects are "
      "dropped.";
  static constexpr std::array k_params{
      sdk::param("function", SL_PARAM_FUNCTION, nullptr,
                 "The predicate (or map function whose result is tested for truthiness)."),
  };

  Filter(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  sdk::Function fn_;  // empty: test the elements themselves
  std::vector<sl_value> in_;
  std::vector<sdk::Value> out_;
  std::vector<sl_message> kept_;
};

}  // namespace sluice::core_ops
