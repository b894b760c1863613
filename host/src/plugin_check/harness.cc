#include "plugin_check/harness.hpp"

#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "config/repartition_expansion.hpp"
#include "executor/internal_nodes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

// LeakSanitizer's entry point, present only in a sanitized build (weak: null otherwise).
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

namespace sluice::host::plugin_check {
namespace {

int g_child_fd = -1;  // the pipe to the parent, in a child

const sl_node_type& input_type() {
  static const sl_node_type type = [] {
    sl_node_type t = *injected_source_type();
    t.struct_size = sizeof t;
    t.role = SL_ROLE_SOURCE;
    t.name = k_input_type;
    t.doc = "plugin-check: the elements the kit feeds to the node under test.";
    t.params = nullptr;
    t.param_count = 0;
    t.flags = 0;
    return t;
  }();
  return type;
}

std::string join_errors(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity != Severity::error) continue;
    out += (out.empty() ? "" : "\n    ") + d.to_string();
  }
  return out;
}

}  // namespace

Status register_input_type(PluginRegistry& registry) {
  static const sl_node_type* const types[] = {&input_type()};
  static const sl_plugin plugin = [] {
    sl_plugin p{};
    p.struct_size = sizeof p;
    p.abi_major = SL_ABI_MAJOR;
    p.abi_minor = SL_ABI_MINOR;
    p.name = "plugin_check";
    p.version = "1";
    p.doc = "The conformance kit's own input source.";
    p.node_types = types;
    p.node_type_count = 1;
    return p;
  }();
  return registry.add_plugin(&plugin, "<builtin>", nullptr);
}

uint32_t input_count(const NodeTypeInfo& type) {
  if (type.role == SL_ROLE_SOURCE) return 0;
  return static_cast<uint32_t>(std::max<int32_t>(type.min_inputs, 1));
}

Result<GraphSpec> build_graph(std::shared_ptr<const PluginRegistry> registry,
                              const NodeTypeInfo& type, const toml::table* params,
                              const std::filesystem::path& config_file, bool checkpointing) {
  ConfigDocument doc;
  doc.file = config_file.empty() ? std::filesystem::path("<plugin-check>") : config_file;
  doc.base_dir = std::filesystem::current_path();
  doc.root.insert("name", "plugin_check");
  toml::table sources;
  toml::array inputs;
  for (uint32_t i = 0; i < input_count(type); ++i) {
    const std::string id = fmt::format("in{}", i);
    sources.insert(id, toml::table{{"type", k_input_type}});
    inputs.push_back(id);
  }
  toml::table node = params ? *params : toml::table{};
  node.insert_or_assign("type", type.name);
  if (type.role == SL_ROLE_SOURCE) {
    sources.insert(k_node_id, std::move(node));
  } else {
    node.insert_or_assign("inputs", std::move(inputs));
    doc.root.insert(type.role == SL_ROLE_SINK ? "sinks" : "operators",
                    toml::table{{k_node_id, std::move(node)}});
  }
  doc.root.insert("sources", std::move(sources));
  std::vector<Diagnostic> expanded = expand_repartitions(doc);
  if (std::string errors = join_errors(expanded); !errors.empty()) {
    return Status(SL_INVALID_ARGUMENT, errors);
  }
  Diagnosed<GraphSpec> checked = validate_config(doc, *registry);
  if (!checked.ok() || checked.has_errors()) {
    return Status(SL_INVALID_ARGUMENT, join_errors(checked.diagnostics));
  }
  GraphSpec spec = std::move(*checked.value);
  spec.registry = std::move(registry);
  // The nodes see checkpointing = 1 (sl_node_init.checkpointing) and the kit drives the
  // epochs itself; no store is opened.
  spec.checkpoint.enabled = checkpointing;
  return spec;
}

Session::Session(const GraphSpec& spec) : spec_(spec) {}

Status Session::create() {
  task_ = std::make_unique<Task>(spec_, TaskOptions{spec_.runtime.batch_size, 0, 1, &clock_});
  for (const NodeSpec& n : spec_.nodes) {
    if (n.role == SL_ROLE_SOURCE && n.id != k_node_id) {
      SLUICE_RETURN_IF_ERROR(task_->replace_with_injector(n.id));
    }
  }
  const NodeSpec* node = spec_.find(k_node_id);
  if (node && node->role == SL_ROLE_OPERATOR) {
    SLUICE_ASSIGN_OR_RETURN(capture_, task_->attach_capture(k_node_id));
  }
  return task_->create();
}

Status Session::start(const EpochParticipant::NodeStates* restore) {
  if (restore) SLUICE_RETURN_IF_ERROR(task_->restore_states(*restore));
  SLUICE_RETURN_IF_ERROR(task_->start());
  return task_->run_until_idle();
}

Status Session::open(const EpochParticipant::NodeStates* restore) {
  SLUICE_RETURN_IF_ERROR(create());
  return start(restore);
}

Status Session::feed(const Value& element, uint32_t input) {
  return task_->inject(fmt::format("in{}", input), element);
}

Status Session::end() { return task_->end_sources(); }

std::vector<Value> Session::output() const {
  if (!capture_) return {};
  return task_->captured(*capture_);
}

const std::string& Session::node_error() const {
  return task_->nodes()[*spec_.index_of(k_node_id)].error;
}

Status Session::pump(const std::function<bool()>& done, const char* what) {
  // The virtual clock moves 1 ms a round, so that a sink answering from a timer can; a
  // sink answering from its own thread (post) gets real time too. Bounded: 100 s virtual.
  for (int round = 0; round < 100'000 && !done(); ++round) {
    SLUICE_RETURN_IF_ERROR(task_->run_until_idle());
    if (done()) break;
    SLUICE_RETURN_IF_ERROR(task_->advance_to(clock_, clock_.monotonic_ns() + 1'000'000));
    if (round % 16 == 15) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (task_->failure()) return *task_->failure();
  if (!done()) {
    return Status(SL_UNAVAILABLE, fmt::format("{}: no answer after 100 s of virtual time", what));
  }
  return Status::ok();
}

Result<EpochParticipant::NodeStates> Session::checkpoint(
    uint64_t epoch, const std::function<void(const EpochParticipant::NodeStates&)>& before_commit) {
  std::optional<Result<EpochParticipant::TaskSnapshot>> snapshot;
  task_->begin_checkpoint(epoch, false, [&](uint64_t, Result<EpochParticipant::TaskSnapshot> s) {
    snapshot.emplace(std::move(s));
  });
  SLUICE_RETURN_IF_ERROR(pump([&] { return snapshot.has_value(); }, "checkpoint_prepare"));
  if (!snapshot->is_ok()) return snapshot->status();
  EpochParticipant::NodeStates states = snapshot->value().states;
  if (before_commit) before_commit(states);
  bool committed = false;
  task_->end_checkpoint(epoch, true, [&] { committed = true; });
  SLUICE_RETURN_IF_ERROR(pump([&] { return committed; }, "checkpoint_commit"));
  return states;
}

Result<bool> Session::recover(uint64_t epoch, const EpochParticipant::NodeStates& states) {
  return task_->recover_checkpoint(epoch, states);
}

bool leaks_checked() { return __lsan_do_recoverable_leak_check != nullptr; }

void child_say(const std::string& line) {
  if (g_child_fd < 0) return;
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(g_child_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string last_at(const ChildOutcome& outcome) {
  for (auto it = outcome.lines.rbegin(); it != outcome.lines.rend(); ++it) {
    if (it->rfind("at\t", 0) == 0) return it->substr(3);
  }
  return {};
}

ChildOutcome run_in_child(const std::function<void()>& body, int64_t timeout_ms,
                          const std::filesystem::path& cwd) {
  ChildOutcome outcome;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    outcome.how = fmt::format("pipe: {}", std::strerror(errno));
    return outcome;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    outcome.how = fmt::format("fork: {}", std::strerror(errno));
    ::close(fds[0]);
    ::close(fds[1]);
    return outcome;
  }
  if (pid == 0) {
    ::close(fds[0]);
    g_child_fd = fds[1];
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      child_say(fmt::format("error\tchdir {}: {}", cwd.string(), std::strerror(errno)));
      ::_exit(70);
    }
    try {
      body();
    } catch (const std::exception& e) {
      child_say(fmt::format("error\tan exception reached the kit: {}", e.what()));
      ::_exit(70);
    } catch (...) {
      child_say("error\tan exception reached the kit");
      ::_exit(70);
    }
    if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check() != 0) {
      ::_exit(71);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string buffer;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe: it ended
    buffer.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  size_t start = 0;
  for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
    outcome.lines.push_back(buffer.substr(start, nl - start));
  }
  if (timed_out) {
    outcome.how = fmt::format("did not finish within {} s (a hang?)", timeout_ms / 1000);
  } else if (WIFSIGNALED(status)) {
    outcome.how =
        fmt::format("crashed with signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 71) {
    outcome.how = "leaked memory (LeakSanitizer's report is on stderr)";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 70) {
    outcome.how = "the kit failed";
    for (const auto& l : outcome.lines) {
      if (l.rfind("error\t", 0) == 0) outcome.how = l.substr(6);
    }
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    outcome.how = fmt::format("exited with status {} (a sanitizer's report is on stderr)",
                              WEXITSTATUS(status));
  } else {
    outcome.completed = true;
  }
  return outcome;
}

}  // namespace sluice::host::plugin_check
