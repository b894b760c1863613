// Redaction of secrets, wherever a config or a message about it is shown: `sluiced graph`
// (json and dot), the admin endpoint's /graph and /graph.dot, the daemon's log, config
// errors and `sluiced test` output. One rule, here: a value is secret when its key looks
// secret (is_secret_key), or when it came from a secret reference in the config
// ({ secret_file = ... }, GraphSpec::secrets), whatever its key.
#pragma once

#include "value/value.hpp"

#include <string>
#include <string_view>
#include <vector>

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
// With `secrets` (GraphSpec::secrets), also every string value that holds one of those
// texts, under any key.
[[nodiscard]] Value redact_secrets(const Value& config,
                                   const std::vector<std::string>& secrets = {});

// `text` with every occurrence of every non-empty string of `secrets` replaced by
// "<redacted>": for messages that may quote a secret (a plugin's error, a config finding).
[[nodiscard]] std::string redact_text(std::string text, const std::vector<std::string>& secrets);

}  // namespace sluice::host
