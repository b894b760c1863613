// from_iterable: the elements listed in config, in order.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <string>

#include "source_support.hpp"
#include "sources.hpp"

namespace sluice::core_ops {

void FromIterable::validate(const Config& cfg) {
  std::optional<Value> values = cfg.find_array("values");
  std::optional<Value> json = cfg.find_array("json");
  if (values && json) cfg.fail("values", "and key 'json' are both given: give only one of them");
  if (!values && !json) {
    cfg.fail("values",
             "is missing: give one of keys 'values' (TOML values) or 'json' (JSON "
             "texts)");
  }
  for (size_t i = 0; json && i < json->size(); ++i) {
    const Value item = (*json)[i];
    if (!item.is_string()) {
      cfg.fail("json", "item " + std::to_string(i) + " must be a string of JSON text (got " +
                           std::string(item.kind_name()) + ")");
    }
    if (!sdk::parse_json(item.as_str()).is_ok()) {
      std::string text = item.to_json();
      if (text.size() > 120) text = text.substr(0, 120) + "...";
      cfg.fail("json", "item " + std::to_string(i) + " is not valid JSON: " + text);
    }
  }
}

FromIterable::FromIterable(const sl_node_init& init, const Config& cfg) {
  const Context ctx(init.ctx);
  std::optional<Value> values = cfg.find_array("values");
  std::optional<Value> json = cfg.find_array("json");
  if (values && json) cfg.fail("values", "and key 'json' are both given: give only one of them");
  if (!values && !json) {
    throw sdk::Error(
        SL_INVALID_ARGUMENT,
        cfg.where() + ": give one of keys 'values' (TOML values) or 'json' (JSON texts)");
  }
  const Value& list = values ? *values : *json;
  const size_t n = list.size();
  items_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Value item = list[i];
    if (values) {
      items_.push_back(std::move(item));
      continue;
    }
    if (!item.is_string()) {
      cfg.fail("json", "item " + std::to_string(i) + " must be a string of JSON text (got " +
                           std::string(item.kind_name()) + ")");
    }
    Result<Value> parsed = ctx.parse_json(item.as_str());
    if (!parsed.is_ok()) {
      // The host set the parser's reason on the context; name the item on top of it.
      cfg.fail("json", "item " + std::to_string(i) + " is not valid JSON: " + item.to_json());
    }
    items_.push_back(std::move(*parsed));
  }
  // No partitions to share: task 0 emits everything, so the other tasks emit nothing
  // (after checking the same config, so that every task fails alike).
  if (init.task_index != 0) items_.clear();
}

Result<SourceState> FromIterable::poll(Context ctx, uint32_t budget) {
  const size_t n = std::min<size_t>(std::max<uint32_t>(budget, 1), items_.size() - next_);
  if (n > 0) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.emit_values(std::span(items_).subspan(next_, n)));
    next_ += n;
  }
  return next_ == items_.size() ? SourceState::done : SourceState::more;
}

Result<Value> FromIterable::snapshot(Context /*ctx*/) {
  return Value::object({{"next", Value::integer(static_cast<int64_t>(next_))}});
}

Status FromIterable::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> next = state.get("next");
  if (!next || !next->is_int() || next->as_int() < 0) {
    return sdk::invalid_argument("from_iterable: checkpoint state has no valid 'next' position: " +
                                 state.to_json());
  }
  const auto pos = static_cast<uint64_t>(next->as_int());
  if (pos > items_.size()) {
    return sdk::failed_precondition("from_iterable: the checkpoint says " + std::to_string(pos) +
                                    " elements were emitted, but the config now lists only " +
                                    std::to_string(items_.size()));
  }
  next_ = static_cast<size_t>(pos);
  return {};
}

}  // namespace sluice::core_ops
