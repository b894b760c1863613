// to_http: the life of a request. A sealed batch waits in the queue for one of the
// `concurrency` slots, goes out on a reused easy handle, and its answer decides:
// acknowledged (done), retried later (waiting_, in due order, then back to the front of the
// queue), or refused (on_rejected). Every path ends in settle(), which also lifts the
// back-pressure and answers a waiting checkpoint prepare.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "to_http.hpp"

namespace sluice::http {

using sdk::Context;
using sdk::Status;
using sdk::Value;

namespace {

std::string describe(const Answer& a) {
  if (!a.transport_ok) return a.error;
  std::string out = "HTTP " + std::to_string(a.status);
  if (!a.body_excerpt.empty()) {
    std::string excerpt = a.body_excerpt;
    std::replace_if(
        excerpt.begin(), excerpt.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    out += " \"" + excerpt + "\"";
  }
  return out;
}

}  // namespace

Status ToHttp::pump(Context ctx) {
  while (!drained_ && in_flight_.size() < concurrency_ && !queue_.empty()) {
    std::unique_ptr<HttpRequest> r;
    if (idle_handles_.empty()) {
      r = std::make_unique<HttpRequest>();
    } else {
      r = std::move(idle_handles_.back());
      idle_handles_.pop_back();
    }
    r->batch = std::move(queue_.front());
    queue_.pop_front();
    if (r->batch->first_sent_ns == 0) r->batch->first_sent_ns = ctx.now_ns();
    r->prepare(request_, *r->batch);
    SLUICE_SDK_RETURN_IF_ERROR(loop_->add(r->easy()));
    in_flight_.push_back(std::move(r));
  }
  return {};
}

Status ToHttp::settle(Context ctx) {
  Status failure;
  for (auto [easy, rc] : loop_->take_done()) {
    auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                           [easy = easy](const auto& r) { return r->easy() == easy; });
    if (it == in_flight_.end()) continue;
    loop_->remove(easy);
    const Answer a = (*it)->answer(rc);
    std::unique_ptr<Batch> batch = std::move((*it)->batch);
    idle_handles_.push_back(std::move(*it));
    in_flight_.erase(it);
    ++requests_total_;
    latency_sum_s_ += a.seconds;
    last_latency_s_ = a.seconds;
    if (!failure.is_ok()) continue;  // the node fails: the rest is sent again after restart
    switch (classify(a.transport_ok, a.status)) {
      case Verdict::delivered:
        events_total_ += batch->events;
        bytes_total_ += batch->body.size();
        break;
      case Verdict::retry: failure = retry_later(ctx, std::move(batch), a); break;
      case Verdict::rejected: failure = rejected(ctx, std::move(batch), a); break;
    }
  }
  if (!failure.is_ok()) {
    failed_ = true;
    publish_metrics(ctx, true);
    return failure;
  }
  SLUICE_SDK_RETURN_IF_ERROR(pump(ctx));
  update_backpressure(ctx);
  answer_prepare(ctx);
  // Throttled while busy; exact whenever the sink falls idle.
  publish_metrics(ctx, pending() == 0);
  return {};
}

Status ToHttp::retry_later(Context ctx, std::unique_ptr<Batch> batch, const Answer& a) {
  ++failures_total_;
  ++batch->failures;
  const int64_t now = ctx.now_ns();
  const std::chrono::milliseconds delay = a.retry_after_s >= 0
                                              ? std::chrono::milliseconds(a.retry_after_s * 1000)
                                              : backoff_.delay(batch->failures);
  const int64_t delay_ns = std::chrono::nanoseconds(delay).count();
  const int64_t elapsed_ns = now + delay_ns - batch->first_sent_ns;
  const bool too_many = batch->failures > max_retries_;
  const bool too_long = retry_max_elapsed_.count() > 0 &&
                        elapsed_ns > std::chrono::nanoseconds(retry_max_elapsed_).count();
  if (too_many || too_long) {
    std::string why =
        too_many
            ? "after " + std::to_string(max_retries_) + " retries (max_retries)"
            : "within retry_max_elapsed_ms = " + std::to_string(retry_max_elapsed_.count()) +
                  " ms" +
                  (a.retry_after_s >= 0
                       ? " (the server asked to wait " + std::to_string(a.retry_after_s) + " s)"
                       : "");
    return Status(SL_UNAVAILABLE,
                  "to_http: a batch of " + std::to_string(batch->events) + " elements to " +
                      request_.url + " was not delivered " + why +
                      "; the last attempt: " + describe(a) +
                      (checkpointing_ ? ". The node fails; the restart sends again what no "
                                        "checkpoint covers"
                                      : ". The node fails"));
  }
  ++retries_total_;
  if (batch->failures == 1 || (batch->failures & (batch->failures - 1)) == 0) {
    ctx.log_warn("to_http: " + describe(a) + "; retry " + std::to_string(batch->failures) +
                 " of a batch of " + std::to_string(batch->events) + " elements in " +
                 std::to_string(delay.count()) + " ms");
  }
  batch->due_ns = now + delay_ns;
  const auto pos = std::upper_bound(
      waiting_.begin(), waiting_.end(), batch->due_ns,
      [](int64_t due, const std::unique_ptr<Batch>& b) { return due < b->due_ns; });
  waiting_.insert(pos, std::move(batch));
  release_due_retries(ctx);
  return {};
}

void ToHttp::release_due_retries(Context ctx) {
  const int64_t now = ctx.now_ns();
  // Due retries go before the batches that never went out: they are older.
  size_t due = 0;
  while (due < waiting_.size() && waiting_[due]->due_ns <= now) ++due;
  for (size_t i = due; i > 0; --i) queue_.push_front(std::move(waiting_[i - 1]));
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(due));
  if (!waiting_.empty() && !drained_) {
    Status st = ctx.timer_start(k_retry_timer, std::chrono::nanoseconds(std::max<int64_t>(
                                                   0, waiting_.front()->due_ns - now)));
    if (!st.is_ok()) ctx.log_error(std::string(st.message()));
  }
}

Status ToHttp::rejected(Context ctx, std::unique_ptr<Batch> batch, const Answer& a) {
  ++failures_total_;
  ++rejected_total_;
  const std::string reason = "to_http: " + request_.url + " refused a batch of " +
                             std::to_string(batch->events) + " elements: " + describe(a);
  switch (on_rejected_) {
    case OnRejected::fail:
      return sdk::invalid_argument(reason +
                                   " (on_rejected = \"fail\"; \"skip\" or "
                                   "\"dead_letter\" keep the node running)");
    case OnRejected::skip:
      ++rejected_logged_;
      if ((rejected_logged_ & (rejected_logged_ - 1)) == 0) {
        ctx.log_warn(reason + "; skipped (" + std::to_string(rejected_logged_) +
                     " batches skipped so far)");
      }
      return {};
    case OnRejected::dead_letter: break;
  }
  // As the host's dead letters: the message unchanged, the reason in its headers.
  const Value reason_value = Value::string(reason);
  const Value node_value = Value::string(node_id_);
  std::vector<Value> header_objects;
  std::vector<sl_message> out;
  header_objects.reserve(batch->messages.size());
  out.reserve(batch->messages.size());
  for (const KeptMessage& k : batch->messages) {
    std::vector<std::pair<std::string_view, Value>> entries;
    if (k.headers.is_object()) {
      for (size_t i = 0; i < k.headers.size(); ++i) {
        const std::string_view name = k.headers.key_at(i);
        if (name == "sluice.error" || name == "sluice.error.node") continue;
        entries.emplace_back(name, k.headers[i]);
      }
    }
    entries.emplace_back("sluice.error", reason_value);
    entries.emplace_back("sluice.error.node", node_value);
    header_objects.push_back(Value::object(entries));
    sl_message m{};
    m.value = k.value.raw();
    m.key = k.key.raw();
    m.headers = header_objects.back().raw();
    m.timestamp_ns = k.timestamp_ns;
    out.push_back(m);
  }
  Status st = ctx.emit_side(0, out);
  if (st.code() == SL_CANCELLED) return {};
  return st;
}

Status ToHttp::drain(Context ctx, const char* when) {
  if (drained_ || !loop_) return {};
  seal(ctx);
  loop_->detach();
  const int64_t deadline = ctx.now_ns() + std::chrono::nanoseconds(shutdown_timeout_).count();
  // The loop is ours now: timers of the task no longer fire for it.
  Status failure;
  while (pending() > 0 && failure.is_ok() && ctx.now_ns() < deadline) {
    const int64_t now = ctx.now_ns();
    size_t due = 0;
    while (due < waiting_.size() && waiting_[due]->due_ns <= now) ++due;
    for (size_t i = due; i > 0; --i) queue_.push_front(std::move(waiting_[i - 1]));
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(due));
    failure = pump(ctx);
    if (!failure.is_ok()) break;
    int wait_ms = 50;
    if (!waiting_.empty() && in_flight_.empty() && queue_.empty()) {
      wait_ms = static_cast<int>(
          std::clamp<int64_t>((waiting_.front()->due_ns - now) / 1'000'000, 0, 50));
    }
    loop_->drive_blocking(wait_ms);
    failure = settle(ctx);
  }
  drained_ = true;
  publish_metrics(ctx, true);
  if (!failure.is_ok()) return failure;
  if (pending() > 0) {
    size_t events = 0;
    for (const auto& b : queue_) events += b->events;
    for (const auto& b : waiting_) events += b->events;
    for (const auto& r : in_flight_) events += r->batch->events;
    return Status(
        SL_UNAVAILABLE,
        "to_http: " + std::to_string(events) + " elements in " + std::to_string(pending()) +
            " batches were not delivered to " + request_.url + " " + when +
            " within shutdown_timeout_ms = " + std::to_string(shutdown_timeout_.count()) + " ms");
  }
  return {};
}

}  // namespace sluice::http
