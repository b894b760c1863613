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
//
// Issue 13, restore of a key group (restore/...): 1,000,000 distinct keys, all in key group 1,
// counted by `aggregate` (baseline: the same keys in accumulate's count_by object, whose
// restore of 1 M keys issue 7 measured end to end in checkpoint_bench.py). Per iteration:
// snapshot of the built task, encode_checkpoint, decode_checkpoint, and restore into a fresh
// task's node (Task::restore_states: the node's restore callback). The iteration's time is
// decode + restore, the path a member takes when it restores a checkpoint.
//
// Issue 20, Lua functions (lua_*): `filter lua = "x % 2 == 0"` and `map lua = "x * 3 + 1"`
// over the ints, `filter lua = "x.amount > 50"` over --objects=N precomputed objects
// {"amount": i % 100, "user": "u<i % 1000>"} (default N: --n, at most 1 M), each beside its
// hand-written loop, and each also with the fast path off (*_lua_path, SLUICE_LUA_FAST_PATH=0:
// the Lua bridge itself); window10_lua is the sum over a sliding window written as a Lua loop
// (never on the fast path).
//
// Issue 13, `[runtime] tasks` (keyed/...): 2,000,000 words keyed by word, spread over 8
// partitions by a hash of the word, as Kafka's producer places keyed records; task i of T
// emits the partitions p with p % T == i, each message with key_group p + 1 (what from_kafka
// does with the partitions the consumer group gives each task). Every task runs on its own
// thread, as PipelineRunner runs them; wall time from the first create to the last task's end.
#include "bench_engine.hpp"
#include "checkpoint/format.hpp"
#include "checkpoint/key_group_index.hpp"
#include "checkpoint/store.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"

#include <sys/resource.h>
#include <unistd.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
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
#include <thread>
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

// --- bench_objects: emits the first n of g_objects (borrowed) ---------------------------------
int64_t g_objects_n = -1;         // --objects; default: --n, at most 1,000,000
std::vector<sl_value> g_objects;  // {"amount": i % 100, "user": "u<i % 1000>"} (owned here)

void make_objects() {
  if (g_objects_n < 0) g_objects_n = std::min<int64_t>(g_n, 1'000'000);
  for (int64_t i = 0; i < g_objects_n; ++i) {
    const std::string user = "u" + std::to_string(i % 1000);
    const sl_str keys[] = {{"amount", 6}, {"user", 4}};
    const sl_value user_value = host()->string_create(user.data(), user.size());
    const sl_value values[] = {sl_int(i % 100), user_value};
    g_objects.push_back(host()->object_create(keys, values, 2));
    host()->value_release(user_value);
  }
}

sl_status objects_create(const sl_node_init* init, void** self) {
  *self = new int64_t(0);
  (void)init;
  return SL_OK;
}
void objects_destroy(void* self) { delete static_cast<int64_t*>(self); }
sl_status objects_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto& next = *static_cast<int64_t*>(self);
  const int64_t end = std::min<int64_t>(g_objects_n, next + budget);
  const sl_status st =
      host()->emit_values(ctx, g_objects.data() + next, static_cast<size_t>(end - next));
  next = end;
  *state = next < g_objects_n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// --- bench_words: the words of partitions p % task_count == task_index, keyed ----------------
constexpr uint32_t k_partitions = 8;
int64_t g_words_n = 2'000'000;
// Per partition, the messages it holds: value = key = the word (borrowed from g_word_values),
// key_group = partition + 1.
std::array<std::vector<sl_message>, k_partitions> g_partition_messages;
std::array<std::vector<uint32_t>, k_partitions> g_partition_words;  // the same, as vocab indices
std::vector<sl_value> g_word_values;  // the 1,000 words as host strings (owned here)

void make_words() {
  auto partition_of = [](const std::string& w) {
    return std::hash<std::string>{}(w) % k_partitions;
  };
  // Each word's string is created with the other words of its partition, so that the two
  // tasks' strings (and their reference counts) do not share cache lines, but at the seams.
  g_word_values.resize(g_vocab.size());
  for (size_t p = 0; p < k_partitions; ++p) {
    for (size_t w = 0; w < g_vocab.size(); ++w) {
      if (partition_of(g_vocab[w]) == p) {
        g_word_values[w] = host()->string_create(g_vocab[w].data(), g_vocab[w].size());
      }
    }
  }
  std::mt19937_64 rng(11);
  for (int64_t i = 0; i < g_words_n; ++i) {
    const size_t w = rng() % g_vocab.size();
    const size_t p = partition_of(g_vocab[w]);
    g_partition_words[p].push_back(static_cast<uint32_t>(w));
    g_partition_messages[p].push_back(
        sl_message{g_word_values[w], g_word_values[w], sl_null(), SL_NO_TIMESTAMP, p + 1});
  }
}

struct WordsSource {
  std::vector<uint32_t> partitions;  // this task's
  size_t current = 0, offset = 0;
};
sl_status words_create(const sl_node_init* init, void** self) {
  auto* s = new WordsSource;
  for (uint32_t p = 0; p < k_partitions; ++p) {
    if (p % init->task_count == init->task_index) s->partitions.push_back(p);
  }
  *self = s;
  return SL_OK;
}
void words_destroy(void* self) { delete static_cast<WordsSource*>(self); }
sl_status words_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<WordsSource*>(self);
  *state = SL_SOURCE_DONE;
  if (s->current == s->partitions.size()) return SL_OK;
  const auto& msgs = g_partition_messages[s->partitions[s->current]];
  const size_t n = std::min<size_t>(budget, msgs.size() - s->offset);
  sl_status st = host()->emit(ctx, msgs.data() + s->offset, n);  // borrowed
  s->offset += n;
  if (s->offset == msgs.size()) {
    ++s->current;
    s->offset = 0;
  }
  *state = s->current < s->partitions.size() ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// --- bench_keys: `--restore-keys` distinct keys ("key<i>", value = key), all in group 1 -------
int64_t g_restore_keys = 1'000'000;
std::vector<sl_message> g_key_messages;  // owned here (values released at exit)

void make_keys() {
  for (int64_t i = 0; i < g_restore_keys; ++i) {
    const std::string k = "key" + std::to_string(i);
    const sl_value v = host()->string_create(k.data(), k.size());
    g_key_messages.push_back(sl_message{v, v, sl_null(), SL_NO_TIMESTAMP, 1});
  }
}

sl_status keys_create(const sl_node_init*, void** self) {
  *self = new size_t(0);
  return SL_OK;
}
void keys_destroy(void* self) { delete static_cast<size_t*>(self); }
sl_status keys_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto& next = *static_cast<size_t*>(self);
  const size_t n = std::min<size_t>(budget, g_key_messages.size() - next);
  const sl_status st = host()->emit(ctx, g_key_messages.data() + next, n);  // borrowed
  next += n;
  *state = next < g_key_messages.size() ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// --- bench_sink: counts what arrives and notes the last value (the check). Like a real
// sink that writes each value out, it keeps no reference to what it received. ------------
struct Sink {
  uint64_t count = 0;
  int64_t last = -1;  // the last int, or the size of the last array/object/string
};
std::atomic<Sink*> g_sink{nullptr};     // the sink of the task being run (the last created)
std::atomic<uint64_t> g_sink_total{0};  // messages every sink received (parallel tasks)
sl_status sink_create(const sl_node_init*, void** self) {
  auto* sink = new Sink;
  g_sink.store(sink);
  *self = sink;
  return SL_OK;
}
void sink_destroy(void* self) { delete static_cast<Sink*>(self); }
sl_status sink_process(void* self, sl_context*, uint32_t, const sl_batch* batch) {
  auto* s = static_cast<Sink*>(self);
  s->count += batch->count;
  g_sink_total.fetch_add(batch->count, std::memory_order_relaxed);
  if (batch->count) {
    sl_value v = sl_batch_at(batch, batch->count - 1)->value;
    s->last = v.kind == SL_KIND_INT ? v.as.i : static_cast<int64_t>(host()->value_size(v));
  }
  return SL_OK;
}

const sl_param k_n_param[] = {{sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr,
                               "how many elements", 0, 0, 0.0, 0.0, nullptr}};

using test_support::bare_node_type;

bench::Engine* g_engine = nullptr;

void load_engine() {
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
  static sl_node_type words = [] {
    sl_node_type t = bare_node_type(SL_ROLE_SOURCE, "bench_words");
    t.create = words_create;
    t.destroy = words_destroy;
    t.poll = words_poll;
    return t;
  }();
  static sl_node_type keys = [] {
    sl_node_type t = bare_node_type(SL_ROLE_SOURCE, "bench_keys");
    t.create = keys_create;
    t.destroy = keys_destroy;
    t.poll = keys_poll;
    return t;
  }();
  static sl_node_type objects = [] {
    sl_node_type t = bare_node_type(SL_ROLE_SOURCE, "bench_objects");
    t.create = objects_create;
    t.destroy = objects_destroy;
    t.poll = objects_poll;
    return t;
  }();
  static const sl_node_type* types[] = {&ints, &lines, &sink, &words, &keys, &objects};
  static sl_plugin plugin = test_support::in_process_plugin("bench_nodes", types);
  g_engine = bench::make_engine(plugin);
  if (Status fs = checkpoint::register_builtin_stores(*g_engine->registry); !fs.is_ok()) {
    std::fprintf(stderr, "fs store: %s\n", fs.message().c_str());
    std::exit(2);
  }
}

GraphSpec load(const std::string& toml) { return bench::load_graph(*g_engine, toml, "bench.toml"); }

// One pipeline: the TOML of the operators between `src` and the sink (the last operator's
// id is "last"), the source type and how many elements it emits.
struct Pipeline {
  const char* name;
  int operators;
  bool lines;
  std::string ops_toml;
  bool objects = false;  // from bench_objects (g_objects_n elements)
};

std::string header(const Pipeline& p) {
  if (p.objects) {
    return "[runtime]\nbatch_size = " + std::to_string(g_batch) +
           "\n[sources.src]\ntype = \"bench_objects\"\n";
  }
  return "[runtime]\nbatch_size = " + std::to_string(g_batch) + "\n[sources.src]\ntype = \"" +
         (p.lines ? "bench_lines" : "bench_ints") +
         "\"\nn = " + std::to_string(p.lines ? g_lines : g_n) + "\n";
}

// Runs the pipeline once per iteration; the elements counted are those the source emits.
void run_sluice(benchmark::State& state, const Pipeline& p) {
  const GraphSpec spec =
      load(header(p) + p.ops_toml + "[sinks.out]\ntype = \"bench_sink\"\ninputs = [\"last\"]\n");
  int64_t elements = p.objects ? g_objects_n : p.lines ? g_lines * k_words_per_line : g_n;
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
    result = g_sink.load()->last;
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

// Issue 20: Lua expressions, on the fast path (or in Lua with SLUICE_LUA_FAST_PATH=0).
const Pipeline k_lua_even{"lua_even", 1, false, R"(
[operators.last]
type = "filter"
inputs = ["src"]
lua = "x % 2 == 0"
)"};
const Pipeline k_lua_arith{"lua_arith", 1, false, R"(
[operators.last]
type = "map"
inputs = ["src"]
lua = "x * 3 + 1"
)"};
const Pipeline k_lua_field{"lua_field", 1, false, R"(
[operators.last]
type = "filter"
inputs = ["src"]
lua = "x.amount > 50"
)",
                           true};

// The pipeline with the fast path off: every call crosses into Lua.
void run_sluice_lua_only(benchmark::State& state, const Pipeline& p) {
  ::setenv("SLUICE_LUA_FAST_PATH", "0", 1);
  run_sluice(state, p);
  ::unsetenv("SLUICE_LUA_FAST_PATH");
}

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

// --- keyed count over `[runtime] tasks` (issue 13) ---------------------------------------------

const char* const k_keyed_count_ops = R"(
[operators.last]
type = "aggregate"
inputs = ["src"]
function = "count"
start = 0
)";
const char* const k_count_by_ops = R"(
[operators.last]
type = "accumulate"
inputs = ["src"]
function = "count_by"
start = {}
)";

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// `tasks` Tasks of the pipeline, each on its own thread (as PipelineRunner runs them); the
// iteration's time is the wall time from the first create to the last task's end.
void run_tasks(benchmark::State& state, const char* ops, uint32_t tasks) {
  const GraphSpec spec = load("[runtime]\nbatch_size = " + std::to_string(g_batch) + "\ntasks = " +
                              std::to_string(tasks) + "\n[sources.src]\ntype = \"bench_words\"\n" +
                              ops + "[sinks.out]\ntype = \"bench_sink\"\ninputs = [\"last\"]\n");
  double wall_s = 0, cpu_s = 0;
  for (auto _ : state) {
    g_sink_total = 0;
    std::vector<Status> results(tasks, Status::ok());
    const double cpu0 = process_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> threads;
      for (uint32_t i = 0; i < tasks; ++i) {
        threads.emplace_back([&, i] {
          Task task(spec, TaskOptions{g_batch, i, tasks, &g_engine->clock});
          Status st = task.create();
          if (st.is_ok()) st = task.start();
          if (st.is_ok()) st = task.run();
          results[i] = st;
        });
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(wall);
    wall_s += wall;
    cpu_s += process_cpu_s() - cpu0;
    for (const Status& st : results) {
      if (!st.is_ok()) {
        state.SkipWithError(st.message().c_str());
        return;
      }
    }
    // One output per word: aggregate's changelog, accumulate's running object.
    if (g_sink_total.load() != static_cast<uint64_t>(g_words_n)) {
      state.SkipWithError("the sinks did not receive one message per word");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * g_words_n);
  // The cores the run had: process CPU time (every thread) / wall time. Below `tasks` on a
  // machine shared with other work.
  state.counters["cores"] = wall_s > 0 ? cpu_s / wall_s : 0;
  // CPU time per element, all threads: equal for tasks = 1 and 2 when the tasks share
  // nothing (their speed-up is then what the free CPUs allow).
  state.counters["cpu_ns/elem"] = 1e9 * cpu_s / static_cast<double>(state.iterations() * g_words_n);
}

// --- restore of one key group of 1 M keys (issue 13) ------------------------------------------

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_restore(benchmark::State& state, const char* ops) {
  const GraphSpec spec = load("[runtime]\nbatch_size = " + std::to_string(g_batch) +
                              "\n[sources.src]\ntype = \"bench_keys\"\n" + ops +
                              "[sinks.out]\ntype = \"bench_sink\"\ninputs = [\"last\"]\n");
  // The state to restore: every key counted once through the real pipeline.
  Task built(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
  Status st = built.create();
  if (st.is_ok()) st = built.start();
  if (st.is_ok()) st = built.run();
  if (!st.is_ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  double snapshot_s = 0, encode_s = 0, decode_s = 0, restore_s = 0, cpu_s = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto states = built.snapshot_states();
    if (!states.is_ok()) {
      state.SkipWithError(states.status().message().c_str());
      return;
    }
    snapshot_s += seconds_since(t0);
    checkpoint::Checkpoint cp;
    cp.epoch = 1;
    cp.pipeline = "bench";
    cp.tasks.emplace_back();
    for (auto& [id, v] : *states) {
      cp.tasks[0].nodes.push_back(checkpoint::NodeState{id, "", SL_ROLE_OPERATOR, std::move(v)});
    }
    t0 = std::chrono::steady_clock::now();
    std::string encoded = checkpoint::encode_checkpoint(cp);
    encode_s += seconds_since(t0);
    bytes = encoded.size();
    cp = {};  // the restoring member holds only what it decodes
    Task fresh(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
    if (Status c = fresh.create(); !c.is_ok()) {
      state.SkipWithError(c.message().c_str());
      return;
    }
    t0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_s();
    auto decoded = checkpoint::decode_checkpoint(encoded);
    if (!decoded.is_ok()) {
      state.SkipWithError(decoded.status().message().c_str());
      return;
    }
    const double decode = seconds_since(t0);
    Task::NodeStates restore;
    for (auto& n : decoded->tasks[0].nodes) restore.emplace_back(n.id, std::move(n.state));
    *decoded = checkpoint::Checkpoint{};  // dropped before restore, as the coordinator does
    t0 = std::chrono::steady_clock::now();
    Status r = fresh.restore_states(restore);
    const double restore_time = seconds_since(t0);
    cpu_s += process_cpu_s() - cpu0;
    if (!r.is_ok()) {
      state.SkipWithError(r.message().c_str());
      return;
    }
    decode_s += decode;
    restore_s += restore_time;
    state.SetIterationTime(decode + restore_time);
    state.PauseTiming();  // the fresh task and the restored state are freed outside the time
    restore.clear();
    state.ResumeTiming();
  }
  const auto it = static_cast<double>(state.iterations());
  state.counters["keys"] = static_cast<double>(g_restore_keys);
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["snapshot_ms"] = 1e3 * snapshot_s / it;
  state.counters["encode_ms"] = 1e3 * encode_s / it;
  state.counters["decode_ms"] = 1e3 * decode_s / it;
  state.counters["restore_ms"] = 1e3 * restore_s / it;
  // decode + restore in CPU time: on a shared machine, closer to what a quiet one would take.
  state.counters["cpu_ms"] = 1e3 * cpu_s / it;
}

// The hand-written keyed count over the same partitions on `threads` threads (partition p on
// thread p % threads), each thread counting into its own hash map: what the machine gives
// two threads at that moment, the baseline of the tasks = 2 speed-up.
void loop_keyed_count(benchmark::State& state, uint32_t threads) {
  size_t keys = 0;
  for (auto _ : state) {
    std::vector<size_t> found(threads);
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> pool;
      for (uint32_t i = 0; i < threads; ++i) {
        pool.emplace_back([&found, i, threads] {
          std::unordered_map<std::string_view, int64_t> counts;
          for (uint32_t p = i; p < k_partitions; p += threads) {
            for (uint32_t w : g_partition_words[p]) {
              int64_t c = ++counts[g_vocab[w]];
              benchmark::DoNotOptimize(c);
            }
          }
          found[i] = counts.size();
        });
      }
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    keys = 0;
    for (size_t k : found) keys += k;
  }
  state.SetItemsProcessed(state.iterations() * g_words_n);
  state.counters["result"] = static_cast<double>(keys);
}

// The host's path when a partition is assigned (docs/SCALING.md): the checkpoint above, with
// the task's claim on key group 1 of source `src`, is written to an fs store and committed;
// per iteration a fresh task, with a fresh KeyGroupIndex over that store as its directory,
// is told that `src` was assigned group 1 (Task::key_groups_assigned): the index lists the
// store, reads and decodes the entry, claims the group, and the task hands the group's state
// to aggregate's restore_group. Timed: that call (cold: the index has read nothing yet).
void run_restore_group(benchmark::State& state) {
  const GraphSpec spec = load("[runtime]\nbatch_size = " + std::to_string(g_batch) +
                              "\n[sources.src]\ntype = \"bench_keys\"\n" + k_keyed_count_ops +
                              "[sinks.out]\ntype = \"bench_sink\"\ninputs = [\"last\"]\n");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sluice-bench-restore-group-" + std::to_string(::getpid()));
  const StoreInfo* fs = g_engine->registry->find_store("fs");
  const std::pair<std::string, Value> dir_entry{"dir", Value::string(dir.string())};
  const Value store_config = Value::object({&dir_entry, 1});
  auto fail = [&](const Status& st) {
    state.SkipWithError(st.message().c_str());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  {
    Task built(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
    Status st = built.create();
    if (st.is_ok()) st = built.start();
    if (st.is_ok()) st = built.run();
    if (!st.is_ok()) return fail(st);
    auto states = built.snapshot_states();
    if (!states.is_ok()) return fail(states.status());
    checkpoint::Checkpoint cp;
    cp.epoch = 1;
    cp.pipeline = "bench";
    cp.tasks.emplace_back();
    for (auto& [id, v] : *states) {
      const NodeSpec* n = spec.find(id);
      cp.tasks[0].nodes.push_back(checkpoint::NodeState{id, n->type, n->role, std::move(v)});
    }
    cp.tasks[0].claims["src"][1] = 1;
    auto store = checkpoint::StoreHandle::open(*fs, "bench", store_config);
    if (!store.is_ok()) return fail(store.status());
    st = store.value()->write(1, checkpoint::encode_checkpoint(cp));
    if (st.is_ok()) st = store.value()->mark_committed(1);
    if (!st.is_ok()) return fail(st);
  }
  const size_t source = *spec.index_of("src");
  const uint32_t groups[] = {1};
  for (auto _ : state) {
    Task fresh(spec, TaskOptions{g_batch, 0, 1, &g_engine->clock});
    if (Status c = fresh.create(); !c.is_ok()) return fail(c);
    auto handle = checkpoint::StoreHandle::open(*fs, "bench", store_config);
    if (!handle.is_ok()) return fail(handle.status());
    checkpoint::KeyGroupIndex index(std::move(handle).value());
    fresh.set_key_group_directory(&index);
    const auto t0 = std::chrono::steady_clock::now();
    const sl_status st = fresh.key_groups_assigned(source, groups);
    state.SetIterationTime(seconds_since(t0));
    if (st != SL_OK) return fail(Status(st, "key_groups_assigned failed"));
    state.PauseTiming();
    // Every key came back (checked each time, outside the time).
    auto restored = fresh.snapshot_states();
    int64_t keys = -1;
    if (restored.is_ok() && !restored->empty()) {
      auto groups_obj = restored->front().second.get("groups");
      auto g = groups_obj ? groups_obj->get("1") : std::nullopt;
      auto k = g ? g->get("keys") : std::nullopt;
      if (k) keys = static_cast<int64_t>(k->size());
    }
    if (keys != g_restore_keys) return fail(Status(SL_INTERNAL, "the group did not come back"));
    state.ResumeTiming();
  }
  state.counters["keys"] = static_cast<double>(g_restore_keys);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

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

void loop_lua_even(benchmark::State& state) {
  int64_t last = 0;
  for (auto _ : state) {
    for (int64_t i = 0; i < g_n; ++i) {
      int64_t x = i;
      benchmark::DoNotOptimize(x);
      if (x % 2 == 0) {
        last = x;
        benchmark::DoNotOptimize(last);
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(last);
}

void loop_lua_arith(benchmark::State& state) {
  int64_t y = 0;
  for (auto _ : state) {
    for (int64_t i = 0; i < g_n; ++i) {
      int64_t x = i;
      benchmark::DoNotOptimize(x);
      y = static_cast<int64_t>(static_cast<uint64_t>(x) * 3 + 1);  // wraps, as Lua
      benchmark::DoNotOptimize(y);
    }
  }
  state.SetItemsProcessed(state.iterations() * g_n);
  state.counters["result"] = static_cast<double>(y);
}

void loop_lua_field(benchmark::State& state) {
  int64_t kept = 0;
  for (auto _ : state) {
    kept = 0;
    for (const sl_value& o : g_objects) {
      sl_value amount;
      if (host()->object_get(o, "amount", 6, &amount) && amount.kind == SL_KIND_INT &&
          amount.as.i > 50) {
        ++kept;
      }
      benchmark::DoNotOptimize(kept);
    }
  }
  state.SetItemsProcessed(state.iterations() * g_objects_n);
  state.counters["result"] = static_cast<double>(kept);
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
      seconds_[r.benchmark_name()] =
          r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-16s %14s %14s %10s %14s %10s\n", "pipeline", "sluice elem/s", "loop elem/s",
                "loop/sluice", "floor elem/s", "loop/floor");
    for (const char* p : {"chain3", "map10", "window10_sum", "window10_lua", "wordcount",
                          "keyed_wordcount", "lua_even", "lua_even_lua_path", "lua_arith",
                          "lua_arith_lua_path", "lua_field", "lua_field_lua_path"}) {
      std::string base = p;
      if (base.ends_with("_lua_path")) base.resize(base.size() - 9);
      base = base == "window10_lua"      ? "window10_sum"
             : base == "keyed_wordcount" ? "wordcount"
                                         : base;
      double s = find_exact("sluice/" + std::string(p)), l = find("loop/" + base);
      double f = find("floor/" + std::string(p));
      if (s <= 0 || l <= 0) continue;
      std::printf("%-16s %14.4g %14.4g %9.2fx", p, s, l, l / s);
      if (f > 0) std::printf(" %14.4g %9.2fx", f, l / f);
      std::printf("\n");
    }
    print_task_ratios();
    print_restore_ratios();
  }

 private:
  // restore/*: seconds per decode + restore, aggregate against count_by of the same run.
  void print_restore_ratios() const {
    const double agg = time_s("restore/aggregate/"), base = time_s("restore/count_by");
    if (agg <= 0) return;
    std::printf("\n%-22s %12s %16s\n", "restore of 1 key group", "decode+restore", "/ count_by");
    std::printf("%-22s %11.3fs %15.2fx\n", "restore/aggregate", agg, base > 0 ? agg / base : 0.0);
    if (base > 0) std::printf("%-22s %11.3fs %15.2fx\n", "restore/count_by", base, 1.0);
    if (const double g = time_s("restore/aggregate_group_assigned"); g > 0) {
      std::printf("%-22s %11.3fs %15.2fx  (store read + decode + claim + restore_group)\n",
                  "restore/group_assigned", g, base > 0 ? g / base : 0.0);
    }
  }

  // keyed/* and count_by/*: elements/s against keyed/count_tasks1 of the same run.
  void print_task_ratios() const {
    const double base = find("keyed/count_tasks1");
    if (base <= 0) return;
    std::printf("\n%-24s %14s %22s\n", "pipeline ([runtime] tasks)", "elem/s",
                "/ keyed count tasks=1");
    for (const char* p :
         {"keyed/count_tasks1", "keyed/count_tasks2", "count_by/tasks1", "count_by/tasks2",
          "loop/keyed_count_threads1", "loop/keyed_count_threads2"}) {
      const double r = find(p);
      if (r > 0) std::printf("%-26s %14.4g %21.2fx\n", p, r, r / base);
    }
    const double t2 = find("keyed/count_tasks2"), l1 = find("loop/keyed_count_threads1"),
                 l2 = find("loop/keyed_count_threads2");
    if (t2 > 0 && l1 > 0 && l2 > 0) {
      std::printf(
          "speed-up with 2: sluice tasks %.2fx, hand-written loop threads %.2fx (what "
          "the machine gave two threads)\n",
          t2 / base, l2 / l1);
    }
  }

  double time_s(const std::string& prefix) const {
    for (const auto& [name, t] : seconds_) {
      if (name.rfind(prefix, 0) == 0) return t;
    }
    return 0;
  }

  // The run named `name` (gbench may append "/min_time:..."), not one that only starts so.
  double find_exact(const std::string& name) const {
    for (const auto& [run, rate] : rate_) {
      if (run == name || run.rfind(name + "/", 0) == 0) return rate;
    }
    return 0;
  }

  double find(const std::string& prefix) const {
    for (const auto& [name, rate] : rate_) {
      if (name.rfind(prefix, 0) == 0) return rate;
    }
    return 0;
  }
  std::map<std::string, double> rate_;
  std::map<std::string, double> seconds_;  // wall seconds per iteration
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
    } else if (a.rfind("--restore-keys=", 0) == 0) {
      g_restore_keys = std::atoll(argv[i] + 15);
    } else if (a.rfind("--words=", 0) == 0) {
      g_words_n = std::atoll(argv[i] + 8);
    } else if (a.rfind("--objects=", 0) == 0) {
      g_objects_n = std::atoll(argv[i] + 10);
    } else if (a.rfind("--batch=", 0) == 0) {
      g_batch = static_cast<uint32_t>(std::atoll(argv[i] + 8));
    } else {
      rest.push_back(argv[i]);
    }
  }
  load_engine();
  make_lines();
  make_words();
  make_keys();
  make_objects();
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
  reg("loop/lua_even", loop_lua_even);
  reg("sluice/lua_even", [](benchmark::State& s) { run_sluice(s, k_lua_even); });
  reg("sluice/lua_even_lua_path", [](benchmark::State& s) { run_sluice_lua_only(s, k_lua_even); });
  reg("loop/lua_arith", loop_lua_arith);
  reg("sluice/lua_arith", [](benchmark::State& s) { run_sluice(s, k_lua_arith); });
  reg("sluice/lua_arith_lua_path",
      [](benchmark::State& s) { run_sluice_lua_only(s, k_lua_arith); });
  reg("loop/lua_field", loop_lua_field);
  reg("sluice/lua_field", [](benchmark::State& s) { run_sluice(s, k_lua_field); });
  reg("sluice/lua_field_lua_path",
      [](benchmark::State& s) { run_sluice_lua_only(s, k_lua_field); });
  reg("loop/wordcount", loop_wordcount);
  reg("sluice/wordcount", [](benchmark::State& s) { run_sluice(s, k_wordcount); });
  reg("sluice/keyed_wordcount", [](benchmark::State& s) { run_sluice(s, k_keyed_wordcount); });
  auto reg_tasks = [](const char* name, const char* ops, uint32_t tasks) {
    benchmark::RegisterBenchmark(name,
                                 [ops, tasks](benchmark::State& s) { run_tasks(s, ops, tasks); })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->MinTime(0.5);
  };
  reg_tasks("keyed/count_tasks1", k_keyed_count_ops, 1);
  reg_tasks("keyed/count_tasks2", k_keyed_count_ops, 2);
  reg_tasks("count_by/tasks1", k_count_by_ops, 1);
  reg_tasks("count_by/tasks2", k_count_by_ops, 2);
  for (uint32_t threads : {1u, 2u}) {
    benchmark::RegisterBenchmark(
        threads == 1 ? "loop/keyed_count_threads1" : "loop/keyed_count_threads2",
        [threads](benchmark::State& s) { loop_keyed_count(s, threads); })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->MinTime(0.5);
  }
  auto reg_restore = [](const char* name, const char* ops) {
    benchmark::RegisterBenchmark(name, [ops](benchmark::State& s) { run_restore(s, ops); })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(3);
  };
  reg_restore("restore/aggregate", k_keyed_count_ops);
  reg_restore("restore/count_by", k_count_by_ops);
  benchmark::RegisterBenchmark("restore/aggregate_group_assigned", run_restore_group)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime()
      ->Iterations(3);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  for (sl_value v : g_line_values) host()->value_release(v);
  for (sl_value v : g_word_values) host()->value_release(v);
  for (const sl_message& m : g_key_messages) host()->value_release(m.value);
  return 0;
}
