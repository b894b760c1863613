// Benchmark 7 (issue 14): keyed event-time windows, in process, no I/O.
//
// 1,000,000 keyed events (10,000 keys "user0".."user9999"), 10 per millisecond of event
// time (100 s in all), 1 % of them moved back in time by 1..500 ms; key k is in partition
// k % 8 (key group k % 8 + 1, as from_kafka gives a keyed topic's records). Each pipeline is
//
//   bench_events -> event_time (the message's time, max_out_of_orderness_ms = 500)
//                -> window (count per key) -> bench_window_sink
//
// built from a TOML string, validated against the real plugins (loaded from the build's
// plugins-out directory) and run as a Task on a RealClock, as operator_bench runs its
// pipelines. The windows: tumbling 10 s; hopping 10 s every 1 s (size = 10 x slide, each
// event in 10 windows); session with a 2 s gap. Nothing is late (the out-of-order events
// stay within the bound), so every window's count is final when it fires.
//
// Beside each, a hand-written C++ loop over the same events doing the same windowing
// (the watermark as event_time computes it: the min over the partitions seen of their
// largest event time, minus the bound; a window fires when the watermark reaches its end;
// end of input fires the rest), measured in the same run: the baseline. The sink and the
// loop both count the windows and sum their counts; the run fails when they differ.
//
//   window_bench [--n=EVENTS] [--keys=KEYS] [--batch=SIZE] [gbench flags...]
//
// bench/streamz_window_bench.py generates the same events (same splitmix64 sequence).
#include "bench_engine.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

int64_t g_n = 1'000'000;  // events per run
int64_t g_keys = 10'000;
uint32_t g_batch = 1024;  // [runtime] batch_size

constexpr int64_t k_t0_ms = 1'700'000'000'000;  // a multiple of every window size below
constexpr int64_t k_per_ms = 10;                // events per ms of event time
constexpr int64_t k_max_delay_ms = 500;         // an out-of-order event is 1..500 ms back
constexpr int64_t k_out_of_orderness_ms = 500;  // so none is late
constexpr uint32_t k_partitions = 8;
constexpr int64_t k_tumbling_ms = 10'000;
constexpr int64_t k_hop_size_ms = 10'000, k_hop_slide_ms = 1'000;
constexpr int64_t k_session_gap_ms = 2'000;

struct Event {
  std::string_view key;
  int64_t ts_ms;
  uint32_t partition;
};

std::vector<std::string> g_key_text;  // "user<k>"
std::vector<sl_value> g_key_values;   // the same as host strings (owned here)
std::vector<Event> g_events;          // for the loops
std::vector<sl_message> g_messages;   // for the source: key, value 1, event time, key group
int64_t g_out_of_order = 0;           // how many events were moved back

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The events; streamz_window_bench.py's events() is the same sequence.
void make_events() {
  for (int64_t k = 0; k < g_keys; ++k) {
    g_key_text.push_back("user" + std::to_string(k));
  }
  for (const std::string& k : g_key_text) {
    g_key_values.push_back(host()->string_create(k.data(), k.size()));
  }
  uint64_t s = 0;
  for (int64_t i = 0; i < g_n; ++i) {
    const uint64_t r1 = splitmix64(s), r2 = splitmix64(s);
    const auto k = static_cast<size_t>(r1 % static_cast<uint64_t>(g_keys));
    int64_t ts = k_t0_ms + i / k_per_ms;
    if (r2 % 100 == 0) {
      ts -= 1 + static_cast<int64_t>((r2 >> 32) % k_max_delay_ms);
      ++g_out_of_order;
    }
    const auto partition = static_cast<uint32_t>(k % k_partitions);
    g_events.push_back(Event{g_key_text[k], ts, partition});
    g_messages.push_back(
        sl_message{sl_int(1), g_key_values[k], sl_null(), ts * 1'000'000, partition + 1});
  }
}

// --- bench_events: emits g_messages (borrowed), `budget` at a time -------------------------
sl_status events_create(const sl_node_init*, void** self) {
  *self = new size_t(0);
  return SL_OK;
}
void events_destroy(void* self) { delete static_cast<size_t*>(self); }
sl_status events_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto& next = *static_cast<size_t*>(self);
  const size_t n = std::min<size_t>(budget, g_messages.size() - next);
  const sl_status st = host()->emit(ctx, g_messages.data() + next, n);
  next += n;
  *state = next < g_messages.size() ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// --- bench_window_sink: counts the windows and sums their "value" (the count). Like a real
// sink it keeps no reference to what it received. -------------------------------------------
struct Totals {
  int64_t windows = 0;
  int64_t sum = 0;
  int64_t malformed = 0;  // an output that is not {key, start, end, value: int}
};
Totals g_sink_totals;

sl_status sink_create(const sl_node_init*, void** self) {
  g_sink_totals = Totals{};
  *self = nullptr;
  return SL_OK;
}
sl_status sink_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  for (uint32_t i = 0; i < batch->count; ++i) {
    const sl_value v = sl_batch_at(batch, i)->value;
    sl_value count;
    if (v.kind != SL_KIND_OBJECT || !host()->object_get(v, "value", 5, &count) ||
        count.kind != SL_KIND_INT) {
      ++g_sink_totals.malformed;
      continue;
    }
    ++g_sink_totals.windows;
    g_sink_totals.sum += count.as.i;
  }
  return SL_OK;
}

bench::Engine* g_engine = nullptr;

void load_engine() {
  static sl_node_type events = [] {
    sl_node_type t = test_support::bare_node_type(SL_ROLE_SOURCE, "bench_events");
    t.create = events_create;
    t.destroy = events_destroy;
    t.poll = events_poll;
    return t;
  }();
  static sl_node_type sink = [] {
    sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "bench_window_sink");
    t.create = sink_create;
    t.process = sink_process;
    return t;
  }();
  static const sl_node_type* types[] = {&events, &sink};
  static sl_plugin plugin = test_support::in_process_plugin("bench_window_nodes", types);
  g_engine = bench::make_engine(plugin);
}

GraphSpec load(const std::string& toml) {
  return bench::load_graph(*g_engine, toml, "window_bench.toml");
}

// The window operator's keys for each kind (the TOML lines of [operators.w]).
std::string window_keys(std::string_view kind) {
  if (kind == "tumbling") return "kind = \"tumbling\"\nsize_ms = " + std::to_string(k_tumbling_ms);
  if (kind == "hopping") {
    return "kind = \"hopping\"\nsize_ms = " + std::to_string(k_hop_size_ms) +
           "\nslide_ms = " + std::to_string(k_hop_slide_ms);
  }
  return "kind = \"session\"\ngap_ms = " + std::to_string(k_session_gap_ms);
}

std::string pipeline_toml(std::string_view kind) {
  return "[runtime]\nbatch_size = " + std::to_string(g_batch) +
         "\n[sources.src]\ntype = \"bench_events\"\n"
         "[operators.et]\ntype = \"event_time\"\ninputs = [\"src\"]\n"
         "max_out_of_orderness_ms = " +
         std::to_string(k_out_of_orderness_ms) +
         "\n[operators.w]\ntype = \"window\"\ninputs = [\"et\"]\n" + window_keys(kind) +
         "\nfunction = \"count\"\nstart = 0\n"
         "[sinks.out]\ntype = \"bench_window_sink\"\ninputs = [\"w\"]\n";
}

void report(benchmark::State& state, const Totals& t) {
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["ns/event"] =
      benchmark::Counter(static_cast<double>(g_n), benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
  state.counters["windows"] = static_cast<double>(t.windows);
  state.counters["sum"] = static_cast<double>(t.sum);
}

void run_sluice(benchmark::State& state, std::string_view kind) {
  const GraphSpec spec = load(pipeline_toml(kind));
  for (auto _ : state) {
    Task task(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
    Status s = task.create();
    if (s.is_ok()) s = task.start();
    if (s.is_ok()) s = task.run();
    if (!s.is_ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
  }
  if (g_sink_totals.malformed != 0) {
    state.SkipWithError("the window emitted something other than {key, start, end, value}");
    return;
  }
  report(state, g_sink_totals);
}

// --- the hand-written loops ---------------------------------------------------------------

// The watermark as event_time computes it, per element.
struct Watermark {
  std::array<int64_t, k_partitions> max{};
  std::array<bool, k_partitions> seen{};
  int64_t value = std::numeric_limits<int64_t>::min();

  // Returns true when the watermark rose.
  bool observe(const Event& e) {
    if (seen[e.partition] && e.ts_ms <= max[e.partition]) return false;
    seen[e.partition] = true;
    max[e.partition] = e.ts_ms;
    int64_t lowest = std::numeric_limits<int64_t>::max();
    for (uint32_t p = 0; p < k_partitions; ++p) {
      if (seen[p]) lowest = std::min(lowest, max[p]);
    }
    if (lowest - k_out_of_orderness_ms <= value) return false;
    value = lowest - k_out_of_orderness_ms;
    return true;
  }
};

// What each firing produces (the loop's output record) and where it goes.
struct Firing {
  std::string_view key;
  int64_t start, end, count;
};
void sink(Totals& t, const Firing& f) {
  ++t.windows;
  t.sum += f.count;
  benchmark::DoNotOptimize(&f);
}

// Tumbling (slide == size) and hopping windows. Per key (one hash lookup per event) its
// open windows as a short vector of (start, count) in start order; the windows to fire are
// kept by end (aligned to the slide, so few distinct ends) and fired in end order.
Totals sliding_loop(int64_t size, int64_t slide) {
  struct Open {
    int64_t start, count;
  };
  using KeyWindows = std::vector<Open>;
  Totals t;
  std::unordered_map<std::string_view, KeyWindows> keys;  // nodes: stable addresses
  std::map<int64_t, std::vector<std::pair<std::string_view, KeyWindows*>>> by_end;
  Watermark wm;
  auto fire_until = [&](int64_t w) {
    while (!by_end.empty() && by_end.begin()->first <= w) {
      auto node = by_end.extract(by_end.begin());
      const int64_t end = node.key();
      for (auto [key, open] : node.mapped()) {
        auto it = std::find_if(open->begin(), open->end(),
                               [&](const Open& o) { return o.start == end - size; });
        sink(t, Firing{key, it->start, end, it->count});
        open->erase(it);
      }
    }
  };
  for (const Event& e : g_events) {
    const bool rose = wm.observe(e);
    KeyWindows& open = keys[e.key];
    for (int64_t start = e.ts_ms - e.ts_ms % slide; start > e.ts_ms - size; start -= slide) {
      if (start + size <= wm.value) continue;  // closed: late (never, here)
      auto it = std::lower_bound(open.begin(), open.end(), start,
                                 [](const Open& o, int64_t s) { return o.start < s; });
      if (it != open.end() && it->start == start) {
        ++it->count;
      } else {
        open.insert(it, Open{start, 1});
        by_end[start + size].emplace_back(e.key, &open);
      }
    }
    if (rose) fire_until(wm.value);
  }
  fire_until(std::numeric_limits<int64_t>::max());  // end of input
  return t;
}

// Session windows: per key its open sessions [first, last + gap) (almost always one); an
// event merges every session its [ts, ts + gap) overlaps or touches (as the window operator
// and Flink do). A min-heap holds at most about one entry per key: the earliest end of its
// sessions when it was pushed. A popped entry fires the key's sessions that are due and
// pushes the key again with its next end (sessions grow, so an entry can be early).
Totals session_loop(int64_t gap) {
  struct Session {
    int64_t start, end, count;
  };
  struct KeySessions {
    std::vector<Session> open;
    int64_t scheduled = std::numeric_limits<int64_t>::max();  // the end of its heap entry
  };
  Totals t;
  std::unordered_map<std::string_view, KeySessions> sessions;  // nodes: stable addresses
  using Due = std::tuple<int64_t, std::string_view, KeySessions*>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due;
  Watermark wm;
  auto fire_until = [&](int64_t w) {
    while (!due.empty() && std::get<0>(due.top()) <= w) {
      const auto [end, key, ks] = due.top();
      due.pop();
      if (end != ks->scheduled) continue;  // superseded by an earlier entry
      int64_t next = std::numeric_limits<int64_t>::max();
      for (size_t i = 0; i < ks->open.size();) {
        const Session& s = ks->open[i];
        if (s.end <= w) {
          sink(t, Firing{key, s.start, s.end, s.count});
          ks->open.erase(ks->open.begin() + static_cast<ptrdiff_t>(i));
        } else {
          next = std::min(next, s.end);
          ++i;
        }
      }
      ks->scheduled = next;
      if (!ks->open.empty()) due.emplace(next, key, ks);
    }
  };
  for (const Event& e : g_events) {
    const bool rose = wm.observe(e);
    Session s{e.ts_ms, e.ts_ms + gap, 1};
    KeySessions& ks = sessions[e.key];
    for (size_t i = 0; i < ks.open.size();) {
      if (ks.open[i].start <= s.end && s.start <= ks.open[i].end) {  // overlaps or touches
        s = Session{std::min(s.start, ks.open[i].start), std::max(s.end, ks.open[i].end),
                    s.count + ks.open[i].count};
        ks.open.erase(ks.open.begin() + static_cast<ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    ks.open.push_back(s);
    if (s.end < ks.scheduled) {
      ks.scheduled = s.end;
      due.emplace(s.end, e.key, &ks);
    }
    if (rose) fire_until(wm.value);
  }
  for (auto& [key, ks] : sessions) {  // end of input
    for (const Session& s : ks.open) sink(t, Firing{key, s.start, s.end, s.count});
  }
  return t;
}

void run_loop(benchmark::State& state, std::string_view kind) {
  Totals t;
  for (auto _ : state) {
    t = kind == "tumbling"  ? sliding_loop(k_tumbling_ms, k_tumbling_ms)
        : kind == "hopping" ? sliding_loop(k_hop_size_ms, k_hop_slide_ms)
                            : session_loop(k_session_gap_ms);
  }
  report(state, t);
}

// Prints, per kind, sluice against the loop of the same run, and fails the run (exit 1)
// when they found different windows.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      Row& row = rows_[r.run_name.function_name];  // "sluice/tumbling", without min_time
      row.rate = r.counters.at("items_per_second").value;
      row.windows = static_cast<int64_t>(r.counters.at("windows").value);
      row.sum = static_cast<int64_t>(r.counters.at("sum").value);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%lld events, %lld keys, %lld out of order (moved back 1..%lld ms)\n",
                static_cast<long long>(g_n), static_cast<long long>(g_keys),
                static_cast<long long>(g_out_of_order), static_cast<long long>(k_max_delay_ms));
    std::printf("%-10s %14s %9s %14s %12s %10s %12s\n", "window", "sluice ev/s", "ns/ev",
                "loop ev/s", "loop/sluice", "windows", "same result");
    for (const char* kind : {"tumbling", "hopping", "session"}) {
      auto s = rows_.find(std::string("sluice/") + kind);
      auto l = rows_.find(std::string("loop/") + kind);
      if (s == rows_.end() || l == rows_.end()) continue;
      const bool same = s->second.windows == l->second.windows && s->second.sum == l->second.sum;
      mismatch_ |= !same;
      std::printf("%-10s %14.4g %9.1f %14.4g %11.2fx %10lld %12s\n", kind, s->second.rate,
                  1e9 / s->second.rate, l->second.rate, l->second.rate / s->second.rate,
                  static_cast<long long>(s->second.windows), same ? "yes" : "NO");
    }
  }
  bool mismatch() const { return mismatch_; }

 private:
  struct Row {
    double rate = 0;
    int64_t windows = 0, sum = 0;
  };
  std::map<std::string, Row> rows_;
  bool mismatch_ = false;
};

}  // namespace
}  // namespace sluice::host

int main(int argc, char** argv) {
  using namespace sluice::host;  // NOLINT(google-build-using-namespace)
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.rfind("--n=", 0) == 0) {
      g_n = std::atoll(argv[i] + 4);
    } else if (a.rfind("--keys=", 0) == 0) {
      g_keys = std::max<int64_t>(1, std::atoll(argv[i] + 7));
    } else if (a.rfind("--batch=", 0) == 0) {
      g_batch = static_cast<uint32_t>(std::atoll(argv[i] + 8));
    } else {
      rest.push_back(argv[i]);
    }
  }
  load_engine();
  make_events();
  for (const char* kind : {"tumbling", "hopping", "session"}) {
    const std::string k = kind;
    benchmark::RegisterBenchmark(("loop/" + k).c_str(),
                                 [k](benchmark::State& s) { run_loop(s, k); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
    benchmark::RegisterBenchmark(("sluice/" + k).c_str(),
                                 [k](benchmark::State& s) { run_sluice(s, k); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.5);
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  for (sl_value v : g_key_values) host()->value_release(v);
  if (reporter.mismatch()) {
    std::fprintf(stderr,
                 "window_bench: sluice and the hand-written loop found different "
                 "windows\n");
    return 1;
  }
  return 0;
}
