// Check 3: a stateful operator fed a sequence straight, and fed the same sequence with a
// snapshot midway restored into a fresh instance, must emit the same. The virtual clock
// stands still: the phase of a timed operator's timers may change across a restart (its
// output is then correct but not identical, docs/CHECKPOINTING.md), so timers are left to
// `sluiced test`'s restart check, where a test gives the times.
#include "plugin_check/checks.hpp"
#include "plugin_check/harness.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

namespace sluice::host::plugin_check {
namespace {

std::vector<Value> default_input() {
  std::vector<Value> v;
  for (int64_t i = 1; i <= 12; ++i) v.push_back(Value::integer(i));
  return v;
}

std::string show(const std::vector<Value>& values, size_t from) {
  std::string out;
  for (size_t i = from; i < values.size() && i < from + 4; ++i) {
    out += (out.empty() ? "" : ", ") + json_dump(values[i].raw()).substr(0, 80);
  }
  if (values.size() > from + 4) out += ", ...";
  return "[" + out + "]";
}

}  // namespace

void check_restore(const GraphSpec& spec, const CheckSettings& settings, Subject& out) {
  const std::vector<Value> input = settings.input.value_or(default_input());
  const size_t half = input.size() / 2;
  ChildOutcome child = run_in_child(
      [&] {
        std::vector<Value> straight;
        {
          Session s(spec);
          Status st = s.open();
          for (size_t i = 0; st.is_ok() && i < input.size(); ++i) st = s.feed(input[i]);
          if (st.is_ok()) st = s.end();
          if (!st.is_ok()) {
            child_say(fmt::format(
                "skip\tthe input {} fails without a restart ({}); give [check.TYPE] input = "
                "[...] in --config",
                settings.input ? "given" : "1, 2, ..., 12", st.message()));
            return;
          }
          straight = s.output();
        }
        std::vector<Value> restarted;
        EpochParticipant::NodeStates states;
        {
          Session s(spec);
          Status st = s.open();
          for (size_t i = 0; st.is_ok() && i < half; ++i) st = s.feed(input[i]);
          if (st.is_ok()) {
            auto snap = s.task().snapshot_states();
            if (snap.is_ok()) {
              states = std::move(snap).value();
            } else {
              st = snap.status();
            }
          }
          if (!st.is_ok()) {
            child_say("bad\tsnapshot after " + std::to_string(half) + " elements: " + st.message());
            return;
          }
          restarted = s.output();
        }
        Session s(spec);
        Status st = s.open(&states);
        for (size_t i = half; st.is_ok() && i < input.size(); ++i) st = s.feed(input[i]);
        if (st.is_ok()) st = s.end();
        if (!st.is_ok()) {
          child_say("bad\tafter restore: " + st.message());
          return;
        }
        for (const Value& v : s.output()) restarted.push_back(v);
        size_t i = 0;
        while (i < straight.size() && i < restarted.size() && straight[i] == restarted[i]) ++i;
        if (i == straight.size() && i == restarted.size()) {
          child_say(fmt::format("ok\t{} elements, snapshot after {}, {} outputs the same",
                                input.size(), half, straight.size()));
        } else {
          child_say(fmt::format(
              "bad\tthe output differs after snapshot/restore (snapshot after element {} of {}): "
              "from output #{}, uninterrupted {} vs restored {}",
              half, input.size(), i, show(straight, i), show(restarted, i)));
        }
      },
      settings.timeout_ms, settings.work_dir);
  for (const std::string& line : child.lines) {
    if (line.rfind("ok\t", 0) == 0) return out.pass("restore", line.substr(3));
    if (line.rfind("bad\t", 0) == 0) return out.fail("restore", line.substr(4));
    if (line.rfind("skip\t", 0) == 0) return out.skip("restore", line.substr(5));
  }
  out.fail("restore", child.how.empty() ? "no result" : child.how);
}

void check_bad_config(const GraphSpec& good, const Value& bad_config,
                      const std::string& validate_refusal, const CheckSettings& settings,
                      Subject& out) {
  // The node's config as create would get it, with the bad keys over it: create runs even
  // when validate refused, so that what a failed create leaks shows (under ASan).
  GraphSpec spec = good;
  const size_t node = *spec.index_of(k_node_id);
  std::vector<std::pair<std::string, Value>> merged;
  const Value& base = spec.nodes[node].config;
  for (size_t i = 0; i < base.size(); ++i) {
    if (!bad_config.get(base.key_at(i)))
      merged.emplace_back(std::string(base.key_at(i)), base.at(i));
  }
  for (size_t i = 0; i < bad_config.size(); ++i) {
    merged.emplace_back(std::string(bad_config.key_at(i)), bad_config.at(i));
  }
  spec.nodes[node].config = Value::object(merged);
  ChildOutcome child = run_in_child(
      [&] {
        Session s(spec);
        Status st = s.create();
        if (st.is_ok()) {
          child_say("created");
        } else if (s.node_error().empty()) {
          child_say("bad\tcreate refused the bad config without a message: " + st.message());
        } else {
          child_say("refused\t" + st.message());
        }
      },
      settings.timeout_ms, settings.work_dir);
  std::string create_said;
  for (const std::string& line : child.lines) {
    if (line.rfind("bad\t", 0) == 0) return out.fail("bad config", line.substr(4));
    if (line == "created" || line.rfind("refused\t", 0) == 0) create_said = line;
  }
  if (!child.completed) return out.fail("bad config", "create " + child.how);
  const bool create_refused = create_said.rfind("refused\t", 0) == 0;
  if (!validate_refusal.empty()) {
    out.pass("bad config", fmt::format("validate refused it ({}); create {} it{}", validate_refusal,
                                       create_refused ? "refused" : "took",
                                       leaks_checked() ? ", and LeakSanitizer found no leak" : ""));
  } else if (create_refused) {
    out.fail("bad config",
             "validate accepted a config that create refused (" + create_said.substr(8) +
                 "): `sluiced validate` must refuse what create would (a constraint or a "
                 "validate callback)");
  } else {
    out.fail("bad config", "neither validate nor create refused it");
  }
}

}  // namespace sluice::host::plugin_check
