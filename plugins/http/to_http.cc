// to_http: config and validate, batching, back-pressure, finish and stop, metrics. The
// requests' life is in to_http_delivery.cc, the checkpoint protocol in
// to_http_checkpoint.cc.
#include "to_http.hpp"

#include <sluice/sluice.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::http {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;

namespace {

constexpr int64_t k_default_batch_events = 500;
constexpr int64_t k_metrics_period_ns = 200'000'000;  // gauges at most 5 times a second

Encoding encoding_of(const Config& cfg) {
  switch (cfg.get_choice("encoding", {"ndjson", "json_array", "json"})) {
    case 0: return Encoding::ndjson;
    case 1: return Encoding::json_array;
    default: return Encoding::json;
  }
}

bool is_token(std::string_view name) {
  // RFC 9110 token: the characters a header name may have.
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/// "Name: value" lines of `headers`, Content-Type first unless the config sets one. Values
/// are never put into an error message (they may be secrets).
std::vector<std::string> header_lines(const Config& cfg, Encoding encoding) {
  std::vector<std::string> out;
  bool has_content_type = false;
  if (std::optional<Value> headers = cfg.find_value("headers")) {
    if (!headers->is_object()) cfg.fail("headers", "must be a table of header names to values");
    for (size_t i = 0; i < headers->size(); ++i) {
      const std::string name(headers->key_at(i));
      const Value v = (*headers)[i];
      if (!is_token(name)) {
        cfg.fail("headers", "has \"" + name +
                                "\", which is not a header name (letters, digits "
                                "and !#$%&'*+-.^_`|~)");
      }
      if (!v.is_string()) {
        cfg.fail("headers",
                 "entry '" + name + "' must be a string (got " + std::string(v.kind_name()) + ")");
      }
      const std::string_view value = v.as_str();
      if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
        cfg.fail("headers", "entry '" + name + "' holds a line break or NUL (not shown)");
      }
      if (iequals(name, "content-type")) has_content_type = true;
      out.push_back(name + ": " + std::string(value));
    }
  }
  if (!has_content_type) {
    out.insert(out.begin(), "Content-Type: " + std::string(content_type(encoding)));
  }
  return out;
}

size_t batch_events_of(const Config& cfg, Encoding encoding) {
  const std::optional<int64_t> n = cfg.find_int("batch_max_events");
  if (encoding == Encoding::json) {
    if (n && *n != 1) {
      cfg.fail("batch_max_events",
               "must be 1 with encoding = \"json\", which sends one "
               "element per request (got " +
                   std::to_string(*n) + "); use \"ndjson\" or \"json_array\" to batch");
    }
    return 1;
  }
  return static_cast<size_t>(n.value_or(k_default_batch_events));
}

OnRejected on_rejected_of(const Config& cfg) {
  switch (cfg.get_choice("on_rejected", {"fail", "skip", "dead_letter"})) {
    case 0: return OnRejected::fail;
    case 1: return OnRejected::skip;
    default: return OnRejected::dead_letter;
  }
}

}  // namespace

void ToHttp::validate(const Config& cfg) {
  // libcurl's own URL parser, without resolving or connecting.
  const std::string url = cfg.get_string("url");
  CURLU* u = curl_url();
  const CURLUcode rc = curl_url_set(u, CURLUPART_URL, url.c_str(), 0);
  char* scheme = nullptr;
  if (rc == CURLUE_OK) curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
  const std::string s = scheme != nullptr ? scheme : "";
  curl_free(scheme);
  curl_url_cleanup(u);
  if (rc != CURLUE_OK) {
    cfg.fail("url", std::string("is not a valid URL: ") + curl_url_strerror(rc));
  }
  if (s != "http" && s != "https") {
    cfg.fail("url", "must be an http:// or https:// URL (got scheme \"" + s + "\")");
  }
  const Encoding encoding = encoding_of(cfg);
  header_lines(cfg, encoding);
  batch_events_of(cfg, encoding);
  if (cfg.get_int("max_pending_batches") < cfg.get_int("concurrency")) {
    cfg.fail("max_pending_batches", "must be at least `concurrency` (" +
                                        std::to_string(cfg.get_int("concurrency")) + "; got " +
                                        std::to_string(cfg.get_int("max_pending_batches")) + ")");
  }
  if (cfg.get_duration("retry_max_backoff_ms") < cfg.get_duration("retry_initial_backoff_ms")) {
    cfg.fail("retry_max_backoff_ms", "must be at least retry_initial_backoff_ms");
  }
  if (std::optional<std::string> h = cfg.find_string("idempotency_key_header")) {
    if (!is_token(*h)) {
      cfg.fail("idempotency_key_header", "is not a header name (got \"" + *h + "\")");
    }
  }
}

ToHttp::ToHttp(const sl_node_init& init, const Config& cfg)
    : encoding_(encoding_of(cfg)),
      batch_max_events_(batch_events_of(cfg, encoding_)),
      batch_max_bytes_(static_cast<size_t>(cfg.get_int("batch_max_bytes"))),
      batch_timeout_(cfg.get_duration("batch_timeout_ms")),
      concurrency_(static_cast<size_t>(cfg.get_int("concurrency"))),
      max_pending_(static_cast<size_t>(cfg.get_int("max_pending_batches"))),
      max_retries_(static_cast<uint32_t>(cfg.get_int("max_retries"))),
      retry_max_elapsed_(cfg.get_duration("retry_max_elapsed_ms")),
      shutdown_timeout_(cfg.get_duration("shutdown_timeout_ms")),
      on_rejected_(on_rejected_of(cfg)),
      keyed_(cfg.has("idempotency_key_header")),
      checkpointing_(cfg.checkpointing()),
      node_id_(Context(init.ctx).node_id()),
      backoff_(cfg.get_duration("retry_initial_backoff_ms"),
               cfg.get_duration("retry_max_backoff_ms"), std::random_device{}()),
      open_(encoding_),
      run_nonce_((uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()) {
  validate(cfg);
  request_.url = cfg.get_string("url");
  request_.put = cfg.get_string("method") == "PUT";
  request_.timeout = cfg.get_duration("timeout_ms");
  request_.connect_timeout = cfg.get_duration("connect_timeout_ms");
  request_.headers = header_lines(cfg, encoding_);
  request_.key_header = cfg.find_string("idempotency_key_header").value_or("");
  key_salt_ = key_salt(cfg.pipeline() + '\n' + node_id_, init.task_index);
  keys_.set_salt(key_salt_);
}

Status ToHttp::start(Context ctx) {
  loop_ = std::make_unique<CurlLoop>(ctx, k_curl_timer);
  publish_metrics(ctx, true);
  return {};
}

Status ToHttp::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  const Value json = sdk::ValueRef(m.value).json_dump();
  const std::string_view text = json.as_str();
  if (!open_.empty() && open_.bytes() + BodyBuilder::cost(text) > batch_max_bytes_) seal(ctx);
  open_.append(text);
  if (on_rejected_ == OnRejected::dead_letter) {
    open_messages_.push_back(
        {Value::borrow(m.value), Value::borrow(m.key), Value::borrow(m.headers), m.timestamp_ns});
  }
  if (open_.events() >= batch_max_events_ || open_.bytes() >= batch_max_bytes_) {
    seal(ctx);
  } else if (!batch_timer_armed_) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_batch_timer, batch_timeout_));
    batch_timer_armed_ = true;
  }
  return pump(ctx);
}

void ToHttp::seal(Context ctx) {
  if (batch_timer_armed_) {
    ctx.timer_cancel(k_batch_timer);
    batch_timer_armed_ = false;
  }
  if (open_.empty()) return;
  auto b = std::make_unique<Batch>();
  b->seq = next_seq_++;
  b->events = open_.events();
  b->body = open_.take();
  b->messages = std::exchange(open_messages_, {});
  if (keyed_) {
    b->key = checkpointing_ ? keys_.next(b->body)
                            : idempotency_key(key_salt_, run_nonce_, b->seq, b->body);
  }
  queue_.push_back(std::move(b));
  update_backpressure(ctx);
}

void ToHttp::update_backpressure(Context ctx) {
  const bool full = pending() >= max_pending_;
  if (full != backpressure_) {
    backpressure_ = full;
    ctx.set_backpressure(full);
  }
}

Status ToHttp::on_timer(Context ctx, uint64_t timer_id) {
  if (drained_) return {};
  switch (timer_id) {
    case k_batch_timer:
      batch_timer_armed_ = false;
      seal(ctx);
      return pump(ctx);
    case k_retry_timer: release_due_retries(ctx); return pump(ctx);
    case k_curl_timer: loop_->on_timer(); return settle(ctx);
    default: return {};
  }
}

Status ToHttp::on_io(Context ctx, uint64_t watch_id, uint32_t ready) {
  if (drained_ || !CurlLoop::is_watch(watch_id)) return {};
  loop_->on_io(watch_id, ready);
  return settle(ctx);
}

Status ToHttp::finish(Context ctx) { return drain(ctx, "at the end of input"); }

void ToHttp::stop(Context ctx) {
  if (!loop_) return;
  // With checkpoints what is not acknowledged is sent again after the restart: stop at
  // once. Without, this is the last chance to deliver it (unless the node failed: its
  // failure is reported, and the task stops).
  if (!checkpointing_ && !drained_ && !failed_) {
    Status st = drain(ctx, "at stop");
    if (!st.is_ok()) ctx.log_error(std::string(st.message()));
  }
  for (auto& r : in_flight_) loop_->remove(r->easy());
  in_flight_.clear();
  idle_handles_.clear();
  loop_.reset();
  drained_ = true;
}

void ToHttp::publish_metrics(Context ctx, bool now) {
  const int64_t t = ctx.now_ns();
  if (!now && t - published_ns_ < k_metrics_period_ns) return;
  published_ns_ = t;
  ctx.gauge_set("http_requests_total", "", static_cast<double>(requests_total_));
  ctx.gauge_set("http_retries_total", "", static_cast<double>(retries_total_));
  ctx.gauge_set("http_failures_total", "", static_cast<double>(failures_total_));
  ctx.gauge_set("http_rejected_batches_total", "", static_cast<double>(rejected_total_));
  ctx.gauge_set("http_events_total", "", static_cast<double>(events_total_));
  ctx.gauge_set("http_bytes_total", "", static_cast<double>(bytes_total_));
  ctx.gauge_set("http_request_seconds_total", "", latency_sum_s_);
  ctx.gauge_set("http_request_latency_seconds", "", last_latency_s_);
  ctx.gauge_set("http_in_flight_requests", "", static_cast<double>(in_flight_.size()));
  ctx.gauge_set("http_pending_batches", "", static_cast<double>(pending()));
}

}  // namespace sluice::http
