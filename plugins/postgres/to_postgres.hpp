// to_postgres: rows into a PostgreSQL table over libpq, exactly once through checkpoints.
//
// Without [checkpoint] (or with exactly_once = false) every statement commits on its own:
// at-least-once. With checkpoints and exactly_once, each epoch's rows go into one
// transaction: checkpoint_prepare ends it with PREPARE TRANSACTION 'gid' (durable on the
// server, invisible to readers), checkpoint_commit runs COMMIT PREPARED, and a restart
// settles what a crash left in pg_prepared_xacts by the epoch in each gid: at or below the
// restored checkpoint's epoch it is committed (the checkpoint counts it), above it rolled
// back (the source replays those rows). Flink's JDBC XA sink works the same way.
//
// Statements are synchronous libpq calls on the task thread: a slow server is back-pressure.
#pragma once

#include <sluice/sluice.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "insert_statement.hpp"
#include "pg_connection.hpp"
#include "row_mapping.hpp"

namespace sluice::postgres {

/// `to_postgres`: each element one row of `table`, inserted or upserted in batches.
class ToPostgres final : public sdk::Sink {
 public:
  static constexpr const char* k_name = "to_postgres";
  static constexpr const char* k_doc =
      "Writes each element as one row of a PostgreSQL table (libpq): `columns` maps each "
      "column to a field, an index or a path of the element, or to \"@value\" (the element), "
      "\"@json\" (the element as JSON text, for a json/jsonb column), \"@key\" (the message "
      "key) or \"@event_time\"; a missing field is NULL. Values are sent as bound text "
      "parameters and converted by the server (bytes as bytea, arrays and objects as JSON). "
      "Rows go out in multi-row INSERT statements of up to batch_rows rows (and after "
      "batch_timeout_ms); with key_columns, as an upsert (INSERT ... ON CONFLICT (keys) DO "
      "UPDATE, the natural target of aggregate's changelog; within one statement the last "
      "row of a key wins). Without checkpoints every statement commits: at-least-once. With "
      "a [checkpoint] table and exactly_once, each epoch's rows form one transaction, "
      "PREPARE TRANSACTION at the checkpoint's prepare and COMMIT PREPARED once it is "
      "stored; a restart commits or rolls back what a crash left prepared by the epoch in "
      "its transaction id, so every element is in the table once (needs "
      "max_prepared_transactions > 0 on the server, checked at start). A lost connection is "
      "retried with backoff (the sources wait); with exactly_once, a connection lost while "
      "the epoch's transaction holds rows fails the node instead (the restart replays them). "
      "At start the statement is prepared on the server, so a missing table or column or a "
      "key_columns without a matching unique constraint fails at once. See "
      "docs/CONNECTORS.md.";
  static constexpr std::array k_params{
      sdk::required("conninfo", SL_PARAM_STRING,
                    "libpq connection string: \"host=... port=... dbname=... user=...\" or a "
                    "postgresql:// URI. Keep the password out of it: use `password`, or give "
                    "the whole string as { secret_file = ... } (redacted in every output).")
          .non_empty(),
      sdk::param("password", SL_PARAM_STRING, nullptr,
                 "The password, passed to libpq apart from conninfo; never printed (give it "
                 "as { secret_file = ... }, { secret_env = ... } or { secret_credential = "
                 "... }). Absent: conninfo's, or libpq's ~/.pgpass and PGPASSWORD."),
      sdk::required("table", SL_PARAM_STRING,
                    "The table: \"name\" or \"schema.name\", each part quoted as written (case "
                    "sensitive).")
          .non_empty(),
      sdk::required("columns", SL_PARAM_TABLE,
                    "{ column = source, ... }: a field name, an array index, a path [\"a\", 0] "
                    "or \"@value\", \"@json\", \"@key\", \"@event_time\". Column names are "
                    "quoted as written.")
          .non_empty(),
      sdk::param("key_columns", SL_PARAM_ARRAY, nullptr,
                 "Columns (of `columns`) with a unique constraint: rows are upserted (ON "
                 "CONFLICT (key_columns) DO UPDATE SET every other column; DO NOTHING when "
                 "every column is a key). An element whose key column would be NULL is an "
                 "error of that element."),
      sdk::param("batch_rows", SL_PARAM_INT, "500",
                 "Rows per INSERT statement (at most 65535 parameters: rows x columns).")
          .range(1, 65535),
      sdk::param("batch_timeout_ms", SL_PARAM_DURATION, "100",
                 "A partial batch is sent this long after its first row.")
          .min(1),
      sdk::param("exactly_once", SL_PARAM_BOOL, "true",
                 "With a [checkpoint] table: one prepared transaction per epoch (two-phase "
                 "commit; needs max_prepared_transactions > 0). false: every statement "
                 "commits, and a restart writes the rows after the last checkpoint again "
                 "(at-least-once; idempotent with key_columns). No effect without checkpoints."),
      sdk::param("transaction_prefix", SL_PARAM_STRING, nullptr,
                 "With exactly_once: the prefix of the prepared transactions' ids "
                 "(\"sluice:PREFIX:TASK:EPOCH\"); at start every prepared transaction with it is "
                 "committed or rolled back. Default \"<pipeline>.<node id>\". Must be stable "
                 "across restarts and unique among the sluiced processes that write to the "
                 "same server (several daemons of one pipeline: one prefix each). Letters, "
                 "digits, '.', '_', '-'; at most 120 bytes."),
      sdk::param("connect_timeout_ms", SL_PARAM_DURATION, "10000",
                 "Bound on one connection attempt (libpq's connect_timeout, whole seconds, at "
                 "least 2).")
          .min(1),
      sdk::param("reconnect_backoff_max_ms", SL_PARAM_DURATION, "5000",
                 "Reconnection attempts start 100 ms apart and double up to this.")
          .min(1),
      sdk::param("reconnect_timeout_ms", SL_PARAM_DURATION, "60000",
                 "The node fails when the server stays unreachable this long (0: retry "
                 "forever)."),
  };

  /// The cross-key rules (columns, key_columns, table, conninfo's syntax, the prefix, the
  /// parameter limit); no connection is made.
  static void validate(const sdk::Config& cfg);
  ToPostgres(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;

  // Checkpoints (to_postgres_checkpoint.cc).
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;
  sdk::Status checkpoint_commit(sdk::Context ctx, uint64_t epoch) override;
  sdk::Status checkpoint_abort(sdk::Context ctx, uint64_t epoch) override;
  /// {"epoch": the newest epoch prepared}: a restart commits the prepared transactions up
  /// to it and rolls back the later ones.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_batch_timer = 1;
  static constexpr uint64_t k_reconnect_timer = 2;
  static constexpr std::chrono::milliseconds k_first_backoff{100};

  /// Connects and readies the session: checks max_prepared_transactions (exactly_once),
  /// prepares the full-batch statement (the server checks table, columns and conflict
  /// target), settles leftover prepared transactions once per run, commits what a stored
  /// checkpoint still waits for. false: the server is unreachable (retry later); a failure:
  /// the server refused the setup (not retried).
  sdk::Result<bool> connect(sdk::Context ctx);
  /// The connection is gone: back-pressure on, a reconnection armed.
  void lost_connection(sdk::Context ctx, const std::string& why);
  /// Sends every buffered row (when `all`) or every full batch. Rows stay buffered while the
  /// server is unreachable (at-least-once, or exactly_once with nothing sent in the epoch);
  /// a connection lost with rows in the epoch's transaction is a failure.
  sdk::Status flush(sdk::Context ctx, bool all);
  /// One statement for buffered rows [0, n).
  sdk::Status send_rows(sdk::Context ctx, size_t n);
  /// Runs `sql` inside the epoch's transaction (BEGIN first when none is open).
  sdk::Status ensure_transaction(sdk::Context ctx);
  /// PREPARE TRANSACTION for `epoch` when its transaction holds rows.
  sdk::Status prepare_epoch(sdk::Context ctx, uint64_t epoch);
  /// COMMIT PREPARED for every prepared epoch up to `epoch`; an unreachable server leaves
  /// them for the reconnection (the checkpoint holds them either way).
  sdk::Status commit_prepared(sdk::Context ctx, uint64_t epoch);
  /// At the first connection of a run: COMMIT PREPARED this node's leftover transactions up
  /// to the restored epoch, ROLLBACK PREPARED the others.
  sdk::Status recover_prepared(sdk::Context ctx);
  [[nodiscard]] std::string gid(uint64_t epoch) const;
  [[nodiscard]] std::string gid_head() const;
  /// Publishes the counters (per statement, never per row).
  void publish_metrics(sdk::Context ctx) const;
  sdk::Status server_error(sdk::Context ctx, const std::string& what, const Outcome& o);

  // Config.
  std::string conninfo_;
  std::string password_;
  RowMapping mapping_;
  InsertStatement statement_;
  size_t batch_rows_;
  std::chrono::milliseconds batch_timeout_;
  bool exactly_once_;  // exactly_once and checkpointing
  bool checkpointing_;
  std::string prefix_;
  uint32_t task_index_;
  int64_t connect_timeout_s_;
  std::chrono::milliseconds backoff_max_;
  std::chrono::milliseconds reconnect_timeout_;

  // Connection.
  std::optional<Connection> conn_;
  std::string full_sql_;  // the batch_rows statement, prepared as "sluice_batch"
  std::chrono::milliseconds backoff_{k_first_backoff};
  int64_t down_since_ns_ = 0;  // when the connection was lost (0: connected or never was)
  std::string last_connect_error_;
  bool backpressure_ = false;
  bool batch_timer_armed_ = false;

  // Rows and transactions.
  RowBuffer buffer_;
  bool txn_open_ = false;              // BEGIN sent, not yet prepared
  uint64_t txn_rows_ = 0;              // rows sent in the open transaction
  std::vector<uint64_t> prepared_;     // prepared epochs, not yet committed, ascending
  uint64_t commit_due_ = 0;            // a stored epoch whose COMMIT PREPARED is still owed
  uint64_t last_epoch_ = 0;            // the newest prepared (or restored) epoch
  std::optional<uint64_t> preparing_;  // a prepare answered later (server unreachable)
  bool restored_ = false;
  uint64_t restored_epoch_ = 0;  // the restored checkpoint's epoch (restored_)
  bool recovered_ = false;       // recover_prepared ran in this process

  // Metrics (running totals of this node instance).
  uint64_t rows_total_ = 0;
  uint64_t statements_total_ = 0;
  uint64_t transactions_total_ = 0;
  uint64_t errors_total_ = 0;
  uint64_t reconnects_total_ = 0;
  double last_latency_s_ = 0;
};

}  // namespace sluice::postgres
