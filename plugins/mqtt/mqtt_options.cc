// The shared connection keys: defaults, validate rules and applying them to libmosquitto.
#include "mqtt_options.hpp"

#include <mosquitto.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace sluice::mqtt {

namespace {

/// Client ids in the alphabet every broker accepts: anything else becomes '_'.
std::string client_id_safe(std::string s) {
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return s;
}

void check_readable(const sdk::Config& cfg, std::string_view key) {
  const std::optional<std::string> path = cfg.find_string(key);
  if (!path || !cfg.check_environment()) return;
  if (::access(path->c_str(), R_OK) != 0) {
    cfg.fail(key,
             "names a file that cannot be read: \"" + *path + "\" (" + std::strerror(errno) + ")");
  }
}

}  // namespace

std::string mosquitto_error(int rc) {
  if (rc == MOSQ_ERR_ERRNO) return std::strerror(errno);
  return mosquitto_strerror(rc);
}

void ensure_library() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

ConnectionOptions ConnectionOptions::from_config(const sdk::Config& cfg, std::string_view node_id,
                                                 uint32_t task_index) {
  ConnectionOptions o;
  o.host = cfg.get_string("host");
  o.port = static_cast<int>(cfg.get_int("port"));
  if (std::optional<std::string> id = cfg.find_string("client_id")) {
    o.client_id = *id;
  } else {
    o.client_id = client_id_safe(
        "sluice-" + (cfg.pipeline().empty() ? std::string("pipeline") : cfg.pipeline()) + "-" +
        std::string(node_id));
  }
  // (append, not "-" + to_string(): GCC 12 at -O3 warns falsely on that, -Werror=restrict)
  if (cfg.task_count() > 1) o.client_id.append("-").append(std::to_string(task_index));
  o.clean_session = cfg.get_bool("clean_session");
  o.keepalive_s = static_cast<int>(cfg.get_int("keepalive_s"));
  o.username = cfg.find_string("username").value_or("");
  o.password = cfg.find_string("password").value_or("");
  o.ca_file = cfg.find_string("ca_file").value_or("");
  o.cert_file = cfg.find_string("cert_file").value_or("");
  o.key_file = cfg.find_string("key_file").value_or("");
  o.tls_insecure = cfg.get_bool("tls_insecure");
  o.backoff_max = cfg.get_duration("reconnect_backoff_max_ms");
  return o;
}

void ConnectionOptions::validate(const sdk::Config& cfg) {
  if (cfg.has("password") && !cfg.has("username")) {
    cfg.fail("password", "needs `username` (MQTT sends a password only with a user name)");
  }
  if (std::optional<std::string> id = cfg.find_string("client_id")) {
    if (id->empty() || id->size() > 65535) cfg.fail("client_id", "must be 1 to 65535 bytes");
  }
  if (cfg.has("cert_file") != cfg.has("key_file")) {
    cfg.fail(cfg.has("cert_file") ? "cert_file" : "key_file",
             "needs its partner: a client certificate is given as cert_file and key_file");
  }
  if (cfg.has("cert_file") && !cfg.has("ca_file")) {
    cfg.fail("cert_file", "needs ca_file (TLS is on only with the CA that signs the broker)");
  }
  if (cfg.get_bool("tls_insecure") && !cfg.has("ca_file")) {
    cfg.fail("tls_insecure", "has no effect without ca_file (TLS is off)");
  }
  check_readable(cfg, "ca_file");
  check_readable(cfg, "cert_file");
  check_readable(cfg, "key_file");
}

sdk::Status ConnectionOptions::apply(mosquitto* m) const {
  int rc = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
  if (rc != MOSQ_ERR_SUCCESS) return sdk::internal_error("mqtt: " + mosquitto_error(rc));
  if (!username.empty()) {
    rc = mosquitto_username_pw_set(m, username.c_str(),
                                   password.empty() ? nullptr : password.c_str());
    if (rc != MOSQ_ERR_SUCCESS) {
      return sdk::invalid_argument("mqtt: username refused: " + mosquitto_error(rc));
    }
  }
  if (!ca_file.empty()) {
    rc = mosquitto_tls_set(m, ca_file.c_str(), nullptr,
                           cert_file.empty() ? nullptr : cert_file.c_str(),
                           key_file.empty() ? nullptr : key_file.c_str(), nullptr);
    if (rc != MOSQ_ERR_SUCCESS) {
      return sdk::invalid_argument(
          "mqtt: the TLS files (ca_file, cert_file, key_file) were refused: " +
          mosquitto_error(rc));
    }
    rc = mosquitto_tls_insecure_set(m, tls_insecure);
    if (rc != MOSQ_ERR_SUCCESS) return sdk::internal_error("mqtt: " + mosquitto_error(rc));
  }
  return {};
}

}  // namespace sluice::mqtt
