// from_kafka / from_kafka_batched, polling: messages and events taken from librdkafka's queue
// without blocking, converted (value_format, keys, on_error and the dead-letter producer) and
// emitted; processed positions, the lag gauge and the end of the stream (stop_at_end).
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace sluice::kafka {

using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;

namespace {

/// A consumed message whose payload a bytes value wraps: released with the last reference.
struct HeldMessage {
  std::shared_ptr<KafkaSource::Shared> shared;
  rd_kafka_message_t* message;
  int64_t bytes;
};

void release_held(void* p) {
  auto* held = static_cast<HeldMessage*>(p);
  held->shared->held_bytes.fetch_sub(held->bytes);
  rd_kafka_message_destroy(held->message);
  delete held;  // may drop the last reference to the client (then rd_kafka_destroy runs here)
}

std::string lag_labels(const std::pair<std::string, int32_t>& tp) {
  return "topic=" + tp.first + ",partition=" + std::to_string(tp.second);
}

}  // namespace

// ---------------------------------------------------------------------------
// Events from librdkafka

Status KafkaSource::on_event_message(const rd_kafka_message_t* m) {
  const std::string topic = m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : "";
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    const TopicPartition tp{topic, m->partition};
    if (assigned_.count(tp) != 0) at_eof_[tp] = std::max<int64_t>(m->offset, 0);
    return {};
  }
  const std::string reason = rd_kafka_message_errstr(m);
  if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
    // Only a topic named in `topics` must exist; patterns wait for matching topics.
    if (std::find(opts_.topics.begin(), opts_.topics.end(), topic) != opts_.topics.end()) {
      return sdk::not_found("from_kafka: topic '" + topic + "' does not exist on \"" +
                            brokers_.bootstrap + "\" (" + reason + ")");
    }
  }
  if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_fatal_error(rk(), fatal, sizeof fatal);
    return sdk::internal_error(std::string("from_kafka: fatal consumer error: ") + fatal);
  }
  ctx_.log_warn("consumer error " + std::string(rd_kafka_err2name(m->err)) +
                (topic.empty() ? "" : " on " + tp_name(topic, m->partition)) + ": " + reason);
  return {};
}

ssize_t KafkaSource::next_messages(rd_kafka_message_t** out, size_t size) {
  // Group mode: queue_ is the consumer queue (poll_set_consumer), which also serves the
  // rebalance and commit callbacks. Manual mode: errors arrive on the main queue.
  if (!group_mode()) rd_kafka_poll(rk(), 0);
  const ssize_t n = rd_kafka_consume_batch_queue(queue_.get(), 0, out, size);
  return std::max<ssize_t>(n, 0);
}

// ---------------------------------------------------------------------------
// Polling

Result<Value> KafkaSource::decode_value(rd_kafka_message_t* m, bool& owns_message) {
  if (m->payload == nullptr) return Value();  // a tombstone
  const auto* data = static_cast<const char*>(m->payload);
  switch (opts_.format) {
    case Format::string:
      // Strings are valid UTF-8 (docs/ARCHITECTURE.md): another payload does not decode.
      if (!sdk::valid_utf8({data, m->len})) {
        return sdk::invalid_argument(
            "value is not valid UTF-8 (value_format = \"string\"; \"bytes\" takes any payload)");
      }
      return Value::string({data, m->len});
    case Format::json: {
      Result<Value> v = sdk::parse_json({data, m->len});
      if (!v.is_ok()) return sdk::invalid_argument("value is not valid JSON");
      return v;
    }
    case Format::bytes: break;
  }
  const auto size = static_cast<int64_t>(m->len);
  // A small payload is copied: one allocation and a short memcpy cost less than wrapping
  // (a HeldMessage, the wrapping block, two atomic updates and a release callback), and the
  // librdkafka message (with its share of the fetch buffer) is freed at once.
  if (size <= k_copy_max_bytes || shared_->held_bytes.load() + size > opts_.max_held_bytes) {
    return Value::bytes(data, m->len);
  }
  shared_->held_bytes.fetch_add(size);
  auto* held = new HeldMessage{shared_, m, size};
  owns_message = false;
  return Value::adopt(sdk::host().bytes_wrap(data, m->len, &release_held, held));
}

sl_message KafkaSource::convert_bytes(rd_kafka_message_t* m) {
  sl_message out{};
  out.key = m->key == nullptr ? sl_null() : sdk::host().bytes_create(m->key, m->key_len);
  out.headers = headers_of(m).release();
  rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ts_ms = rd_kafka_message_timestamp(m, &ts_type);
  out.timestamp_ns = ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts_ms >= 0 ? ts_ms * 1'000'000
                                                                               : SL_NO_TIMESTAMP;
  out.key_group = sdk::key_group_of_partition(m->partition);
  bool owns = true;                             // false once a wrapped value took the message
  Result<Value> value = decode_value(m, owns);  // bytes: never fails
  out.value = value.is_ok() ? value->release() : sl_null();
  if (owns) rd_kafka_message_destroy(m);
  return out;
}

Value KafkaSource::headers_of(const rd_kafka_message_t* m) const {
  rd_kafka_headers_t* hdrs = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) hdrs = nullptr;
  if (!opts_.origin_header) return headers_to_value(hdrs);
  // Kafka topic names cannot hold '/': the last two separate partition and offset.
  const std::string origin = std::string(rd_kafka_topic_name(m->rkt)) + "/" +
                             std::to_string(m->partition) + "/" + std::to_string(m->offset);
  return headers_to_value(hdrs, k_origin_header, origin);
}

bool KafkaSource::origin_applied(Context ctx, const rd_kafka_message_t* m) {
  rd_kafka_headers_t* hdrs = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  const bool has =
      rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      rd_kafka_header_get_last(hdrs, k_origin_header, &data, &size) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      data != nullptr;
  const std::string_view text = has ? std::string_view(static_cast<const char*>(data), size) : "";
  // "<topic>/<partition>/<offset>"
  const size_t last = text.rfind('/');
  const size_t middle = last == std::string_view::npos || last == 0 ? std::string_view::npos
                                                                    : text.rfind('/', last - 1);
  int64_t partition = -1;
  int64_t offset = -1;
  auto number = [](std::string_view digits, int64_t& out) {
    const char* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, out);
    return ec == std::errc() && ptr == end && !digits.empty() && out >= 0;
  };
  if (!has || middle == std::string_view::npos || middle == 0 ||
      !number(text.substr(middle + 1, last - middle - 1), partition) || partition > INT32_MAX ||
      !number(text.substr(last + 1), offset)) {
    ++origin_warnings_;
    const int64_t now = ctx.now_ns();
    if (origin_warned_ns_ < 0 || now - origin_warned_ns_ >= 10'000'000'000) {
      const uint64_t more = origin_warnings_ - origin_warned_count_ - 1;
      std::string shown(text.substr(0, 200));  // printable ASCII only in the log
      for (char& c : shown) {
        if (c < 0x20 || c > 0x7e) c = '?';
      }
      ctx.log_warn(
          std::string("dedup_origin: ") + tp_name(rd_kafka_topic_name(m->rkt), m->partition) +
          " offset " + std::to_string(m->offset) +
          (has ? " has a sluice.origin header that is not <topic>/<partition>/<offset> (\"" +
                     shown + "\")"
               : " has no sluice.origin header") +
          ": processed, but it cannot be told from a replay" +
          (more > 0 ? " (and " + std::to_string(more) + " more such records since the last warning)"
                    : ""));
      origin_warned_ns_ = now;
      origin_warned_count_ = origin_warnings_;
    }
    return false;
  }
  Positions& maxima = origins_[group_of(m->partition)];
  auto [it, inserted] = maxima.try_emplace(
      TopicPartition{std::string(text.substr(0, middle)), static_cast<int32_t>(partition)}, offset);
  if (inserted) return false;
  if (offset <= it->second) {
    ++duplicates_skipped_;
    return true;
  }
  it->second = offset;
  return false;
}

void KafkaSource::report_duplicates(Context ctx) {
  if (duplicates_skipped_ == duplicates_reported_) return;
  const int64_t now = ctx.now_ns();
  ctx.gauge_set("kafka_origin_duplicates_skipped", "", static_cast<double>(duplicates_skipped_));
  if (duplicates_logged_ns_ >= 0 && now - duplicates_logged_ns_ < 10'000'000'000) return;
  ctx.log_info("dedup_origin: skipped " +
               std::to_string(duplicates_skipped_ - duplicates_reported_) +
               " records whose origin offset was already applied (replayed upstream); " +
               std::to_string(duplicates_skipped_) + " since the start");
  duplicates_reported_ = duplicates_skipped_;
  duplicates_logged_ns_ = now;
}

Result<std::optional<sl_message>> KafkaSource::convert(Context /*ctx*/, rd_kafka_message_t* m) {
  bool owns = true;  // false once a wrapped value took the message
  struct Destroy {
    rd_kafka_message_t* m;
    bool* owns;
    ~Destroy() {
      if (*owns) rd_kafka_message_destroy(m);
    }
  } destroy{m, &owns};

  const char* topic = rd_kafka_topic_name(m->rkt);
  Value key = m->key == nullptr ? Value() : Value::bytes(m->key, m->key_len);
  Value headers = headers_of(m);
  rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ts_ms = rd_kafka_message_timestamp(m, &ts_type);
  const bool has_ts = ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts_ms >= 0;

  Result<Value> value = decode_value(m, owns);
  if (!value.is_ok()) {
    const std::string reason = value.status().message() + " (" + tp_name(topic, m->partition) +
                               " offset " + std::to_string(m->offset) + ")";
    mark_processed({topic, m->partition}, m->offset);  // handled: never read again
    switch (opts_.on_error) {
      case OnError::fail: return sdk::invalid_argument("from_kafka: " + reason);
      case OnError::skip:
        ctx_.log_warn("skipped a message: " + reason);
        return std::optional<sl_message>();
      case OnError::dead_letter:
        SLUICE_SDK_RETURN_IF_ERROR(dead_letter(m, reason));
        return std::optional<sl_message>();
    }
  }
  sl_message out{};
  if (opts_.keys) {
    out.value = Value::object({{"key", key},
                               {"value", std::move(*value)},
                               {"topic", Value::string(topic)},
                               {"partition", Value::integer(m->partition)},
                               {"offset", Value::integer(m->offset)},
                               {"timestamp", has_ts ? Value::integer(ts_ms) : Value()},
                               {"headers", headers}})
                    .release();
  } else {
    out.value = value->release();
  }
  out.key = key.release();
  out.headers = headers.release();
  out.timestamp_ns = has_ts ? ts_ms * 1'000'000 : SL_NO_TIMESTAMP;
  out.key_group = sdk::key_group_of_partition(m->partition);
  return std::optional<sl_message>(out);
}

Status KafkaSource::dead_letter(const rd_kafka_message_t* m, const std::string& reason) {
  rd_kafka_headers_t* src = nullptr;
  HeadersPtr hdrs(rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR
                      ? rd_kafka_headers_copy(src)
                      : rd_kafka_headers_new(2));
  rd_kafka_header_add(hdrs.get(), "sluice.error", -1, reason.data(),
                      static_cast<ssize_t>(reason.size()));
  const std::string_view node = ctx_.node_id();
  rd_kafka_header_add(hdrs.get(), "sluice.error.node", -1, node.data(),
                      static_cast<ssize_t>(node.size()));
  std::array<rd_kafka_vu_t, 5> vu{};
  vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  vu[0].u.cstr = opts_.dead_letter_topic->c_str();
  vu[1].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[1].u.mem = {m->payload, m->len};
  vu[2].vtype = RD_KAFKA_VTYPE_KEY;
  vu[2].u.mem = {m->key, m->key_len};
  vu[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vu[3].u.i = RD_KAFKA_MSG_F_COPY;
  vu[4].vtype = RD_KAFKA_VTYPE_HEADERS;
  vu[4].u.headers = hdrs.get();
  ErrorPtr e(rd_kafka_produceva(dlq_, vu.data(), vu.size()));
  if (e) {
    return unavailable("from_kafka: cannot produce to dead-letter topic '" +
                       *opts_.dead_letter_topic + "': " + rd_kafka_error_string(e.get()));
  }
  static_cast<void>(hdrs.release());  // librdkafka owns them now
  return {};
}

void KafkaSource::mark_processed(const TopicPartition& tp, int64_t offset) {
  // Only a message at or past the reported end means new data: the messages fetched before
  // the EOF event may be emitted after it was seen (same poll), and must not undo it.
  if (auto eof = at_eof_.find(tp);
      eof != at_eof_.end() && eof->second >= 0 && offset >= eof->second) {
    eof->second = -1;
    all_at_end_since_ns_ = -1;
  }
  int64_t& next = processed_[tp];
  next = std::max(next, offset + 1);
}

void KafkaSource::report_lag(Context ctx) {
  const int64_t now = ctx.now_ns();
  if (lag_reported_ns_ >= 0 && now - lag_reported_ns_ < 1'000'000'000) return;
  lag_reported_ns_ = now;
  if (!shared_->handle) return;
  for (auto it = lag_reported_.begin(); it != lag_reported_.end();) {
    if (assigned_.count(*it) == 0) {
      ctx.gauge_remove("kafka_consumer_lag_messages", lag_labels(*it));
      it = lag_reported_.erase(it);
    } else {
      ++it;
    }
  }
  for (const TopicPartition& tp : assigned_) {
    int64_t low = 0, high = 0;
    // Cached from the last fetch response: never blocks.
    if (rd_kafka_get_watermark_offsets(rk(), tp.first.c_str(), tp.second, &low, &high) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        high < 0) {
      continue;
    }
    // The next offset to process: what was emitted, else librdkafka's fetch position.
    int64_t next = -1;
    if (auto p = processed_.find(tp); p != processed_.end()) {
      next = p->second;
    } else {
      PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
      rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second);
      if (rd_kafka_position(rk(), list.get()) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        next = list->elems[0].offset;
      }
    }
    if (next < 0) continue;  // no position yet (nothing fetched): lag unknown
    ctx.gauge_set("kafka_consumer_lag_messages", lag_labels(tp),
                  static_cast<double>(std::max<int64_t>(high - next, 0)));
    lag_reported_.insert(tp);
  }
}

void KafkaSource::remove_lag(const TopicPartition& tp) {
  if (lag_reported_.erase(tp) > 0) ctx_.gauge_remove("kafka_consumer_lag_messages", lag_labels(tp));
}

Result<SourceState> KafkaSource::poll(Context ctx, uint32_t budget) {
  if (done_) return SourceState::done;
  if (!failure_.is_ok()) return failure_;
  if (!group_mode()) SLUICE_SDK_RETURN_IF_ERROR(apply_metadata(ctx));
  if (dlq_ != nullptr) rd_kafka_poll(dlq_, 0);

  const size_t limit = batched_ ? static_cast<size_t>(std::max<uint32_t>(budget, 1)) *
                                      static_cast<size_t>(opts_.max_batch_size)
                                : std::max<uint32_t>(budget, 1);
  // One librdkafka call per chunk rather than per message: each call takes the queue's
  // lock and (consumer) reads the clock for max.poll.interval.ms.
  std::vector<rd_kafka_message_t*>& msgs = poll_buffer_;
  msgs.clear();
  bool drained = false;
  Status st;
  while (st.is_ok() && failure_.is_ok() && msgs.size() < limit) {
    const size_t have = msgs.size();
    const size_t chunk = std::min<size_t>(limit - have, k_consume_chunk);
    msgs.resize(have + chunk);
    const ssize_t got = next_messages(msgs.data() + have, chunk);
    size_t kept = have;
    for (ssize_t i = 0; i < got; ++i) {
      rd_kafka_message_t* m = msgs[have + static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        msgs[kept++] = m;
        continue;
      }
      // An error or EOF event: handled in queue order; a failure drops the rest (not emitted,
      // so not processed: read again after a restart).
      if (st.is_ok() && failure_.is_ok()) st = on_event_message(m);
      rd_kafka_message_destroy(m);
    }
    msgs.resize(kept);
    if (got < static_cast<ssize_t>(chunk)) {
      drained = true;
      break;
    }
  }
  if (!st.is_ok() || !failure_.is_ok()) {
    for (auto* m : msgs) rd_kafka_message_destroy(m);
    msgs.clear();
    return st.is_ok() ? failure_ : st;
  }

  if (batched_) {
    SLUICE_SDK_RETURN_IF_ERROR(emit_batched(ctx, msgs));
  } else if (!msgs.empty()) {
    std::vector<sl_message>& out = emit_buffer_;
    out.clear();
    out.reserve(msgs.size());
    // Positions as runs of one partition (the queue hands out each fetched partition's
    // messages together): one map update per run, not per message.
    std::vector<PositionRun>& runs = run_buffer_;
    runs.clear();
    auto release_out = [&] {
      for (sl_message& m : out) {
        Value::adopt(m.value);
        Value::adopt(m.key);
        Value::adopt(m.headers);
      }
      out.clear();
    };
    const bool plain = opts_.format == Format::bytes && !opts_.keys;
    for (size_t i = 0; i < msgs.size(); ++i) {
      rd_kafka_message_t* m = msgs[i];
      if (!runs.empty() && runs.back().rkt == m->rkt && runs.back().partition == m->partition) {
        runs.back().last_offset = std::max(runs.back().last_offset, m->offset);
      } else {
        runs.push_back({m->rkt, m->partition, m->offset});
      }
      if (opts_.dedup_origin && origin_applied(ctx, m)) {
        rd_kafka_message_destroy(m);  // a replay: skipped, its offset still processed (runs)
        continue;
      }
      if (plain) {                        // bare bytes values: no decode failure, no on_error
        out.push_back(convert_bytes(m));  // takes m
        continue;
      }
      Result<std::optional<sl_message>> c = convert(ctx, m);  // takes m
      if (!c.is_ok()) {
        for (size_t j = i + 1; j < msgs.size(); ++j) rd_kafka_message_destroy(msgs[j]);
        st = c.status();
        break;
      }
      if (*c) out.push_back(**c);
    }
    msgs.clear();
    if (st.is_ok() && !out.empty()) st = ctx.emit(out);
    release_out();
    SLUICE_SDK_RETURN_IF_ERROR(st);
    // Emitted means processed: the host delivers depth-first, so every synchronous consumer
    // has handled these messages when emit returns.
    for (const PositionRun& r : runs)
      mark_processed({rd_kafka_topic_name(r.rkt), r.partition}, r.last_offset);
  }

  report_lag(ctx);
  if (opts_.dedup_origin) report_duplicates(ctx);
  if (!drained) return SourceState::more;
  if (opts_.stop_at_end && at_end(ctx)) {
    SLUICE_SDK_RETURN_IF_ERROR(close(ctx));
    done_ = true;
    return SourceState::done;
  }
  return SourceState::idle;
}

Status KafkaSource::emit_batched(Context ctx, std::vector<rd_kafka_message_t*>& msgs) {
  // Group by partition, keeping each partition's order; one element per partition per poll,
  // split in arrays of at most max_batch_size.
  std::map<TopicPartition, std::vector<rd_kafka_message_t*>> by_tp;
  std::vector<TopicPartition> order;
  for (rd_kafka_message_t* m : msgs) {
    TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
    auto [it, inserted] = by_tp.try_emplace(tp);
    if (inserted) order.push_back(tp);
    it->second.push_back(m);
  }
  msgs.clear();
  Status st;
  for (const TopicPartition& tp : order) {
    std::vector<rd_kafka_message_t*>& list = by_tp[tp];
    for (size_t begin = 0; begin < list.size();
         begin += static_cast<size_t>(opts_.max_batch_size)) {
      const size_t end = std::min(list.size(), begin + static_cast<size_t>(opts_.max_batch_size));
      if (!st.is_ok()) {
        for (size_t i = begin; i < end; ++i) rd_kafka_message_destroy(list[i]);
        continue;
      }
      std::vector<Value> items;
      int64_t last_offset = -1;
      int64_t ts = SL_NO_TIMESTAMP;
      for (size_t i = begin; i < end; ++i) {
        last_offset = list[i]->offset;
        if (!st.is_ok()) {
          rd_kafka_message_destroy(list[i]);
          continue;
        }
        Result<std::optional<sl_message>> c = convert(ctx, list[i]);
        if (!c.is_ok()) {
          st = c.status();
          continue;
        }
        if (!*c) continue;
        items.push_back(Value::adopt((*c)->value));
        Value::adopt((*c)->key);
        Value::adopt((*c)->headers);
        ts = (*c)->timestamp_ns;
      }
      if (!st.is_ok() || items.empty()) continue;
      const Value array = Value::array(std::span<const Value>(items));
      sl_message out{};
      out.value = array.raw();
      out.key = sl_null();
      out.headers = sl_null();
      out.timestamp_ns = ts;
      out.key_group = sdk::key_group_of_partition(tp.second);  // one partition per element
      st = ctx.emit(out);
      if (st.is_ok()) mark_processed(tp, last_offset);
    }
  }
  return st;
}

// ---------------------------------------------------------------------------
// End of the stream

bool KafkaSource::at_end(Context ctx) {
  if (assigned_.empty()) return false;
  if (!group_mode() && !metadata_loaded_) return false;
  for (const auto& tp : assigned_) {
    auto it = at_eof_.find(tp);
    if (it == at_eof_.end() || it->second < 0) return false;
  }
  const int64_t now = ctx.now_ns();
  if (all_at_end_since_ns_ < 0) all_at_end_since_ns_ = now;
  const int64_t grace_ns = opts_.end_grace.count() * 1'000'000;
  if (now - all_at_end_since_ns_ >= grace_ns) return true;
  static_cast<void>(ctx.timer_start(
      k_grace_timer, std::chrono::nanoseconds(grace_ns - (now - all_at_end_since_ns_))));
  return false;
}

// ---------------------------------------------------------------------------
// The dead-letter producer

void KafkaSource::on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m) {
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || !failure_.is_ok()) return;
  failure_ = unavailable("from_kafka: a message could not be delivered to dead-letter topic '" +
                         *opts_.dead_letter_topic + "': " + rd_kafka_err2str(m->err));
}

}  // namespace sluice::kafka
