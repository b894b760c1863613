// Node types of the net plugin: from_tcp and from_http_server (see README.md).
#pragma once

#include <sluice/sluice.hpp>

#include "server_source.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sluice::net {

/// `from_tcp`: every delimited message of every connection.
class FromTcp final : public ServerSource {
 public:
  static constexpr const char* k_name = "from_tcp";
  static constexpr const char* k_doc =
      "Listens on a TCP port and emits every message of every connection, split at "
      "`delimiter` (which is not part of the message). Unlike streamz's from_tcp, which emits "
      "only the first message of each connection, nothing is dropped: messages of one connection "
      "go out in order, connections interleave. A last message without a delimiter is emitted "
      "when the client closes its side cleanly, and dropped when the connection is reset. "
      "Elements are strings (format \"text\": a message that is not valid UTF-8 is dropped with "
      "a warning) or bytes (format \"bytes\"). Port 0 picks a free port; the bound address is "
      "logged as \"listening on ADDRESS:PORT\". Memory is bounded: when `max_buffered_bytes` "
      "of messages wait for the source to be polled (back-pressure downstream), the source "
      "stops reading its sockets, so TCP flow control slows the clients down; a message longer "
      "than `max_line_bytes` closes its connection (logged). At most `max_connections` clients "
      "are served at once; more wait in the listen backlog. With several tasks, only task 0 "
      "listens. Not stateful: TCP cannot replay, so messages read but not yet emitted when the "
      "pipeline stops are lost; run on the loopback or a trusted network (no TLS, no auth).";
  static constexpr std::array k_params{
      sdk::required("port", SL_PARAM_INT, "TCP port to listen on (0: any free port, logged).")
          .range(0, 65535),
      sdk::param("address", SL_PARAM_STRING, "\"127.0.0.1\"",
                 "Numeric IPv4 or IPv6 address to bind (\"0.0.0.0\": every interface)."),
      sdk::param("delimiter", SL_PARAM_STRING, "\"\\n\"",
                 "Separator between messages (not empty; e.g. \"\\r\\n\").")
          .non_empty(),
      sdk::param("format", SL_PARAM_STRING, "\"text\"", R"("text" (UTF-8 strings) or "bytes".)")
          .one_of("text|bytes"),
      sdk::param("max_line_bytes", SL_PARAM_INT, "1048576",
                 "Longest message accepted; a longer one closes its connection.")
          .min(1),
      sdk::param("max_connections", SL_PARAM_INT, "64", "Clients served at once.").min(1),
      sdk::param("max_buffered_bytes", SL_PARAM_INT, "1048576",
                 "Bytes of messages waiting for a poll at which reading pauses.")
          .min(1),
  };

  FromTcp(const sl_node_init& init, const sdk::Config& cfg);
  ~FromTcp() override;
  FromTcp(const FromTcp&) = delete;
  FromTcp& operator=(const FromTcp&) = delete;

  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  void stop(sdk::Context ctx) override;

 protected:
  sdk::Status accepted(sdk::Context ctx, uint64_t id, int fd) override;
  sdk::Status connection_ready(sdk::Context ctx, uint64_t id, uint32_t ready) override;

 private:
  struct Conn {
    int fd = -1;
    std::string partial;  // bytes after the last delimiter
  };
  /// Reads what is there (up to a fair share), queues complete messages, and re-arms the
  /// watch unless the buffer is full (then the connection waits in paused_).
  sdk::Status read_some(sdk::Context ctx, uint64_t id, Conn& c);
  void queue_message(sdk::Context ctx, std::string_view message);
  void close_conn(sdk::Context ctx, uint64_t id);
  void close_all() noexcept;

  std::string delimiter_;
  bool text_;
  size_t max_line_;
  size_t max_buffered_;
  std::map<uint64_t, Conn> conns_;
  std::vector<uint64_t> paused_;   // connections not re-armed while the buffer is full
  std::deque<sdk::Value> queue_;   // messages waiting for poll
  size_t buffered_ = 0;            // bytes in queue_ (plus a per-message overhead)
  std::vector<char> chunk_;        // read buffer, reused
  std::vector<sdk::Value> batch_;  // poll's batch, reused
  uint64_t invalid_utf8_ = 0;
};

/// `from_http_server`: each request body on `path` is one element.
class FromHttpServer final : public ServerSource {
 public:
  static constexpr const char* k_name = "from_http_server";
  static constexpr const char* k_doc =
      "An HTTP/1.1 server (keep-alive and pipelining supported; Boost.Beast parses requests): "
      "the body of each POST or PUT request to `path` is one element, a string (format "
      "\"text\", UTF-8), bytes (\"bytes\") or the parsed JSON value (\"json\"). The answer is "
      "200 once the element was handed to the pipeline (emitted downstream), so a 200 means "
      "the pipeline has it; a request never answered (the daemon stopped first) was not taken. "
      "Other answers: 404 for another path (the query string is ignored), 405 for another "
      "method, 413 when the body exceeds `max_body_bytes` (the connection is then closed), 400 "
      "for a malformed request or a body that is not valid for `format`, and 503 with "
      "Retry-After while `max_pending` bodies wait for the pipeline (back-pressure): nothing is "
      "buffered without bound. The request header, each chunk-size line (with its extensions) "
      "and the trailer section are limited to 16 KiB each (else 431, and the connection is "
      "closed); obs-fold and an HTTP/1.1 request without one Host header get 400. A request "
      "whose header is not complete `header_timeout_ms` after its first byte, and a "
      "connection idle for `idle_timeout_ms` (between requests, or a body or an answer making "
      "no progress), are closed. At `max_connections`, a new client takes the place of the "
      "connection idle the longest; only when all are busy does it wait in the listen "
      "backlog. `Expect: 100-continue` is honoured. Port 0 picks a free port, "
      "logged as \"listening on ADDRESS:PORT\". With several tasks, only task 0 listens. Not "
      "stateful. No TLS and no authentication: bind to the loopback or a trusted network.";
  static constexpr std::array k_params{
      sdk::required("port", SL_PARAM_INT, "TCP port to listen on (0: any free port, logged).")
          .range(0, 65535),
      sdk::param("address", SL_PARAM_STRING, "\"127.0.0.1\"",
                 "Numeric IPv4 or IPv6 address to bind (\"0.0.0.0\": every interface)."),
      sdk::param("path", SL_PARAM_STRING, "\"/\"", "The one path that accepts bodies."),
      sdk::param("format", SL_PARAM_STRING, "\"text\"",
                 R"("text" (UTF-8 string), "bytes" or "json" (the parsed document).)")
          .one_of("text|bytes|json"),
      sdk::param("max_body_bytes", SL_PARAM_INT, "1048576", "Largest body accepted (else 413).")
          .min(0),
      sdk::param("max_pending", SL_PARAM_INT, "64",
                 "Bodies waiting for the pipeline at which new ones get 503.")
          .min(1),
      sdk::param("max_connections", SL_PARAM_INT, "64",
                 "Clients served at once (at the limit the idlest connection makes room).")
          .min(1),
      sdk::param("header_timeout_ms", SL_PARAM_INT, "10000",
                 "Time from a request's first byte to the end of its header; a connection "
                 "slower than that is closed.")
          .min(1),
      sdk::param("idle_timeout_ms", SL_PARAM_INT, "60000",
                 "Time a connection may stay idle (between requests, or a body or an answer "
                 "making no progress) before it is closed.")
          .min(1),
  };

  /// The address is numeric and the path starts with '/'.
  static void validate(const sdk::Config& cfg) {
    ServerSource::validate(cfg);
    const std::string path = cfg.get_string("path");
    if (path.empty() || path[0] != '/') {
      cfg.fail("path", "must start with '/' (got \"" + path.substr(0, 64) + "\")");
    }
  }
  FromHttpServer(const sl_node_init& init, const sdk::Config& cfg);
  ~FromHttpServer() override;
  FromHttpServer(const FromHttpServer&) = delete;
  FromHttpServer& operator=(const FromHttpServer&) = delete;

  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  void stop(sdk::Context ctx) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;

 protected:
  sdk::Status accepted(sdk::Context ctx, uint64_t id, int fd) override;
  sdk::Status connection_ready(sdk::Context ctx, uint64_t id, uint32_t ready) override;
  [[nodiscard]] bool has_idle_connection() const noexcept override;
  bool close_idlest(sdk::Context ctx) override;

 private:
  struct Conn;  // from_http_server.cc
  struct Pending {
    uint64_t conn;
    sdk::Value body;
  };
  enum class Format { text, bytes, json };
  /// connection_ready's work; connection_ready turns anything thrown into a closed connection.
  sdk::Status serve(sdk::Context ctx, uint64_t id, uint32_t ready);
  [[nodiscard]] std::chrono::milliseconds sweep_period() const noexcept;
  /// Parses what `c` has buffered and answers complete requests, then arms the watch the
  /// connection needs next (write while an answer is unsent, else read) or closes it.
  sdk::Status advance(sdk::Context ctx, uint64_t id);
  /// Feeds Conn::in to the parser and answers (or queues) each complete request, until an
  /// answer waits to be written or a body waits in pending_ (false), or the parser needs
  /// more input (true).
  bool parse(Conn& c);
  void handle_request(Conn& c);
  void respond(Conn& c, int status, std::string_view body, bool close, bool retry_after = false);
  void close_conn(sdk::Context ctx, uint64_t id);
  void close_all() noexcept;

  std::string path_;
  Format format_;
  uint64_t max_body_;
  size_t max_pending_;
  std::chrono::milliseconds header_timeout_;
  std::chrono::milliseconds idle_timeout_;
  bool sweeping_ = false;  // the sweep timer is armed
  uint64_t refused_ = 0;   // counters for warn_sometimes
  uint64_t failures_ = 0;
  uint64_t evicted_ = 0;
  uint64_t header_timeouts_ = 0;
  uint64_t idle_timeouts_ = 0;
  /// Answers sent, by status code: the counter http_responses_total{code}.
  std::map<int, uint64_t> responses_;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::deque<Pending> pending_;  // accepted bodies waiting for poll
  std::vector<sdk::Value> batch_;
  std::vector<char> chunk_;
};

}  // namespace sluice::net
