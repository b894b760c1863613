// The connection keys shared by from_mqtt and to_mqtt: broker address, client id and
// session, credentials and TLS; their validate checks; applying them to a libmosquitto
// handle.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

struct mosquitto;

namespace sluice::mqtt {

/// The declared keys every MQTT node has (appended to each node type's own).
inline constexpr std::array k_connection_params{
    sdk::param("host", SL_PARAM_STRING, "\"localhost\"", "The broker's host name or address.")
        .non_empty(),
    sdk::param("port", SL_PARAM_INT, "1883", "The broker's port (8883 is the usual TLS port).")
        .range(1, 65535),
    sdk::param("client_id", SL_PARAM_STRING, nullptr,
               "The MQTT client id: the broker keeps the session (subscriptions and "
               "unacknowledged QoS 1/2 messages) under it, so it must be stable across "
               "restarts and unique among the broker's clients. Default "
               "\"sluice-<pipeline>-<node id>\", plus \"-<task>\" with several tasks."),
    sdk::param("clean_session", SL_PARAM_BOOL, "false",
               "false (the default): a persistent session, so that messages published while "
               "sluiced is down or restarting, and those it had not acknowledged, are "
               "delivered at the next connection (QoS 1 and 2). true: the broker forgets the "
               "session at each disconnection."),
    sdk::param("keepalive_s", SL_PARAM_INT, "60",
               "MQTT keepalive in seconds: the client pings an idle connection this often; the "
               "broker drops a client silent for 1.5 times it.")
        .range(5, 65535),
    sdk::param("username", SL_PARAM_STRING, nullptr, "User name for the broker's password check."),
    sdk::param("password", SL_PARAM_STRING, nullptr,
               "The password (needs username); never printed. Give it as { secret_file = ... }, "
               "{ secret_env = ... } or { secret_credential = ... }."),
    sdk::param("ca_file", SL_PARAM_STRING, nullptr,
               "PEM file of the CA certificates that sign the broker's certificate: turns TLS on."),
    sdk::param("cert_file", SL_PARAM_STRING, nullptr,
               "PEM client certificate, for brokers that require one (needs ca_file and "
               "key_file)."),
    sdk::param("key_file", SL_PARAM_STRING, nullptr,
               "PEM private key of cert_file (unencrypted; keep it readable by sluiced only)."),
    sdk::param("tls_insecure", SL_PARAM_BOOL, "false",
               "With TLS: do not check that the broker's certificate names `host` (tests only)."),
    sdk::param("reconnect_backoff_max_ms", SL_PARAM_DURATION, "5000",
               "Reconnection attempts start 100 ms apart and double up to this.")
        .min(1),
};

/// A node type's own keys followed by the connection keys (one k_params array).
template <size_t N, size_t M>
constexpr std::array<sdk::Param, N + M> with_connection_params(
    const std::array<sdk::Param, N>& own, const std::array<sdk::Param, M>& shared) {
  return [&]<size_t... I, size_t... J>(std::index_sequence<I...>, std::index_sequence<J...>) {
    return std::array<sdk::Param, N + M>{own[I]..., shared[J]...};
  }
  (std::make_index_sequence<N>(), std::make_index_sequence<M>());
}

/// The connection keys, read from a node's config.
struct ConnectionOptions {
  std::string host;
  int port = 1883;
  std::string client_id;
  bool clean_session = false;
  int keepalive_s = 60;
  std::string username;
  std::string password;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool tls_insecure = false;
  std::chrono::milliseconds backoff_max{5000};

  /// `node_id` and the task make the default client id.
  static ConnectionOptions from_config(const sdk::Config& cfg, std::string_view node_id,
                                       uint32_t task_index);
  /// The cross-key rules (password needs username, the TLS files go together, with the
  /// environment check: they are readable). Throws Config::fail.
  static void validate(const sdk::Config& cfg);
  /// Sets client id-independent options on `m` (credentials, TLS, protocol). A refusal (a
  /// TLS file libmosquitto cannot use) is a failure that names the key, never a secret.
  [[nodiscard]] sdk::Status apply(mosquitto* m) const;
};

/// libmosquitto's text for a return code.
std::string mosquitto_error(int rc);

/// Initialises libmosquitto once per process (thread-safe; never cleaned up: other plugins
/// or a reload may still use it).
void ensure_library();

}  // namespace sluice::mqtt
