// Check 1: what a plugin declares. The registry already refused, at load, what cannot
// work (a default that is not of its type or breaks its own constraint, an unknown type);
// this finds what loads but misleads: an undocumented key, flags that say one thing and
// callbacks another (a stateful node without SL_NODE_STATEFUL loses its state silently).
#include "plugin_check/checks.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

namespace sluice::host::plugin_check {
namespace {

void check_params(const std::vector<ParamInfo>& params, std::vector<std::string>& problems) {
  for (const ParamInfo& p : params) {
    if (p.doc.empty()) problems.push_back(fmt::format("parameter '{}' has no doc", p.name));
    if (!p.default_json) continue;
    auto parsed = json_parse(*p.default_json);
    if (!parsed.is_ok()) {
      problems.push_back(fmt::format("parameter '{}': default '{}' is not JSON: {}", p.name,
                                     *p.default_json, parsed.status().message()));
    } else if (auto broken = constraint_violation(p, parsed.value())) {
      problems.push_back(fmt::format("parameter '{}': default '{}' breaks its own constraint: {}",
                                     p.name, *p.default_json, *broken));
    }
  }
}

void report(std::vector<std::string> problems, size_t param_count, Subject& out) {
  if (problems.empty()) {
    out.pass("declarations", fmt::format("doc, {} parameter{} documented, defaults valid",
                                         param_count, param_count == 1 ? "" : "s"));
    return;
  }
  std::string text;
  for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
  out.fail("declarations", text);
}

}  // namespace

void check_declarations(const NodeTypeInfo& type, Subject& out) {
  std::vector<std::string> problems;
  if (type.doc.empty()) problems.push_back("the type has no doc");
  check_params(type.params, problems);
  const sl_node_type& vt = type.vtable;
  const bool stateful = (type.flags & SL_NODE_STATEFUL) != 0;
  const bool keyed = (type.flags & SL_NODE_KEYED_STATE) != 0;
  if (!stateful && (vt.snapshot || vt.restore)) {
    problems.push_back(
        "snapshot/restore without SL_NODE_STATEFUL: the host never saves this state");
  }
  if (stateful && !(vt.snapshot && vt.restore)) {
    problems.push_back("SL_NODE_STATEFUL without both snapshot and restore");
  }
  if (keyed && !stateful) problems.push_back("SL_NODE_KEYED_STATE without SL_NODE_STATEFUL");
  if (keyed && !(vt.restore_group && vt.drop_group)) {
    problems.push_back("SL_NODE_KEYED_STATE without restore_group and drop_group");
  }
  if (!keyed && (vt.restore_group || vt.drop_group)) {
    problems.push_back("restore_group/drop_group without SL_NODE_KEYED_STATE: never called");
  }
  if (type.role != SL_ROLE_SINK && vt.checkpoint_prepare) {
    problems.push_back("checkpoint_prepare on a non-sink: the host asks only sinks");
  }
  report(std::move(problems), type.params.size(), out);
}

void check_declarations(const FunctionInfo& fn, Subject& out) {
  std::vector<std::string> problems;
  if (fn.doc.empty()) problems.push_back("the function has no doc");
  check_params(fn.params, problems);
  if (fn.min_arity > fn.max_arity) {
    problems.push_back(fmt::format("min_arity {} > max_arity {}", fn.min_arity, fn.max_arity));
  }
  if (!fn.def.call) problems.push_back("no call callback");
  report(std::move(problems), fn.params.size(), out);
}

}  // namespace sluice::host::plugin_check
