// Redaction of secrets in node configs, wherever a config is shown: `sluiced graph
// --format json` and the admin endpoint's /graph. One rule, here.
#pragma once

#include "value/value.hpp"

#include <string_view>

namespace sluice::host {

// What a redacted value is shown as.
inline constexpr std::string_view k_redacted = "<redacted>";

// True for a config key whose value is a secret, case-insensitively: a key containing
// "password", "passwd", "secret", "credential", "api_key", "apikey" or "private_key", or
// the word "token" (between '.', '_' or '-'), and librdkafka's `sasl.*` keys but
// `sasl.mechanism(s)` (sasl.username, sasl.password, sasl.oauthbearer.*, ...). Examples:
// `password`, `ssl.key.password`, `sasl.oauthbearer.client.secret`, `auth_token`; not
// `max_tokens`.
[[nodiscard]] bool is_secret_key(std::string_view key);

// `config` with the value of every secret key (at any depth, in objects inside objects
// and arrays) replaced by the string "<redacted>"; the rest is shared, not copied.
[[nodiscard]] Value redact_secrets(const Value& config);

}  // namespace sluice::host
