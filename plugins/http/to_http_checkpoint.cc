// to_http in the checkpoint protocol (docs/CHECKPOINTING.md, docs/CONNECTORS.md).
//
//   checkpoint_prepare  the open batch is sealed and sent; the prepare is answered (now,
//                       or later from settle()) once no batch is pending: every element
//                       received before the prepare was acknowledged by the server, or
//                       handled by on_rejected. Nothing new arrives meanwhile (the host
//                       delivers nothing to a preparing sink), while the sink's own
//                       io and timers keep running, so its requests go on.
//   snapshot            {"epoch": E}, the epoch prepared: after a restart from it the
//                       idempotency keys are those of segment E+1 again.
//   commit / abort      nothing to do: what the server acknowledged cannot be taken back,
//                       and what an aborted epoch sent is covered by the next one.
//
// A crash after the server got a batch and before the checkpoint that covers it is
// stored sends that batch again after the restart: at least once; the idempotency key lets
// the receiver drop it.
#include <sluice/sluice.hpp>

#include "to_http.hpp"

namespace sluice::http {

using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

Result<bool> ToHttp::checkpoint_prepare(Context ctx, uint64_t epoch) {
  last_epoch_ = epoch;
  // Batches sealed from now on belong to the next segment (as after a restart from it).
  if (!drained_) {
    seal(ctx);
    SLUICE_SDK_RETURN_IF_ERROR(pump(ctx));
  }
  keys_.start_segment(epoch + 1);
  publish_metrics(ctx, true);
  if (pending() == 0) return true;
  if (drained_) {
    // finish already waited as long as it may: what is left is not delivered.
    return Status(SL_UNAVAILABLE, "to_http: " + std::to_string(pending()) +
                                      " batches are still not delivered at checkpoint " +
                                      std::to_string(epoch));
  }
  preparing_ = epoch;
  return false;
}

void ToHttp::answer_prepare(Context ctx) {
  if (!preparing_ || pending() > 0) return;
  const uint64_t epoch = *preparing_;
  preparing_.reset();
  ctx.checkpoint_ready(epoch);
}

Result<Value> ToHttp::snapshot(Context /*ctx*/) {
  return Value::object({{"epoch", Value::integer(static_cast<int64_t>(last_epoch_))}});
}

Status ToHttp::restore(Context /*ctx*/, ValueRef state) {
  const std::optional<Value> epoch = state.get("epoch");
  if (!epoch || !epoch->is_int() || epoch->as_int() < 0) {
    return sdk::invalid_argument("to_http: the saved state has no epoch");
  }
  last_epoch_ = static_cast<uint64_t>(epoch->as_int());
  keys_.start_segment(last_epoch_ + 1);
  return {};
}

}  // namespace sluice::http
