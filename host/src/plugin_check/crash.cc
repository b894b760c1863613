// Check 4: a sink that takes part in checkpoints, killed (SIGKILL, in a child process) at
// points of the epoch protocol, then recovered as the host would recover it
// (docs/CHECKPOINTING.md, "Restart"), fed the rest of its input, and read back through
// the author's command: no record may be lost, and none doubled when the sink claims
// exactly-once.
//
// The records are {"n": N} (or plain ints N), N = 1..20, five per epoch; epoch e's
// barrier comes after record 5e. The kit plays the host's checkpoint store: the
// snapshot and the source position (records fed) are written at "store" time to
// .plugin_check/epoch-N.state in the sink's working directory, and a commit mark after
// the commits.
#include "checkpoint/format.hpp"
#include "plugin_check/checks.hpp"
#include "plugin_check/harness.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace sluice::host::plugin_check {
namespace {

constexpr int64_t k_records = 20;
constexpr int64_t k_per_epoch = 5;
constexpr uint64_t k_kill_epoch = 3;

enum class KillAt { mid_epoch, after_prepare, after_store, after_commit };
struct Scenario {
  KillAt at;
  const char* name;
  const char* text;
};
constexpr Scenario k_scenarios[] = {
    {KillAt::mid_epoch, "mid_epoch", "killed mid-epoch"},
    {KillAt::after_prepare, "after_prepare",
     "killed after prepare, before the checkpoint was stored"},
    {KillAt::after_store, "after_store", "killed after the checkpoint was stored, before commit"},
    {KillAt::after_commit, "after_commit", "killed after commit"},
};

namespace fs = std::filesystem;

Value record(const CheckSettings& settings, int64_t n) {
  if (settings.int_records) return Value::integer(n);
  std::pair<std::string, Value> entry{"n", Value::integer(n)};
  return Value::object(std::span(&entry, 1));
}

[[noreturn]] void die() {
  child_say("killed");
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();
}

fs::path state_file(uint64_t epoch) {
  return fs::path(".plugin_check") / fmt::format("epoch-{:06}.state", epoch);
}
fs::path commit_mark(uint64_t epoch) {
  return fs::path(".plugin_check") / fmt::format("epoch-{:06}.committed", epoch);
}

void store(uint64_t epoch, int64_t position, const EpochParticipant::NodeStates& states) {
  std::vector<std::pair<std::string, Value>> nodes(states.begin(), states.end());
  std::vector<std::pair<std::string, Value>> root{{"position", Value::integer(position)},
                                                  {"states", Value::object(nodes)}};
  std::string bytes;
  checkpoint::encode_value(Value::object(root), bytes);
  fs::create_directories(".plugin_check");
  std::ofstream(state_file(epoch), std::ios::binary) << bytes;
}

struct Stored {
  uint64_t epoch = 0;
  int64_t position = 0;
  EpochParticipant::NodeStates states;
};

std::optional<Stored> load(uint64_t epoch) {
  std::ifstream in(state_file(epoch), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto decoded = checkpoint::decode_value(buffer.str());
  if (!decoded.is_ok()) return std::nullopt;
  Stored s;
  s.epoch = epoch;
  s.position = decoded.value().get("position").value_or(Value()).as_int();
  Value states = decoded.value().get("states").value_or(Value());
  for (size_t i = 0; i < states.size(); ++i) {
    s.states.emplace_back(std::string(states.key_at(i)), states.at(i));
  }
  return s;
}

// Feeds records from+1 .. to with a checkpoint after every multiple of k_per_epoch,
// epochs numbered from `epoch`; `kill` decides where to die (first run only).
Status feed_epochs(Session& s, const CheckSettings& settings, int64_t from, int64_t to,
                   uint64_t& epoch, std::optional<KillAt> kill) {
  for (int64_t n = from + 1; n <= to; ++n) {
    if (kill == KillAt::mid_epoch && epoch == k_kill_epoch && (n - 1) % k_per_epoch == 2) die();
    SLUICE_RETURN_IF_ERROR(s.feed(record(settings, n)));
    if (n % k_per_epoch != 0 && n != to) continue;
    const uint64_t e = epoch++;
    const int64_t position = n;
    auto states = s.checkpoint(e, [&](const EpochParticipant::NodeStates& snapshot) {
      if (kill == KillAt::after_prepare && e == k_kill_epoch) die();
      store(e, position, snapshot);
      if (kill == KillAt::after_store && e == k_kill_epoch) die();
    });
    if (!states.is_ok()) return states.status();
    std::ofstream(commit_mark(e)) << "";
    if (kill == KillAt::after_commit && e == k_kill_epoch) die();
  }
  return Status::ok();
}

// The recovery: as a restart of the host. The newest stored epoch, unless it was not
// marked committed and a node's checkpoint_recover says its commit did not happen: then
// the one before.
void recover_and_finish(const GraphSpec& spec, const CheckSettings& settings) {
  uint64_t newest = 0;
  if (fs::exists(".plugin_check")) {
    for (const auto& entry : fs::directory_iterator(".plugin_check")) {
      unsigned long long e = 0;
      if (std::sscanf(entry.path().filename().c_str(), "epoch-%llu.state", &e) == 1) {
        newest = std::max<uint64_t>(newest, e);
      }
    }
  }
  std::optional<Stored> from = newest ? load(newest) : std::nullopt;
  Session s(spec);
  if (Status st = s.create(); !st.is_ok()) {
    child_say("bad\tcreate on recovery: " + st.message());
    return;
  }
  if (from && !fs::exists(commit_mark(from->epoch))) {
    auto committed = s.recover(from->epoch, from->states);
    if (!committed.is_ok()) {
      child_say("bad\tcheckpoint_recover: " + committed.status().message());
      return;
    }
    if (!committed.value()) from = from->epoch > 1 ? load(from->epoch - 1) : std::nullopt;
  }
  if (Status st = s.start(from ? &from->states : nullptr); !st.is_ok()) {
    child_say("bad\trestore/start on recovery: " + st.message());
    return;
  }
  uint64_t epoch = newest + 1;
  const int64_t position = from ? from->position : 0;
  Status st = feed_epochs(s, settings, position, k_records, epoch, std::nullopt);
  if (st.is_ok()) st = s.end();
  if (!st.is_ok()) {
    child_say("bad\tafter recovery: " + st.message());
    return;
  }
  child_say(fmt::format("recovered\t{}", from ? fmt::format("from epoch {} (position {})",
                                                            from->epoch, from->position)
                                              : std::string("from nothing")));
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The read-back's output, one record per line: the numbers in it, or an error.
Result<std::vector<int64_t>> read_back(const std::string& command, const fs::path& dir) {
  const std::string line = fmt::format("cd {} && {}", quoted(dir.string()), command);
  std::FILE* pipe = ::popen(line.c_str(), "r");
  if (!pipe) return Status(SL_UNAVAILABLE, "cannot run the read-back command");
  std::string text;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) text.append(chunk, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    return Status(SL_UNAVAILABLE,
                  fmt::format("the read-back command `{}` failed (status {})", command, status));
  }
  std::vector<int64_t> out;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l.empty()) continue;
    auto v = json_parse(l);
    Value n = v.is_ok() ? v.value() : Value();
    if (n.is_object()) n = n.get("n").value_or(Value());
    if (!n.is_int()) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("the read-back printed '{}', which is neither an int nor "
                                "{{\"n\": INT}}",
                                l.substr(0, 80)));
    }
    out.push_back(n.as_int());
  }
  return out;
}

std::string list(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < 10; ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > 10) out += fmt::format(", ... ({} in all)", v.size());
  return out;
}

void run_scenario(const GraphSpec& spec, const CheckSettings& settings, const Scenario& sc,
                  Subject& out) {
  const std::string check = fmt::format("crash: {}", sc.text);
  const fs::path dir = settings.work_dir / sc.name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  ChildOutcome first = run_in_child(
      [&] {
        Session s(spec);
        if (Status st = s.open(); !st.is_ok()) {
          child_say("bad\tcreate/start: " + st.message());
          return;
        }
        uint64_t epoch = 1;
        Status st = feed_epochs(s, settings, 0, k_records, epoch, sc.at);
        child_say("bad\t" + (st.is_ok() ? std::string("the kill point was never reached")
                                        : "before the kill: " + st.message()));
      },
      settings.timeout_ms, dir);
  for (const std::string& line : first.lines) {
    if (line.rfind("bad\t", 0) == 0) return out.fail(check, line.substr(4));
  }
  if (first.lines.empty() || first.lines.back() != "killed") {
    return out.fail(check, "the run before the kill " + first.how);
  }
  ChildOutcome second =
      run_in_child([&] { recover_and_finish(spec, settings); }, settings.timeout_ms, dir);
  std::string recovered;
  for (const std::string& line : second.lines) {
    if (line.rfind("bad\t", 0) == 0) return out.fail(check, line.substr(4));
    if (line.rfind("recovered\t", 0) == 0) recovered = line.substr(10);
  }
  if (!second.completed || recovered.empty()) {
    return out.fail(check, "the recovery " + (second.how.empty() ? "said nothing" : second.how));
  }
  auto records = read_back(settings.readback, dir);
  if (!records.is_ok()) return out.fail(check, records.status().message());
  std::map<int64_t, int> seen;
  for (int64_t n : records.value()) ++seen[n];
  std::vector<int64_t> lost, doubled, stray;
  for (int64_t n = 1; n <= k_records; ++n) {
    if (!seen.count(n)) lost.push_back(n);
  }
  for (const auto& [n, count] : seen) {
    if (n < 1 || n > k_records) stray.push_back(n);
    if (count > 1) doubled.push_back(n);
  }
  std::string problems;
  if (!lost.empty()) problems += fmt::format("lost records {}", list(lost));
  if (!stray.empty()) {
    problems +=
        fmt::format("{}records the kit never wrote: {}", problems.empty() ? "" : "; ", list(stray));
  }
  if (settings.exactly_once && !doubled.empty()) {
    problems += fmt::format("{}doubled records {} (the sink claims exactly-once)",
                            problems.empty() ? "" : "; ", list(doubled));
  }
  if (!problems.empty()) {
    return out.fail(check, fmt::format("{}, recovered {}, {} lines read back", problems, recovered,
                                       records.value().size()));
  }
  out.pass(check, fmt::format("recovered {}; {} records, {} written twice{}", recovered, k_records,
                              doubled.size(), settings.exactly_once ? "" : " (at-least-once)"));
}

}  // namespace

void check_crash_recovery(const GraphSpec& spec, const CheckSettings& settings, Subject& out) {
  if (settings.readback.empty()) {
    out.skip("crash recovery",
             "needs --readback 'CMD' (or [check.TYPE] readback): a shell command, run in the "
             "sink's working directory, that prints its committed records one per line");
    return;
  }
  for (const Scenario& sc : k_scenarios) run_scenario(spec, settings, sc, out);
}

}  // namespace sluice::host::plugin_check
