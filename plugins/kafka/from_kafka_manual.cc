// from_kafka / from_kafka_batched without `group_id` (manual mode): the topics' partitions
// are found in the cluster's metadata, read on a helper thread (never on the executor) every
// refresh_ms, and started on the source's own queue with librdkafka's partition consumer API
// (the group API needs a group.id).
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <regex.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace sluice::kafka {

using sdk::Context;
using sdk::Status;

namespace {

constexpr int k_metadata_timeout_ms = 5000;

bool posix_match(const std::string& pattern, const std::string& text) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return false;
  const bool ok = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return ok;
}

}  // namespace

bool KafkaSource::topic_wanted(const std::string& topic) const {
  if (std::find(opts_.topics.begin(), opts_.topics.end(), topic) != opts_.topics.end()) return true;
  return std::any_of(opts_.patterns.begin(), opts_.patterns.end(),
                     [&](const std::string& p) { return posix_match(p, topic); });
}

void KafkaSource::request_metadata() {
  {
    std::lock_guard lock(metadata_mutex_);
    if (metadata_running_) return;
    metadata_running_ = true;
  }
  if (metadata_thread_.joinable()) metadata_thread_.join();  // finished: returns at once
  // rd_kafka_metadata blocks until the brokers answer: never on the executor.
  metadata_thread_ = std::thread([this, rk = rk(), id = id_] {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, k_metadata_timeout_ms);
    std::pair<Status, std::map<std::string, int32_t>> result;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      result.first =
          unavailable(std::string("cannot read the cluster's metadata: ") + rd_kafka_err2str(e));
    } else {
      for (int i = 0; i < md->topic_cnt; ++i) {
        const rd_kafka_metadata_topic_t& t = md->topics[i];
        if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) result.second[t.topic] = t.partition_cnt;
      }
      rd_kafka_metadata_destroy(md);
    }
    {
      std::lock_guard lock(metadata_mutex_);
      metadata_result_ = std::move(result);
      metadata_running_ = false;
    }
    NodeRegistry::wake(id);
  });
}

Status KafkaSource::apply_metadata(Context ctx) {
  std::optional<std::pair<Status, std::map<std::string, int32_t>>> result;
  {
    std::lock_guard lock(metadata_mutex_);
    result.swap(metadata_result_);
  }
  if (!result || closed_) return {};
  const auto& [status, topics] = *result;
  if (!status.is_ok()) {
    ctx.log_warn(status.message() + " (brokers \"" + brokers_.bootstrap + "\"); retrying");
    return ctx.timer_start(k_refresh_timer, std::chrono::milliseconds(1000));
  }
  for (const auto& t : opts_.topics) {
    if (topics.count(t) == 0) {
      return sdk::not_found("from_kafka: topic '" + t + "' does not exist on \"" +
                            brokers_.bootstrap + "\"");
    }
  }
  std::string added;
  for (const auto& [topic, count] : topics) {
    if (!topic_wanted(topic)) continue;
    rd_kafka_topic_t*& rkt = topic_handles_[topic];
    if (rkt == nullptr) rkt = rd_kafka_topic_new(rk(), topic.c_str(), nullptr);
    if (rkt == nullptr) {
      return sdk::internal_error("from_kafka: cannot open topic '" + topic +
                                 "': " + rd_kafka_err2str(rd_kafka_last_error()));
    }
    for (int32_t p = 0; p < count; ++p) {
      const TopicPartition tp{topic, p};
      if (assigned_.count(tp) != 0) continue;
      int64_t offset =
          opts_.start == Start::latest ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
      if (auto r = restored_.find(tp); r != restored_.end()) {
        offset = r->second;  // the checkpoint's position
        processed_[tp] = r->second;
        restored_.erase(r);
      }
      if (rd_kafka_consume_start_queue(rkt, p, offset, queue_.get()) != 0) {
        return sdk::internal_error("from_kafka: cannot start reading " + tp_name(topic, p) + ": " +
                                   rd_kafka_err2str(rd_kafka_last_error()));
      }
      assigned_.insert(tp);
      at_eof_[tp] = -1;
      all_at_end_since_ns_ = -1;
      added += (added.empty() ? "" : ", ") + tp_name(topic, p);
    }
  }
  if (!added.empty()) ctx.log_info("reading " + added);
  metadata_loaded_ = true;
  return {};
}

}  // namespace sluice::kafka
