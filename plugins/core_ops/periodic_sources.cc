// from_periodic: a tick every interval on the task clock.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <optional>
#include <string>

#include "periodic_sources.hpp"
#include "source_support.hpp"

namespace sluice::core_ops {

namespace {
int64_t positive_interval_ns(const Config& cfg, const char* key) {
  const int64_t ms = cfg.get_duration(key).count();
  require_positive(cfg, key, ms);
  return ms * 1'000'000;
}
}  // namespace

FromPeriodic::FromPeriodic(const sl_node_init& init, const Config& cfg)
    : interval_ns_(positive_interval_ns(cfg, "interval_ms")),
      value_(cfg.find_value("value")),
      limit_(cfg.find_int("limit")),
      emits_(init.task_index == 0) {  // no partitions: one task ticks, as from_iterable
  if (limit_ && *limit_ < 0) {
    cfg.fail("limit", "must not be negative (got " + std::to_string(*limit_) + ")");
  }
}

Status FromPeriodic::start(Context ctx) {
  if (next_ns_ == 0) next_ns_ = ctx.now_ns();  // the first tick is due at once
  return {};
}

Result<SourceState> FromPeriodic::poll(Context ctx, uint32_t /*budget*/) {
  if (!emits_ || (limit_ && tick_ >= *limit_)) return SourceState::done;
  const int64_t now = ctx.now_ns();
  if (now >= next_ns_) {
    // Event time: when the tick went out (its due time, or later after back-pressure).
    const sl_message m{value_ ? value_->raw() : sl_int(tick_), sl_null(), sl_null(), now, 0};
    ++tick_;
    next_ns_ += interval_ns_;
    if (next_ns_ <= now) next_ns_ = now + interval_ns_;  // no burst of missed ticks
    SLUICE_SDK_RETURN_IF_ERROR(ctx.emit(m));
    if (limit_ && tick_ >= *limit_) return SourceState::done;
  }
  SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_timer, std::chrono::nanoseconds(next_ns_ - now)));
  return SourceState::idle;
}

Result<Value> FromPeriodic::snapshot(Context /*ctx*/) {
  return Value::object({{"tick", Value::integer(tick_)}, {"next_ns", Value::integer(next_ns_)}});
}

Status FromPeriodic::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> tick = state.get("tick");
  std::optional<Value> next = state.get("next_ns");
  if (!tick || !tick->is_int() || tick->as_int() < 0 || !next || !next->is_int()) {
    return sdk::invalid_argument(
        "from_periodic: checkpoint state needs integers 'tick' and "
        "'next_ns': " +
        state.to_json());
  }
  tick_ = tick->as_int();
  next_ns_ = next->as_int();
  return {};
}

}  // namespace sluice::core_ops
