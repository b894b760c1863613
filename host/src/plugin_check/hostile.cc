// Check 2: hostile elements and arguments. Each node instance gets one element (then the
// end of input), in a child process; the element must be taken, or refused through a
// status with a message. A crash, a hang, an escaped exception, a failure without a
// message or a sanitizer report is a finding that names the element.
#include "executor/host_api.hpp"
#include "plugin_check/checks.hpp"
#include "plugin_check/harness.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace sluice::host::plugin_check {
namespace {

Value nested(bool objects, size_t depth) {
  Value v = Value::integer(1);
  for (size_t i = 0; i < depth; ++i) {
    if (objects) {
      std::pair<std::string, Value> entry{"a", std::move(v)};
      v = Value::object(std::span(&entry, 1));
    } else {
      v = Value::array(std::span(&v, 1));
    }
  }
  return v;
}

// How a failure's message shows that the plugin broke the contract (the host's words in
// Task::fail and call_plugin).
std::optional<std::string> contract_breach(const std::string& message) {
  if (message.find("(no message)") != std::string::npos) {
    return "failed without a message (set_error before returning a non-OK status)";
  }
  if (message.find("let an exception escape") != std::string::npos) {
    return "let an exception escape (an ABI violation)";
  }
  return std::nullopt;
}

// What the child's lines say: "ok\tNAME", "refused\tNAME\tMSG", "bad\tNAME\tWHY".
void judge(const ChildOutcome& child, const char* check, size_t total, Subject& out) {
  size_t accepted = 0, refused = 0;
  std::string bad;
  for (const std::string& line : child.lines) {
    if (line.rfind("ok\t", 0) == 0) ++accepted;
    if (line.rfind("refused\t", 0) == 0) ++refused;
    if (line.rfind("bad\t", 0) == 0) bad += (bad.empty() ? "" : "; ") + line.substr(4);
    if (line.rfind("skip\t", 0) == 0) {
      out.skip(check, line.substr(5));
      return;
    }
  }
  if (!child.completed) {
    const std::string at = last_at(child);
    bad += fmt::format("{}{}{}", bad.empty() ? "" : "; ", child.how,
                       at.empty() ? "" : fmt::format(" on element '{}'", at));
  }
  for (auto pos = bad.find('\t'); pos != std::string::npos; pos = bad.find('\t')) {
    bad.replace(pos, 1, ": ");
  }
  if (!bad.empty()) {
    out.fail(check, bad);
  } else {
    out.pass(check, fmt::format("{} of {}: {} taken, {} refused with a message", accepted + refused,
                                total, accepted, refused));
  }
}

}  // namespace

const std::vector<Hostile>& hostile_elements() {
  static const std::vector<Hostile> elements = [] {
    std::vector<Hostile> e;
    e.push_back({"null", Value()});
    e.push_back({"empty string", Value::string("")});
    e.push_back({"empty array", Value::array({})});
    e.push_back({"empty object", Value::object({})});
    e.push_back({"16 MiB string", Value::string(std::string(size_t{16} << 20, 'x'))});
    std::vector<Value> many(size_t{1} << 20, Value::integer(7));
    e.push_back({"array of 1 Mi ints", Value::array(many)});
    e.push_back({"non-UTF-8 bytes", Value::bytes(std::string("\xff\xfe\xc3\x28\x80", 5))});
    e.push_back({"bytes with NUL", Value::bytes(std::string("a\0b", 3))});
    e.push_back({"array nested 10000 deep", nested(false, 10000)});
    e.push_back({"object nested 10000 deep", nested(true, 10000)});
    e.push_back({"int 0", Value::integer(0)});
    e.push_back({"INT64_MIN", Value::integer(std::numeric_limits<int64_t>::min())});
    e.push_back({"INT64_MAX", Value::integer(std::numeric_limits<int64_t>::max())});
    e.push_back({"NaN", Value::floating(std::nan(""))});
    e.push_back({"+inf", Value::floating(std::numeric_limits<double>::infinity())});
    e.push_back({"-inf", Value::floating(-std::numeric_limits<double>::infinity())});
    e.push_back({"-0.0", Value::floating(-0.0)});
    e.push_back({"true", Value::boolean(true)});
    e.push_back({"numeric string", Value::string("12")});
    std::vector<std::pair<std::string, Value>> odd{{"n", Value::string("x")},
                                                   {"value", Value::array({})},
                                                   {"key", Value()},
                                                   {"time", Value::string("soon")},
                                                   {"", Value::integer(-1)}};
    e.push_back({"object of wrongly typed members", Value::object(odd)});
    return e;
  }();
  return elements;
}

void check_hostile_elements(const GraphSpec& spec, const CheckSettings& settings, Subject& out) {
  const auto& elements = hostile_elements();
  ChildOutcome child = run_in_child(
      [&] {
        for (const Hostile& h : elements) {
          child_say("at\t" + h.name);
          Session session(spec);
          if (Status s = session.open(); !s.is_ok()) {
            child_say("skip\tcreate/start failed, so no element could be fed: " + s.message());
            return;
          }
          Status s = session.feed(h.value);
          if (s.is_ok()) s = session.end();
          if (s.is_ok()) {
            child_say("ok\t" + h.name);
          } else if (auto breach = contract_breach(s.message())) {
            child_say(fmt::format("bad\t{}\t{}", h.name, *breach));
          } else {
            child_say("refused\t" + h.name);
          }
        }
      },
      settings.timeout_ms, settings.work_dir);
  judge(child, "hostile elements", elements.size(), out);
}

void check_hostile_arguments(std::shared_ptr<const PluginRegistry> registry, const FunctionInfo& fn,
                             const Value& args, const CheckSettings& settings, Subject& out) {
  // A node to bind from: the kit's input source, alone in its graph.
  auto input = registry->find_node_type(k_input_type);
  auto spec = build_graph(registry, *input, nullptr, {}, false);
  if (!spec.is_ok()) {
    out.fail("hostile arguments", "the kit's graph: " + spec.status().message());
    return;
  }
  const auto& elements = hostile_elements();
  const bool needs_config = std::any_of(fn.params.begin(), fn.params.end(),
                                        [](const ParamInfo& p) { return p.required; });
  ChildOutcome child = run_in_child(
      [&] {
        Session session(spec.value());
        if (Status s = session.create(); !s.is_ok()) {
          child_say("bad\tcreate\t" + s.message());
          return;
        }
        Task& t = session.task();
        const size_t node = *spec.value().index_of(k_node_id);
        sl_context* ctx = t.node(node).ctx.get();
        std::string& error = t.node(node).error;
        const sl_host_api* host = host_api_table();
        std::vector<std::pair<std::string, Value>> entries{{"name", Value::string(fn.name)}};
        if (!args.is_null()) entries.emplace_back("args", args);
        Value bind_spec = Value::object(entries);
        sl_bound_function* bound = nullptr;
        if (host->function_bind(ctx, bind_spec.raw(), &bound) != SL_OK) {
          child_say(fmt::format(
              "{}\tbind failed: {}", needs_config && args.is_null() ? "skip" : "bad",
              needs_config && args.is_null() ? "needs config ([functions." + fn.name + "] args)"
                                             : error));
          return;
        }
        const uint32_t argc = std::max<uint32_t>(fn.min_arity, 1);
        for (const Hostile& h : elements) {
          child_say("at\t" + h.name);
          error.clear();
          std::vector<sl_value> argv(argc, h.value.raw());
          sl_value result = sl_null();
          const sl_status st = host->function_call(bound, argv.data(), argc, &result);
          if (st == SL_OK) {
            host->value_release(result);
            child_say("ok\t" + h.name);
          } else if (error.empty()) {
            child_say(
                fmt::format("bad\t{}\tfailed ({}) without a message", h.name, sl_status_name(st)));
          } else if (auto breach = contract_breach(error)) {
            child_say(fmt::format("bad\t{}\t{}", h.name, *breach));
          } else {
            child_say("refused\t" + h.name);
          }
        }
        if (argc == 1) {
          // The batch form over every element at once, when the function has one.
          child_say("at\tall elements in one call_batch");
          std::vector<sl_value> in, outs(elements.size(), sl_null());
          for (const Hostile& h : elements) in.push_back(h.value.raw());
          error.clear();
          const sl_status st = host->function_call_batch(bound, in.data(), in.size(), outs.data());
          if (st == SL_OK) {
            for (sl_value v : outs) host->value_release(v);
          } else if (error.empty()) {
            child_say(
                fmt::format("bad\tcall_batch\tfailed ({}) without a message", sl_status_name(st)));
          }
        }
        host->function_release(bound);
      },
      settings.timeout_ms, settings.work_dir);
  judge(child, "hostile arguments", elements.size(), out);
}

}  // namespace sluice::host::plugin_check
