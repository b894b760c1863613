// A libpq connection and its results, as RAII objects, with the one distinction the sink
// needs from every failure: was the connection lost (retry after reconnecting), or did the
// server refuse the statement (a config or data error: fail)?
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::postgres {

/// A PGresult, cleared with its owner.
using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

/// The outcome of one statement.
struct Outcome {
  ResultPtr result{nullptr, &PQclear};
  /// True when the statement succeeded (PGRES_COMMAND_OK or PGRES_TUPLES_OK).
  bool ok = false;
  /// True when it failed because the connection is gone (PQstatus is CONNECTION_BAD
  /// afterwards): the statement's effect is unknown unless it was in an open transaction,
  /// which the server then rolls back.
  bool connection_lost = false;
  /// The server's (or libpq's) message when !ok, one line; SQLSTATE in front when known.
  std::string error;
  /// SQLSTATE ("42703" ...) when the server answered with an error, else empty.
  std::string sqlstate;
};

/// One connection (PQconnectdb, blocking, bounded by connect_timeout). Not thread-safe:
/// owned by one node and used on its task thread.
class Connection {
 public:
  Connection() = default;
  /// Connects with `conninfo` (libpq's "key=value ..." or URI form) and, when not empty,
  /// `password` (given to libpq as a separate keyword, so it never has to be in conninfo).
  /// Empty optional + `error` on failure.
  static std::optional<Connection> open(const std::string& conninfo, const std::string& password,
                                        int64_t connect_timeout_s, std::string& error);
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;
  ~Connection() = default;

  [[nodiscard]] bool connected() const { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }
  /// Closes the connection (an open transaction is rolled back by the server).
  void close() { conn_.reset(); }

  /// A statement without parameters (PQexec).
  Outcome exec(const std::string& sql);
  /// A statement with text parameters (PQexecParams); a null pointer is SQL NULL.
  Outcome exec_params(const std::string& sql, const std::vector<const char*>& params);
  /// Prepares `sql` as statement `name` (PQprepare): the server checks the table, the
  /// columns and the ON CONFLICT target now, before any row is sent.
  Outcome prepare(const std::string& name, const std::string& sql, int param_count);
  /// Runs prepared statement `name` (PQexecPrepared) with text parameters.
  Outcome exec_prepared(const std::string& name, const std::vector<const char*>& params);

  /// The server's setting `name` (SHOW), or empty optional when it cannot be read.
  std::optional<std::string> show(const std::string& name);

 private:
  explicit Connection(PGconn* conn) : conn_(conn, &PQfinish) {}
  Outcome outcome(PGresult* raw);

  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_{nullptr, &PQfinish};
};

/// `name` as a quoted SQL identifier ("a""b"): column and table names are used exactly as
/// written (case and all), and nothing in them can end the identifier.
std::string quote_identifier(std::string_view name);
/// `text` as an SQL string literal ('it''s'), for the gids of PREPARE/COMMIT PREPARED, which
/// take no parameters. standard_conforming_strings (on by default since 9.1) is assumed;
/// the gid alphabet (see to_postgres_checkpoint.cc) has no backslash anyway.
std::string quote_literal(std::string_view text);

}  // namespace sluice::postgres
