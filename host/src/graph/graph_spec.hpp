// The validated form of a pipeline config: what the executor builds a task
// from. Produced by config/ (config_loader parses, config_validator checks against
// the plugin registry); nothing downstream re-reads TOML. It lives here, below
// config/, so that the graph algorithms, the executor and the tools can read a graph
// without depending on how it was parsed.
#pragma once

#include "registry/plugin_registry.hpp"
#include "value/value.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host {

// A position in a config file (1-based line and column; 0 = unknown).
struct SourcePos {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
};

// Which output of a node an edge reads.
enum class OutputPort : uint32_t {
  main = 0,         // what the node emits
  dead_letter = 1,  // messages it failed on, with on_error = "dead_letter" ("ID.dead_letter")
  side = 2,         // a side output its type declares (ABI 1.5: "ID.late"); InputRef::side
};

// The producer named by an input reference "ID.dead_letter" (the messages node ID failed
// on), or nullopt when `ref` is not of that form. Whether ID exists and has a dead-letter
// output is for the caller to check: the validator, the executor and `sluiced test` each
// report a missing one differently.
[[nodiscard]] inline std::optional<std::string_view> dead_letter_producer(std::string_view ref) {
  constexpr std::string_view suffix = ".dead_letter";
  if (ref.size() <= suffix.size() || !ref.ends_with(suffix)) return std::nullopt;
  return ref.substr(0, ref.size() - suffix.size());
}

struct InputRef {
  std::string id;    // as written in `inputs` ("parse" or "parse.dead_letter")
  SourcePos pos;     // of the string in the `inputs` array
  std::string node;  // the producing node's id (id without the port suffix)
  OutputPort port = OutputPort::main;
  uint32_t side = 0;        // port side: the index among the type's side outputs
  std::string side_name{};  // port side: its name ("late")
};

// What a node does with a message its process() failed on (`on_error`).
enum class ErrorPolicy {
  fail,         // the task fails (default)
  skip,         // drop the message, count and log it, go on
  dead_letter,  // emit it on the node's dead-letter output, with the error in headers
};

struct NodeSpec {
  std::string id;
  int32_t role = 0;  // SL_ROLE_*, from the section ([sources], [operators], [sinks])
  std::string type;
  const NodeTypeInfo* info = nullptr;
  SourcePos pos;                 // of the node's table
  std::vector<InputRef> inputs;  // in config order: multi-input nodes see them in this order
  // Object holding every declared param that was given or has a default.
  // SL_PARAM_FUNCTION params are normalised to { name = "...", args = {...} }
  // with the function's own defaults filled in.
  ErrorPolicy on_error = ErrorPolicy::fail;  // operators and sinks
  Value config;
  std::map<std::string, SourcePos, std::less<>> key_pos;  // where each given key stands
  // A node the host added at load, not written in the file (key_by's repartition_topic adds
  // "ID.repartition" and "ID.repartitioned"): the node and key that asked for it. Empty for
  // the nodes of the file.
  std::string generated_by;
  std::string generated_by_key;
};

// [runtime] settings.
struct RuntimeSettings {
  uint32_t batch_size = 1024;           // most messages a source emits per poll
  uint32_t tasks = 1;                   // parallel instances of the graph
  int64_t shutdown_timeout_ms = 10000;  // SIGTERM: how long draining may take
};

// [admin] settings: the daemon's HTTP endpoint (metrics, graph, live page).
// Off unless the config has an [admin] table.
struct AdminSettings {
  bool enabled = false;
  std::string address = "127.0.0.1";  // an IP address to bind
  uint16_t port = 9850;               // 0: any free port (the log line names it)
  std::string token;                  // non-empty: "Authorization: Bearer TOKEN" required
};

// [checkpoint] settings (docs/CHECKPOINTING.md). Off unless the config has a
// [checkpoint] table.
struct CheckpointSettings {
  bool enabled = false;
  std::string store = "fs";               // a registered store's name
  const StoreInfo* store_info = nullptr;  // set by the validator when enabled
  int64_t interval_ms = 10000;            // pause between the end of one epoch and the next
  uint32_t keep = 3;                      // newest epochs kept in the store
  std::string member;                     // this daemon's name among those sharing the store
  Value options;                          // the store's own keys, validated, defaults filled
  SourcePos pos;                          // of the table
};

// Why `name` cannot be a member name ([checkpoint] member, `sluiced run --member`): 1 to 64
// of A-Z a-z 0-9 . _ -; nullopt when it can.
std::optional<std::string> member_name_problem(std::string_view name);

struct GraphSpec {
  // The plugins this graph was validated against: NodeSpec::info, CheckpointSettings::
  // store_info and the functions its nodes bind (sl_host_api.function_bind resolves names
  // here, through the node's task) all live in it, and the plugins' code stays loaded while
  // anything holds it. Shared by the spec, its tasks and its checkpoint store, so none of them
  // can outlive the plugins it came from (a reload loads a new registry for the new graph).
  // Set by load_pipeline; validate_config leaves it to the caller, who owns the registry.
  std::shared_ptr<const PluginRegistry> registry;
  std::filesystem::path file;
  std::string name;                                // `name` at top level, else the file's stem
  std::vector<std::filesystem::path> plugin_dirs;  // resolved against the file's directory
  RuntimeSettings runtime;
  AdminSettings admin;
  CheckpointSettings checkpoint;
  std::vector<NodeSpec> nodes;     // sources, then operators, then sinks; each in file order
  std::vector<size_t> topo_order;  // indices into nodes: every node after its inputs
  // The text of every config value that came from a secret ({ secret_file = ... }, ...:
  // config/config_values.hpp): redacted wherever the config or a message is printed,
  // whatever its key is called (graph/redact.hpp). Set by load_pipeline.
  std::vector<std::string> secrets;

  [[nodiscard]] const NodeSpec* find(std::string_view id) const;
  [[nodiscard]] std::optional<size_t> index_of(std::string_view id) const;
  // The node an input reads from (by ref.node), if it exists.
  [[nodiscard]] std::optional<size_t> producer_of(const InputRef& ref) const {
    return index_of(ref.node);
  }
};

}  // namespace sluice::host
