// from_kafka / from_kafka_batched with `group_id` (group mode): the rebalance callback takes
// and gives back partitions (cooperative-sticky), and processed offsets are committed to the
// group (every commit_interval_ms, on revocation and at the end; with checkpoints, only with
// stored checkpoints: see from_kafka_checkpoint.cc).
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace sluice::kafka {

using sdk::Status;

void KafkaSource::on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk()), "COOPERATIVE") == 0;
  all_at_end_since_ns_ = -1;
  std::string names;
  for (int i = 0; parts != nullptr && i < parts->cnt; ++i) {
    names +=
        (names.empty() ? "" : ", ") + tp_name(parts->elems[i].topic, parts->elems[i].partition);
  }
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    // The key groups that come with these partitions (no partition assigned before has
    // them): the host restores them, from the newest checkpoint holding them, into every
    // keyed node downstream, this one included, BEFORE the offsets are chosen below. That
    // re-enters this object (restore_group, same thread), which changes restored_,
    // processed_, committed_, snapshot_ and origins_: nothing of them is held across it.
    if (const std::vector<uint32_t> fresh = groups_alone(parts); !fresh.empty() && !closed_) {
      const Status st = ctx_.key_groups_assigned(fresh);
      if (!st.is_ok() && failure_.is_ok()) failure_ = st;  // the store could not be read
    }
    std::string restored;
    for (int i = 0; i < parts->cnt; ++i) {
      rd_kafka_topic_partition_t& p = parts->elems[i];
      const TopicPartition tp{p.topic, p.partition};
      const bool first = seen_.insert(tp).second;
      if (auto r = restored_.find(tp); r != restored_.end()) {
        // A checkpoint's position (restored at start, or just now with its key group) wins
        // over `start` and over the group's offset, on every assignment.
        p.offset = r->second;
        processed_[tp] = r->second;
        restored += (restored.empty() ? "" : ", ") + tp_name(tp.first, tp.second) + " at " +
                    std::to_string(r->second);
        restored_.erase(r);
      } else if (first) {
        // start applies to the first assignment in this process; a partition that comes
        // back after a rebalance resumes from the group's committed offset.
        if (opts_.start == Start::earliest) p.offset = RD_KAFKA_OFFSET_BEGINNING;
        if (opts_.start == Start::latest) p.offset = RD_KAFKA_OFFSET_END;
      }
      assigned_.insert(tp);
      at_eof_[tp] = -1;
    }
    if (!restored.empty()) names += " (checkpoint positions: " + restored + ")";
    ctx_.log_info("assigned: " + names);
    if (cooperative) {
      ErrorPtr e(rd_kafka_incremental_assign(rk(), parts));
      if (e && failure_.is_ok()) {
        failure_ = sdk::internal_error(std::string("from_kafka: cannot take the assignment: ") +
                                       rd_kafka_error_string(e.get()));
      }
    } else if (rd_kafka_resp_err_t e = rd_kafka_assign(rk(), parts);
               e != RD_KAFKA_RESP_ERR_NO_ERROR && failure_.is_ok()) {
      failure_ = sdk::internal_error(std::string("from_kafka: cannot take the assignment: ") +
                                     rd_kafka_err2str(e));
    }
    NodeRegistry::wake(id_);
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    if (rd_kafka_assignment_lost(rk()) != 0) {
      ctx_.log_warn("assignment lost (offsets not committed, another member may re-read): " +
                    names);
    } else if (checkpointing_) {
      // With checkpoints nothing is committed here: the group's offsets are those of the
      // last completed checkpoint, and the next owner re-reads what came after them
      // (at-least-once; see docs/KAFKA.md).
      ctx_.log_info(
          "revoked with checkpoints: the next owner resumes from the last "
          "checkpoint's offsets: " +
          names);
    } else {
      const Status st = commit(false, parts);
      if (!st.is_ok()) ctx_.log_warn(st.message());
    }
    for (int i = 0; i < parts->cnt; ++i) {
      const TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      remove_lag(tp);
      assigned_.erase(tp);
      at_eof_.erase(tp);
      processed_.erase(tp);
      committed_.erase(tp);
    }
    ctx_.log_info("revoked: " + names);
    // The key groups no partition still assigned has: every keyed node downstream (this one
    // included, re-entrantly: drop_group) forgets them; the next owner restores them from
    // the checkpoint. Not when the source closes: the task is ending, and its state stays
    // whole for its last snapshot.
    if (const std::vector<uint32_t> gone = groups_alone(parts); !gone.empty() && !closed_) {
      const Status st = ctx_.key_groups_revoked(gone);
      if (!st.is_ok() && failure_.is_ok()) failure_ = st;
    }
    if (cooperative) {
      ErrorPtr e(rd_kafka_incremental_unassign(rk(), parts));
    } else {
      rd_kafka_assign(rk(), nullptr);
    }
    return;
  }
  ctx_.log_error(std::string("rebalance failed: ") + rd_kafka_err2str(err));
  rd_kafka_assign(rk(), nullptr);
}

std::vector<uint32_t> KafkaSource::groups_alone(
    const rd_kafka_topic_partition_list_t* parts) const {
  std::vector<uint32_t> out;
  for (int i = 0; parts != nullptr && i < parts->cnt; ++i) {
    const uint32_t g = group_of(parts->elems[i].partition);
    if (std::find(out.begin(), out.end(), g) != out.end()) continue;
    const bool elsewhere = std::any_of(assigned_.begin(), assigned_.end(), [&](const auto& tp) {
      return group_of(tp.second) == g &&
             rd_kafka_topic_partition_list_find(parts, tp.first.c_str(), tp.second) == nullptr;
    });
    if (!elsewhere) out.push_back(g);
  }
  return out;
}

void KafkaSource::on_commit(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets) {
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;  // nothing to commit
  for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = offsets->elems[i];
    const rd_kafka_resp_err_t e = p.err != RD_KAFKA_RESP_ERR_NO_ERROR ? p.err : err;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    // Forget what we believed committed, so the next commit sends it again.
    committed_.erase({p.topic, p.partition});
    ctx_.log_warn("offset commit failed for " + tp_name(p.topic, p.partition) +
                  " (will retry): " + rd_kafka_err2str(e));
  }
}

Status KafkaSource::commit(bool async, const rd_kafka_topic_partition_list_t* only) {
  return commit_positions(processed_, async, only);
}

Status KafkaSource::commit_positions(const std::map<TopicPartition, int64_t>& positions, bool async,
                                     const rd_kafka_topic_partition_list_t* only) {
  if (!group_mode() || positions.empty()) return {};
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(positions.size())));
  for (const auto& [tp, next] : positions) {
    if (assigned_.count(tp) == 0) continue;  // revoked meanwhile: no longer ours to commit
    if (only != nullptr &&
        rd_kafka_topic_partition_list_find(only, tp.first.c_str(), tp.second) == nullptr) {
      continue;
    }
    auto c = committed_.find(tp);
    if (c != committed_.end() && c->second == next) continue;
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = next;
  }
  if (list->cnt == 0) return {};
  if (async) {
    for (int i = 0; i < list->cnt; ++i) {
      committed_[{list->elems[i].topic, list->elems[i].partition}] = list->elems[i].offset;
    }
    const rd_kafka_resp_err_t e = rd_kafka_commit(rk(), list.get(), 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) on_commit(e, list.get());
    return {};
  }
  // Synchronous, but bounded: the result comes back on a queue we poll with a deadline.
  QueuePtr q(rd_kafka_queue_new(rk()));
  const rd_kafka_resp_err_t e = rd_kafka_commit_queue(rk(), list.get(), q.get(), nullptr, nullptr);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable(std::string("from_kafka: cannot commit offsets: ") + rd_kafka_err2str(e));
  }
  rd_kafka_event_t* ev = rd_kafka_queue_poll(
      q.get(), static_cast<int>(std::max<int64_t>(opts_.close_timeout.count(), 1)));
  if (ev == nullptr) {
    return unavailable("from_kafka: committing offsets took longer than close_timeout_ms (" +
                       std::to_string(opts_.close_timeout.count()) + " ms)");
  }
  Status st;
  const rd_kafka_resp_err_t ev_err = rd_kafka_event_error(ev);
  const rd_kafka_topic_partition_list_t* result = rd_kafka_event_topic_partition_list(ev);
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    rd_kafka_resp_err_t pe = ev_err;
    if (result != nullptr) {
      const rd_kafka_topic_partition_t* r =
          rd_kafka_topic_partition_list_find(result, p.topic, p.partition);
      if (r != nullptr && r->err != RD_KAFKA_RESP_ERR_NO_ERROR) pe = r->err;
    }
    if (pe == RD_KAFKA_RESP_ERR_NO_ERROR) {
      committed_[{p.topic, p.partition}] = p.offset;
      ctx_.log_info("committed offset " + std::to_string(p.offset) + " for " +
                    tp_name(p.topic, p.partition));
    } else if (st.is_ok()) {
      st = unavailable("from_kafka: commit of offset " + std::to_string(p.offset) + " for " +
                       tp_name(p.topic, p.partition) + " failed: " + rd_kafka_err2str(pe));
    }
  }
  rd_kafka_event_destroy(ev);
  return st;
}

}  // namespace sluice::kafka
