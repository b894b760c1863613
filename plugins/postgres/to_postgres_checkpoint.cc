// to_postgres in the checkpoint protocol (docs/CHECKPOINTING.md, docs/CONNECTORS.md).
//
//   process             rows go into the epoch's transaction (BEGIN at its first row)
//   checkpoint_prepare  the rest of the rows, then PREPARE TRANSACTION 'sluice:P:T:EPOCH':
//                       durable on the server, invisible to readers, and no longer tied to
//                       this connection (it survives a crash of sluiced)
//   snapshot            {"epoch": EPOCH}
//   checkpoint_commit   COMMIT PREPARED for every prepared epoch up to EPOCH (an aborted
//                       epoch's transaction waits for the next commit)
//   start after restore the prepared transactions of this node and task (gid prefix
//                       'sluice:P:T:') are settled by their epoch: at or below the restored
//                       epoch the checkpoint counts them, so they are committed (the crash
//                       came between store and commit); above it they belong to epochs no
//                       checkpoint holds, so they are rolled back, and the source replays
//                       their rows. A fresh start rolls back every one of them.
//
// The host asks no sink whether its commit happened (checkpoint_recover) unless it has the
// callback; this sink does not need it: a prepared transaction cannot be lost, only
// finished later.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include "to_postgres.hpp"

namespace sluice::postgres {

using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

// The prepared transaction named in `gid` no longer exists.
constexpr std::string_view k_undefined_object = "42704";

Status unavailable(std::string msg) { return Status(SL_UNAVAILABLE, std::move(msg)); }

}  // namespace

std::string ToPostgres::gid_head() const {
  return "sluice:" + prefix_ + ":" + std::to_string(task_index_) + ":";
}

std::string ToPostgres::gid(uint64_t epoch) const { return gid_head() + std::to_string(epoch); }

Result<bool> ToPostgres::checkpoint_prepare(Context ctx, uint64_t epoch) {
  SLUICE_SDK_RETURN_IF_ERROR(flush(ctx, true));
  if (conn_) SLUICE_SDK_RETURN_IF_ERROR(prepare_epoch(ctx, epoch));
  if (!conn_) {
    // Unreachable with nothing of the epoch on the server (else flush or prepare failed):
    // answered once the reconnection has sent the rows (on_timer).
    preparing_ = epoch;
    return false;
  }
  publish_metrics(ctx);
  return true;
}

Status ToPostgres::prepare_epoch(Context ctx, uint64_t epoch) {
  if (!exactly_once_ || !txn_open_) {
    // At-least-once: every row is committed by now. Exactly-once without rows in the epoch:
    // nothing to prepare.
    last_epoch_ = epoch;
    return {};
  }
  const std::string id = gid(epoch);
  Outcome o = conn_->exec("PREPARE TRANSACTION " + quote_literal(id));
  if (!o.ok) {
    if (o.connection_lost) {
      ++errors_total_;
      publish_metrics(ctx);
      return unavailable("to_postgres: the connection was lost at PREPARE TRANSACTION '" + id +
                         "' (" + o.error +
                         "): the node fails; the restart rolls the epoch back if it was "
                         "prepared, and replays its rows");
    }
    return server_error(ctx, "PREPARE TRANSACTION '" + id + "'", o);
  }
  txn_open_ = false;
  txn_rows_ = 0;
  prepared_.push_back(epoch);
  last_epoch_ = epoch;
  return {};
}

Status ToPostgres::checkpoint_commit(Context ctx, uint64_t epoch) {
  if (!exactly_once_) return {};
  SLUICE_SDK_RETURN_IF_ERROR(commit_prepared(ctx, epoch));
  publish_metrics(ctx);
  return {};
}

Status ToPostgres::commit_prepared(Context ctx, uint64_t epoch) {
  size_t done = 0;
  Status failure;
  while (conn_ && done < prepared_.size() && prepared_[done] <= epoch) {
    const std::string id = gid(prepared_[done]);
    Outcome o = conn_->exec("COMMIT PREPARED " + quote_literal(id));
    if (!o.ok && o.connection_lost) {
      lost_connection(ctx, "connection lost at COMMIT PREPARED '" + id + "': " + o.error);
      break;
    }
    if (!o.ok && o.sqlstate == k_undefined_object) {
      // A COMMIT PREPARED whose answer was lost with the connection already did it.
      ctx.log_warn("to_postgres: prepared transaction '" + id +
                   "' no longer exists (committed by an earlier attempt)");
    } else if (!o.ok) {
      failure = server_error(ctx, "COMMIT PREPARED '" + id + "'", o);
      break;
    } else {
      ++transactions_total_;
    }
    ++done;
  }
  prepared_.erase(prepared_.begin(), prepared_.begin() + static_cast<std::ptrdiff_t>(done));
  // Owed when the server went away: the reconnection commits it (the stored checkpoint
  // covers it, so a crash meanwhile commits it at the restart).
  const bool owed = !prepared_.empty() && prepared_.front() <= epoch;
  commit_due_ = owed ? std::max(commit_due_, epoch) : 0;
  return failure;
}

Status ToPostgres::checkpoint_abort(Context ctx, uint64_t epoch) {
  if (exactly_once_ && !prepared_.empty() && prepared_.back() == epoch) {
    ctx.log_warn("to_postgres: checkpoint " + std::to_string(epoch) +
                 " was not stored: its prepared transaction is committed with the next one");
  }
  return {};
}

Result<Value> ToPostgres::snapshot(Context /*ctx*/) {
  return Value::object({{"epoch", Value::integer(static_cast<int64_t>(last_epoch_))}});
}

Status ToPostgres::restore(Context /*ctx*/, ValueRef state) {
  const std::optional<Value> epoch = state.get("epoch");
  if (!epoch || !epoch->is_int() || epoch->as_int() < 0) {
    return sdk::invalid_argument("to_postgres: the saved state has no epoch");
  }
  restored_ = true;
  restored_epoch_ = static_cast<uint64_t>(epoch->as_int());
  last_epoch_ = restored_epoch_;
  return {};
}

Status ToPostgres::recover_prepared(Context ctx) {
  const std::string head = gid_head();
  Outcome o = conn_->exec_params(
      "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND "
      "left(gid, length($1)) = $1",
      {head.c_str()});
  if (!o.ok) {
    if (o.connection_lost) {
      last_connect_error_ = "connection lost reading pg_prepared_xacts: " + o.error;
      conn_.reset();
      return unavailable(last_connect_error_);
    }
    return server_error(ctx, "reading pg_prepared_xacts", o);
  }
  std::vector<std::pair<uint64_t, std::string>> found;
  for (int i = 0; i < PQntuples(o.result.get()); ++i) {
    const std::string id = PQgetvalue(o.result.get(), i, 0);
    uint64_t epoch = 0;
    const char* first = id.data() + head.size();
    const char* last = id.data() + id.size();
    auto [end, ec] = std::from_chars(first, last, epoch);
    if (ec != std::errc() || end != last) continue;  // not one of ours after all
    found.emplace_back(epoch, id);
  }
  std::sort(found.begin(), found.end());
  uint64_t committed = 0;
  uint64_t rolled_back = 0;
  for (const auto& [epoch, id] : found) {
    const bool keep = restored_ && epoch <= restored_epoch_;
    Outcome r = conn_->exec((keep ? "COMMIT PREPARED " : "ROLLBACK PREPARED ") + quote_literal(id));
    if (!r.ok && r.connection_lost) {
      last_connect_error_ = "connection lost settling prepared transactions: " + r.error;
      conn_.reset();
      return unavailable(last_connect_error_);
    }
    if (!r.ok && r.sqlstate != k_undefined_object) {
      return server_error(ctx, (keep ? "COMMIT PREPARED '" : "ROLLBACK PREPARED '") + id + "'", r);
    }
    ++(keep ? committed : rolled_back);
    if (keep) ++transactions_total_;
  }
  if (!found.empty()) {
    ctx.log_info("to_postgres: settled " + std::to_string(found.size()) +
                 " prepared transactions left by an earlier run: " + std::to_string(committed) +
                 " committed (epochs up to the restored " + std::to_string(restored_epoch_) +
                 "), " + std::to_string(rolled_back) + " rolled back (their rows are replayed)");
  }
  return {};
}

}  // namespace sluice::postgres
