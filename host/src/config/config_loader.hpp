// Reading a pipeline config file: TOML syntax only. The parsed document keeps
// the toml::table so the validator can point every finding at a line and
// column. Meaning (types, params, inputs) is checked by config_validator.
#pragma once

#include "config/diagnostic.hpp"
#include "graph/graph_spec.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host {

// A syntactically valid config file.
struct ConfigDocument {
  std::filesystem::path file;      // as given by the caller; diagnostics print it so
  std::filesystem::path base_dir;  // absolute directory relative entries resolve against
  toml::table root;

  // The name used in diagnostics (file as given).
  [[nodiscard]] std::string source_name() const { return file.string(); }
};

// Reads and parses `file`. An unreadable file or a TOML syntax error gives one
// error Diagnostic with the position toml++ reports.
[[nodiscard]] Diagnosed<ConfigDocument> parse_config_file(const std::filesystem::path& file);

// Parses config text as if it had been read from `file` (which need not
// exist): for tests, fuzzing and `sluiced validate -` on stdin.
[[nodiscard]] Diagnosed<ConfigDocument> parse_config_string(std::string_view text,
                                                            const std::filesystem::path& file);

// The top-level `plugin_dirs`, relative entries resolved against the config
// file's directory. Callable before validation because plugins must be loaded
// before node types can be checked. A missing key gives an empty list; a key
// that is not an array of non-empty strings gives errors (the validator
// reports the same errors again, so callers may ignore these).
[[nodiscard]] Diagnosed<std::vector<std::filesystem::path>> config_plugin_dirs(
    const ConfigDocument& doc);

// Where each `plugin_dirs` entry is written, parallel to config_plugin_dirs' paths (empty
// when the key is absent or malformed), so that a plugin problem in one of those
// directories is reported at the entry's file:line:col.
[[nodiscard]] std::vector<SourcePos> config_plugin_dir_positions(const ConfigDocument& doc);

}  // namespace sluice::host
