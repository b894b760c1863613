// What the loader does to a parsed config before validation (docs/OPERATIONS.md,
// "Configure"): `${VAR}` / `${VAR:-default}` interpolation in string values, and secrets
// read from outside the TOML (`{ secret_file = ... }`, `{ secret_env = ... }`,
// `{ secret_credential = ... }`) put in place of the table that names them. Every later
// step (validate, graph, run, test, reload) sees the result.
#pragma once

#include "config/config_loader.hpp"
#include "config/diagnostic.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host {

// Reads one environment variable: nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment (getenv).
[[nodiscard]] EnvLookup process_environment();

// The most a secret file may hold: a secret is a password or a key, not a data file.
inline constexpr size_t k_max_secret_bytes = size_t{64} * 1024;

// The keys of a secret reference: a table with exactly one of these keys, a string.
inline constexpr std::string_view k_secret_file_key = "secret_file";
inline constexpr std::string_view k_secret_env_key = "secret_env";
inline constexpr std::string_view k_secret_credential_key = "secret_credential";

// Rewrites `doc.root` in place, and returns the findings (errors at the string's or the
// table's file:line:col; none quotes a secret):
// - in every string value at any depth (keys excepted), `${NAME}` becomes the variable's
//   value, `${NAME:-default}` the default when NAME is unset or empty, and `$$` a single
//   `$`; a lone `$` stays as written. An unset NAME without a default is an error.
//   Interpolated strings are recorded in doc.interpolated (a number or bool param may be
//   given as such a string: the validator parses it).
//   Lua code is never touched: the values of keys named `lua` or ending in `_lua`, at any
//   depth, and the [[tests]] array (injected records, read by `sluiced test`).
// - a table `{ secret_file = "PATH" }` becomes the file's content (one trailing newline
//   stripped; at most k_max_secret_bytes; a regular file), `{ secret_env = "NAME" }` the
//   variable's value, `{ secret_credential = "NAME" }` the file NAME in
//   $CREDENTIALS_DIRECTORY (systemd's LoadCredential=; NAME without '/' or "..").
//   Relative secret_file paths resolve against the directory of the config file that names
//   them. Each secret's text is appended to doc.secrets (redaction: graph/redact.hpp).
[[nodiscard]] std::vector<Diagnostic> resolve_config_values(ConfigDocument& doc,
                                                            const EnvLookup& env);

// `text` with `${NAME}`, `${NAME:-default}` and `$$` expanded; on error, a message naming
// what is wrong (an unset variable, an unclosed `${`). Exposed for unit tests.
struct Interpolated {
  std::string text;
  std::string error;  // empty when it worked
  bool changed = false;
};
[[nodiscard]] Interpolated interpolate(std::string_view text, const EnvLookup& env);

}  // namespace sluice::host
