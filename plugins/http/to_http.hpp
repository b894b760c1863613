// to_http: elements to an HTTP endpoint, batched, at least once.
//
// Elements are collected into batches (batch_max_events, batch_max_bytes,
// batch_timeout_ms), each batch one POST or PUT, up to `concurrency` requests at a time on
// libcurl's multi interface, which runs on the task's own loop (curl_loop.hpp): the
// executor never blocks on the network. A request that fails for a reason that may pass
// (no connection, a reset, a timeout, 408, 429, 5xx) is retried with exponential backoff
// and jitter, after the answer's Retry-After when it has one, up to max_retries times and
// within retry_max_elapsed_ms; then the node fails (the restart sends the batch again). An
// answer that refuses the batch (any other 4xx, 3xx) goes to on_rejected.
//
// Back-pressure: sealed batches not yet acknowledged (queued, in flight or waiting for a
// retry) are at most max_pending_batches; at that bound the sources upstream are paused, so
// memory stays flat while the server is slow.
//
// Checkpoints (to_http_checkpoint.cc): checkpoint_prepare seals the open batch and answers
// once every batch sent before it was acknowledged (or handled by on_rejected): what the
// checkpoint covers reached the server. A restart replays the rest: at least once.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batch_body.hpp"
#include "curl_loop.hpp"
#include "http_request.hpp"
#include "idempotency_key.hpp"
#include "retry_policy.hpp"

namespace sluice::http {

enum class OnRejected { fail, skip, dead_letter };

class ToHttp final : public sdk::Sink {
 public:
  static constexpr const char* k_name = "to_http";
  static constexpr const char* k_doc =
      "Sends elements to an HTTP(S) endpoint (libcurl), as POST or PUT requests: each batch "
      "one request whose body is the elements as NDJSON (one JSON document per line), as a "
      "JSON array, or (encoding = \"json\") one element per request as its JSON alone. A "
      "batch is sent when it has batch_max_events elements, when the next element would "
      "take it over batch_max_bytes (an element larger than that alone goes alone), or "
      "batch_timeout_ms after its first element. Up to `concurrency` requests are in "
      "flight at a time (so batches may arrive out of order); the task's own loop drives "
      "them, no thread of their own. A transport failure (connection refused or reset, a "
      "timeout), 408, 429 and 5xx are retried with exponential backoff and jitter "
      "(retry_initial_backoff_ms doubling up to retry_max_backoff_ms), or after the "
      "answer's Retry-After; after max_retries retries or retry_max_elapsed_ms the node "
      "fails. Any other answer outside 2xx refuses the batch: on_rejected fails the node "
      "(the default), skips the batch with a warning, or (\"dead_letter\") emits its "
      "elements unchanged on the side output \"ID.rejected\" with headers sluice.error and "
      "sluice.error.node, as the host's dead letters have. When max_pending_batches batches "
      "wait for an answer the sources upstream pause. With a [checkpoint] table a "
      "checkpoint completes only once every batch before it was acknowledged: at least "
      "once across crashes; without, finish and stop wait up to shutdown_timeout_ms for "
      "the last batches. With idempotency_key_header each request carries a key that stays "
      "the same for retries and for the same batch replayed after a restart, so the "
      "receiver can drop duplicates. Header values may come from secrets ({ secret_file = "
      "... }), never printed. See docs/CONNECTORS.md.";
  static constexpr std::array k_params{
      sdk::required("url", SL_PARAM_STRING,
                    "The endpoint: an http:// or https:// URL (checked by libcurl's URL parser "
                    "at validate).")
          .non_empty(),
      sdk::param("method", SL_PARAM_STRING, "\"POST\"", "POST or PUT.").one_of("POST|PUT"),
      sdk::param("encoding", SL_PARAM_STRING, "\"ndjson\"",
                 "The body: \"ndjson\" (one element per line, Content-Type "
                 "application/x-ndjson), \"json_array\" ([e1,e2,...], application/json) or "
                 "\"json\" (one element per request, its JSON alone, application/json).")
          .one_of("ndjson|json_array|json"),
      sdk::param("headers", SL_PARAM_TABLE, nullptr,
                 "{ Name = \"value\", ... }: request headers (a Content-Type here replaces the "
                 "encoding's). A value may be a secret, e.g. Authorization = { secret_file = "
                 "\"token\" }: it is sent, never printed."),
      sdk::param("batch_max_events", SL_PARAM_INT, nullptr,
                 "Elements per request, at most; default 500 (1 with encoding = \"json\", "
                 "which allows no other).")
          .range(1, 1000000),
      sdk::param("batch_max_bytes", SL_PARAM_INT, "1048576",
                 "Body bytes per request, at most (an element larger than this goes alone).")
          .range(16, int64_t{1} << 30),
      sdk::param("batch_timeout_ms", SL_PARAM_DURATION, "100",
                 "A partial batch is sent this long after its first element.")
          .min(1),
      sdk::param("concurrency", SL_PARAM_INT, "4", "Requests in flight at most (fixed).")
          .range(1, 256),
      sdk::param("max_pending_batches", SL_PARAM_INT, "16",
                 "Batches sent or waiting to be sent and not yet acknowledged, at most: at "
                 "this bound the sources upstream pause (back-pressure). At least "
                 "`concurrency`.")
          .range(1, 100000),
      sdk::param("timeout_ms", SL_PARAM_DURATION, "30000",
                 "Bound on one attempt, connection included; a server that hangs longer "
                 "counts as a failed attempt (retried).")
          .min(1),
      sdk::param("connect_timeout_ms", SL_PARAM_DURATION, "10000",
                 "Bound on establishing the connection of one attempt.")
          .min(1),
      sdk::param("max_retries", SL_PARAM_INT, "10",
                 "Retries of one batch, at most; then the node fails.")
          .range(0, 1000000),
      sdk::param("retry_initial_backoff_ms", SL_PARAM_DURATION, "100",
                 "The first retry's backoff; it doubles per retry, with jitter (each delay "
                 "between half and all of it).")
          .min(1),
      sdk::param("retry_max_backoff_ms", SL_PARAM_DURATION, "10000",
                 "The backoff grows up to this (a Retry-After may ask for longer).")
          .min(1),
      sdk::param("retry_max_elapsed_ms", SL_PARAM_DURATION, "300000",
                 "A batch still not delivered this long after its first attempt fails the "
                 "node (0: no bound but max_retries). A Retry-After that would end beyond it "
                 "fails the node at once."),
      sdk::param("on_rejected", SL_PARAM_STRING, "\"fail\"",
                 "A batch the server refuses (an answer outside 2xx that is not retried): "
                 "\"fail\" the node, \"skip\" it (counted, logged at the 1st, 2nd, 4th... "
                 "time), or \"dead_letter\": emit its elements unchanged on side output "
                 "\"ID.rejected\" (read it with inputs = [\"ID.rejected\"]) with headers "
                 "sluice.error (status and the start of the answer) and sluice.error.node.")
          .one_of("fail|skip|dead_letter"),
      sdk::param("idempotency_key_header", SL_PARAM_STRING, nullptr,
                 "A header name (e.g. \"Idempotency-Key\"): each request carries a key of 32 "
                 "hex digits, the same for every retry of a batch and, with checkpoints, for "
                 "the same batch replayed after a restart (derived from the checkpoint epoch "
                 "before the batch and the batch's content; docs/CONNECTORS.md)."),
      sdk::param("shutdown_timeout_ms", SL_PARAM_DURATION, "30000",
                 "At the end of input, and at stop without checkpoints: how long to wait for "
                 "the last batches (retries included) before failing.")
          .min(1),
  };
  static constexpr std::array k_side_outputs{"rejected"};

  /// URL syntax and scheme, header names and values, the batch and retry options.
  static void validate(const sdk::Config& cfg);
  ToHttp(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status on_io(sdk::Context ctx, uint64_t watch_id, uint32_t ready) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;

  // Checkpoints (to_http_checkpoint.cc).
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;
  /// {"epoch": the last epoch prepared}: the idempotency keys' segment after a restart.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_batch_timer = 1;
  static constexpr uint64_t k_retry_timer = 2;
  static constexpr uint64_t k_curl_timer = 3;

  // Batching (to_http.cc).
  /// The open batch becomes a request (queued; pump sends it when a slot is free).
  void seal(sdk::Context ctx);
  [[nodiscard]] size_t pending() const noexcept {
    return queue_.size() + in_flight_.size() + waiting_.size();
  }
  void update_backpressure(sdk::Context ctx);
  void publish_metrics(sdk::Context ctx, bool now);

  // Requests (to_http_delivery.cc).
  /// Starts queued batches while fewer than `concurrency` are in flight.
  sdk::Status pump(sdk::Context ctx);
  /// Handles the attempts libcurl finished; then pumps and answers a waiting prepare.
  sdk::Status settle(sdk::Context ctx);
  sdk::Status retry_later(sdk::Context ctx, std::unique_ptr<Batch> batch, const Answer& a);
  sdk::Status rejected(sdk::Context ctx, std::unique_ptr<Batch> batch, const Answer& a);
  /// Moves the retries that are due to the front of the queue; re-arms the retry timer.
  void release_due_retries(sdk::Context ctx);
  /// Sends everything and waits, polling curl's sockets itself, until nothing is pending
  /// or shutdown_timeout_ms passed (finish, stop).
  sdk::Status drain(sdk::Context ctx, const char* when);
  /// A prepare waits for the pending batches: answer it when none is left.
  void answer_prepare(sdk::Context ctx);

  // Config.
  RequestTemplate request_;
  Encoding encoding_;
  size_t batch_max_events_;
  size_t batch_max_bytes_;
  std::chrono::milliseconds batch_timeout_;
  size_t concurrency_;
  size_t max_pending_;
  uint32_t max_retries_;
  std::chrono::milliseconds retry_max_elapsed_;
  std::chrono::milliseconds shutdown_timeout_;
  OnRejected on_rejected_;
  bool keyed_;  // idempotency_key_header given
  bool checkpointing_;
  std::string node_id_;

  // Running state.
  std::unique_ptr<CurlLoop> loop_;
  Backoff backoff_;
  BodyBuilder open_;  // the batch being filled
  std::vector<KeptMessage> open_messages_;
  bool batch_timer_armed_ = false;
  uint64_t next_seq_ = 0;
  uint64_t run_nonce_;
  uint64_t key_salt_ =
      0;  // pipeline, node and task: keys of two senders never meet // keys without checkpoints
  SegmentKeys keys_;                                        // keys with checkpoints
  std::deque<std::unique_ptr<Batch>> queue_;                // sealed, waiting for a slot
  std::vector<std::unique_ptr<HttpRequest>> in_flight_;     // on the wire
  std::vector<std::unique_ptr<HttpRequest>> idle_handles_;  // reused easy handles
  std::vector<std::unique_ptr<Batch>> waiting_;             // retries, by due time
  bool backpressure_ = false;
  bool drained_ = false;               // finish or stop drained: the loop is detached
  bool failed_ = false;                // a request failure failed the node
  std::optional<uint64_t> preparing_;  // a prepare waiting for pending batches
  uint64_t last_epoch_ = 0;            // the last epoch prepared (or restored)

  // Metrics (running totals of this node instance).
  uint64_t requests_total_ = 0;  // attempts that ended (any outcome)
  uint64_t retries_total_ = 0;   // attempts scheduled again
  uint64_t failures_total_ = 0;  // attempts that failed (transport or non-2xx)
  uint64_t rejected_total_ = 0;  // batches refused (on_rejected)
  uint64_t events_total_ = 0;    // elements acknowledged
  uint64_t bytes_total_ = 0;     // body bytes acknowledged
  double latency_sum_s_ = 0;     // over every attempt
  double last_latency_s_ = 0;
  uint64_t rejected_logged_ = 0;
  int64_t published_ns_ = 0;
};

}  // namespace sluice::http
