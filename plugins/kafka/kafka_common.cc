// Shared pieces of the kafka plugin; see kafka_common.hpp.
#include "kafka_common.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::kafka {

using sdk::Config;
using sdk::Value;
using sdk::ValueRef;

Handle::~Handle() {
  if (rk_ != nullptr) rd_kafka_destroy(rk_);
  // keep_ (the embedded cluster) goes after the client that talked to it.
}

// ---------------------------------------------------------------------------
// NodeRegistry

namespace {

struct Entry {
  sl_context* ctx;
  ClientEvents* events;
  bool post_pending = false;
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<uint64_t, Entry>& registry() {
  static std::unordered_map<uint64_t, Entry> r;
  return r;
}
std::atomic<uint64_t> g_next_id{1};

}  // namespace

uint64_t NodeRegistry::add(sl_context* ctx, ClientEvents* events) {
  const uint64_t id = g_next_id.fetch_add(1);
  std::lock_guard lock(registry_mutex());
  registry().emplace(id, Entry{ctx, events});
  return id;
}

void NodeRegistry::remove(uint64_t id) {
  std::lock_guard lock(registry_mutex());
  registry().erase(id);
}

void NodeRegistry::wake(uint64_t id) {
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(id);
  if (it != registry().end()) sdk::host().wake(it->second.ctx);
}

namespace {

void run_posted(sl_context* /*ctx*/, void* arg) {
  const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(arg));
  ClientEvents* events = nullptr;
  {
    std::lock_guard lock(registry_mutex());
    auto it = registry().find(id);
    if (it == registry().end()) return;
    it->second.post_pending = false;
    events = it->second.events;
  }
  // On the node's executor: the node cannot be destroyed while this runs.
  events->on_posted();
}

}  // namespace

void NodeRegistry::post_once(uint64_t id) {
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(id);
  if (it == registry().end() || it->second.post_pending) return;
  // The argument is the id, which owns nothing: a post the host never runs loses nothing.
  if (sdk::host().post(it->second.ctx, &run_posted,
                       reinterpret_cast<void*>(static_cast<uintptr_t>(id))) == SL_OK) {
    it->second.post_pending = true;
  }
}

namespace {

/// The node id a client was made for (its opaque).
uint64_t id_of(const rd_kafka_t* rk) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(rd_kafka_opaque(rk)));
}

/// The node registered under `opaque`. The callbacks that use it are served by rd_kafka_poll /
/// consumer_poll, which only the node calls on its executor thread: the node is alive then.
ClientEvents* events_of(void* opaque) {
  const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(opaque));
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(id);
  return it != registry().end() ? it->second.events : nullptr;
}

void error_to_node(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  if (ClientEvents* events = events_of(opaque)) events->on_client_error(rk, err, reason);
}
void delivery_to_node(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque) {
  if (ClientEvents* events = events_of(opaque)) events->on_delivery(rk, m);
}
void rebalance_to_node(rd_kafka_t* /*rk*/, rd_kafka_resp_err_t err,
                       rd_kafka_topic_partition_list_t* parts, void* opaque) {
  if (ClientEvents* events = events_of(opaque)) events->on_rebalance_event(err, parts);
}
void commit_to_node(rd_kafka_t* /*rk*/, rd_kafka_resp_err_t err,
                    rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  if (ClientEvents* events = events_of(opaque)) events->on_commit(err, offsets);
}

}  // namespace

void route_delivery_reports(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_dr_msg_cb(conf, &delivery_to_node);
}
void route_rebalances(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_rebalance_cb(conf, &rebalance_to_node);
}
void route_commits(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_offset_commit_cb(conf, &commit_to_node);
}

void wake_from_queue_event(rd_kafka_t* /*rk*/, void* opaque) {
  NodeRegistry::wake(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(opaque)));
}

void post_from_queue_event(rd_kafka_t* /*rk*/, void* opaque) {
  NodeRegistry::post_once(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(opaque)));
}

sdk::Status client_error(sdk::Context ctx, std::string_view prefix, const std::string& bootstrap,
                         rd_kafka_t* rk, int err, const char* reason) {
  const auto code = static_cast<rd_kafka_resp_err_t>(err);
  std::string msg = std::string("Kafka ") + rd_kafka_name(rk) + " error " +
                    rd_kafka_err2name(code) + ": " + reason;
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_fatal_error(rk, fatal, sizeof fatal);
    return sdk::internal_error(std::string(prefix) + "fatal " + msg + ": " + fatal);
  }
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__TRANSPORT ||
      code == RD_KAFKA_RESP_ERR__RESOLVE) {
    msg += " (brokers \"" + bootstrap + "\"; librdkafka keeps retrying with backoff)";
  }
  ctx.log_error(msg);
  return {};
}

void log_to_host(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  // syslog levels: 0-3 error, 4 warning, 5-6 info (notice, info), 7 debug.
  const int32_t sl_level = level <= 3   ? SL_LOG_ERROR
                           : level == 4 ? SL_LOG_WARN
                           : level <= 6 ? SL_LOG_INFO
                                        : SL_LOG_DEBUG;
  std::string line = std::string("librdkafka ") + rd_kafka_name(rk) + " " + fac + ": " + buf;
  std::lock_guard lock(registry_mutex());
  auto it = registry().find(id_of(rk));
  sdk::host().log(it != registry().end() ? it->second.ctx : nullptr, sl_level, line.data(),
                  line.size());
}

// ---------------------------------------------------------------------------
// Configuration

std::string_view refused_key_reason(std::string_view key) {
  // Keys that make librdkafka load or run code chosen by whoever writes the pipeline file
  // (librdkafka CONFIGURATION.md): the daemon's plugin trust rules would be bypassed.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> k_code{{
      {"plugin.library.paths", "loads librdkafka plugin libraries into the process"},
      {"ssl.engine.location", "loads an OpenSSL engine library into the process"},
      {"ssl.providers", "loads OpenSSL 3 provider modules into the process"},
      {"sasl.kerberos.kinit.cmd", "makes librdkafka run a shell command"},
      {"ssl_engine_callback_data", "is a pointer for the application, not a setting"},
  }};
  for (const auto& [name, why] : k_code) {
    if (key == name) return why;
  }
  if (key.find(".library") != std::string_view::npos || key.find("library.") == 0) {
    return "looks like it loads a library into the process";
  }
  if (key == "opaque" || key == "default_topic_conf" || key.ends_with("_cb")) {
    return "is a callback or pointer of the application, not a setting";
  }
  return {};
}

bool config_sets(const Config& cfg, std::string_view key) {
  std::optional<Value> table = cfg.find_value("config");
  return table && table->get(key).has_value();
}

namespace {

/// A config table value as the text librdkafka takes.
std::string config_text(const Config& cfg, std::string_view key, ValueRef v) {
  switch (v.kind()) {
    case SL_KIND_STRING: return std::string(v.as_str());
    case SL_KIND_BOOL: return v.as_bool() ? "true" : "false";
    case SL_KIND_INT: return std::to_string(v.as_int());
    case SL_KIND_FLOAT: return v.to_json();
    default:
      cfg.fail("config", "entry '" + std::string(key) + "' must be a string, number or bool (got " +
                             std::string(v.kind_name()) + ")");
  }
}

void set_or_throw(const Config& cfg, rd_kafka_conf_t* conf, const std::string& key,
                  const std::string& value, bool from_user) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK) {
    return;
  }
  if (from_user) {
    cfg.fail("config", "entry '" + key + "' = \"" + value + "\" is refused by librdkafka: " + err);
  }
  throw sdk::Error(SL_INTERNAL, cfg.where() + ": cannot set librdkafka property '" + key +
                                    "' = \"" + value + "\": " + err);
}

}  // namespace

ConfPtr make_conf(const Config& cfg, const std::string& bootstrap, uint64_t node_id,
                  std::initializer_list<std::pair<const char*, const char*>> defaults) {
  ConfPtr conf(rd_kafka_conf_new());
  std::optional<Value> table = cfg.find_value("config");
  if (table && !table->is_object()) cfg.fail("config", "must be a table");

  // Check the user's keys first, so that a refused key is reported before anything else.
  std::vector<std::pair<std::string, std::string>> user;
  for (size_t i = 0; table && i < table->size(); ++i) {
    const std::string key(table->key_at(i));
    const Value v = (*table)[i];
    if (std::string_view why = refused_key_reason(key); !why.empty()) {
      cfg.fail("config", "entry '" + key + "' is refused: it " + std::string(why) +
                             " (sluice loads code only from trusted plugin directories)");
    }
    if (key == "bootstrap.servers" || key == "metadata.broker.list") {
      cfg.fail("config", "entry '" + key + "' is managed by the plugin: set `brokers` instead");
    }
    if (key == "group.id") {
      cfg.fail("config", "entry 'group.id' is managed by the plugin: set `group_id` instead");
    }
    const std::string text = config_text(cfg, key, v);
    if (key == "enable.auto.commit" && text != "false") {
      cfg.fail("config",
               "entry 'enable.auto.commit' must stay false: the plugin commits the offsets of "
               "messages only after they were processed downstream (at-least-once)");
    }
    if (key == "enable.auto.offset.store" || key == "enable.partition.eof") {
      cfg.fail("config", "entry '" + key + "' is managed by the plugin");
    }
    user.emplace_back(key, text);
  }

  set_or_throw(cfg, conf.get(), "bootstrap.servers", bootstrap, false);
  for (const auto& [key, value] : defaults) {
    if (!config_sets(cfg, key)) set_or_throw(cfg, conf.get(), key, value, false);
  }
  for (const auto& [key, value] : user) set_or_throw(cfg, conf.get(), key, value, true);

  rd_kafka_conf_set_opaque(conf.get(), reinterpret_cast<void*>(static_cast<uintptr_t>(node_id)));
  rd_kafka_conf_set_log_cb(conf.get(), &log_to_host);
  rd_kafka_conf_set_error_cb(conf.get(), &error_to_node);
  return conf;
}

rd_kafka_t* new_client(rd_kafka_type_t type, ConfPtr conf, std::string_view what) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf.get(), err, sizeof err);
  if (rk == nullptr) {
    throw sdk::Error(SL_INVALID_ARGUMENT,
                     std::string("cannot create the Kafka ") + std::string(what) + ": " + err);
  }
  static_cast<void>(conf.release());  // rd_kafka_new took it
  return rk;
}

// ---------------------------------------------------------------------------
// The embedded cluster: librdkafka's mock cluster, one per process, shared by refcount.

namespace {

struct EmbeddedCluster {
  rd_kafka_t* rk = nullptr;  // the handle the mock cluster lives in (a bare producer)
  rd_kafka_mock_cluster_t* mcluster = nullptr;
  std::string bootstraps;

  EmbeddedCluster() {
    ConfPtr conf(rd_kafka_conf_new());
    char err[512];
    // The hosting handle never connects anywhere: silence its "no bootstrap.servers" notice.
    rd_kafka_conf_set(conf.get(), "log_level", "3", err, sizeof err);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), err, sizeof err);
    if (rk == nullptr) {
      throw sdk::Error(SL_INTERNAL, std::string("cannot start the embedded Kafka cluster: ") + err);
    }
    static_cast<void>(conf.release());
    mcluster = rd_kafka_mock_cluster_new(rk, 1);
    if (mcluster == nullptr) {
      rd_kafka_destroy(rk);
      throw sdk::Error(SL_INTERNAL, "cannot start the embedded Kafka cluster (librdkafka mock)");
    }
    bootstraps = rd_kafka_mock_cluster_bootstraps(mcluster);
  }
  ~EmbeddedCluster() {
    rd_kafka_mock_cluster_destroy(mcluster);
    rd_kafka_destroy(rk);
  }
  EmbeddedCluster(const EmbeddedCluster&) = delete;
  EmbeddedCluster& operator=(const EmbeddedCluster&) = delete;
};

}  // namespace

Brokers resolve_brokers(const std::string& brokers) {
  if (brokers != "embedded") return Brokers{brokers, nullptr};
  static std::mutex m;
  static std::weak_ptr<EmbeddedCluster> shared;
  std::lock_guard lock(m);
  std::shared_ptr<EmbeddedCluster> cluster = shared.lock();
  if (!cluster) {
    cluster = std::make_shared<EmbeddedCluster>();
    shared = cluster;
  }
  return Brokers{cluster->bootstraps, cluster};
}

void create_embedded_topic(const Brokers& brokers, const std::string& topic, int partitions) {
  if (!brokers.embedded()) return;
  auto* cluster = static_cast<EmbeddedCluster*>(brokers.cluster.get());
  // Fails with TOPIC_ALREADY_EXISTS when another node made it first: that is fine.
  static_cast<void>(rd_kafka_mock_topic_create(cluster->mcluster, topic.c_str(), partitions, 1));
}

// ---------------------------------------------------------------------------
// Values

std::string tp_name(std::string_view topic, int32_t partition) {
  return std::string(topic) + " [" + std::to_string(partition) + "]";
}

Value headers_to_value(const rd_kafka_headers_t* hdrs) {
  if (hdrs == nullptr || rd_kafka_header_cnt(hdrs) == 0) return {};
  std::vector<std::pair<std::string_view, Value>> entries;
  const char* name = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &data, &size) == 0; ++i) {
    entries.emplace_back(name, data == nullptr ? Value() : Value::bytes(data, size));
  }
  return Value::object(std::span<const std::pair<std::string_view, Value>>(entries));
}

Value headers_to_value(const rd_kafka_headers_t* hdrs, std::string_view name,
                       std::string_view value) {
  std::vector<std::pair<std::string_view, Value>> entries;
  const char* each = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  for (size_t i = 0; hdrs != nullptr && rd_kafka_header_get_all(hdrs, i, &each, &data, &size) == 0;
       ++i) {
    if (name == each) continue;
    entries.emplace_back(each, data == nullptr ? Value() : Value::bytes(data, size));
  }
  entries.emplace_back(name, Value::bytes(value.data(), value.size()));
  return Value::object(std::span<const std::pair<std::string_view, Value>>(entries));
}

std::string_view encode_bytes(ValueRef v, Value& keep) {
  if (v.is_string() || v.is_bytes()) {
    keep = Value::borrow(v);
  } else {
    keep = v.json_dump();
  }
  return keep.as_str();
}

HeadersPtr value_to_headers(ValueRef headers) {
  if (!headers.is_object() || headers.size() == 0) return nullptr;
  HeadersPtr out(rd_kafka_headers_new(headers.size()));
  for (size_t i = 0; i < headers.size(); ++i) {
    const std::string_view name = headers.key_at(i);
    const Value v = headers[i];
    if (v.is_null()) {
      rd_kafka_header_add(out.get(), name.data(), static_cast<ssize_t>(name.size()), nullptr, 0);
      continue;
    }
    Value keep;
    const std::string_view bytes = encode_bytes(v, keep);
    rd_kafka_header_add(out.get(), name.data(), static_cast<ssize_t>(name.size()), bytes.data(),
                        static_cast<ssize_t>(bytes.size()));
  }
  return out;
}

}  // namespace sluice::kafka
