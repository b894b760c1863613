// Reading a pipeline config file: TOML syntax only. The parsed document keeps
// the toml::table so the validator can point every finding at a line and
// column. Meaning (types, params, inputs) is checked by config_validator.
#pragma once

#include "config/diagnostic.hpp"
#include "graph/graph_spec.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::host {

// Where a node or a key that the host wrote into a document comes from (a load-time
// expansion, config/repartition_expansion.hpp): the key the user wrote that asked for it.
// What the host writes has no position in the file, so the validator reports a finding on
// it at that key, naming that node and key, with `what` in front of its message.
struct GeneratedFrom {
  std::string node_id;  // the node whose key asked for it
  std::string key;      // that key
  SourcePos pos;        // where that key's value is written
  std::string what;     // "the to_kafka sink 'ID.repartition' it adds"
};

// A syntactically valid config file.
struct ConfigDocument {
  std::filesystem::path file;      // as given by the caller; diagnostics print it so
  std::filesystem::path base_dir;  // absolute directory relative entries resolve against
  toml::table root;
  // What the host wrote into `root`, by (node id, key); key "" stands for a whole node.
  std::map<std::pair<std::string, std::string>, GeneratedFrom, std::less<>> generated;
  bool expanded = false;  // the load-time expansions ran (expand_repartitions)
  // Every file the document was read from, in order (several files and config directories
  // merge into one document: parse_config_files). `file` is the first.
  std::vector<std::filesystem::path> files;
  // The text of every value that came from a secret (resolve_config_values,
  // config/config_values.hpp): shown as "<redacted>" wherever a config is printed.
  std::vector<std::string> secrets;
  // The string values that `${...}` interpolation changed: a number or bool param may be
  // given as such a string (`port = "${PORT}"`), which the validator then parses.
  std::set<const toml::node*> interpolated;

  // The name used in diagnostics (file as given).
  [[nodiscard]] std::string source_name() const { return file.string(); }
  // Where a finding on (node, key) belongs, when the host wrote that key or node.
  [[nodiscard]] const GeneratedFrom* generated_from(const std::string& node_id,
                                                    const std::string& key) const {
    auto it = generated.find(std::pair(node_id, key));
    if (it == generated.end()) it = generated.find(std::pair(node_id, std::string()));
    return it == generated.end() ? nullptr : &it->second;
  }
};

// Reads and parses `file`. An unreadable file or a TOML syntax error gives one
// error Diagnostic with the position toml++ reports.
[[nodiscard]] Diagnosed<ConfigDocument> parse_config_file(const std::filesystem::path& file);

// The config files `paths` stand for, in order: a file as given, a directory as every
// `*.toml` directly in it (not recursive), sorted by name. A missing path or an empty
// directory is an error at that path. Read again on every reload.
[[nodiscard]] Diagnosed<std::vector<std::filesystem::path>> expand_config_paths(
    const std::vector<std::filesystem::path>& paths);

// Reads, parses and merges several config files (expand_config_paths) into one document:
// the nodes of every file; each other top-level key ([runtime], [admin], [checkpoint],
// plugin_dirs, name, [[tests]], ...) in one file only. A second one, and a node id given
// twice, is an error naming both file:line:col. Each toml node keeps its own file, so every
// later finding points into the file it is written in. One path: parse_config_file.
[[nodiscard]] Diagnosed<ConfigDocument> parse_config_files(
    const std::vector<std::filesystem::path>& paths);

// Parses config text as if it had been read from `file` (which need not
// exist): for tests, fuzzing and `sluiced validate -` on stdin.
[[nodiscard]] Diagnosed<ConfigDocument> parse_config_string(std::string_view text,
                                                            const std::filesystem::path& file);

// The top-level `plugin_dirs`, relative entries resolved against the directory of the
// config file they are written in. Callable before validation because plugins must be loaded
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
