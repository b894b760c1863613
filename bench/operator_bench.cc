// Benchmark 1 of issue 7: operator overhead, in process, no I/O.
//
// Each pipeline is built from a TOML string, validated against the real core_ops plugin
// (loaded from the build's plugins-out directory) and run as a Task on a RealClock, from an
// in-process source that emits int64 ranges (or precomputed text lines) `batch_size` at a
// time into an in-process sink that checks the result. Beside each pipeline, a hand-written
// C++ loop doing the same work is measured in the same run (the physical limit), and the
// ratio sluice / loop is printed at the end. For the int chains, a third row: the
// message-model floor (floor_run below), a fused hand-written loop over ABI messages.
//
//   operator_bench [--n=ELEMENTS] [--lines=LINES] [--batch=SIZE] [gbench flags...]
//
// Defaults: 10,000,000 ints and 200,000 lines of 10 words (from a 1,000-word vocabulary).
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"
#include "support/in_process_plugin.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

int64_t g_n = 10'000'000;   // ints per run
int64_t g_lines = 200'000;  // lines per word-count run
uint32_t g_batch = 1024;    // [runtime] batch_size
constexpr int k_words_per_line = 10;
constexpr int k_vocabulary = 1000;

std::vector<std::string> g_vocab;      // the 1,000 words
std::vector<std::string> g_line_text;  // the lines, for the hand-written loop
std::vector<sl_value> g_line_values;   // the same lines as host strings (owned here)

void make_lines() {
  std::mt19937_64 rng(7);
  for (int i = 0; i < k_vocabulary; ++i) {
    std::string w;
    for (int len = 3 + static_cast<int>(rng() % 6), j = 0; j < len; ++j) {
      w.push_back(static_cast<char>('a' + rng() % 26));
    }
    g_vocab.push_back(w + std::to_string(i));  // distinct
  }
  for (int64_t l = 0; l < g_lines; ++l) {
    std::string line;
    for (int w = 0; w < k_words_per_line; ++w) {
      if (w) line.push_back(' ');
      line += g_vocab[rng() % k_vocabulary];
    }
    g_line_values.push_back(host()->string_create(line.data(), line.size()));
    g_line_text.push_back(std::move(line));
  }
}

int64_t config_int(sl_value config, const char* key) {
  sl_value v;
  return host()->object_get(config, key, std::strlen(key), &v) ? v.as.i : 0;
}

// --- bench_ints: emits 0..n-1; bench_lines: emits the first n precomputed lines -----------
struct Source {
  int64_t next = 0, n = 0;
  bool lines = false;
  std::vector<sl_value> out;
};
sl_status source_create(const sl_node_init* init, void** self, bool lines) {
  auto* s = new Source;
  s->n = config_int(init->config, "n");
  s->lines = lines;
  *self = s;
  return SL_OK;
}
sl_status ints_create(const sl_node_init* init, void** self) {
  return source_create(init, self, false);
}
sl_status lines_create(const sl_node_init* init, void** self) {
  return source_create(init, self, true);
}
void source_destroy(void* self) { delete static_cast<Source*>(self); }
sl_status source_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<Source*>(self);
  const int64_t end = std::min<int64_t>(s->n, s->next + budget);
  sl_status st = SL_OK;
  if (s->lines) {  // borrowed from g_line_values: emit does not take ownership
    st = host()->emit_values(ctx, g_line_values.data() + s->next,
                             static_cast<size_t>(end - s->next));
  } else {
    s->out.clear();
    for (int64_t i = s->next; i < end; ++i) s->out.push_back(sl_int(i));
    st = host()->emit_values(ctx, s->out.data(), s->out.size());
  }
  s->next = end;
  *state = s->next < s->n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// --- bench_sink: counts what arrives and notes the last value (the check). Like a real
// sink that writes each value out, it keeps no reference to what it received. ------------
struct Sink {
  uint64_t count = 0;
  int64_t last = -1;  // the last int, or the size of the last array/object/string
};
Sink* g_sink = nullptr;  // the sink of the task being run (one at a time)
sl_status sink_create(const sl_node_init*, void** self) {
  g_sink = new Sink;
  *self = g_sink;
  return SL_OK;
}
void sink_destroy(void* self) { delete static_cast<Sink*>(self); }
sl_status sink_process(void* self, sl_context*, uint32_t, const sl_batch* batch) {
  auto* s = static_cast<Sink*>(self);
  s->count += batch->count;
  if (batch->count) {
    sl_value v = sl_batch_at(batch, batch->count - 1)->value;
    s->last = v.kind == SL_KIND_INT ? v.as.i : static_cast<int64_t>(host()->value_size(v));
  }
  return SL_OK;
}

const sl_param k_n_param[] = {{sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr,
                               "how many elements", 0, 0, 0.0, 0.0, nullptr}};

using test_support::bare_node_type;

struct Engine {
  std::shared_ptr<PluginRegistry> registry = std::make_shared<PluginRegistry>();
  RealClock clock;
};
Engine* g_engine = nullptr;

void load_engine() {
  g_engine = new Engine;
  PluginLoader loader(*g_engine->registry, host_api_table());
  const auto file = std::filesystem::path(SLUICE_BENCH_PLUGIN_DIR) / "libsluice_core_ops.so";
  Status loaded = loader.load_file(file);
  if (!loaded.is_ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", file.c_str(), loaded.message().c_str());
    std::exit(2);
  }
  static sl_node_type ints = test_support::source_node_type("bench_ints", k_n_param, ints_create,
                                                            source_destroy, source_poll);
  static sl_node_type lines = [] {
    sl_node_type t = ints;
    t.name = "bench_lines";
    t.create = lines_create;
    return t;
  }();
  static sl_node_type sink = [] {
    sl_node_type t = bare_node_type(SL_ROLE_SINK, "bench_sink");
    t.create = sink_create;
    t.destroy = sink_destroy;
    t.process = sink_process;
    return t;
  }();
  static const sl_node_type* types[] = {&ints, &lines, &sink};
  static sl_plugin plugin = test_support::in_process_plugin("bench_nodes", types);
  Status added = g_engine->registry->add_plugin(&plugin, "<bench>", nullptr);
  if (!added.is_ok()) {
    std::fprintf(stderr, "bench nodes: %s\n", added.message().c_str());
    std::exit(2);
  }
}

GraphSpec load(const std::string& toml) {
  auto doc = parse_config_string(toml, "bench.toml");
  if (!doc.ok()) {
    std::fprintf(stderr, "bench config does not parse:\n%s\n", toml.c_str());
    std::exit(2);
  }
  auto spec = validate_config(*doc.value, *g_engine->registry);
  if (!spec.value) {
    for (const auto& d : spec.diagnostics) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    std::exit(2);
  }
  spec.value->registry = g_engine->registry;  // the functions the operators bind
  return std::move(*spec.value);
}

// One pipeline: the TOML of the operators between `src` and the sink (the last operator's
// id is "last"), the source type and how many elements it emits.
struct Pipeline {
  const char* name;
  int operators;
  bool lines;
  std::string ops_toml;
};

std::string header(const Pipeline& p) {
  return "[runtime]\nbatch_size = " + std::to_string(g_batch) + "\n[sources.src]\ntype = \"" +
         (p.lines ? "bench_lines" : "bench_ints") +
         "\"\nn = " + std::to_string(p.lines ? g_lines : g_n) + "\n";
}

// Runs the pipeline once per iteration; the elements counted are those the source emits.
void run_sluice(benchmark::State& state, const Pipeline& p) {
  const GraphSpec spec =
      load(header(p) + p.ops_toml + "[sinks.out]\ntype = \"bench_sink\"\ninputs = [\"last\"]\n");
  int64_t elements = p.lines ? g_lines * k_words_per_line : g_n;
  int64_t result = 0;
  for (auto _ : state) {
    Task task(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
    Status s = task.create();
    if (s.is_ok()) s = task.start();
    if (s.is_ok()) s = task.run();
    if (!s.is_ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    result = g_sink->last;
  }
  state.SetItemsProcessed(state.iterations() * elements);
  state.counters["ns/elem/op"] = benchmark::Counter(
      static_cast<double>(elements * p.operators),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["result"] = static_cast<double>(result);
}

const Pipeline k_chain{"chain3", 3, false, R"(
[operators.inc]
type = "map"
inputs = ["src"]
function = { name = "add", args = { value = 1 } }
[operators.big]
type = "filter"
inputs = ["inc"]
function = { name = "gt", args = { value = 1000 } }
[operators.last]
type = "accumulate"
inputs = ["big"]
function = "sum"
start = 0
)"};

std::string map10_toml() {
  std::string t;
  for (int i = 0; i < 10; ++i) {
    std::string id = i == 9 ? "last" : "m" + std::to_string(i);
    std::string in = i == 0 ? "src" : "m" + std::to_string(i - 1);
    t += "[operators." + id + "]\ntype = \"map\"\ninputs = [\"" + in +
         "\"]\nfunction = { name = \"add\", args = { value = 1 } }\n";
  }
  return t;
}

// sliding_window(10) -> map, the map's function given as its TOML line.
std::string window_toml(const std::string& function_line) {
  return "[operators.win]\ntype = \"sliding_window\"\ninputs = [\"src\"]\nn = 10\n"
         "[operators.last]\ntype = \"map\"\ninputs = [\"win\"]\n" +
         function_line + "\n";
}

// streamz's map(sum): core_ops' sum with one argument sums an array, as Python's sum().
const Pipeline k_window{"window10_sum", 2, false, window_toml("function = \"sum\"")};

// The same with the sum written in Lua (the cost of the Lua bridge: each window is
// converted to a Lua table). Compared with the loop and streamz of window10_sum.
const Pipeline k_window_lua{
    "window10_lua", 2, false,
    window_toml(
        R"(lua = "function(w) local t = 0 for i = 1, #w do t = t + w[i] end return t end")")};

const Pipeline k_wordcount{"wordcount", 3, true, R"(
[operators.words]
type = "map"
inputs = ["src"]
function = "split"
[operators.flat]
type = "flatten"
inputs = ["words"]
[operators.last]
type = "accumulate"
inputs = ["flat"]
function = "count_by"
start = {}
)"};

// The same count per word as aggregate's keyed state (a changelog: each word's new count
// goes out), compared with the loop and with wordcount's one count_by object.
const Pipeline k_keyed_wordcount{"keyed_wordcount", 4, true, R"(
[operators.words]
type = "map"
inputs = ["src"]
function = "split"
[operators.flat]
type = "flatten"
inputs = ["words"]
[operators.keyed]
type = "key_by"
inputs = ["flat"]
function = "identity"
[operators.last]
type = "aggregate"
inputs = ["keyed"]
function = "count"
start = 0
)"};

// --- the hand-written loops ---------------------------------------------------------------

void loop_chain(benchmark::State& state) {
  int64_t acc = 0;
  for (auto _ : state) {
    acc = 0;
    for (int64_t i = 0; i < g_n; ++i) {
      int64_t x = i + 1;
      benchmark::DoNotOptimize(x);
      if (x > 1000) {
        acc += x;
        benchmark::DoNotOptimize(acc);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(acc);
}

void loop_map10(benchmark::State& state) {
  int64_t x = 0;
  for (auto _ : state) {
    for (int64_t i = 0; i < g_n; ++i) {
      x = i;
      for (int k = 0; k < 10; ++k) {
        x += 1;
        benchmark::DoNotOptimize(x);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(x);
}

void loop_window(benchmark::State& state) {
  int64_t total = 0;
  for (auto _ : state) {
    std::array<int64_t, 10> ring{};
    size_t filled = 0;
    for (int64_t i = 0; i < g_n; ++i) {
      ring[static_cast<size_t>(i % 10)] = i;
      filled = std::min<size_t>(filled + 1, 10);
      total = 0;
      for (size_t k = 0; k < filled; ++k) total += ring[k];
      benchmark::DoNotOptimize(total);
    }
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(total);
}

void loop_wordcount(benchmark::State& state) {
  size_t keys = 0;
  for (auto _ : state) {
    std::unordered_map<std::string, int64_t> counts;
    for (const std::string& line : g_line_text) {
      std::string_view rest = line;
      while (!rest.empty()) {
        size_t sp = rest.find(' ');
        std::string_view w = rest.substr(0, sp);
        ++counts[std::string(w)];
        rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
      }
    }
    keys = counts.size();
    benchmark::DoNotOptimize(counts);
  }
  state.SetItemsProcessed(state.iterations() * g_lines * k_words_per_line);
  state.counters["result"] = static_cast<double>(keys);
}

// --- the message-model floor ----------------------------------------------------------------
// What the int chains cost in the shape every engine built on this ABI must keep, with no
// framework at all: the source writes each element into a 64-byte sl_message of a batch
// (as Task::emit_values does), ONE fused hand-written operator reads each message and writes
// each result into an output sl_message (key, headers and timestamp carried, as map does),
// and the sink reads each value. Overflow is checked as core_ops does. No indirect call, no
// counters, no intermediate batch: the lower bound of any sluice pipeline, however fused.
template <typename Fused>
int64_t floor_run(Fused fused) {
  std::vector<sl_message> in(g_batch), out(g_batch);
  int64_t last = -1;
  for (int64_t base = 0; base < g_n; base += g_batch) {
    const auto n = static_cast<size_t>(std::min<int64_t>(g_batch, g_n - base));
    for (size_t k = 0; k < n; ++k) {
      in[k] = sl_message{sl_int(base + static_cast<int64_t>(k)), sl_null(), sl_null(),
                         SL_NO_TIMESTAMP, 0};
    }
    const size_t produced = fused(in.data(), n, out.data());
    for (size_t k = 0; k < produced; ++k) last = out[k].value.as.i;  // the sink
    benchmark::DoNotOptimize(last);
  }
  return last;
}

[[noreturn]] void floor_error() {
  std::fprintf(stderr, "floor: not an int, or overflow\n");
  std::abort();
}

void floor_chain(benchmark::State& state) {
  int64_t last = 0;
  for (auto _ : state) {
    int64_t acc = 0;
    last = floor_run([&](const sl_message* in, size_t n, sl_message* out) {
      size_t o = 0;
      for (size_t k = 0; k < n; ++k) {
        int64_t x = 0;
        if (in[k].value.kind != SL_KIND_INT || __builtin_add_overflow(in[k].value.as.i, 1, &x)) {
          floor_error();
        }
        if (x <= 1000) continue;
        if (__builtin_add_overflow(acc, x, &acc)) floor_error();
        out[o] = in[k];
        out[o++].value = sl_int(acc);
      }
      return o;
    });
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(last);
}

void floor_map10(benchmark::State& state) {
  int64_t last = 0;
  for (auto _ : state) {
    last = floor_run([](const sl_message* in, size_t n, sl_message* out) {
      for (size_t k = 0; k < n; ++k) {
        if (in[k].value.kind != SL_KIND_INT) floor_error();
        int64_t x = in[k].value.as.i;
        for (int j = 0; j < 10; ++j) {
          if (__builtin_add_overflow(x, 1, &x)) floor_error();
        }
        out[k] = in[k];
        out[k].value = sl_int(x);
      }
      return n;
    });
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(last);
}

// Collects each run's time per element, then prints sluice / loop per pipeline.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      auto it = r.counters.find("items_per_second");
      if (it != r.counters.end()) rate_[r.benchmark_name()] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-16s %14s %14s %10s %14s %10s\n", "pipeline", "sluice elem/s", "loop elem/s",
                "loop/sluice", "floor elem/s", "loop/floor");
    for (const char* p :
         {"chain3", "map10", "window10_sum", "window10_lua", "wordcount", "keyed_wordcount"}) {
      const std::string name = p;
      const std::string base = name == "window10_lua"      ? "window10_sum"
                               : name == "keyed_wordcount" ? "wordcount"
                                                           : name;
      double s = find("sluice/" + std::string(p)), l = find("loop/" + base);
      double f = find("floor/" + std::string(p));
      if (s <= 0 || l <= 0) continue;
      std::printf("%-16s %14.4g %14.4g %9.2fx", p, s, l, l / s);
      if (f > 0) std::printf(" %14.4g %9.2fx", f, l / f);
      std::printf("\n");
    }
  }

 private:
  double find(const std::string& prefix) const {
    for (const auto& [name, rate] : rate_) {
      if (name.rfind(prefix, 0) == 0) return rate;
    }
    return 0;
  }
  std::map<std::string, double> rate_;
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
    } else if (a.rfind("--lines=", 0) == 0) {
      g_lines = std::atoll(argv[i] + 8);
    } else if (a.rfind("--batch=", 0) == 0) {
      g_batch = static_cast<uint32_t>(std::atoll(argv[i] + 8));
    } else {
      rest.push_back(argv[i]);
    }
  }
  load_engine();
  make_lines();
  static const Pipeline map10{"map10", 10, false, map10_toml()};
  auto reg = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  reg("loop/chain3", loop_chain);
  reg("sluice/chain3", [](benchmark::State& s) { run_sluice(s, k_chain); });
  reg("floor/chain3", floor_chain);
  reg("loop/map10", loop_map10);
  reg("floor/map10", floor_map10);
  reg("sluice/map10", [](benchmark::State& s) { run_sluice(s, map10); });
  reg("loop/window10_sum", loop_window);
  reg("sluice/window10_sum", [](benchmark::State& s) { run_sluice(s, k_window); });
  reg("sluice/window10_lua", [](benchmark::State& s) { run_sluice(s, k_window_lua); });
  reg("loop/wordcount", loop_wordcount);
  reg("sluice/wordcount", [](benchmark::State& s) { run_sluice(s, k_wordcount); });
  reg("sluice/keyed_wordcount", [](benchmark::State& s) { run_sluice(s, k_keyed_wordcount); });
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  for (sl_value v : g_line_values) host()->value_release(v);
  return 0;
}
