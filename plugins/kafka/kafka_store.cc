// The "kafka" checkpoint store (see kafka_store.hpp). Every call runs on the host's control
// thread, one at a time, and may block (bounded by timeout_ms): no executor is involved.
#include "kafka_store.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

namespace sluice::kafka {

using sdk::Config;
using sdk::Context;
using sdk::EpochInfo;
using sdk::Result;
using sdk::Status;
using sdk::Value;

namespace {

constexpr std::string_view k_committed_suffix = "/committed";

int64_t remaining_ms(std::chrono::steady_clock::time_point deadline) {
  return std::max<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               deadline - std::chrono::steady_clock::now())
                               .count(),
                           0);
}

std::optional<uint64_t> parse_epoch(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

KafkaStore::KafkaStore(Context ctx, const Config& cfg, std::string_view pipeline)
    : ctx_(ctx), pipeline_(pipeline) {
  topic_ = cfg.get_string("topic");
  if (topic_.empty()) cfg.fail("topic", "must not be empty");
  if (pipeline_.empty()) cfg.fail("topic", "the pipeline has no name to key its checkpoints by");
  timeout_ = cfg.get_duration("timeout_ms");
  if (timeout_.count() <= 0) cfg.fail("timeout_ms", "must be positive");
  const std::string brokers = cfg.get_string("brokers");
  if (brokers == "embedded") {
    cfg.fail("brokers",
             "\"embedded\" lives and dies with the process: a checkpoint store "
             "there would survive nothing");
  }
  brokers_ = resolve_brokers(brokers);
  id_ = NodeRegistry::add(ctx.raw(), this);
  try {
    ConfPtr conf = make_conf(cfg, brokers_.bootstrap, id_,
                             {{"enable.idempotence", "true"},
                              {"acks", "all"},
                              {"message.max.bytes", "104857600"},
                              {"linger.ms", "0"}});
    route_delivery_reports(conf.get());
    producer_ = new_client(RD_KAFKA_PRODUCER, std::move(conf), "checkpoint store producer");
    open_reader(cfg);
    if (Status st = catch_up(); !st.is_ok()) throw sdk::Error(std::move(st));
    ctx_.log_info("checkpoint store: read topic '" + topic_ + "' to offset " +
                  std::to_string(next_offset_) + ": " + std::to_string(entries_.size()) +
                  " epochs of pipeline '" + pipeline_ + "'");
  } catch (...) {
    close_reader();
    if (producer_ != nullptr) rd_kafka_destroy(producer_);
    producer_ = nullptr;
    NodeRegistry::remove(id_);
    throw;
  }
}

void KafkaStore::close_reader() {
  if (reader_topic_ != nullptr) {
    rd_kafka_consume_stop(reader_topic_, 0);
    rd_kafka_topic_destroy(reader_topic_);
    reader_topic_ = nullptr;
  }
  if (reader_ != nullptr) rd_kafka_destroy(reader_);
  reader_ = nullptr;
}

KafkaStore::~KafkaStore() {
  close_reader();
  if (producer_ != nullptr) {
    rd_kafka_flush(producer_, static_cast<int>(timeout_.count()));
    rd_kafka_destroy(producer_);
  }
  NodeRegistry::remove(id_);
}

void KafkaStore::on_client_error(rd_kafka_t* rk, int err, const char* reason) {
  last_client_error_ =
      std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " + reason;
  ctx_.log_warn(std::string("Kafka ") + rd_kafka_name(rk) + " error " + last_client_error_);
}

void KafkaStore::on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m) {
  --outstanding_;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && delivery_err_ == RD_KAFKA_RESP_ERR_NO_ERROR) {
    delivery_err_ = m->err;
  }
}

std::string KafkaStore::key_of(uint64_t epoch) const {
  return pipeline_ + "/" + std::to_string(epoch);
}

void KafkaStore::apply(std::string_view key, const void* value, size_t size, int64_t time_ms) {
  const std::string prefix = pipeline_ + "/";
  if (key.substr(0, prefix.size()) != prefix) return;  // another pipeline's
  std::string_view rest = key.substr(prefix.size());
  bool marker = false;
  if (rest.size() > k_committed_suffix.size() &&
      rest.substr(rest.size() - k_committed_suffix.size()) == k_committed_suffix) {
    marker = true;
    rest.remove_suffix(k_committed_suffix.size());
  }
  const std::optional<uint64_t> epoch = parse_epoch(rest);
  if (!epoch) return;
  if (marker) {
    auto it = entries_.find(*epoch);
    if (it != entries_.end()) it->second.committed = value != nullptr;
    return;
  }
  if (value == nullptr) {
    entries_.erase(*epoch);
    return;
  }
  Entry& e = entries_[*epoch];
  e.data.assign(static_cast<const char*>(value), size);
  e.committed = false;  // a rewritten epoch is committed only by a later marker
  e.time_ns = time_ms > 0 ? time_ms * 1'000'000 : 0;
}

void KafkaStore::open_reader(const Config& cfg) {
  ConfPtr conf = make_conf(cfg, brokers_.bootstrap, id_,
                           {{"fetch.wait.max.ms", "10"},
                            {"allow.auto.create.topics", "false"},
                            {"fetch.message.max.bytes", "104857600"},
                            // Records removed under us (retention): go on from the oldest.
                            {"auto.offset.reset", "earliest"}});
  char err[512];
  rd_kafka_conf_set(conf.get(), "enable.partition.eof", "true", err, sizeof err);
  reader_ = new_client(RD_KAFKA_CONSUMER, std::move(conf), "checkpoint store reader");
  int64_t low = 0;
  int64_t high = 0;
  const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
      reader_, topic_.c_str(), 0, &low, &high, static_cast<int>(timeout_.count()));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::string hint;
    if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      hint = " (create it first: kafka-topics --create --topic " + topic_ +
             " --partitions 1 --config cleanup.policy=compact)";
    }
    throw sdk::Error(unavailable("checkpoint store: cannot read topic '" + topic_ + "' on \"" +
                                 brokers_.bootstrap + "\": " + rd_kafka_err2str(e) + hint));
  }
  // The simple (legacy) consumer API: no group, nothing committed. It keeps fetching in the
  // background (bounded by librdkafka's queue limits); catch_up takes what it fetched.
  reader_topic_ = rd_kafka_topic_new(reader_, topic_.c_str(), nullptr);
  if (reader_topic_ == nullptr ||
      rd_kafka_consume_start(reader_topic_, 0, RD_KAFKA_OFFSET_BEGINNING) != 0) {
    const rd_kafka_resp_err_t le = rd_kafka_last_error();
    if (reader_topic_ != nullptr) rd_kafka_topic_destroy(reader_topic_);
    reader_topic_ = nullptr;
    throw sdk::Error(unavailable(std::string("checkpoint store: cannot read topic '") + topic_ +
                                 "': " + rd_kafka_err2str(le)));
  }
  next_offset_ = low;
}

Status KafkaStore::catch_up() {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  int64_t low = 0;
  int64_t high = 0;
  const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
      reader_, topic_.c_str(), 0, &low, &high, static_cast<int>(remaining_ms(deadline)));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable("checkpoint store: cannot read the end of topic '" + topic_ + "' on \"" +
                       brokers_.bootstrap + "\": " + rd_kafka_err2str(e));
  }
  const int64_t from = next_offset_;
  next_offset_ = std::max(next_offset_, low);
  while (next_offset_ < high) {
    const int64_t left = remaining_ms(deadline);
    if (left <= 0) {
      return unavailable("checkpoint store: reading topic '" + topic_ + "' to its end (offset " +
                         std::to_string(high) + ") took longer than timeout_ms (" +
                         std::to_string(timeout_.count()) + " ms); read up to " +
                         std::to_string(next_offset_));
    }
    rd_kafka_message_t* m =
        rd_kafka_consume(reader_topic_, 0, static_cast<int>(std::min<int64_t>(left, 100)));
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      next_offset_ = std::max(next_offset_, m->offset);  // compaction leaves gaps
      rd_kafka_message_destroy(m);
      continue;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const std::string reason = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      return unavailable("checkpoint store: reading topic '" + topic_ + "': " + reason);
    }
    if (m->offset >= next_offset_) {  // not a record applied already
      rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
      const int64_t ts = rd_kafka_message_timestamp(m, &ts_type);
      apply(std::string_view(static_cast<const char*>(m->key), m->key == nullptr ? 0 : m->key_len),
            m->payload, m->len, ts);
      next_offset_ = m->offset + 1;
    }
    rd_kafka_message_destroy(m);
  }
  if (next_offset_ > from) {
    ctx_.log_debug("checkpoint store: read topic '" + topic_ + "' from offset " +
                   std::to_string(from) + " to " + std::to_string(next_offset_));
  }
  return {};
}

Status KafkaStore::put(const std::string& key, const std::string_view* value, const char* what) {
  delivery_err_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  last_client_error_.clear();
  ErrorPtr e;
  {
    std::array<rd_kafka_vu_t, 5> vu{};
    size_t n = 0;
    vu[n].vtype = RD_KAFKA_VTYPE_TOPIC;
    vu[n++].u.cstr = topic_.c_str();
    vu[n].vtype = RD_KAFKA_VTYPE_PARTITION;
    vu[n++].u.i32 = 0;
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;
    vu[n++].u.mem = {const_cast<char*>(key.data()), key.size()};
    vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
    if (value != nullptr) {
      vu[n++].u.mem = {const_cast<char*>(value->data()), value->size()};
    } else {
      vu[n++].u.mem = {nullptr, 0};  // a tombstone
    }
    vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
    e.reset(rd_kafka_produceva(producer_, vu.data(), n));
  }
  if (e) {
    return unavailable(std::string("checkpoint store: cannot write ") + what + " to topic '" +
                       topic_ + "': " + rd_kafka_error_string(e.get()));
  }
  ++outstanding_;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (outstanding_ > 0) {
    const int64_t left = remaining_ms(deadline);
    if (left <= 0) break;
    rd_kafka_poll(producer_, static_cast<int>(std::min<int64_t>(left, 100)));
  }
  if (outstanding_ > 0) {
    // Not acknowledged in time: drop it, so that a late success cannot surprise the host.
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_, 0);
    outstanding_ = 0;
    return unavailable(std::string("checkpoint store: writing ") + what + " to topic '" + topic_ +
                       "' on \"" + brokers_.bootstrap + "\" was not acknowledged within " +
                       "timeout_ms (" + std::to_string(timeout_.count()) + " ms)" +
                       (last_client_error_.empty() ? "" : "; last error " + last_client_error_));
  }
  if (delivery_err_ != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable(std::string("checkpoint store: writing ") + what + " to topic '" + topic_ +
                       "' failed: " + rd_kafka_err2name(delivery_err_) + ": " +
                       rd_kafka_err2str(delivery_err_));
  }
  return {};
}

Status KafkaStore::write(uint64_t epoch, std::string_view data) {
  SLUICE_SDK_RETURN_IF_ERROR(put(key_of(epoch), &data, "a checkpoint"));
  Entry& e = entries_[epoch];
  e.data.assign(data);
  e.committed = false;
  e.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  return {};
}

Status KafkaStore::mark_committed(uint64_t epoch) {
  auto it = entries_.find(epoch);
  if (it == entries_.end()) {
    return sdk::not_found("checkpoint store: no epoch " + std::to_string(epoch) + " to mark");
  }
  const std::string_view one = "1";
  SLUICE_SDK_RETURN_IF_ERROR(
      put(key_of(epoch) + std::string(k_committed_suffix), &one, "a commit marker"));
  it->second.committed = true;
  return {};
}

Result<Value> KafkaStore::read(uint64_t epoch) {
  // An epoch another process wrote since the last reading.
  if (entries_.count(epoch) == 0) SLUICE_SDK_RETURN_IF_ERROR(catch_up());
  auto it = entries_.find(epoch);
  if (it == entries_.end()) {
    return sdk::not_found("checkpoint store: no epoch " + std::to_string(epoch) + " in topic '" +
                          topic_ + "'");
  }
  return Value::bytes(it->second.data);
}

Result<std::vector<EpochInfo>> KafkaStore::list() {
  SLUICE_SDK_RETURN_IF_ERROR(catch_up());  // what other processes wrote since
  std::vector<EpochInfo> out;
  out.reserve(entries_.size());
  for (const auto& [epoch, e] : entries_) {
    out.push_back(EpochInfo{epoch, e.committed, e.time_ns, e.data.size()});
  }
  return out;
}

Status KafkaStore::remove(uint64_t epoch) {
  if (entries_.count(epoch) == 0) SLUICE_SDK_RETURN_IF_ERROR(catch_up());
  auto it = entries_.find(epoch);
  if (it == entries_.end()) return {};
  // The marker first: a crash between the two leaves an uncommitted epoch, never a marker
  // without its checkpoint.
  if (it->second.committed) {
    SLUICE_SDK_RETURN_IF_ERROR(
        put(key_of(epoch) + std::string(k_committed_suffix), nullptr, "a tombstone"));
  }
  SLUICE_SDK_RETURN_IF_ERROR(put(key_of(epoch), nullptr, "a tombstone"));
  entries_.erase(it);
  return {};
}

}  // namespace sluice::kafka
