// to_postgres: config, connection, batching; the checkpoint protocol is in
// to_postgres_checkpoint.cc.
#include "to_postgres.hpp"

#include <sluice/sluice.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

namespace sluice::postgres {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;

namespace {

constexpr size_t k_max_prefix = 120;
// Rows held while the server is unreachable before the sources are paused anyway: what one
// delivery can still bring after back-pressure is set.
constexpr const char* k_batch_statement = "sluice_batch";

Status unavailable(std::string msg) { return Status(SL_UNAVAILABLE, std::move(msg)); }

std::string default_prefix(const Config& cfg, std::string_view node_id) {
  std::string out = (cfg.pipeline().empty() ? std::string("sluice") : cfg.pipeline()) + "." +
                    std::string(node_id);
  // The gid alphabet: anything else (a pipeline name is free text) becomes '_'.
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out.substr(0, k_max_prefix);
}

void check_prefix(const Config& cfg, const std::string& prefix) {
  if (prefix.empty() || prefix.size() > k_max_prefix) {
    cfg.fail("transaction_prefix", "must be 1 to 120 bytes long");
  }
  for (char c : prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      cfg.fail("transaction_prefix",
               "may hold only letters, digits, '.', '_' and '-' (got \"" + prefix + "\")");
    }
  }
}

}  // namespace

void ToPostgres::validate(const Config& cfg) {
  const RowMapping mapping = RowMapping::from_config(cfg);
  if (quote_table(cfg.get_string("table")).empty()) {
    cfg.fail("table", "must be \"name\" or \"schema.name\", each part 1 to 63 bytes (got \"" +
                          cfg.get_string("table").substr(0, 80) + "\")");
  }
  const int64_t rows = cfg.get_int("batch_rows");
  const size_t max_rows = k_max_parameters / mapping.columns.size();
  if (static_cast<size_t>(rows) > max_rows) {
    cfg.fail("batch_rows", "must be at most " + std::to_string(max_rows) + " with " +
                               std::to_string(mapping.columns.size()) +
                               " columns (65535 parameters per statement; got " +
                               std::to_string(rows) + ")");
  }
  // libpq's own parser, without connecting. Its message names the bad option, never a value.
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(cfg.get_string("conninfo").c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? err : "cannot be parsed";
    PQfreemem(err);
    while (!why.empty() && why.back() == '\n') why.pop_back();
    cfg.fail("conninfo", "is not a libpq connection string: " + why);
  }
  PQconninfoFree(opts);
  if (std::optional<std::string> prefix = cfg.find_string("transaction_prefix")) {
    check_prefix(cfg, *prefix);
  }
}

ToPostgres::ToPostgres(const sl_node_init& init, const Config& cfg)
    : conninfo_(cfg.get_string("conninfo")),
      password_(cfg.find_string("password").value_or("")),
      mapping_(RowMapping::from_config(cfg)),
      statement_(cfg.get_string("table"), mapping_),
      batch_rows_(static_cast<size_t>(cfg.get_int("batch_rows"))),
      batch_timeout_(cfg.get_duration("batch_timeout_ms")),
      exactly_once_(cfg.get_bool("exactly_once") && cfg.checkpointing()),
      checkpointing_(cfg.checkpointing()),
      prefix_(cfg.find_string("transaction_prefix")
                  .value_or(default_prefix(cfg, Context(init.ctx).node_id()))),
      task_index_(init.task_index),
      connect_timeout_s_(
          std::max<int64_t>(2, (cfg.get_duration("connect_timeout_ms").count() + 999) / 1000)),
      backoff_max_(cfg.get_duration("reconnect_backoff_max_ms")),
      reconnect_timeout_(cfg.get_duration("reconnect_timeout_ms")) {
  validate(cfg);
  buffer_.width = mapping_.columns.size();
  full_sql_ = statement_.sql(batch_rows_);
}

Status ToPostgres::start(Context ctx) {
  SLUICE_SDK_ASSIGN_OR_RETURN(const bool up, connect(ctx));
  if (!up) lost_connection(ctx, last_connect_error_);
  publish_metrics(ctx);
  return {};
}

Result<bool> ToPostgres::connect(Context ctx) {
  std::string error;
  std::optional<Connection> c = Connection::open(conninfo_, password_, connect_timeout_s_, error);
  if (!c) {
    last_connect_error_ = "cannot connect: " + error;
    return false;
  }
  conn_ = std::move(c);
  txn_open_ = false;
  txn_rows_ = 0;
  auto setup_failed = [&](const std::string& what, const Outcome& o) -> Result<bool> {
    if (o.connection_lost) {
      last_connect_error_ = what + ": " + o.error;
      conn_.reset();
      return false;
    }
    return server_error(ctx, what, o);
  };
  if (exactly_once_) {
    std::optional<std::string> mpt = conn_->show("max_prepared_transactions");
    if (!mpt) {
      last_connect_error_ = "cannot read max_prepared_transactions";
      conn_.reset();
      return false;
    }
    if (*mpt == "0") {
      ++errors_total_;
      return sdk::failed_precondition(
          "to_postgres: exactly_once needs prepared transactions, and the server has "
          "max_prepared_transactions = 0: set it in postgresql.conf (at least the number of "
          "tasks writing to this server, e.g. 64) and restart PostgreSQL, or set exactly_once "
          "= false for at-least-once");
    }
  }
  // The server checks the table, the columns, their types' input syntax rules and the ON
  // CONFLICT target here, before any row is sent.
  Outcome o = conn_->prepare(k_batch_statement, full_sql_,
                             static_cast<int>(batch_rows_ * mapping_.columns.size()));
  if (!o.ok) return setup_failed("cannot prepare the INSERT into " + statement_.table(), o);
  if (exactly_once_ && !recovered_) {
    Status st = recover_prepared(ctx);
    if (!st.is_ok()) {
      if (!conn_) return false;  // lost during recovery: retried at the next connection
      return st;
    }
    recovered_ = true;
  }
  if (commit_due_ != 0) {
    SLUICE_SDK_RETURN_IF_ERROR(commit_prepared(ctx, commit_due_));
    if (!conn_) return false;
  }
  if (down_since_ns_ != 0) {
    ctx.log_info("to_postgres: reconnected after " +
                 std::to_string((ctx.now_ns() - down_since_ns_) / 1'000'000) + " ms");
  }
  down_since_ns_ = 0;
  backoff_ = k_first_backoff;
  return true;
}

void ToPostgres::lost_connection(Context ctx, const std::string& why) {
  conn_.reset();
  txn_open_ = false;
  txn_rows_ = 0;
  if (down_since_ns_ == 0) {
    down_since_ns_ = ctx.now_ns();
    ctx.log_warn("to_postgres: " + why + "; retrying with backoff (sources paused)");
  }
  last_connect_error_ = why;
  if (!backpressure_) {
    backpressure_ = true;
    ctx.set_backpressure(true);
  }
  Status st = ctx.timer_start(k_reconnect_timer, backoff_);
  if (!st.is_ok()) ctx.log_error(std::string(st.message()));
  backoff_ = std::min(backoff_ * 2, backoff_max_);
  publish_metrics(ctx);
}

Status ToPostgres::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  SLUICE_SDK_RETURN_IF_ERROR(buffer_.append(mapping_, m));
  if (buffer_.rows() >= batch_rows_) return flush(ctx, false);
  if (!batch_timer_armed_) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_batch_timer, batch_timeout_));
    batch_timer_armed_ = true;
  }
  return {};
}

Status ToPostgres::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id == k_batch_timer) {
    batch_timer_armed_ = false;
    return flush(ctx, true);
  }
  if (timer_id != k_reconnect_timer || conn_) return {};
  ++reconnects_total_;
  SLUICE_SDK_ASSIGN_OR_RETURN(const bool up, connect(ctx));
  if (!up) {
    if (reconnect_timeout_.count() > 0 &&
        ctx.now_ns() - down_since_ns_ >
            std::chrono::duration_cast<std::chrono::nanoseconds>(reconnect_timeout_).count()) {
      ++errors_total_;
      publish_metrics(ctx);
      return unavailable("to_postgres: the server stayed unreachable for " +
                         std::to_string(reconnect_timeout_.count()) +
                         " ms (reconnect_timeout_ms): " + last_connect_error_);
    }
    lost_connection(ctx, last_connect_error_);
    return {};
  }
  if (backpressure_) {
    backpressure_ = false;
    ctx.set_backpressure(false);
  }
  SLUICE_SDK_RETURN_IF_ERROR(flush(ctx, true));
  if (preparing_ && conn_) {
    const uint64_t epoch = *preparing_;
    preparing_.reset();
    Status st = prepare_epoch(ctx, epoch);
    if (st.is_ok() && !conn_) {
      preparing_ = epoch;  // lost again before anything was in the transaction: wait more
      return {};
    }
    ctx.checkpoint_ready(epoch, st);
  }
  publish_metrics(ctx);
  return {};
}

Status ToPostgres::flush(Context ctx, bool all) {
  while (conn_ && buffer_.rows() > 0 && (all || buffer_.rows() >= batch_rows_)) {
    SLUICE_SDK_RETURN_IF_ERROR(send_rows(ctx, std::min(buffer_.rows(), batch_rows_)));
  }
  if (buffer_.rows() == 0 && batch_timer_armed_) {
    ctx.timer_cancel(k_batch_timer);
    batch_timer_armed_ = false;
  }
  publish_metrics(ctx);
  return {};
}

Status ToPostgres::send_rows(Context ctx, size_t n) {
  if (exactly_once_) SLUICE_SDK_RETURN_IF_ERROR(ensure_transaction(ctx));
  if (!conn_) return {};  // lost at BEGIN, with nothing in the transaction: rows wait
  const std::vector<size_t> rows = rows_to_send(buffer_, mapping_, 0, n);
  const size_t width = buffer_.width;
  std::vector<const char*> params;
  params.reserve(rows.size() * width);
  for (size_t r : rows) {
    for (size_t c = 0; c < width; ++c) {
      const size_t i = r * width + c;
      params.push_back(buffer_.is_null[i] != 0 ? nullptr : buffer_.texts[i].c_str());
    }
  }
  const int64_t t0 = ctx.now_ns();
  Outcome o = rows.size() == batch_rows_ ? conn_->exec_prepared(k_batch_statement, params)
                                         : conn_->exec_params(statement_.sql(rows.size()), params);
  last_latency_s_ = static_cast<double>(ctx.now_ns() - t0) / 1e9;
  if (!o.ok) {
    if (!o.connection_lost) {
      return server_error(
          ctx, "INSERT of " + std::to_string(rows.size()) + " rows into " + statement_.table(), o);
    }
    if (exactly_once_ && txn_rows_ > 0) {
      ++errors_total_;
      publish_metrics(ctx);
      return unavailable(
          "to_postgres: the connection was lost while the epoch's transaction held " +
          std::to_string(txn_rows_) +
          " rows, which the server rolled back: the node fails rather than write anything "
          "twice, and the restart replays them from the last checkpoint (" +
          o.error + ")");
    }
    lost_connection(ctx, "connection lost: " + o.error);
    return {};  // the rows stay buffered; the autocommitted statement did not happen... or
                // did (at-least-once: it is sent again)
  }
  ++statements_total_;
  rows_total_ += rows.size();
  if (exactly_once_) {
    txn_rows_ += rows.size();
  } else {
    ++transactions_total_;
  }
  buffer_.texts.erase(buffer_.texts.begin(),
                      buffer_.texts.begin() + static_cast<std::ptrdiff_t>(n * width));
  buffer_.is_null.erase(buffer_.is_null.begin(),
                        buffer_.is_null.begin() + static_cast<std::ptrdiff_t>(n * width));
  return {};
}

Status ToPostgres::ensure_transaction(Context ctx) {
  if (txn_open_ || !conn_) return {};
  Outcome o = conn_->exec("BEGIN");
  if (!o.ok) {
    if (o.connection_lost) {
      lost_connection(ctx, "connection lost: " + o.error);
      return {};
    }
    return server_error(ctx, "BEGIN", o);
  }
  txn_open_ = true;
  txn_rows_ = 0;
  return {};
}

Status ToPostgres::finish(Context ctx) {
  if (exactly_once_) {
    // The input ended after the last checkpoint: what arrives now (what operators emit at
    // finish) is covered by no checkpoint, and a rerun emits it again. As to_kafka does,
    // it is not committed.
    const uint64_t dropped = txn_rows_ + buffer_.rows();
    if (dropped > 0) {
      ctx.log_warn("to_postgres: " + std::to_string(dropped) +
                   " rows after the last checkpoint (emitted at the end of input) are not "
                   "committed: no checkpoint covers them");
    }
    if (conn_ && txn_open_) static_cast<void>(conn_->exec("ROLLBACK"));
    txn_open_ = false;
    buffer_.clear();
    return {};
  }
  if (!conn_) {
    ++reconnects_total_;
    SLUICE_SDK_ASSIGN_OR_RETURN(const bool up, connect(ctx));
    if (!up) {
      return unavailable("to_postgres: " + std::to_string(buffer_.rows()) +
                         " rows could not be written at the end of input: " + last_connect_error_);
    }
  }
  SLUICE_SDK_RETURN_IF_ERROR(flush(ctx, true));
  if (buffer_.rows() > 0) {
    return unavailable("to_postgres: " + std::to_string(buffer_.rows()) +
                       " rows could not be written at the end of input: " + last_connect_error_);
  }
  return {};
}

void ToPostgres::stop(Context ctx) {
  ctx.timer_cancel(k_batch_timer);
  ctx.timer_cancel(k_reconnect_timer);
  // An open transaction is rolled back by the server when the connection closes; prepared
  // ones stay for the next start to settle.
  conn_.reset();
}

Status ToPostgres::server_error(Context ctx, const std::string& what, const Outcome& o) {
  ++errors_total_;
  publish_metrics(ctx);
  std::string msg = "to_postgres: " + what + " failed: " + o.error;
  if (o.sqlstate == "42P10") {
    msg += " (key_columns must match a unique index or constraint of the table)";
  }
  return sdk::invalid_argument(std::move(msg));
}

void ToPostgres::publish_metrics(Context ctx) const {
  ctx.gauge_set("postgres_rows_total", "", static_cast<double>(rows_total_));
  ctx.gauge_set("postgres_statements_total", "", static_cast<double>(statements_total_));
  ctx.gauge_set("postgres_transactions_total", "", static_cast<double>(transactions_total_));
  ctx.gauge_set("postgres_errors_total", "", static_cast<double>(errors_total_));
  ctx.gauge_set("postgres_reconnects_total", "", static_cast<double>(reconnects_total_));
  ctx.gauge_set("postgres_statement_latency_seconds", "", last_latency_s_);
  ctx.gauge_set("postgres_prepared_transactions", "", static_cast<double>(prepared_.size()));
  ctx.gauge_set("postgres_connected", "", conn_ ? 1.0 : 0.0);
  ctx.gauge_set("postgres_buffered_rows", "", static_cast<double>(buffer_.rows()));
}

}  // namespace sluice::postgres
