// Benchmark 3 of issue 7: the Kafka side tools, on librdkafka's C API only.
//
//   kafka_raw_loop loop    --brokers B --in TOPIC --out TOPIC [--stop-at-end] [--assign]
//                          [--payload-only] [-X key=value]...
//       A plain consume -> produce loop, one message at a time (every partition of TOPIC read
//       from the beginning, no group, each message produced to --out with its key, its headers
//       and its timestamp, as sluice's from_kafka -> to_kafka forwards them; payload copied).
//       --json-aggregate: the loop of issue 20's JSON pipeline instead: each payload parsed
//       with simdjson On-Demand, kept when "amount" > 50, and "amount" summed per "user" in a
//       hash map; each kept event produces key = user, value = the user's new sum (decimal),
//       what sluiced's json_parse -> filter -> key_by -> aggregate(sum) -> to_kafka writes.
//       --payload-only forwards key and payload only: the plainest loop, bench.py's baseline
//       (its output differs from sluice's: no headers, the producer's own timestamps). The
//       consumer is what sluice's from_kafka without group_id uses: the partition consumer
//       API, every partition started on one queue, no group.id; --assign uses the group API's
//       assign() instead (one consumer queue; needs a group.id, nothing is committed), as
//       from_kafka with a group_id reads. With --stop-at-end it exits once every partition
//       reached its end and all deliveries are done, like sluice's from_kafka stop_at_end;
//       otherwise on SIGTERM.
//   kafka_raw_loop produce --brokers B --topic TOPIC --count N [--size 100] [--rate MSG/S]
//       Produces N keyed messages of --size bytes whose first 16 bytes are the send time
//       (µs since the epoch, decimal), as fast as possible or at --rate; prints a JSON line.
//       --json: each payload is instead a JSON event of about 110 bytes (id, ts, user of 1,000
//       names, amount 0..99, currency, tags, ok), keyed by its user; message i always the
//       same event.
//   kafka_raw_loop sums    --brokers B --topic TOPIC
//       Reads every partition to its end; prints a JSON line with the message count and, per
//       key, the last value (in offset order): the final sums of a --json-aggregate output.
//   kafka_raw_loop measure --brokers B --topic TOPIC --count N [--timeout-s S]
//       Reads every partition from the beginning until N messages arrived; prints a JSON
//       line with the latency (receive time - send time in the payload) p50/p99 in ms and
//       the receive rate.
//
// -X key=value sets a librdkafka property on the loop's consumer and producer (the same
// settings the sluice pipeline is given); later -X win.
#include <simdjson.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "kafka_raw_loop: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  std::string mode, brokers, in, out, topic;
  int64_t count = 0, size = 100, rate = 0, timeout_s = 120;
  bool stop_at_end = false;
  bool assign = false;          // loop: the group API's assign() instead of per-partition queues
  bool payload_only = false;    // loop: forward key and payload only (no headers, timestamp)
  bool json_aggregate = false;  // loop: parse, filter, sum per user (issue 20)
  bool json = false;            // produce: JSON events as payloads
  std::vector<std::pair<std::string, std::string>> props;
};

Options parse(int argc, char** argv) {
  if (argc < 2) die("usage: kafka_raw_loop loop|produce|measure --brokers B ...");
  Options o;
  o.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value after " + std::string(a));
      return argv[++i];
    };
    if (a == "--brokers") {
      o.brokers = value();
    } else if (a == "--in") {
      o.in = value();
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--topic") {
      o.topic = value();
    } else if (a == "--count") {
      o.count = std::atoll(value().c_str());
    } else if (a == "--size") {
      o.size = std::max<int64_t>(16, std::atoll(value().c_str()));
    } else if (a == "--rate") {
      o.rate = std::atoll(value().c_str());
    } else if (a == "--timeout-s") {
      o.timeout_s = std::atoll(value().c_str());
    } else if (a == "--stop-at-end") {
      o.stop_at_end = true;
    } else if (a == "--assign") {
      o.assign = true;
    } else if (a == "--payload-only") {
      o.payload_only = true;
    } else if (a == "--json-aggregate") {
      o.json_aggregate = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "-X") {
      std::string kv = value();
      size_t eq = kv.find('=');
      if (eq == std::string::npos) die("-X wants key=value, got " + kv);
      o.props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      die("unknown argument " + std::string(a));
    }
  }
  if (o.brokers.empty()) die("--brokers is required");
  return o;
}

void set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    die("config " + key + "=" + value + ": " + err);
  }
}

rd_kafka_t* make_client(rd_kafka_type_t type, const Options& o,
                        const std::vector<std::pair<std::string, std::string>>& defaults) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", o.brokers);
  for (const auto& [k, v] : defaults) set(conf, k, v);
  for (const auto& [k, v] : o.props) {
    // A property meant for the other client type is ignored quietly, as the same -X list
    // goes to both (librdkafka only warns on the wrong type).
    set(conf, k, v);
  }
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) die(std::string("rd_kafka_new: ") + err);
  return rk;
}

// The partitions of `topic` (waits for its metadata); the caller destroys the list.
rd_kafka_topic_partition_list_t* all_partitions(rd_kafka_t* consumer, const std::string& topic) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(consumer, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (rd_kafka_metadata(consumer, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
        md->topics[0].partition_cnt > 0) {
      break;
    }
    if (md) rd_kafka_metadata_destroy(md);
    md = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  rd_kafka_topic_destroy(t);
  if (!md) die("no metadata for topic " + topic);
  const int partitions = md->topics[0].partition_cnt;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), md->topics[0].partitions[p].id)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_metadata_destroy(md);
  return list;
}

// Assigns every partition of `topic` from the beginning; returns the partition count.
int assign_all(rd_kafka_t* consumer, const std::string& topic) {
  rd_kafka_topic_partition_list_t* list = all_partitions(consumer, topic);
  const int partitions = list->cnt;
  if (rd_kafka_assign(consumer, list) != RD_KAFKA_RESP_ERR_NO_ERROR) die("assign failed");
  rd_kafka_topic_partition_list_destroy(list);
  return partitions;
}

// As sluice's from_kafka without a group: every partition of `topic` started from the
// beginning on one queue with the partition consumer API (no group.id). Returns the count.
int start_all(rd_kafka_t* consumer, const std::string& topic, rd_kafka_queue_t* queue,
              rd_kafka_topic_t** rkt) {
  rd_kafka_topic_partition_list_t* list = all_partitions(consumer, topic);
  const int partitions = list->cnt;
  *rkt = rd_kafka_topic_new(consumer, topic.c_str(), nullptr);
  for (int i = 0; i < list->cnt; ++i) {
    if (rd_kafka_consume_start_queue(*rkt, list->elems[i].partition, RD_KAFKA_OFFSET_BEGINNING,
                                     queue) != 0) {
      die("consume_start_queue failed");
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  return partitions;
}

std::atomic<int64_t> g_delivery_errors{0};
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err) g_delivery_errors.fetch_add(1);
}

// Produces one message, waiting (polling delivery reports) while the local queue is full.
void produce(rd_kafka_t* producer, rd_kafka_topic_t* topic, const void* payload, size_t len,
             const void* key, size_t key_len) {
  for (;;) {
    if (rd_kafka_produce(topic, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                         const_cast<void*>(payload), len, key, key_len, nullptr) == 0) {
      return;
    }
    if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      die(std::string("produce: ") + rd_kafka_err2str(rd_kafka_last_error()));
    }
    rd_kafka_poll(producer, 10);
  }
}

// Forwards consumed message `m` as sluice's from_kafka -> to_kafka does: payload and key
// copied, its headers (copied) and its timestamp kept. Waits while the local queue is full.
void forward(rd_kafka_t* producer, rd_kafka_topic_t* topic, const rd_kafka_message_t* m) {
  rd_kafka_headers_t* hdrs = nullptr;
  rd_kafka_headers_t* copy = nullptr;
  if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    copy = rd_kafka_headers_copy(hdrs);
  }
  rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ts = rd_kafka_message_timestamp(m, &ts_type);
  rd_kafka_vu_t vu[6];
  size_t n = 0;
  vu[n].vtype = RD_KAFKA_VTYPE_RKT;
  vu[n++].u.rkt = topic;
  vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[n].u.mem.ptr = m->payload;
  vu[n++].u.mem.size = m->len;
  vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
  if (m->key != nullptr) {
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;
    vu[n].u.mem.ptr = m->key;
    vu[n++].u.mem.size = m->key_len;
  }
  if (ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts > 0) {
    vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vu[n++].u.i64 = ts;
  }
  if (copy != nullptr) {
    vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;  // librdkafka owns them once produced
    vu[n++].u.headers = copy;
  }
  for (;;) {
    rd_kafka_error_t* e = rd_kafka_produceva(producer, vu, n);
    if (e == nullptr) return;
    const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    const std::string text = rd_kafka_error_string(e);
    rd_kafka_error_destroy(e);
    if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce: " + text);
    rd_kafka_poll(producer, 10);
  }
}

// Issue 20's JSON pipeline by hand: parse, keep amount > 50, sum amount per user, produce
// key = user, value = the new sum. An event without an int amount or a string user, or
// invalid JSON, is skipped (sluiced's json_parse would fail it; the bench's input has none).
class JsonAggregate {
 public:
  void process(rd_kafka_t* producer, rd_kafka_topic_t* out, const rd_kafka_message_t* m) {
    // On-Demand reads past the end by up to SIMDJSON_PADDING bytes: copy into a padded buffer.
    if (padded_.size() < m->len + simdjson::SIMDJSON_PADDING) {
      padded_.resize(m->len + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(padded_.data(), m->payload, m->len);
    simdjson::ondemand::document doc;
    if (parser_.iterate(padded_.data(), m->len, padded_.size()).get(doc)) return;
    simdjson::ondemand::object event;
    if (doc.get_object().get(event)) return;
    int64_t amount = 0;
    std::string_view user;
    bool has_amount = false, has_user = false;
    for (auto field : event) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return;
      if (key == "amount") {
        if (field.value().get_int64().get(amount)) return;
        has_amount = true;
      } else if (key == "user") {
        if (field.value().get_string().get(user)) return;
        has_user = true;
      }
    }
    if (!has_amount || !has_user || amount <= 50) return;
    auto it = sums_.find(user);
    if (it == sums_.end()) it = sums_.emplace(std::string(user), 0).first;
    it->second += amount;
    char text[24];
    const auto len = static_cast<size_t>(
        std::snprintf(text, sizeof text, "%lld", static_cast<long long>(it->second)));
    produce(producer, out, text, len, it->first.data(), it->first.size());
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  simdjson::ondemand::parser parser_;
  std::string padded_;
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> sums_;
};

int run_loop(const Options& o) {
  if (o.in.empty() || o.out.empty()) die("loop needs --in and --out");
  // The same client settings as the sluice pipeline (from_kafka / to_kafka defaults). Without
  // --assign, the same consumer API as from_kafka without group_id: per-partition queues
  // forwarded to one queue, no group.id; with --assign, the group API's assign() (one
  // consumer queue), as from_kafka with a group_id reads. Either way librdkafka counts the
  // queued.* thresholds against the one shared queue.
  std::vector<std::pair<std::string, std::string>> consumer_conf = {
      {"enable.auto.commit", "false"},
      {"enable.partition.eof", o.stop_at_end ? "true" : "false"},
      {"queued.max.messages.kbytes", "65536"},
      {"queued.min.messages", "1000000"},
      {"fetch.wait.max.ms", "10"}};
  if (o.assign) consumer_conf.emplace_back("group.id", "kafka_raw_loop");  // required by assign
  rd_kafka_t* consumer = make_client(RD_KAFKA_CONSUMER, o, consumer_conf);
  Options po = o;
  po.props.clear();
  for (const auto& kv : o.props) {
    if (kv.first.rfind("fetch.", 0) != 0 && kv.first.rfind("queued.", 0) != 0) {
      po.props.push_back(kv);
    }
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", o.brokers);
  set(conf, "enable.idempotence", "true");
  for (const auto& [k, v] : po.props) set(conf, k, v);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  char err[512];
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!producer) die(std::string("producer: ") + err);
  rd_kafka_topic_t* out = rd_kafka_topic_new(producer, o.out.c_str(), nullptr);

  rd_kafka_queue_t* queue = nullptr;
  rd_kafka_topic_t* in = nullptr;
  int partitions = 0;
  if (o.assign) {
    partitions = assign_all(consumer, o.in);
  } else {
    queue = rd_kafka_queue_new(consumer);
    partitions = start_all(consumer, o.in, queue, &in);
  }
  int at_end = 0;
  int64_t moved = 0;
  JsonAggregate aggregate;
  const int64_t start = now_us();
  while (!g_stop) {
    rd_kafka_message_t* m =
        o.assign ? rd_kafka_consumer_poll(consumer, 100) : rd_kafka_consume_queue(queue, 100);
    rd_kafka_poll(producer, 0);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(m);
      if (++at_end == partitions) break;
      continue;
    }
    if (m->err) {
      std::fprintf(stderr, "kafka_raw_loop: consume: %s\n", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    if (o.json_aggregate) {
      aggregate.process(producer, out, m);
    } else if (o.payload_only) {
      produce(producer, out, m->payload, m->len, m->key, m->key_len);
    } else {
      forward(producer, out, m);
    }
    ++moved;
    rd_kafka_message_destroy(m);
  }
  rd_kafka_flush(producer, 60000);
  const double seconds = static_cast<double>(now_us() - start) / 1e6;
  std::printf("{\"moved\": %lld, \"seconds\": %.3f, \"delivery_errors\": %lld}\n",
              static_cast<long long>(moved), seconds,
              static_cast<long long>(g_delivery_errors.load()));
  rd_kafka_topic_destroy(out);
  rd_kafka_destroy(producer);
  if (o.assign) {
    rd_kafka_consumer_close(consumer);
  } else {
    for (int p = 0; p < partitions; ++p) rd_kafka_consume_stop(in, p);
    rd_kafka_queue_destroy(queue);
    rd_kafka_topic_destroy(in);
  }
  rd_kafka_destroy(consumer);
  return g_delivery_errors.load() == 0 ? 0 : 1;
}

int run_produce(const Options& o) {
  if (o.topic.empty() || o.count <= 0) die("produce needs --topic and --count");
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", o.brokers);
  set(conf, "linger.ms", "5");
  set(conf, "queue.buffering.max.messages", "1000000");
  for (const auto& [k, v] : o.props) set(conf, k, v);
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  char err[512];
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!producer) die(std::string("producer: ") + err);
  rd_kafka_topic_t* topic = rd_kafka_topic_new(producer, o.topic.c_str(), nullptr);
  std::string payload(static_cast<size_t>(o.size), 'x');
  const int64_t start = now_us();
  uint64_t rng = 20;  // --json: a fixed xorshift sequence, so every run produces the same events
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  static constexpr const char* k_tags[] = {"web", "mobile", "api", "batch"};
  for (int64_t i = 0; i < o.count && !g_stop; ++i) {
    if (o.rate > 0) {  // paced: message i is due at start + i / rate
      const int64_t due = start + i * 1'000'000 / o.rate;
      int64_t now = now_us();
      while (now < due) {
        rd_kafka_poll(producer, 0);
        std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(due - now, 500)));
        now = now_us();
      }
    }
    std::string key;
    if (o.json) {
      // Keyed by user, as a keyed topic is: each user's events in one partition, in order.
      const auto user = static_cast<int>(next() % 1000);
      const auto amount = static_cast<int>(next() % 100);
      const char* tag1 = k_tags[next() % 4];
      const char* tag2 = k_tags[next() % 4];
      const bool ok = next() % 10 != 0;
      char event[256];
      const int len = std::snprintf(
          event, sizeof event,
          R"({"id":%lld,"ts":%lld,"user":"user%04d","amount":%d,"currency":"EUR",)"
          R"("tags":["%s","%s"],"ok":%s})",
          static_cast<long long>(i), static_cast<long long>(1'700'000'000'000 + i * 17), user,
          amount, tag1, tag2, ok ? "true" : "false");
      payload.assign(event, static_cast<size_t>(len));
      char name[16];
      std::snprintf(name, sizeof name, "user%04d", user);
      key = name;
    } else {
      char stamp[32];
      std::snprintf(stamp, sizeof stamp, "%016lld", static_cast<long long>(now_us()));
      std::memcpy(payload.data(), stamp, 16);
      key = std::to_string(i);
    }
    produce(producer, topic, payload.data(), payload.size(), key.data(), key.size());
    if ((i & 255) == 0) rd_kafka_poll(producer, 0);
  }
  rd_kafka_flush(producer, 60000);
  const double seconds = static_cast<double>(now_us() - start) / 1e6;
  std::printf("{\"produced\": %lld, \"seconds\": %.3f, \"delivery_errors\": %lld}\n",
              static_cast<long long>(o.count), seconds,
              static_cast<long long>(g_delivery_errors.load()));
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(producer);
  return g_delivery_errors.load() == 0 ? 0 : 1;
}

int run_measure(const Options& o) {
  if (o.topic.empty() || o.count <= 0) die("measure needs --topic and --count");
  rd_kafka_t* consumer = make_client(RD_KAFKA_CONSUMER, o,
                                     {{"group.id", "kafka_raw_loop_measure"},
                                      {"enable.auto.commit", "false"},
                                      {"fetch.wait.max.ms", "10"}});
  assign_all(consumer, o.topic);
  std::vector<int64_t> latency_us;
  latency_us.reserve(static_cast<size_t>(o.count));
  int64_t first = 0, last = 0;
  const int64_t deadline = now_us() + o.timeout_s * 1'000'000;
  while (!g_stop && static_cast<int64_t>(latency_us.size()) < o.count && now_us() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
    if (!m) continue;
    if (!m->err && m->len >= 16) {
      const int64_t now = now_us();
      char ts[17];
      std::memcpy(ts, m->payload, 16);
      ts[16] = 0;
      latency_us.push_back(now - std::atoll(ts));
      if (!first) first = now;
      last = now;
    }
    rd_kafka_message_destroy(m);
  }
  std::sort(latency_us.begin(), latency_us.end());
  auto pct = [&](double q) {
    if (latency_us.empty()) return 0.0;
    size_t i = std::min(latency_us.size() - 1, static_cast<size_t>(q * latency_us.size()));
    return static_cast<double>(latency_us[i]) / 1000.0;
  };
  const double span = static_cast<double>(last - first) / 1e6;
  std::printf(
      "{\"received\": %zu, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, "
      "\"receive_seconds\": %.3f, \"first_us\": %lld, \"last_us\": %lld}\n",
      latency_us.size(), pct(0.50), pct(0.99), pct(1.0), span, static_cast<long long>(first),
      static_cast<long long>(last));
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  return static_cast<int64_t>(latency_us.size()) == o.count ? 0 : 1;
}

int run_sums(const Options& o) {
  if (o.topic.empty()) die("sums needs --topic");
  rd_kafka_t* consumer = make_client(
      RD_KAFKA_CONSUMER, o, {{"enable.partition.eof", "true"}, {"fetch.wait.max.ms", "10"}});
  rd_kafka_queue_t* queue = rd_kafka_queue_new(consumer);
  rd_kafka_topic_t* t = nullptr;
  const int partitions = start_all(consumer, o.topic, queue, &t);
  std::unordered_map<std::string, std::string> last;
  int64_t count = 0;
  int at_end = 0;
  const int64_t deadline = now_us() + o.timeout_s * 1'000'000;
  while (!g_stop && at_end < partitions && now_us() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consume_queue(queue, 100);
    if (!m) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end;
    } else if (!m->err) {
      ++count;
      last[std::string(static_cast<const char*>(m->key), m->key_len)] =
          std::string(static_cast<const char*>(m->payload), m->len);
    }
    rd_kafka_message_destroy(m);
  }
  std::vector<std::pair<std::string, std::string>> sorted(last.begin(), last.end());
  std::sort(sorted.begin(), sorted.end());
  std::string out = "{\"count\": " + std::to_string(count) + ", \"last\": {";
  for (size_t i = 0; i < sorted.size(); ++i) {
    out += (i ? ", \"" : "\"") + sorted[i].first + "\": \"" + sorted[i].second + "\"";
  }
  std::printf("%s}}\n", out.c_str());
  for (int p = 0; p < partitions; ++p) rd_kafka_consume_stop(t, p);
  rd_kafka_queue_destroy(queue);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(consumer);
  return at_end == partitions ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  const Options o = parse(argc, argv);
  if (o.mode == "loop") return run_loop(o);
  if (o.mode == "produce") return run_produce(o);
  if (o.mode == "measure") return run_measure(o);
  if (o.mode == "sums") return run_sums(o);
  die("unknown mode " + o.mode + " (loop, produce, measure, sums)");
}
