// libpq calls behind Connection; see pg_connection.hpp.
#include "pg_connection.hpp"

#include <string>
#include <utility>

namespace sluice::postgres {

namespace {

// libpq's messages end with a newline and may span lines (DETAIL, HINT): one line for logs.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

Outcome not_connected() {
  Outcome o;
  o.connection_lost = true;
  o.error = "not connected";
  return o;
}

}  // namespace

std::optional<Connection> Connection::open(const std::string& conninfo, const std::string& password,
                                           int64_t connect_timeout_s, std::string& error) {
  // dbname first, expanded as a connection string (expand_dbname = 1); the keywords after it
  // override what it says, so `password` never has to be part of conninfo.
  const std::string timeout = std::to_string(connect_timeout_s);
  std::vector<const char*> keys{"dbname", "connect_timeout", "fallback_application_name"};
  std::vector<const char*> values{conninfo.c_str(), timeout.c_str(), "sluice"};
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  Connection c(PQconnectdbParams(keys.data(), values.data(), 1));
  if (!c.conn_) {
    error = "out of memory";
    return std::nullopt;
  }
  if (PQstatus(c.conn_.get()) != CONNECTION_OK) {
    error = one_line(PQerrorMessage(c.conn_.get()));
    return std::nullopt;
  }
  return c;
}

Outcome Connection::outcome(PGresult* raw) {
  Outcome out;
  out.result = ResultPtr(raw, &PQclear);
  const ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  out.ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  if (!out.ok) {
    const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    if (state != nullptr) out.sqlstate = state;
    out.error = one_line(raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_.get()));
    if (out.error.empty()) out.error = one_line(PQerrorMessage(conn_.get()));
    out.connection_lost = !conn_ || PQstatus(conn_.get()) == CONNECTION_BAD;
  }
  return out;
}

Outcome Connection::exec(const std::string& sql) {
  if (!conn_) return not_connected();
  return outcome(PQexec(conn_.get(), sql.c_str()));
}

Outcome Connection::exec_params(const std::string& sql, const std::vector<const char*>& params) {
  if (!conn_) return not_connected();
  return outcome(PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(params.size()), nullptr,
                              params.data(), nullptr, nullptr, 0));
}

Outcome Connection::prepare(const std::string& name, const std::string& sql, int param_count) {
  if (!conn_) return not_connected();
  return outcome(PQprepare(conn_.get(), name.c_str(), sql.c_str(), param_count, nullptr));
}

Outcome Connection::exec_prepared(const std::string& name, const std::vector<const char*>& params) {
  if (!conn_) return not_connected();
  return outcome(PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(params.size()),
                                params.data(), nullptr, nullptr, 0));
}

std::optional<std::string> Connection::show(const std::string& name) {
  Outcome o = exec("SHOW " + name);
  if (!o.ok || PQntuples(o.result.get()) != 1) return std::nullopt;
  return std::string(PQgetvalue(o.result.get(), 0, 0));
}

std::string quote_identifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string quote_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

}  // namespace sluice::postgres
