// The "kafka" checkpoint store: checkpoints as records of a compacted Kafka topic.
#pragma once

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kafka_common.hpp"

namespace sluice::kafka {

/// `[checkpoint] store = "kafka"`. One record per epoch, key "<pipeline>/<epoch>" (the bytes
/// the host framed), and one "<pipeline>/<epoch>/committed" marker per committed epoch;
/// removing an epoch writes tombstones for both keys, so log compaction keeps exactly the
/// epochs the host keeps. Open reads the topic's partition 0 from the beginning to its end
/// (last value per key wins, a tombstone deletes). Several processes may share the topic and
/// write at once (the members of one pipeline, docs/SCALING.md): list(), and read() of an epoch
/// not known yet, first read what was appended since (catch_up).
class KafkaStore final : public sdk::Store, private ClientEvents {
 public:
  static constexpr const char* k_name = "kafka";
  static constexpr const char* k_doc =
      "Checkpoints in a compacted Kafka topic (cleanup.policy=compact, create it first): one "
      "record per epoch keyed \"<pipeline>/<epoch>\", a \"<pipeline>/<epoch>/committed\" "
      "marker, tombstones for removed epochs. Writes wait for the broker's acknowledgement "
      "(acks=all, idempotent); opening reads the topic to its end, and listing (or reading an "
      "epoch not seen yet) reads what other processes wrote since. See docs/KAFKA.md.";
  static constexpr std::array k_params{
      sdk::required("brokers", SL_PARAM_STRING, "Bootstrap servers, \"host:port,...\"."),
      sdk::param("topic", SL_PARAM_STRING, "\"sluice-checkpoints\"",
                 "The compacted topic (partition 0 is used); several pipelines may share it "
                 "(keys start with the pipeline's name).")
          .non_empty(),
      sdk::param("timeout_ms", SL_PARAM_DURATION, "30000",
                 "Bound on each write (until acknowledged) and on each reading of the topic "
                 "(to its end at open, then what was appended since).")
          .min(1),
      sdk::param("config", SL_PARAM_TABLE, "{}",
                 "librdkafka properties for the store's producer and reader (same refusals as "
                 "from_kafka)."),
  };

  KafkaStore(sdk::Context ctx, const sdk::Config& cfg, std::string_view pipeline);
  ~KafkaStore() override;
  KafkaStore(const KafkaStore&) = delete;
  KafkaStore& operator=(const KafkaStore&) = delete;

  sdk::Status write(uint64_t epoch, std::string_view data) override;
  sdk::Status mark_committed(uint64_t epoch) override;
  sdk::Result<sdk::Value> read(uint64_t epoch) override;
  sdk::Result<std::vector<sdk::EpochInfo>> list() override;
  sdk::Status remove(uint64_t epoch) override;

 private:
  struct Entry {
    std::string data;
    bool committed = false;
    int64_t time_ns = 0;
  };

  void on_client_error(rd_kafka_t* rk, int err, const char* reason) override;
  void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m) override;

  /// Makes the reader (a consumer without a group, reading partition 0 from the start).
  void open_reader(const sdk::Config& cfg);
  /// Reads partition 0 from where the last reading stopped to its current end into entries_:
  /// what this and other processes appended since. Bounded by timeout_ms.
  sdk::Status catch_up();
  void close_reader();
  /// Applies one record (key, value or tombstone) to entries_.
  void apply(std::string_view key, const void* value, size_t size, int64_t time_ms);
  /// Produces one record (null `value`: a tombstone) and waits for its acknowledgement.
  sdk::Status put(const std::string& key, const std::string_view* value, const char* what);
  [[nodiscard]] std::string key_of(uint64_t epoch) const;

  sdk::Context ctx_;
  std::string pipeline_;
  std::string topic_;
  std::chrono::milliseconds timeout_;
  uint64_t id_ = 0;
  Brokers brokers_;
  rd_kafka_t* producer_ = nullptr;
  rd_kafka_t* reader_ = nullptr;
  rd_kafka_topic_t* reader_topic_ = nullptr;  // partition 0 being read (consume_start)
  int64_t next_offset_ = 0;                   // the next offset to apply
  std::map<uint64_t, Entry> entries_;
  // Delivery of the record being put.
  int outstanding_ = 0;
  rd_kafka_resp_err_t delivery_err_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string last_client_error_;
};

}  // namespace sluice::kafka
