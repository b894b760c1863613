#include "graph/graph_export.hpp"

#include "graph/redact.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

namespace sluice::host {
namespace {

// A DOT double-quoted string. Backslash escapes are kept for `\n` line breaks
// in labels, so a literal backslash must be doubled.
std::string dot_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

std::string_view dot_shape(int32_t role) {
  switch (role) {
    case SL_ROLE_SOURCE: return "invhouse";
    case SL_ROLE_SINK: return "house";
    default: return "box";
  }
}

// JSON string through the value writer, so escaping has one implementation.
void append_json_string(std::string& out, std::string_view s) {
  json_append(out, Value::string(s).raw());
}

}  // namespace

std::string to_dot(const GraphSpec& graph) {
  std::string out = fmt::format("digraph {} {{\n  rankdir=LR;\n  node [fontname=\"sans-serif\"];\n",
                                dot_quote(graph.name));
  for (const auto& node : graph.nodes) {
    std::string label = node.id + "\n" + node.type;
    if (!node.generated_by.empty()) {
      label += fmt::format("\n(added for {}.{})", node.generated_by, node.generated_by_key);
    }
    out += fmt::format("  {} [label={}, shape={}{}];\n", dot_quote(node.id), dot_quote(label),
                       dot_shape(node.role), node.generated_by.empty() ? "" : ", style=dashed");
  }
  // What a generated sink writes, the generated source of the same node reads back (key_by's
  // repartition topic): drawn as one dashed edge through the topic.
  for (const auto& sink : graph.nodes) {
    if (sink.generated_by.empty() || sink.role != SL_ROLE_SINK) continue;
    for (const auto& source : graph.nodes) {
      if (source.generated_by != sink.generated_by || source.role != SL_ROLE_SOURCE) continue;
      const std::optional<Value> topic =
          sink.config.is_object() ? sink.config.get("topic") : std::nullopt;
      out += fmt::format(
          "  {} -> {} [label={}, style=dashed];\n", dot_quote(sink.id), dot_quote(source.id),
          dot_quote(topic && topic->is_string() ? fmt::format("topic {}", topic->as_str())
                                                : std::string("topic")));
    }
  }
  for (const auto& node : graph.nodes) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const InputRef& ref = node.inputs[i];
      out += fmt::format("  {} -> {}", dot_quote(ref.node), dot_quote(node.id));
      if (ref.port == OutputPort::dead_letter || ref.port == OutputPort::side) {
        const std::string what =
            ref.port == OutputPort::side ? ref.side_name : std::string("dead letters");
        out += node.inputs.size() > 1 ? fmt::format(" [label=\"{} ({})\", style=dashed]", i, what)
                                      : fmt::format(" [label=\"{}\", style=dashed]", what);
      } else if (node.inputs.size() > 1) {
        out += fmt::format(" [label=\"{}\"]", i);
      }
      out += ";\n";
    }
  }
  out += "}\n";
  // Nothing of the config is printed but ids, types and a generated topic; still, a secret
  // is never shown, even where someone made an id of it.
  return redact_text(std::move(out), graph.secrets);
}

std::string to_json(const GraphSpec& graph) {
  std::string out = "{\"name\":";
  append_json_string(out, graph.name);
  out += ",\"nodes\":[";
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodeSpec& node = graph.nodes[n];
    if (n > 0) out += ',';
    out += "{\"id\":";
    append_json_string(out, node.id);
    out += ",\"role\":";
    append_json_string(out, role_name(node.role));
    out += ",\"type\":";
    append_json_string(out, node.type);
    if (node.role != SL_ROLE_SOURCE) {
      out += ",\"on_error\":";
      append_json_string(out, node.on_error == ErrorPolicy::skip          ? "skip"
                              : node.on_error == ErrorPolicy::dead_letter ? "dead_letter"
                                                                          : "fail");
    }
    out += ",\"plugin\":";
    if (node.info && node.info->plugin) {
      append_json_string(out, node.info->plugin->name);
    } else {
      out += "null";
    }
    out += ",\"inputs\":[";
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, node.inputs[i].id);
    }
    out += "]";
    if (!node.generated_by.empty()) {
      out += ",\"generated_by\":{\"node\":";
      append_json_string(out, node.generated_by);
      out += ",\"key\":";
      append_json_string(out, node.generated_by_key);
      out += '}';
    }
    out += ",\"config\":";
    json_append(
        out, redact_secrets(node.config, graph.secrets).raw());  // secrets never leave the daemon
    out += '}';
  }
  out += "],\"edges\":[";
  bool first = true;
  for (const auto& node : graph.nodes) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!first) out += ',';
      first = false;
      const InputRef& ref = node.inputs[i];
      out += "{\"from\":";
      append_json_string(out, ref.node);
      out += ",\"port\":";
      append_json_string(out, ref.port == OutputPort::dead_letter ? std::string("dead_letter")
                              : ref.port == OutputPort::side      ? ref.side_name
                                                                  : std::string("main"));
      out += ",\"to\":";
      append_json_string(out, node.id);
      out += fmt::format(",\"input\":{}}}", i);
    }
  }
  out += "]}";
  return out;
}

}  // namespace sluice::host
