// Pipeline tests (`sluiced test`), after `vector test` and Kafka Streams'
// TopologyTestDriver: run the real graph with chosen sources replaced by
// injected input, on a virtual clock, and compare what chosen nodes emit.
// The file format is documented in docs/TESTING.md.
#pragma once

#include "common/result.hpp"
#include "graph/graph_spec.hpp"
#include "value/value.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::host {

struct TestDelivery {
  std::string source;
  Value value;
  SourcePos pos;
  std::optional<int64_t> time_ms;  // `time_ms`: the element's event time, as if stamped
  uint32_t partition = 0;          // `partition`: read from this partition (key group + 1)
  bool partitioned = false;        // `partition` was given
};
struct TestAdvance {
  int64_t ms = 0;
};
using TestStep = std::variant<TestDelivery, TestAdvance>;

struct TestCase {
  std::string name;
  SourcePos pos;
  int64_t start_time_ms = 0;
  std::vector<std::string> injected;  // sources fed by the steps (plus `inject`)
  std::vector<TestStep> steps;
  std::map<std::string, std::vector<Value>> expected;  // node id -> outputs in order
  std::map<std::string, SourcePos> expected_pos;       // where each node id was named
  std::optional<std::string> expect_error;  // the run must fail with this text in the error
  // Also re-run the case restoring every stateful node from a snapshot into a
  // fresh task after each step; the outputs must equal the uninterrupted run.
  bool restart_check = true;
};

// Reads the [[tests]] of a TOML file. Errors carry file:line:col.
Result<std::vector<TestCase>> load_test_cases(const std::filesystem::path& file);

// `sluiced test --case PATTERN` (repeatable): the cases whose name equals a pattern or
// matches it as a shell glob (`*`, `?`, `[...]`), in file order. A pattern that matches no
// case is an error listing the cases of `file`. No patterns: every case.
Result<std::vector<TestCase>> select_test_cases(std::vector<TestCase> cases,
                                                const std::vector<std::string>& patterns,
                                                const std::string& file);

// Checks that the case names only nodes the pipeline has, in roles that fit
// (deliveries to sources, expectations on sources or operators).
Status check_test_case(const GraphSpec& spec, const TestCase& test);

// Whether the restart check (TestCase::restart_check) ran for a case, or why not.
enum class RestartCheck {
  ran,
  no_stateful_node,  // nothing to snapshot: the check could not find anything
  turned_off,        // `restart_check = false`
  run_failed,        // the uninterrupted run already failed
};
// "ran", "no stateful node", "restart_check = false", "the run failed".
std::string_view restart_check_reason(RestartCheck r);

struct TestOutcome {
  bool passed = false;
  std::string report;  // readable diff when it failed, or the runtime error
  RestartCheck restart = RestartCheck::ran;
};

// Runs one case on a fresh task of `spec`.
TestOutcome run_test_case(const GraphSpec& spec, const TestCase& test);

}  // namespace sluice::host
