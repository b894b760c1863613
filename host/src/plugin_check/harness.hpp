// What every plugin-check exercise stands on: a one-node graph around the node under
// test (injected sources in front, a capture behind), built from the author's params
// through the real validator; a session that drives it on a virtual clock; and a forked
// child that runs an exercise, so that a crash, a hang or a sanitizer report becomes a
// finding with the element that caused it.
#pragma once

#include "common/result.hpp"
#include "config/diagnostic.hpp"
#include "executor/clock.hpp"
#include "executor/epoch_participant.hpp"
#include "executor/task.hpp"
#include "graph/graph_spec.hpp"
#include "registry/plugin_registry.hpp"
#include "value/value.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host::plugin_check {

// The source type the kit's graphs use in front of the node under test (always replaced
// by an injector). Registered with register_input_type before the plugin is loaded.
inline constexpr const char* k_input_type = "plugin_check_input";
Status register_input_type(PluginRegistry& registry);

// The node under test is "node"; its inputs are the sources "in0", "in1", ...
inline constexpr const char* k_node_id = "node";

// A graph of `type` with `params` (the author's table, kept with its positions in
// `config_file`; null: defaults only), `inputs` injected sources in front. With
// `checkpointing` the pipeline has a [checkpoint] table (nodes see checkpointing = 1).
// Validation findings come back as one error per line.
Result<GraphSpec> build_graph(std::shared_ptr<const PluginRegistry> registry,
                              const NodeTypeInfo& type, const toml::table* params,
                              const std::filesystem::path& config_file, bool checkpointing);

// How many inputs the kit wires to a node of `type`.
uint32_t input_count(const NodeTypeInfo& type);

// The graph of build_graph running in this process: create (and restore), start, feed
// elements, end. Operators' output is captured.
class Session {
 public:
  explicit Session(const GraphSpec& spec);
  // create + start. `restore`: the states to restore between them.
  Status open(const EpochParticipant::NodeStates* restore = nullptr);
  Status create();
  Status start(const EpochParticipant::NodeStates* restore);
  Status feed(const Value& element, uint32_t input = 0);
  Status end();
  // Runs the epoch protocol once (prepare, snapshot; then `before_commit`; then commit), as
  // the checkpoint coordinator would, moving the virtual clock so that sinks answering
  // from timers can; `before_commit` gets the snapshot where the host stores it. Returns
  // the snapshot.
  Result<EpochParticipant::NodeStates> checkpoint(
      uint64_t epoch,
      const std::function<void(const EpochParticipant::NodeStates&)>& before_commit);
  Result<bool> recover(uint64_t epoch, const EpochParticipant::NodeStates& states);
  // What the node emitted since open (operators).
  [[nodiscard]] std::vector<Value> output() const;
  Task& task() { return *task_; }
  // The node's last set_error message.
  [[nodiscard]] const std::string& node_error() const;

 private:
  Status pump(const std::function<bool()>& done, const char* what);
  const GraphSpec& spec_;
  VirtualClock clock_{1'700'000'000'000'000'000};
  std::unique_ptr<Task> task_;
  std::optional<size_t> capture_;
};

// The outcome of one child. `lines` are what the child wrote with child_say, in order.
struct ChildOutcome {
  bool completed = false;  // exited 0
  std::string how;         // when not: "crashed with signal 11 (Segmentation fault)", ...
  std::vector<std::string> lines;
};

// Runs `body` in a forked child with stdout on /dev/null (sinks may print) and `cwd` as
// its working directory (when not empty), killed after `timeout_ms`. Under
// LeakSanitizer the child checks for leaks after `body` and fails when it finds one.
ChildOutcome run_in_child(const std::function<void()>& body, int64_t timeout_ms,
                          const std::filesystem::path& cwd = {});
// Whether children check for leaks (a build with LeakSanitizer).
bool leaks_checked();
// In the child: one line to the parent (no newline inside).
void child_say(const std::string& line);

// The element a child was at when it stopped: the last "at NAME" line, if any.
std::string last_at(const ChildOutcome& outcome);

}  // namespace sluice::host::plugin_check
