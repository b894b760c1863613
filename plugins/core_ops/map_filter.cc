// map and filter.
#include <sluice/sluice.hpp>

#include <optional>
#include <string>
#include <utility>

#include "map_filter.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Function;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

/// Binds the FUNCTION key `key` and checks it takes one element (map or predicate).
Function bind_element_function(Context ctx, const Config& cfg, const char* key) {
  const Value spec = cfg.get_value(key);
  Function fn = ctx.bind_function(spec).value();  // a failure is already reported on ctx
  if (fn.kind() == SL_FUNCTION_REDUCER) {
    std::optional<Value> name = spec.is_string() ? std::optional(spec) : spec.get("name");
    cfg.fail(key, "must be a map or predicate function; '" +
                      std::string(name && name->is_string() ? name->as_str() : "?") +
                      "' is a reducer (use accumulate)");
  }
  return fn;
}

/// The batch's values, in order, into `in` (borrowed from the batch).
void gather_values(Batch batch, std::vector<sl_value>& in) {
  in.clear();
  in.reserve(batch.size());
  for (const sl_message& m : batch) in.push_back(m.value);
}

}  // namespace

Map::Map(Context ctx, const Config& cfg) : fn_(bind_element_function(ctx, cfg, "function")) {}

Status Map::process(Context ctx, uint32_t /*input*/, Batch batch) {
  gather_values(batch, in_);
  out_.resize(batch.size());
  SLUICE_SDK_RETURN_IF_ERROR(fn_.call_batch(in_, out_));
  messages_.clear();
  messages_.reserve(batch.size());
  size_t i = 0;
  for (const sl_message& m : batch) {
    sl_message& out = messages_.emplace_back(m);  // key, headers, timestamp borrowed from m
    out.value = out_[i++].raw();
  }
  Status st = ctx.emit(messages_);
  out_.clear();  // release the results now rather than at the next batch
  return st;
}

Filter::Filter(Context ctx, const Config& cfg) {
  if (cfg.has("function")) fn_ = bind_element_function(ctx, cfg, "function");
}

Status Filter::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (fn_) {
    gather_values(batch, in_);
    out_.resize(batch.size());
    SLUICE_SDK_RETURN_IF_ERROR(fn_.call_batch(in_, out_));
  }
  kept_.clear();
  size_t i = 0;
  for (const sl_message& m : batch) {
    const bool keep = fn_ ? out_[i].truthy() : ValueRef(m.value).truthy();
    ++i;
    if (keep) kept_.push_back(m);
  }
  out_.clear();
  if (kept_.empty()) return {};
  return ctx.emit(kept_);
}

}  // namespace sluice::core_ops
