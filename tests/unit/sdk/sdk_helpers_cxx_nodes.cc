// See sdk_helpers_cxx_nodes.hpp.
#include "sdk_helpers_cxx_nodes.hpp"

#include <sluice/sluice.hpp>

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace sluice::test_support {
namespace {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;

class TimesTen final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "cxx_times_ten";
  static constexpr const char* k_doc = "x * 10 through Context::emit_mapped.";
  Status process(Context ctx, uint32_t /*input*/, Batch batch) override {
    return ctx.emit_mapped(batch, [](const sl_message& m) -> Result<Value> {
      if (m.value.kind != SL_KIND_INT) return sdk::invalid_argument("cxx_times_ten: not an int");
      return Value::integer(m.value.as.i * 10);
    });
  }
};

class Tag final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "cxx_tag";
  static constexpr const char* k_doc = "[x, task_index, task_count, pipeline, checkpointing].";
  explicit Tag(Context /*ctx*/, const Config& cfg)
      : index_(cfg.task_index()),
        count_(cfg.task_count()),
        pipeline_(cfg.pipeline()),
        checkpointing_(cfg.checkpointing()) {}
  Status process(Context ctx, uint32_t /*input*/, Batch batch) override {
    out_.clear();
    for (const sl_message& m : batch) {
      const std::array<Value, 5> items{Value::borrow(m.value), Value::integer(index_),
                                       Value::integer(count_), Value::string(pipeline_),
                                       Value::boolean(checkpointing_)};
      out_.push_back(Value::array(items));
    }
    return ctx.emit_mapped(batch, std::span<const Value>(out_));
  }

 private:
  int64_t index_, count_;
  std::string pipeline_;
  bool checkpointing_;
  std::vector<Value> out_;
};

class Even final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "cxx_even";
  static constexpr const char* k_doc = "Even ints, through Context::emit_selected.";
  Status process(Context ctx, uint32_t /*input*/, Batch batch) override {
    return ctx.emit_selected(batch, [](const sl_message& m) -> Result<bool> {
      if (m.value.kind != SL_KIND_INT) return sdk::invalid_argument("cxx_even: not an int");
      return m.value.as.i % 2 == 0;
    });
  }
};

class EveryThird final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "cxx_every_third";
  static constexpr const char* k_doc = "Positions 0, 3, 6... of each batch (a mask).";
  Status process(Context ctx, uint32_t /*input*/, Batch batch) override {
    batch.gather_values(values_);  // only its size matters here
    keep_.assign(values_.size(), 0);
    for (size_t i = 0; i < keep_.size(); i += 3) keep_[i] = 1;
    return ctx.emit_selected(batch, std::span<const uint8_t>(keep_));
  }

 private:
  std::vector<sl_value> values_;
  std::vector<uint8_t> keep_;
};

}  // namespace

std::span<const sl_node_type* const> cxx_helper_node_types() {
  static const std::array<const sl_node_type*, 4> k_types{
      sdk::node_type<TimesTen>(), sdk::node_type<Tag>(), sdk::node_type<Even>(),
      sdk::node_type<EveryThird>()};
  return k_types;
}

void set_sdk_host(const sl_host_api* table) { sdk::set_host(table); }

}  // namespace sluice::test_support
