#include "testing/pipeline_test.hpp"

#include "config/detail/toml_util.hpp"
#include "executor/clock.hpp"
#include "executor/task.hpp"
#include "value/json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <fnmatch.h>
#include <algorithm>
#include <memory>

namespace sluice::host {
namespace {
using config_detail::pos_of;
using config_detail::to_value;

Status error_at(const std::string& file, const toml::source_region& where, std::string message) {
  SourcePos p = pos_of(file, where);
  return Status(SL_INVALID_ARGUMENT,
                fmt::format("{}:{}:{}: error: {}", p.file, p.line, p.column, message));
}

Result<Value> json_value(const std::string& file, const toml::node& node) {
  auto s = node.value<std::string>();
  if (!s) return error_at(file, node.source(), "`json` must be a string holding a JSON document");
  auto parsed = json_parse(*s);
  if (!parsed.is_ok()) return error_at(file, node.source(), parsed.status().message());
  return parsed;
}

// One step of the file; `values = [...]` stands for one delivery per item.
Result<std::vector<TestStep>> parse_step(const std::string& file, const toml::node& node) {
  const toml::table* t = node.as_table();
  if (!t)
    return error_at(file, node.source(),
                    "a step must be a table: { source = \"ID\", value = ... }, { source = \"ID\", "
                    "values = [...] }, { source = \"ID\", json = \"...\" } or { advance_ms = N }");
  for (auto&& [k, v] : *t) {
    if (k != "source" && k != "value" && k != "values" && k != "json" && k != "advance_ms" &&
        k != "time_ms" && k != "partition") {
      return error_at(file, v.source(),
                      fmt::format("unknown step key '{}' (valid: source, value, values, json, "
                                  "time_ms, partition, advance_ms)",
                                  k.str()));
    }
  }
  // Event time and partition of the delivered elements (docs/EVENT_TIME.md): as a source
  // that stamps its records, reading partition N (key group N + 1), would emit them.
  TestDelivery stamp;
  size_t stamp_keys = 0;
  if (const toml::node* time = t->get("time_ms")) {
    auto ms = time->value<int64_t>();
    constexpr int64_t k_max_ms = INT64_MAX / 1'000'000 - 1;
    if (!time->is_integer() || !ms || *ms < -k_max_ms || *ms > k_max_ms) {
      return error_at(file, time->source(),
                      "`time_ms` must be an integer: the element's event time in ms since the "
                      "Unix epoch");
    }
    stamp.time_ms = *ms;
    ++stamp_keys;
  }
  if (const toml::node* part = t->get("partition")) {
    auto n = part->value<int64_t>();
    if (!part->is_integer() || !n || *n < 0 || *n > 65535) {
      return error_at(file, part->source(), "`partition` must be an integer from 0 to 65535");
    }
    stamp.partition = static_cast<uint32_t>(*n);
    stamp.partitioned = true;
    ++stamp_keys;
  }
  auto stamped = [&](TestDelivery d) {
    d.time_ms = stamp.time_ms;
    d.partition = stamp.partition;
    d.partitioned = stamp.partitioned;
    return d;
  };
  if (const toml::node* many = t->get("values")) {
    const toml::node* src = t->get("source");
    const toml::array* items = many->as_array();
    if (!src || !src->is_string() || !items || t->size() != 2 + stamp_keys) {
      return error_at(file, many->source(),
                      "`values` must be an array, with `source = \"ID\"` (and optionally "
                      "`time_ms`, `partition`) and nothing else in its step");
    }
    std::vector<TestStep> steps;
    for (const toml::node& item : *items) {
      TestDelivery d = stamped({});
      d.source = *src->value<std::string>();
      d.value = to_value(item);
      d.pos = pos_of(file, item.source());
      steps.emplace_back(std::move(d));
    }
    return steps;
  }
  if (const toml::node* adv = t->get("advance_ms")) {
    auto ms = adv->value<int64_t>();
    if (!ms || *ms < 0 || t->size() != 1) {
      return error_at(file, adv->source(),
                      "`advance_ms` must be a non-negative integer, alone in its step");
    }
    return std::vector<TestStep>{TestAdvance{*ms}};
  }
  const toml::node* src = t->get("source");
  if (!src || !src->is_string())
    return error_at(file, node.source(), "a delivery needs `source = \"ID\"`");
  const toml::node* value = t->get("value");
  const toml::node* json = t->get("json");
  if ((value != nullptr) == (json != nullptr)) {
    return error_at(file, node.source(), "a delivery needs exactly one of `value` or `json`");
  }
  TestDelivery d = stamped({});
  d.source = *src->value<std::string>();
  d.pos = pos_of(file, node.source());
  if (value) {
    d.value = to_value(*value);
  } else {
    SLUICE_ASSIGN_OR_RETURN(d.value, json_value(file, *json));
  }
  return std::vector<TestStep>{std::move(d)};
}

Status parse_expectations(const std::string& file, const toml::node& node, bool as_json,
                          TestCase& tc) {
  const toml::table* t = node.as_table();
  if (!t) return error_at(file, node.source(), "`expect` must be a table: node id = [outputs...]");
  for (auto&& [k, v] : *t) {
    const toml::array* a = v.as_array();
    if (!a)
      return error_at(file, v.source(),
                      fmt::format("expected outputs of '{}' must be an array", k.str()));
    tc.expected_pos[std::string(k.str())] = pos_of(file, k.source());
    auto& list = tc.expected[std::string(k.str())];
    if (!list.empty())
      return error_at(file, v.source(), fmt::format("outputs of '{}' given twice", k.str()));
    for (const toml::node& item : *a) {
      if (as_json) {
        SLUICE_ASSIGN_OR_RETURN(Value parsed, json_value(file, item));
        list.push_back(std::move(parsed));
      } else {
        list.push_back(to_value(item));
      }
    }
  }
  return Status::ok();
}

Result<TestCase> parse_case(const std::string& file, const toml::node& node) {
  const toml::table* t = node.as_table();
  if (!t) return error_at(file, node.source(), "each [[tests]] entry must be a table");
  TestCase tc;
  tc.pos = pos_of(file, node.source());
  for (auto&& [k, v] : *t) {
    std::string_view key = k.str();
    if (key == "name") {
      if (!v.is_string()) return error_at(file, v.source(), "`name` must be a string");
      tc.name = *v.value<std::string>();
    } else if (key == "start_time_ms") {
      auto ms = v.value<int64_t>();
      if (!ms) return error_at(file, v.source(), "`start_time_ms` must be an integer");
      tc.start_time_ms = *ms;
    } else if (key == "inject") {
      const toml::array* a = v.as_array();
      if (!a) return error_at(file, v.source(), "`inject` must be an array of source ids");
      for (const toml::node& id : *a) {
        if (!id.is_string())
          return error_at(file, id.source(), "`inject` must be an array of source ids");
        tc.injected.push_back(*id.value<std::string>());
      }
    } else if (key == "steps") {
      const toml::array* a = v.as_array();
      if (!a) return error_at(file, v.source(), "`steps` must be an array of tables");
      for (const toml::node& s : *a) {
        SLUICE_ASSIGN_OR_RETURN(std::vector<TestStep> steps, parse_step(file, s));
        for (TestStep& step : steps) {
          if (auto* d = std::get_if<TestDelivery>(&step);
              d &&
              std::find(tc.injected.begin(), tc.injected.end(), d->source) == tc.injected.end()) {
            tc.injected.push_back(d->source);
          }
          tc.steps.push_back(std::move(step));
        }
      }
    } else if (key == "expect" || key == "expect_json") {
      SLUICE_RETURN_IF_ERROR(parse_expectations(file, v, key == "expect_json", tc));
    } else if (key == "expect_error") {
      auto text = v.value<std::string>();
      if (!text || text->empty())
        return error_at(file, v.source(), "`expect_error` must be a non-empty string");
      tc.expect_error = *text;
    } else if (key == "restart_check") {
      auto on = v.value<bool>();
      if (!on) return error_at(file, v.source(), "`restart_check` must be a bool");
      tc.restart_check = *on;
    } else {
      return error_at(file, v.source(),
                      fmt::format("unknown test key '{}' (valid: name, start_time_ms, inject, "
                                  "steps, expect, expect_json, expect_error, restart_check)",
                                  key));
    }
  }
  if (tc.name.empty()) return error_at(file, node.source(), "a test needs a `name`");
  if (tc.expected.empty() && !tc.expect_error)
    return error_at(file, node.source(),
                    fmt::format("test '{}' expects nothing: add `[tests.expect]` with node id = "
                                "[outputs], or `expect_error`",
                                tc.name));
  return tc;
}

std::string show(const Value& v) { return json_dump(v.raw()); }

// A positional diff: every index of the longer list, marking mismatches.
std::string diff(const std::string& node, const std::vector<Value>& expected,
                 const std::vector<Value>& actual) {
  std::string out = fmt::format("  node '{}': expected {} output{}, got {}\n", node,
                                expected.size(), expected.size() == 1 ? "" : "s", actual.size());
  for (size_t i = 0; i < std::max(expected.size(), actual.size()); ++i) {
    bool have_e = i < expected.size(), have_a = i < actual.size();
    if (have_e && have_a && expected[i] == actual[i]) {
      out += fmt::format("      #{:<3} {}\n", i, show(actual[i]));
      continue;
    }
    if (have_e) out += fmt::format("    - #{:<3} {}\n", i, show(expected[i]));
    if (have_a) out += fmt::format("    + #{:<3} {}\n", i, show(actual[i]));
  }
  return out;
}

}  // namespace

Result<std::vector<TestCase>> load_test_cases(const std::filesystem::path& path) {
  std::string file = path.string();
  toml::table root;
  try {
    root = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    return error_at(file, e.source(), std::string(e.description()));
  }
  const toml::node* tests = root.get("tests");
  if (!tests || !tests->is_array_of_tables()) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: error: no [[tests]] in the file", file));
  }
  std::vector<TestCase> out;
  for (const toml::node& t : *tests->as_array()) {
    SLUICE_ASSIGN_OR_RETURN(TestCase tc, parse_case(file, t));
    out.push_back(std::move(tc));
  }
  return out;
}

Status check_test_case(const GraphSpec& spec, const TestCase& test) {
  auto error = [](const SourcePos& p, const std::string& message) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("{}:{}:{}: error: {}", p.file, p.line, p.column, message));
  };
  auto ids = [&](bool sources) {
    std::vector<std::string> out;
    for (const NodeSpec& n : spec.nodes) {
      if (sources ? n.role == SL_ROLE_SOURCE : n.role != SL_ROLE_SINK) out.push_back(n.id);
    }
    return fmt::format("{}", fmt::join(out, ", "));
  };
  for (const TestStep& step : test.steps) {
    const auto* d = std::get_if<TestDelivery>(&step);
    if (!d) continue;
    const NodeSpec* n = spec.find(d->source);
    if (!n || n->role != SL_ROLE_SOURCE) {
      return error(d->pos,
                   fmt::format("test '{}': '{}' is not a source of the pipeline; sources: {}",
                               test.name, d->source, ids(true)));
    }
  }
  for (const std::string& id : test.injected) {
    const NodeSpec* n = spec.find(id);
    if (!n || n->role != SL_ROLE_SOURCE) {
      return error(test.pos, fmt::format("test '{}': inject names '{}', which is not a source; "
                                         "sources: {}",
                                         test.name, id, ids(true)));
    }
  }
  for (const auto& [id, _] : test.expected) {
    const NodeSpec* n = spec.find(id);
    const SourcePos& where = test.expected_pos.at(id);
    if (auto producer = n ? std::nullopt : dead_letter_producer(id)) {
      const NodeSpec* base = spec.find(*producer);
      if (base && base->on_error == ErrorPolicy::dead_letter) continue;
    }
    if (const size_t dot = id.rfind('.'); !n && dot != std::string::npos) {
      // "ID.NAME": side output NAME of node ID ("window.late").
      const NodeSpec* base = spec.find(std::string_view(id).substr(0, dot));
      if (base && base->info->side_output(std::string_view(id).substr(dot + 1))) continue;
    }
    if (!n) {
      return error(where,
                   fmt::format("test '{}': no node '{}' in the pipeline; nodes that emit: {}",
                               test.name, id, ids(false)));
    }
    if (n->role == SL_ROLE_SINK) {
      return error(where, fmt::format("test '{}': '{}' is a sink and emits nothing; expect the "
                                      "output of the node that feeds it",
                                      test.name, id));
    }
  }
  return Status::ok();
}

namespace {

using Outputs = std::map<std::string, std::vector<Value>>;
using States = std::vector<std::pair<std::string, Value>>;

// One run of a case. With `restart_each_step`, after every step the stateful
// nodes are snapshotted and the task is replaced by a fresh one restored from
// those snapshots, as a restart from a checkpoint would (timers included: the
// nodes re-arm them from their state).
class CaseRun {
 public:
  CaseRun(const GraphSpec& spec, const TestCase& test)
      : spec_(spec), test_(test), clock_(test.start_time_ms * 1'000'000) {}

  // The outputs of every expected node, or the run's error.
  Result<Outputs> run(bool restart_each_step) {
    SLUICE_RETURN_IF_ERROR(build(nullptr));
    for (size_t i = 0; i < test_.steps.size(); ++i) {
      Status s;
      if (const auto* d = std::get_if<TestDelivery>(&test_.steps[i])) {
        s = task_->inject(
            d->source, d->value,
            d->time_ms ? std::optional<int64_t>(*d->time_ms * 1'000'000) : std::nullopt,
            d->partitioned ? d->partition + 1 : 0);
      } else {
        const auto& a = std::get<TestAdvance>(test_.steps[i]);
        s = task_->advance_to(clock_, clock_.monotonic_ns() + a.ms * 1'000'000);
      }
      if (!s.is_ok()) return Status(s.code(), fmt::format("step #{}: {}", i, s.message()));
      if (restart_each_step) {
        auto states = task_->snapshot_states();
        if (!states.is_ok()) {
          return Status(states.status().code(),
                        fmt::format("after step #{}: {}", i, states.status().message()));
        }
        harvest();
        task_.reset();
        if (Status b = build(&states.value()); !b.is_ok()) {
          return Status(b.code(), fmt::format("restoring after step #{}: {}", i, b.message()));
        }
      }
    }
    SLUICE_RETURN_IF_ERROR(task_->end_sources());
    harvest();
    return std::move(outputs_);
  }

 private:
  Status build(const States* states) {
    task_ = std::make_unique<Task>(spec_, TaskOptions{spec_.runtime.batch_size, 0, 1, &clock_});
    for (const std::string& id : test_.injected) {
      SLUICE_RETURN_IF_ERROR(task_->replace_with_injector(id));
    }
    task_->replace_sinks_with_discard();
    captures_.clear();
    for (const auto& [node, _] : test_.expected) {
      SLUICE_ASSIGN_OR_RETURN(captures_[node], task_->attach_capture(node));
    }
    SLUICE_RETURN_IF_ERROR(task_->create());
    if (states) SLUICE_RETURN_IF_ERROR(task_->restore_states(*states));
    SLUICE_RETURN_IF_ERROR(task_->start());
    return task_->run_until_idle();
  }
  void harvest() {
    for (const auto& [node, capture] : captures_) {
      const auto& got = task_->captured(capture);
      auto& all = outputs_[node];
      all.insert(all.end(), got.begin(), got.end());
    }
  }

  const GraphSpec& spec_;
  const TestCase& test_;
  VirtualClock clock_;
  std::unique_ptr<Task> task_;
  std::map<std::string, size_t> captures_;
  Outputs outputs_;
};

// Whether a node that runs in the case has state to snapshot: sinks are replaced by a
// discarding sink and injected sources by the test driver, so theirs does not count.
bool has_stateful_node(const GraphSpec& spec, const TestCase& test) {
  return std::any_of(spec.nodes.begin(), spec.nodes.end(), [&](const NodeSpec& n) {
    if (n.role == SL_ROLE_SINK ||
        std::find(test.injected.begin(), test.injected.end(), n.id) != test.injected.end()) {
      return false;
    }
    return n.info && (n.info->vtable.flags & SL_NODE_STATEFUL) && n.info->vtable.snapshot;
  });
}

// Compares one run with the case's expectations (outputs and error).
TestOutcome judge(const TestCase& test, const Result<Outputs>& run) {
  TestOutcome outcome{true, ""};
  if (!run.is_ok()) {
    const std::string& message = run.status().message();
    if (!test.expect_error) return TestOutcome{false, "  " + message + "\n"};
    if (message.find(*test.expect_error) == std::string::npos) {
      return TestOutcome{false, fmt::format("  expected an error containing \"{}\", got: {}\n",
                                            *test.expect_error, message)};
    }
    return outcome;  // outputs before a failure are not compared
  }
  if (test.expect_error) {
    outcome = TestOutcome{
        false, fmt::format("  expected an error containing \"{}\", but the run succeeded\n",
                           *test.expect_error)};
  }
  for (const auto& [node, expected] : test.expected) {
    auto it = run.value().find(node);
    const std::vector<Value> none;
    const auto& actual = it == run.value().end() ? none : it->second;
    bool same = expected.size() == actual.size() &&
                std::equal(expected.begin(), expected.end(), actual.begin());
    if (!same) {
      outcome.passed = false;
      outcome.report += diff(node, expected, actual);
    }
  }
  return outcome;
}

}  // namespace

std::string_view restart_check_reason(RestartCheck r) {
  switch (r) {
    case RestartCheck::ran: return "ran";
    case RestartCheck::no_stateful_node: return "no stateful node";
    case RestartCheck::turned_off: return "restart_check = false";
    case RestartCheck::run_failed: return "the run failed";
  }
  return "?";
}

Result<std::vector<TestCase>> select_test_cases(std::vector<TestCase> cases,
                                                const std::vector<std::string>& patterns,
                                                const std::string& file) {
  if (patterns.empty()) return cases;
  auto matches = [](const std::string& pattern, const std::string& name) {
    return pattern == name || ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  };
  for (const std::string& pattern : patterns) {
    if (std::any_of(cases.begin(), cases.end(),
                    [&](const TestCase& tc) { return matches(pattern, tc.name); })) {
      continue;
    }
    std::string names;
    for (const TestCase& tc : cases) names += fmt::format("\n  {}", tc.name);
    return Status(SL_NOT_FOUND,
                  fmt::format("{}: error: --case '{}': no test case has that name or matches it "
                              "(a name, or a glob with * ? [...]); the cases are:{}",
                              file, pattern, names));
  }
  std::vector<TestCase> out;
  for (TestCase& tc : cases) {
    if (std::any_of(patterns.begin(), patterns.end(),
                    [&](const std::string& p) { return matches(p, tc.name); })) {
      out.push_back(std::move(tc));
    }
  }
  return out;
}

TestOutcome run_test_case(const GraphSpec& spec, const TestCase& test) {
  Result<Outputs> straight = CaseRun(spec, test).run(false);
  TestOutcome outcome = judge(test, straight);
  if (!outcome.passed) {
    outcome.restart = RestartCheck::run_failed;
    return outcome;
  }
  if (!test.restart_check) {
    outcome.restart = RestartCheck::turned_off;
    return outcome;
  }
  if (!has_stateful_node(spec, test)) {
    outcome.restart = RestartCheck::no_stateful_node;
    return outcome;
  }
  // The same case with a snapshot/restore into a fresh task after every step
  // must give what the uninterrupted run gave.
  Result<Outputs> restarted = CaseRun(spec, test).run(true);
  TestOutcome again = judge(test, restarted);
  again.restart = RestartCheck::ran;
  if (!again.passed) {
    again.report =
        "  restart check (snapshot, fresh task, restore after every step; "
        "`restart_check = false` turns it off):\n" +
        again.report;
  }
  return again;
}

}  // namespace sluice::host
