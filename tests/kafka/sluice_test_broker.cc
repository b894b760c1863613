// sluice_test_broker: librdkafka's mock Kafka cluster as a process of its own, driven by a
// line protocol on stdin, for the Kafka integration tests (tests/kafka/kafka_it.py).
//
//   sluice_test_broker [--brokers N] [--topic NAME:PARTITIONS[:REPLICATION]]...
//
// The first line on stdout is the bootstrap address (host:port,...). Then every line read
// on stdin is one command and gets exactly one answer line, "ok[ DATA]" or "error TEXT":
//
//   ping                              ok
//   down BROKER_ID | up BROKER_ID     take a broker down (disconnects, refuses connections;
//                                     the partitions it leads stay led by it) / back up
//   rtt BROKER_ID MS                  add MS of round-trip delay to a broker's responses
//   topic NAME PARTITIONS [REPL]      create a topic (replication defaults to min(3, N))
//   leader TOPIC PARTITION BROKER_ID  move a partition's leadership (-1: no leader)
//   coordinator group|transaction KEY BROKER_ID
//                                     make a broker the coordinator of a group / txn id
//   error APIKEY ERR [COUNT]          the next COUNT (default 1) requests of protocol type
//                                     APIKEY (e.g. 0 = Produce, 1 = Fetch, 8 = OffsetCommit)
//                                     fail with ERR (a number, or a name without the
//                                     RD_KAFKA_RESP_ERR_ prefix: NOT_LEADER_FOR_PARTITION,
//                                     _TRANSPORT, ...)
//   clear APIKEY                      drop the pending errors of APIKEY
//   partitions TOPIC                  ok P                (error when the topic is unknown)
//   watermarks TOPIC                  ok 0=LOW:HIGH 1=LOW:HIGH ...
//   offsets GROUP TOPIC               ok 0=OFFSET 1=OFFSET ... the group's committed offsets
//                                     (-1001 = nothing committed)
//
// It exits 0 on EOF of stdin, SIGTERM or SIGINT. librdkafka's own log lines go to stderr.
//
// A second mode is a client for any cluster, for tests against a real one (kcat cannot
// abort a transaction after its records were sent):
//
//   sluice_test_broker --txn-produce BOOTSTRAP TOPIC PARTITION commit|abort
//
// produces each line of stdin as one record to TOPIC [PARTITION] inside one transaction,
// flushes (the records are in the log), then commits or aborts it; exits 0 on success.
//
// A third mode produces records with explicit timestamps (kcat cannot set them), to any
// cluster, with an idempotent producer:
//
//   sluice_test_broker --produce BOOTSTRAP TOPIC
//
// reads lines "PARTITION<TAB>TIMESTAMP_MS<TAB>KEY<TAB>VALUE" (an empty KEY: no key) and
// produces each as one record, in order; exits 0 once every record is delivered.
//
// Facts about the mock (librdkafka 2.0.2) that the tests must respect: random loopback
// ports only; no Admin API (CreateTopics hangs: use `topic`); it auto-creates any topic
// named in a metadata request; a topic's partition count cannot grow; it keeps at most
// 5 MiB per partition (older data is dropped silently); each group rebalance takes about
// session.timeout.ms - 1 s; commits are refused during an eager rebalance; no
// transaction markers / read_committed.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

struct rk_deleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
struct mock_deleter {
  void operator()(rd_kafka_mock_cluster_t* m) const { rd_kafka_mock_cluster_destroy(m); }
};
struct conf_deleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};
struct tpl_deleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
struct metadata_deleter {
  void operator()(const rd_kafka_metadata_t* m) const { rd_kafka_metadata_destroy(m); }
};

using rk_ptr = std::unique_ptr<rd_kafka_t, rk_deleter>;
using mock_ptr = std::unique_ptr<rd_kafka_mock_cluster_t, mock_deleter>;
using conf_ptr = std::unique_ptr<rd_kafka_conf_t, conf_deleter>;
using tpl_ptr = std::unique_ptr<rd_kafka_topic_partition_list_t, tpl_deleter>;
using metadata_ptr = std::unique_ptr<const rd_kafka_metadata_t, metadata_deleter>;

// A command's outcome: the answer line without its newline.
struct answer {
  std::string line;
};

answer ok(std::string data = {}) { return {data.empty() ? "ok" : "ok " + data}; }
answer error(std::string text) { return {"error " + text}; }

std::optional<long> parse_long(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(copy.c_str(), &end, 10);
  if (errno != 0 || end == copy.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Sets `key` = `value` on `conf`; returns the error text or an empty string.
std::string conf_set(rd_kafka_conf_t* conf, const char* key, const std::string& value) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, key, value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
    return std::string(key) + ": " + errstr;
  return {};
}

// An error code from a number or a name (without the RD_KAFKA_RESP_ERR_ prefix).
std::optional<rd_kafka_resp_err_t> parse_error_code(const std::string& s) {
  if (auto n = parse_long(s)) return static_cast<rd_kafka_resp_err_t>(*n);
  const rd_kafka_err_desc* descs = nullptr;
  size_t cnt = 0;
  rd_kafka_get_err_descs(&descs, &cnt);
  for (size_t i = 0; i < cnt; ++i) {
    if (descs[i].name != nullptr && s == descs[i].name) return descs[i].code;
  }
  return std::nullopt;
}

class test_broker {
 public:
  test_broker(rk_ptr host, mock_ptr cluster, int broker_count)
      : host_(std::move(host)),
        cluster_(std::move(cluster)),
        broker_count_(broker_count),
        bootstraps_(rd_kafka_mock_cluster_bootstraps(cluster_.get())) {}

  ~test_broker() {
    // The client must go before the cluster it talks to, the cluster before its host.
    client_.reset();
    cluster_.reset();
    host_.reset();
  }

  test_broker(const test_broker&) = delete;
  test_broker& operator=(const test_broker&) = delete;

  const std::string& bootstraps() const { return bootstraps_; }

  std::string create_topic(const std::string& name, int partitions, int replication) {
    if (replication <= 0) replication = std::min(3, broker_count_);
    rd_kafka_resp_err_t err =
        rd_kafka_mock_topic_create(cluster_.get(), name.c_str(), partitions, replication);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return "topic " + name + ": " + rd_kafka_err2str(err);
    return {};
  }

  answer execute(const std::string& line) {
    std::vector<std::string> w = split_words(line);
    if (w.empty()) return error("empty command");
    const std::string& cmd = w[0];
    if (cmd == "ping") return ok();
    if (cmd == "down" || cmd == "up") return broker_state(w);
    if (cmd == "rtt") return broker_rtt(w);
    if (cmd == "topic") return topic(w);
    if (cmd == "leader") return leader(w);
    if (cmd == "coordinator") return coordinator(w);
    if (cmd == "error") return push_error(w);
    if (cmd == "clear") return clear_errors(w);
    if (cmd == "partitions") return partitions(w);
    if (cmd == "watermarks") return watermarks(w);
    if (cmd == "offsets") return offsets(w);
    return error("unknown command '" + cmd +
                 "' (ping, down, up, rtt, topic, leader, coordinator, error, clear, partitions, "
                 "watermarks, offsets)");
  }

 private:
  std::optional<int32_t> broker_id(const std::string& s) const {
    auto id = parse_long(s);
    if (!id || *id < -1 || *id > broker_count_ || *id == 0) return std::nullopt;
    return static_cast<int32_t>(*id);
  }

  answer broker_state(const std::vector<std::string>& w) {
    if (w.size() != 2) return error("usage: " + w[0] + " BROKER_ID");
    auto id = broker_id(w[1]);
    if (!id)
      return error("no broker '" + w[1] + "' (ids are 1.." + std::to_string(broker_count_) +
                   ", or -1 for all)");
    rd_kafka_resp_err_t err = w[0] == "down" ? rd_kafka_mock_broker_set_down(cluster_.get(), *id)
                                             : rd_kafka_mock_broker_set_up(cluster_.get(), *id);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return error(rd_kafka_err2str(err));
    for (int32_t b = 1; b <= broker_count_; ++b) {
      if (*id == -1 || *id == b) down_[static_cast<size_t>(b)] = w[0] == "down";
    }
    return ok();
  }

  bool is_down(int32_t broker) const {
    return broker >= 1 && broker <= broker_count_ && down_[static_cast<size_t>(broker)];
  }

  answer broker_rtt(const std::vector<std::string>& w) {
    if (w.size() != 3) return error("usage: rtt BROKER_ID MS");
    auto id = broker_id(w[1]);
    auto ms = parse_long(w[2]);
    if (!id || !ms || *ms < 0) return error("usage: rtt BROKER_ID MS");
    rd_kafka_resp_err_t err =
        rd_kafka_mock_broker_set_rtt(cluster_.get(), *id, static_cast<int>(*ms));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return error(rd_kafka_err2str(err));
    return ok();
  }

  answer topic(const std::vector<std::string>& w) {
    if (w.size() != 3 && w.size() != 4) return error("usage: topic NAME PARTITIONS [REPLICATION]");
    auto parts = parse_long(w[2]);
    auto repl = w.size() == 4 ? parse_long(w[3]) : std::optional<long>(0);
    if (!parts || *parts < 1 || !repl || *repl < 0)
      return error("usage: topic NAME PARTITIONS [REPLICATION]");
    std::string err = create_topic(w[1], static_cast<int>(*parts), static_cast<int>(*repl));
    if (!err.empty()) return error(err);
    return ok();
  }

  answer leader(const std::vector<std::string>& w) {
    if (w.size() != 4) return error("usage: leader TOPIC PARTITION BROKER_ID");
    auto part = parse_long(w[2]);
    auto id = broker_id(w[3]);
    if (!part || *part < 0 || !id) return error("usage: leader TOPIC PARTITION BROKER_ID");
    rd_kafka_resp_err_t err = rd_kafka_mock_partition_set_leader(cluster_.get(), w[1].c_str(),
                                                                 static_cast<int32_t>(*part), *id);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return error(rd_kafka_err2str(err));
    return ok();
  }

  answer coordinator(const std::vector<std::string>& w) {
    if (w.size() != 4 || (w[1] != "group" && w[1] != "transaction"))
      return error("usage: coordinator group|transaction KEY BROKER_ID");
    auto id = broker_id(w[3]);
    if (!id || *id < 1) return error("usage: coordinator group|transaction KEY BROKER_ID");
    rd_kafka_resp_err_t err =
        rd_kafka_mock_coordinator_set(cluster_.get(), w[1].c_str(), w[2].c_str(), *id);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return error(rd_kafka_err2str(err));
    return ok();
  }

  answer push_error(const std::vector<std::string>& w) {
    if (w.size() != 3 && w.size() != 4) return error("usage: error APIKEY ERR [COUNT]");
    auto api = parse_long(w[1]);
    auto code = parse_error_code(w[2]);
    auto count = w.size() == 4 ? parse_long(w[3]) : std::optional<long>(1);
    if (!api || *api < 0 || *api > 32767) return error("APIKEY must be a protocol request type");
    if (!code) return error("unknown error code '" + w[2] + "'");
    if (!count || *count < 1 || *count > 100000) return error("COUNT must be 1..100000");
    std::vector<rd_kafka_resp_err_t> errs(static_cast<size_t>(*count), *code);
    rd_kafka_mock_push_request_errors_array(cluster_.get(), static_cast<int16_t>(*api), errs.size(),
                                            errs.data());
    return ok();
  }

  answer clear_errors(const std::vector<std::string>& w) {
    auto api = w.size() == 2 ? parse_long(w[1]) : std::nullopt;
    if (!api || *api < 0 || *api > 32767) return error("usage: clear APIKEY");
    rd_kafka_mock_clear_request_errors(cluster_.get(), static_cast<int16_t>(*api));
    return ok();
  }

  // A plain client of the mock (created on first use), for metadata and watermarks.
  rd_kafka_t* client(std::string& err) {
    if (!client_) client_ = make_client(nullptr, err);
    return client_.get();
  }

  // A new client of the mock; with `group`, a consumer of that group (never subscribed).
  rk_ptr make_client(const char* group, std::string& err) const {
    conf_ptr conf(rd_kafka_conf_new());
    err = conf_set(conf.get(), "bootstrap.servers", bootstraps_);
    if (err.empty()) err = conf_set(conf.get(), "allow.auto.create.topics", "false");
    // Requests to a broker that is down wait for socket.timeout.ms (60 s by default), not
    // for the call's own timeout: keep every answer within a few seconds.
    if (err.empty()) err = conf_set(conf.get(), "socket.timeout.ms", std::to_string(k_timeout_ms));
    if (err.empty() && group != nullptr) err = conf_set(conf.get(), "group.id", group);
    if (err.empty() && group != nullptr) err = conf_set(conf.get(), "enable.auto.commit", "false");
    if (!err.empty()) return nullptr;
    char errstr[512];
    rd_kafka_t* rk = rd_kafka_new(group != nullptr ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER,
                                  conf.get(), errstr, sizeof errstr);
    if (rk == nullptr) {
      err = errstr;
      return nullptr;
    }
    conf.release();  // rd_kafka_new took it
    return rk_ptr(rk);
  }

  // The partition count of an existing topic (metadata for all topics: asking for one
  // topic by name would make the mock create it).
  // The leader of each partition of an existing topic (metadata for all topics: asking for
  // one topic by name would make the mock create it).
  std::optional<std::vector<int32_t>> partition_leaders(rd_kafka_t* rk, const std::string& topic,
                                                        std::string& err) {
    const rd_kafka_metadata_t* raw = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &raw, k_timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      err = std::string("metadata: ") + rd_kafka_err2str(e);
      return std::nullopt;
    }
    metadata_ptr md(raw);
    for (int i = 0; i < md->topic_cnt; ++i) {
      const rd_kafka_metadata_topic_t& t = md->topics[i];
      if (topic != t.topic) continue;
      if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        err = "topic " + topic + ": " + rd_kafka_err2str(t.err);
        return std::nullopt;
      }
      std::vector<int32_t> leaders(static_cast<size_t>(t.partition_cnt), -1);
      for (int k = 0; k < t.partition_cnt; ++k) {
        const rd_kafka_metadata_partition_t& mp = t.partitions[k];
        if (mp.id >= 0 && mp.id < t.partition_cnt) leaders[static_cast<size_t>(mp.id)] = mp.leader;
      }
      return leaders;
    }
    err = "unknown topic '" + topic + "'";
    return std::nullopt;
  }

  std::optional<int> partition_count(rd_kafka_t* rk, const std::string& topic, std::string& err) {
    auto leaders = partition_leaders(rk, topic, err);
    if (!leaders) return std::nullopt;
    return static_cast<int>(leaders->size());
  }

  answer partitions(const std::vector<std::string>& w) {
    if (w.size() != 2) return error("usage: partitions TOPIC");
    std::string err;
    rd_kafka_t* rk = client(err);
    if (rk == nullptr) return error(err);
    auto n = partition_count(rk, w[1], err);
    if (!n) return error(err);
    return ok(std::to_string(*n));
  }

  answer watermarks(const std::vector<std::string>& w) {
    if (w.size() != 2) return error("usage: watermarks TOPIC");
    std::string err;
    rd_kafka_t* rk = client(err);
    if (rk == nullptr) return error(err);
    auto leaders = partition_leaders(rk, w[1], err);
    if (!leaders) return error(err);
    // librdkafka 2.0.2's query_watermark_offsets ignores its timeout while the leader is
    // unreachable (it blocks for minutes): answer at once instead.
    for (size_t p = 0; p < leaders->size(); ++p) {
      if (is_down((*leaders)[p]))
        return error("partition " + std::to_string(p) + ": its leader, broker " +
                     std::to_string((*leaders)[p]) + ", is down");
    }
    const int n = static_cast<int>(leaders->size());
    std::string out;
    for (int p = 0; p < n; ++p) {
      int64_t low = 0, high = 0;
      rd_kafka_resp_err_t e =
          rd_kafka_query_watermark_offsets(rk, w[1].c_str(), p, &low, &high, k_timeout_ms);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return error("partition " + std::to_string(p) + ": " + rd_kafka_err2str(e));
      if (!out.empty()) out += ' ';
      out += std::to_string(p) + "=" + std::to_string(low) + ":" + std::to_string(high);
    }
    return ok(out);
  }

  answer offsets(const std::vector<std::string>& w) {
    if (w.size() != 3) return error("usage: offsets GROUP TOPIC");
    std::string err;
    rd_kafka_t* rk = client(err);
    if (rk == nullptr) return error(err);
    auto n = partition_count(rk, w[2], err);
    if (!n) return error(err);
    rk_ptr consumer = make_client(w[1].c_str(), err);
    if (!consumer) return error(err);
    tpl_ptr list(rd_kafka_topic_partition_list_new(*n));
    for (int p = 0; p < *n; ++p) rd_kafka_topic_partition_list_add(list.get(), w[2].c_str(), p);
    rd_kafka_resp_err_t e = rd_kafka_committed(consumer.get(), list.get(), k_timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return error(std::string("committed: ") + rd_kafka_err2str(e));
    std::string out;
    for (int i = 0; i < list->cnt; ++i) {
      const rd_kafka_topic_partition_t& tp = list->elems[i];
      if (tp.err != RD_KAFKA_RESP_ERR_NO_ERROR)
        return error("partition " + std::to_string(tp.partition) + ": " + rd_kafka_err2str(tp.err));
      if (!out.empty()) out += ' ';
      out += std::to_string(tp.partition) + "=" + std::to_string(tp.offset);
    }
    rd_kafka_consumer_close(consumer.get());
    return ok(out);
  }

  static constexpr int k_timeout_ms = 5000;

  rk_ptr host_;
  mock_ptr cluster_;
  int broker_count_;
  std::vector<bool> down_ = std::vector<bool>(static_cast<size_t>(broker_count_) + 1, false);
  std::string bootstraps_;
  rk_ptr client_;
};

// A producer from `conf` (taken: librdkafka owns it once rd_kafka_new succeeds), or null after
// printing why.
rk_ptr new_producer(conf_ptr conf) {
  char errstr[512];
  rk_ptr rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr));
  if (!rk) {
    std::fprintf(stderr, "sluice_test_broker: rd_kafka_new: %s\n", errstr);
    return rk;
  }
  conf.release();
  return rk;
}

// --txn-produce: see the comment at the top of this file.
int txn_produce(const std::string& bootstrap, const std::string& topic, int32_t partition,
                bool commit) {
  constexpr int k_txn_timeout_ms = 30000;
  conf_ptr conf(rd_kafka_conf_new());
  std::string err = conf_set(conf.get(), "bootstrap.servers", bootstrap);
  if (err.empty()) {
    char id[64];
    std::snprintf(id, sizeof id, "sluice-test-txn-%ld", static_cast<long>(::getpid()));
    err = conf_set(conf.get(), "transactional.id", id);
  }
  if (!err.empty()) {
    std::fprintf(stderr, "sluice_test_broker: %s\n", err.c_str());
    return 1;
  }
  rk_ptr rk = new_producer(std::move(conf));
  if (!rk) return 1;
  auto check = [](rd_kafka_error_t* e, const char* what) {
    if (e == nullptr) return true;
    std::fprintf(stderr, "sluice_test_broker: %s: %s\n", what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return false;
  };
  if (!check(rd_kafka_init_transactions(rk.get(), k_txn_timeout_ms), "init_transactions") ||
      !check(rd_kafka_begin_transaction(rk.get()), "begin_transaction"))
    return 1;
  std::unique_ptr<rd_kafka_topic_t, decltype(&rd_kafka_topic_destroy)> rkt(
      rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr), &rd_kafka_topic_destroy);
  char line[65536];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    size_t len = std::strlen(line);
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    // rd_kafka_produce rather than producev: the RD_KAFKA_V_* macros use C casts.
    if (rd_kafka_produce(rkt.get(), partition, RD_KAFKA_MSG_F_COPY, line, len, nullptr, 0,
                         nullptr) != 0) {
      std::fprintf(stderr, "sluice_test_broker: produce: %s\n",
                   rd_kafka_err2str(rd_kafka_last_error()));
      return 1;
    }
  }
  // Every record is written to the log (inside the open transaction) before the decision.
  rd_kafka_resp_err_t e = rd_kafka_flush(rk.get(), k_txn_timeout_ms);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::fprintf(stderr, "sluice_test_broker: flush: %s\n", rd_kafka_err2str(e));
    return 1;
  }
  if (commit ? !check(rd_kafka_commit_transaction(rk.get(), k_txn_timeout_ms), "commit")
             : !check(rd_kafka_abort_transaction(rk.get(), k_txn_timeout_ms), "abort"))
    return 1;
  return 0;
}

// --produce: see the comment at the top of this file.
int produce_timestamped(const std::string& bootstrap, const std::string& topic) {
  constexpr int k_flush_timeout_ms = 30000;
  conf_ptr conf(rd_kafka_conf_new());
  std::string err = conf_set(conf.get(), "bootstrap.servers", bootstrap);
  if (err.empty()) err = conf_set(conf.get(), "enable.idempotence", "true");
  if (err.empty()) err = conf_set(conf.get(), "linger.ms", "5");
  if (!err.empty()) {
    std::fprintf(stderr, "sluice_test_broker: %s\n", err.c_str());
    return 1;
  }
  rk_ptr rk = new_producer(std::move(conf));
  if (!rk) return 1;
  char line[65536];
  for (long n = 1; std::fgets(line, sizeof line, stdin) != nullptr; ++n) {
    std::string text(line);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty()) continue;
    // PARTITION, TIMESTAMP_MS, KEY: the first three tab-separated fields; the rest is VALUE.
    std::string fields[3];
    size_t pos = 0;
    bool ok_line = true;
    for (std::string& f : fields) {
      const size_t tab = text.find('\t', pos);
      if (tab == std::string::npos) {
        ok_line = false;
        break;
      }
      f = text.substr(pos, tab - pos);
      pos = tab + 1;
    }
    const auto partition = ok_line ? parse_long(fields[0]) : std::nullopt;
    const auto timestamp = ok_line ? parse_long(fields[1]) : std::nullopt;
    if (!partition || *partition < 0 || !timestamp || *timestamp < 0) {
      std::fprintf(stderr,
                   "sluice_test_broker: stdin line %ld: want "
                   "PARTITION<TAB>TIMESTAMP_MS<TAB>KEY<TAB>VALUE\n",
                   n);
      return 2;
    }
    const std::string value = text.substr(pos);
    std::vector<rd_kafka_vu_t> vus(5);
    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    vus[0].u.cstr = topic.c_str();
    vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    vus[1].u.i32 = static_cast<int32_t>(*partition);
    vus[2].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vus[2].u.i64 = *timestamp;
    vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
    vus[3].u.mem.ptr = const_cast<char*>(value.data());  // copied: MSGFLAGS below
    vus[3].u.mem.size = value.size();
    vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vus[4].u.i = RD_KAFKA_MSG_F_COPY;
    if (!fields[2].empty()) {
      rd_kafka_vu_t key{};
      key.vtype = RD_KAFKA_VTYPE_KEY;
      key.u.mem.ptr = fields[2].data();
      key.u.mem.size = fields[2].size();
      vus.push_back(key);
    }
    for (;;) {
      rd_kafka_error_t* e = rd_kafka_produceva(rk.get(), vus.data(), vus.size());
      if (e == nullptr) break;
      const bool full = rd_kafka_error_code(e) == RD_KAFKA_RESP_ERR__QUEUE_FULL;
      if (!full) {
        std::fprintf(stderr, "sluice_test_broker: produce: %s\n", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return 1;
      }
      rd_kafka_error_destroy(e);
      rd_kafka_poll(rk.get(), 100);  // serve delivery reports, then try again
    }
    rd_kafka_poll(rk.get(), 0);
  }
  const rd_kafka_resp_err_t e = rd_kafka_flush(rk.get(), k_flush_timeout_ms);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::fprintf(stderr, "sluice_test_broker: flush: %s\n", rd_kafka_err2str(e));
    return 1;
  }
  return 0;
}

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--brokers N] [--topic NAME:PARTITIONS[:REPLICATION]]...\n"
               "       %s --txn-produce BOOTSTRAP TOPIC PARTITION commit|abort\n"
               "       %s --produce BOOTSTRAP TOPIC   (stdin: PARTITION TAB TIMESTAMP_MS "
               "TAB KEY TAB VALUE)\n"
               "Runs librdkafka's mock cluster; prints its bootstrap address, then reads\n"
               "commands on stdin (see the comment at the top of sluice_test_broker.cc).\n",
               argv0, argv0, argv0);
}

struct topic_spec {
  std::string name;
  int partitions;
  int replication;
};

std::optional<topic_spec> parse_topic_spec(const std::string& s) {
  auto c1 = s.find(':');
  if (c1 == std::string::npos || c1 == 0) return std::nullopt;
  auto c2 = s.find(':', c1 + 1);
  auto parts =
      parse_long(s.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1));
  auto repl = c2 == std::string::npos ? std::optional<long>(0) : parse_long(s.substr(c2 + 1));
  if (!parts || *parts < 1 || !repl || *repl < 0) return std::nullopt;
  return topic_spec{s.substr(0, c1), static_cast<int>(*parts), static_cast<int>(*repl)};
}

// Reads stdin line by line until EOF or a stop signal, answering each command on stdout.
// poll() with a short timeout rather than a blocking read, so that a signal arriving
// between the flag check and the read cannot leave the process hanging.
void serve(test_broker& broker) {
  std::string pending;
  char buf[4096];
  while (g_stop == 0) {
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    int r = ::poll(&pfd, 1, 200);
    if (r < 0) {
      if (errno == EINTR) continue;
      std::perror("sluice_test_broker: poll(stdin)");
      return;
    }
    if (r == 0) continue;
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      std::perror("sluice_test_broker: read(stdin)");
      return;
    }
    if (n == 0) return;  // EOF: the test is done with us
    pending.append(buf, static_cast<size_t>(n));
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      answer a = broker.execute(line);
      std::fprintf(stdout, "%s\n", a.line.c_str());
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--txn-produce") {
    auto partition = argc == 6 ? parse_long(argv[4]) : std::nullopt;
    std::string decision = argc == 6 ? argv[5] : "";
    if (!partition || *partition < 0 || (decision != "commit" && decision != "abort")) {
      usage(argv[0]);
      return 2;
    }
    return txn_produce(argv[2], argv[3], static_cast<int32_t>(*partition), decision == "commit");
  }
  if (argc >= 2 && std::string(argv[1]) == "--produce") {
    if (argc != 4) {
      usage(argv[0]);
      return 2;
    }
    return produce_timestamped(argv[2], argv[3]);
  }
  int brokers = 1;
  std::vector<topic_spec> topics;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--brokers" || arg == "--topic") && i + 1 < argc) {
      std::string value = argv[++i];
      if (arg == "--brokers") {
        auto n = parse_long(value);
        if (!n || *n < 1 || *n > 64) {
          std::fprintf(stderr, "sluice_test_broker: --brokers must be 1..64 (got '%s')\n",
                       value.c_str());
          return 2;
        }
        brokers = static_cast<int>(*n);
      } else {
        auto spec = parse_topic_spec(value);
        if (!spec) {
          std::fprintf(stderr,
                       "sluice_test_broker: --topic wants NAME:PARTITIONS[:REPLICATION] "
                       "(got '%s')\n",
                       value.c_str());
          return 2;
        }
        topics.push_back(*spec);
      }
    } else if (arg == "-h" || arg == "--help") {
      usage(argv[0]);
      return 0;
    } else {
      usage(argv[0]);
      return 2;
    }
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: let poll() return EINTR
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // The mock cluster needs a client handle for its bookkeeping; this one talks to nobody.
  conf_ptr conf(rd_kafka_conf_new());
  char errstr[512];
  rk_ptr host(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr));
  if (!host) {
    std::fprintf(stderr, "sluice_test_broker: rd_kafka_new: %s\n", errstr);
    return 1;
  }
  conf.release();
  mock_ptr cluster(rd_kafka_mock_cluster_new(host.get(), brokers));
  if (!cluster) {
    std::fprintf(stderr, "sluice_test_broker: rd_kafka_mock_cluster_new failed\n");
    return 1;
  }
  test_broker broker(std::move(host), std::move(cluster), brokers);
  for (const topic_spec& t : topics) {
    std::string err = broker.create_topic(t.name, t.partitions, t.replication);
    if (!err.empty()) {
      std::fprintf(stderr, "sluice_test_broker: %s\n", err.c_str());
      return 1;
    }
  }
  std::fprintf(stdout, "%s\n", broker.bootstraps().c_str());
  std::fflush(stdout);
  serve(broker);
  return 0;
}
