// Top-level keys, [runtime], node declarations, types, inputs and graph-wide
// checks. Param and function checks live in node_params.cc.
#include "config/detail/validator.hpp"
#include "config/config_validator.hpp"
#include "config/detail/suggest.hpp"
#include "config/repartition_expansion.hpp"
#include "graph/topology.hpp"

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>

namespace sluice::host {
namespace config_detail {
namespace {

struct Section {
  int32_t role;
  std::string_view name;  // top-level key
  std::string_view noun;  // "source"
};
constexpr std::array<Section, 3> k_sections{{{SL_ROLE_SOURCE, "sources", "source"},
                                             {SL_ROLE_OPERATOR, "operators", "operator"},
                                             {SL_ROLE_SINK, "sinks", "sink"}}};

const Section& section_of(int32_t role) {
  for (const auto& s : k_sections) {
    if (s.role == role) return s;
  }
  return k_sections[1];
}

std::string_view article(std::string_view noun) {
  return noun.find_first_of("aeiou") == 0 ? "an" : "a";
}

const std::vector<std::string> k_top_level_keys{"name",      "plugin_dirs", "runtime",
                                                "admin",     "checkpoint",  "sources",
                                                "operators", "sinks",       "tests"};
const std::vector<std::string> k_runtime_keys{"batch_size", "tasks", "shutdown_timeout_ms",
                                              "on_error"};
const std::vector<std::string> k_error_policies{"fail", "skip", "dead_letter"};
const std::vector<std::string> k_admin_keys{"address", "port", "token"};

bool valid_node_id(std::string_view id) {
  if (id.empty()) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool before(const SourcePos& a, const SourcePos& b) {
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

}  // namespace

std::string unknown_name_message(std::string_view what, std::string_view wrong,
                                 const std::vector<std::string>& candidates,
                                 std::string_view valid_label) {
  std::string suggestion = did_you_mean(wrong, candidates);
  return fmt::format("unknown {} '{}'{}{} valid {} are: {}", what, shorten_name(wrong), suggestion,
                     suggestion.empty() ? ";" : "", valid_label, join_names(candidates));
}

Validator::Validator(const ConfigDocument& doc, const PluginRegistry& registry,
                     ValidateOptions options)
    : doc_(doc), registry_(registry), options_(options), file_(doc.source_name()) {
  spec_.file = doc.file;
  spec_.name = doc.file.stem().string();
}

void Validator::error(SourcePos at, std::string_view node_id, std::string key,
                      std::string message) {
  report(Diagnostic{Severity::error, std::move(at), std::string(node_id), std::move(key),
                    std::move(message)});
}

void Validator::warning(SourcePos at, std::string_view node_id, std::string key,
                        std::string message) {
  report(Diagnostic{Severity::warning, std::move(at), std::string(node_id), std::move(key),
                    std::move(message)});
}

void Validator::report(Diagnostic d) {
  // A node or key the host wrote (ConfigDocument::generated) has no place in the file: the
  // finding goes to the key that asked for it.
  if (const GeneratedFrom* from = doc_.generated_from(d.node_id, d.key)) {
    d.message =
        fmt::format("{}: {}{}", from->what,
                    d.key.empty() ? std::string() : fmt::format("key '{}': ", d.key), d.message);
    d.pos = from->pos;
    d.node_id = from->node_id;
    d.key = from->key;
  }
  diags_.push_back(std::move(d));
}

bool Validator::has_errors() const {
  return std::any_of(diags_.begin(), diags_.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::error; });
}

Diagnosed<GraphSpec> Validator::run() && {
  check_top_level();
  for (const auto& decl : collect_nodes()) spec_.nodes.push_back(check_node(decl));
  check_input_targets();
  run_node_validators();
  check_graph();
  check_member_state();
  check_watermark_reach();
  // Read top to bottom like the file; findings without a line come first.
  std::stable_sort(diags_.begin(), diags_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return before(a.pos, b.pos); });
  Diagnosed<GraphSpec> out;
  if (!has_errors()) out.value = std::move(spec_);
  out.diagnostics = std::move(diags_);
  return out;
}

// ---------------------------------------------------------------------------
// Top level and [runtime]

void Validator::check_top_level() {
  for (const auto& e : entries_in_file_order(doc_.root)) {
    const std::string key(e.key->str());
    const toml::node& node = *e.node;
    if (key == "name") {
      if (const auto* s = node.as_string()) {
        spec_.name = s->get();
      } else {
        error(pos(node.source()), "", key,
              fmt::format("expected string (the pipeline's name), got {}", toml_type_name(node)));
      }
    } else if (key == "plugin_dirs") {
      auto dirs = config_plugin_dirs(doc_);
      diags_.insert(diags_.end(), dirs.diagnostics.begin(), dirs.diagnostics.end());
      if (dirs.value) spec_.plugin_dirs = std::move(*dirs.value);
    } else if (key == "runtime") {
      check_runtime(node);
    } else if (key == "admin") {
      check_admin(node);
    } else if (key == "checkpoint") {
      check_checkpoint(node);
    } else if (key == "tests") {
      // Pipeline tests written in the pipeline file (docs/TESTING.md): `sluiced test` reads
      // them (and `sluiced validate` checks them); every other command ignores them.
      if (!node.is_array_of_tables()) {
        error(pos(node.source()), "", key,
              fmt::format("expected an array of tables ([[tests]] sections: docs/TESTING.md), "
                          "got {}",
                          toml_type_name(node)));
      }
    } else if (key == "sources" || key == "operators" || key == "sinks") {
      if (!node.is_table()) {
        error(pos(node.source()), "", key,
              fmt::format("expected a table of nodes ([{}.ID] sections), got {}", key,
                          toml_type_name(node)));
      }
    } else {
      error(pos(e.key->source()), "", key,
            unknown_name_message("top-level key", key, k_top_level_keys, "top-level keys"));
    }
  }
}

std::optional<int64_t> Validator::runtime_int(const toml::node& node, std::string_view key,
                                              int64_t min, int64_t max, std::string_view table) {
  const std::string full_key = fmt::format("{}.{}", table, key);
  const std::string range = max == std::numeric_limits<int64_t>::max()
                                ? fmt::format(">= {}", min)
                                : fmt::format("{}..{}", min, max);
  const auto* i = node.as_integer();
  std::optional<int64_t> v = i ? std::optional<int64_t>(i->get()) : std::nullopt;
  if (!i && node.is_string() && doc_.interpolated.contains(&node)) {
    // `port = "${ADMIN_PORT}"`: an int written as an interpolated string.
    if (auto parsed = parse_interpolated(SL_PARAM_INT, node.as_string()->get())) {
      v = parsed->as_int();
    } else {
      error(pos(node.source()), "", full_key,
            fmt::format("expected int ({}); the value after ${{...}} interpolation does not "
                        "parse as one",
                        range));
      return std::nullopt;
    }
  }
  if (!v) {
    error(pos(node.source()), "", full_key,
          fmt::format("expected int ({}), got {}", range, toml_type_name(node)));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    error(pos(node.source()), "", full_key,
          fmt::format("{} is out of range; valid values are {}", *v, range));
    return std::nullopt;
  }
  return *v;
}

void Validator::check_runtime(const toml::node& node) {
  const auto* table = node.as_table();
  if (!table) {
    error(pos(node.source()), "", "runtime",
          fmt::format("expected a table ([runtime]), got {}", toml_type_name(node)));
    return;
  }
  for (const auto& e : entries_in_file_order(*table)) {
    const std::string key(e.key->str());
    if (key == "batch_size") {
      if (auto v = runtime_int(*e.node, key, 1, 1'000'000))
        spec_.runtime.batch_size = static_cast<uint32_t>(*v);
    } else if (key == "tasks") {
      if (auto v = runtime_int(*e.node, key, 1, 256))
        spec_.runtime.tasks = static_cast<uint32_t>(*v);
    } else if (key == "shutdown_timeout_ms") {
      if (auto v = runtime_int(*e.node, key, 0, std::numeric_limits<int64_t>::max())) {
        spec_.runtime.shutdown_timeout_ms = *v;
      }
    } else if (key == "on_error") {
      // The policy of every operator and sink without an `on_error` of its own.
      default_on_error_ = error_policy(*e.node, "", "runtime.on_error");
      default_on_error_pos_ = pos(e.node->source());
    } else {
      error(pos(e.key->source()), "", fmt::format("runtime.{}", key),
            unknown_name_message("key", key, k_runtime_keys, "[runtime] keys"));
    }
  }
}

void Validator::check_admin(const toml::node& node) {
  const auto* table = node.as_table();
  if (!table) {
    error(pos(node.source()), "", "admin",
          fmt::format("expected a table ([admin]), got {}", toml_type_name(node)));
    return;
  }
  spec_.admin.enabled = true;
  std::optional<SourcePos> beyond_loopback;  // of an address that is not a loopback one
  for (const auto& e : entries_in_file_order(*table)) {
    const std::string key(e.key->str());
    const std::string full_key = fmt::format("admin.{}", key);
    const toml::node& v = *e.node;
    if (key == "address") {
      boost::system::error_code ec;
      const auto* s = v.as_string();
      if (s) boost::asio::ip::make_address(s->get(), ec);
      if (!s || ec) {
        error(pos(v.source()), "", full_key,
              s ? fmt::format("'{}' is not an IP address; use e.g. \"127.0.0.1\" (the default) "
                              "or \"::1\"; \"0.0.0.0\" listens on every interface",
                              s->get())
                : fmt::format("expected string (an IP address), got {}", toml_type_name(v)));
      } else {
        spec_.admin.address = s->get();
        if (!boost::asio::ip::make_address(s->get(), ec).is_loopback()) {
          beyond_loopback = pos(v.source());
        }
      }
    } else if (key == "port") {
      if (auto p = runtime_int(v, key, 0, 65535, "admin")) {
        spec_.admin.port = static_cast<uint16_t>(*p);
      }
    } else if (key == "token") {
      const auto* s = v.as_string();
      if (!s || s->get().empty()) {
        error(pos(v.source()), "", full_key,
              s ? std::string("expected a non-empty string (omit the key for no token)")
                : fmt::format("expected string (a bearer token), got {}", toml_type_name(v)));
      } else {
        spec_.admin.token = s->get();
      }
    } else {
      error(pos(e.key->source()), "", full_key,
            unknown_name_message("key", key, k_admin_keys, "[admin] keys"));
    }
  }
  // Anyone who can reach the port could read the graph and pause sources.
  if (beyond_loopback && spec_.admin.token.empty()) {
    error(*beyond_loopback, "", "admin.address",
          fmt::format("'{}' is not a loopback address: set admin.token (clients then send "
                      "\"Authorization: Bearer TOKEN\"), or bind \"127.0.0.1\" or \"::1\"",
                      spec_.admin.address));
  }
}

// ---------------------------------------------------------------------------
// Node declarations

std::vector<Validator::NodeDecl> Validator::collect_nodes() {
  std::vector<NodeDecl> decls;
  for (const auto& section : k_sections) {
    const toml::table* table = doc_.root[section.name].as_table();
    if (!table) continue;
    for (const auto& e : entries_in_file_order(*table)) {
      decls.push_back({std::string(e.key->str()), section.role, e.key, e.node});
    }
  }

  // Ids are unique across sections. The declaration later in the file is the
  // one reported (and dropped), wherever its section is.
  std::vector<size_t> by_position(decls.size());
  for (size_t i = 0; i < decls.size(); ++i) by_position[i] = i;
  std::stable_sort(by_position.begin(), by_position.end(), [&](size_t a, size_t b) {
    return before(pos(decls[a].key->source()), pos(decls[b].key->source()));
  });
  std::map<std::string, size_t, std::less<>> first;
  std::vector<bool> dropped(decls.size(), false);
  for (size_t i : by_position) {
    const NodeDecl& d = decls[i];
    auto [it, inserted] = first.emplace(d.id, i);
    if (inserted) continue;
    const NodeDecl& earlier = decls[it->second];
    error(pos(d.key->source()), d.id, "",
          fmt::format("id already used by the {} at line {} ([{}.{}]); node ids must be unique "
                      "across sources, operators and sinks",
                      section_of(earlier.role).noun, earlier.key->source().begin.line,
                      section_of(earlier.role).name, earlier.id));
    dropped[i] = true;
  }

  std::vector<NodeDecl> out;
  for (size_t i = 0; i < decls.size(); ++i) {
    if (dropped[i]) continue;
    if (!valid_node_id(decls[i].id) && !doc_.generated.count({decls[i].id, ""})) {
      error(pos(decls[i].key->source()), decls[i].id, "",
            "invalid node id: use only letters, digits, '_' and '-'");
    }
    out.push_back(decls[i]);
  }
  return out;
}

NodeSpec Validator::check_node(const NodeDecl& decl) {
  NodeSpec node;
  node.id = decl.id;
  node.role = decl.role;
  node.pos = pos(decl.node->source());
  node.config = Value::object({});
  const auto& section = section_of(decl.role);
  const toml::table* table = decl.node->as_table();
  if (!table) {
    error(pos(decl.node->source()), node.id, "",
          fmt::format("expected a table ([{}.{}] or {} = {{ type = \"...\" }}), got {}",
                      section.name, node.id, node.id, toml_type_name(*decl.node)));
    return node;
  }
  for (const auto& e : entries_in_file_order(*table)) {
    node.key_pos.emplace(std::string(e.key->str()), pos(e.key->source()));
  }
  check_type(node, *table);
  check_inputs_syntax(node, *table);
  check_error_policy(node, *table);
  if (node.info) node.config = check_node_params(node, *table);
  if (auto it = doc_.generated.find(std::pair(node.id, std::string()));
      it != doc_.generated.end()) {
    node.generated_by = it->second.node_id;
    node.generated_by_key = it->second.key;
  }
  check_expanded(node);
  return node;
}

void Validator::check_expanded(const NodeSpec& node) {
  // key_by's repartition_topic is the host's to expand (config/repartition_expansion.hpp) before
  // validation; a graph validated without it would quietly not repartition.
  if (node.type != "key_by" || !node.config.is_object()) return;
  const std::optional<Value> topic = node.config.get("repartition_topic");
  if (!topic || !topic->is_string()) return;
  if (doc_.expanded) return;  // its own findings say why, if it added nothing
  auto at = node.key_pos.find("repartition_topic");
  error(at != node.key_pos.end() ? at->second : node.pos, node.id, "repartition_topic",
        "was not expanded into its nodes: load the config with load_pipeline or load_config, "
        "which call expand_repartitions before validate_config");
}

void Validator::check_type(NodeSpec& node, const toml::table& table) {
  const auto& section = section_of(node.role);
  const auto valid = registry_.node_type_names(node.role);
  // Where plugins were looked for, when a loader looked (not for a registry a test filled).
  const std::string search_suffix =
      registry_.search_recorded() ? "; " + registry_.search_hint() : std::string();
  const std::string valid_text =
      valid.empty()
          ? fmt::format("no {} types are registered; {}", section.noun, registry_.search_hint())
          : fmt::format("valid {} types are: {}", section.noun, join_names(valid));
  const toml::node* type = table.get("type");
  if (!type) {
    error(node.pos, node.id, "type",
          fmt::format("missing; every node needs a type; {}", valid_text));
    return;
  }
  const auto* name = type->as_string();
  if (!name) {
    error(pos(type->source()), node.id, "type",
          fmt::format("expected string (a {} type), got {}; {}", section.noun,
                      toml_type_name(*type), valid_text));
    return;
  }
  node.type = name->get();
  const NodeTypeInfo* info = registry_.find_node_type(node.type);
  if (!info) {
    std::string message =
        valid.empty() ? fmt::format("unknown {} type '{}'; {}", section.noun, node.type, valid_text)
                      : unknown_name_message(fmt::format("{} type", section.noun), node.type, valid,
                                             fmt::format("{} types", section.noun)) +
                            search_suffix;
    error(pos(type->source()), node.id, "type", std::move(message));
    return;
  }
  if (info->role != node.role) {
    const auto& right = section_of(info->role);
    error(pos(type->source()), node.id, "type",
          fmt::format("'{}' is {} {}: declare it under [{}.{}]", node.type, article(right.noun),
                      right.noun, right.name, node.id));
    return;
  }
  node.info = info;
}

// ---------------------------------------------------------------------------
// Inputs

void Validator::check_inputs_syntax(NodeSpec& node, const toml::table& table) {
  const toml::node* inputs = table.get("inputs");
  if (node.role == SL_ROLE_SOURCE) {
    if (inputs) {
      error(node.key_pos["inputs"], node.id, "inputs",
            "a source reads no other node; remove 'inputs', or declare the node under "
            "[operators.ID] if it should read one");
    }
    return;
  }
  const auto noun = section_of(node.role).noun;
  // When `inputs` cannot be read, what the node reads is unknown, which
  // silences the unread-output warnings (see check_graph).
  auto unreadable = [&](SourcePos at, std::string message) {
    inputs_incomplete_ = true;
    error(std::move(at), node.id, "inputs", std::move(message));
  };
  if (!inputs) {
    unreadable(node.pos, fmt::format("missing; {} {} needs inputs = [\"ID\", ...] naming the nodes "
                                     "it reads",
                                     article(noun), noun));
    return;
  }
  if (inputs->is_string()) {
    unreadable(pos(inputs->source()),
               fmt::format("expected an array of node ids, got string; write inputs = [\"{}\"]",
                           inputs->as_string()->get()));
    return;
  }
  const auto* array = inputs->as_array();
  if (!array) {
    unreadable(pos(inputs->source()), fmt::format("expected an array of node ids (strings), got {}",
                                                  toml_type_name(*inputs)));
    return;
  }
  if (array->empty()) {
    unreadable(pos(inputs->source()), "is empty; list at least one node id to read from");
    return;
  }
  bool all_strings = true;
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& item = (*array)[i];
    const auto* id = item.as_string();
    if (!id) {
      unreadable(pos(item.source()), fmt::format("item {}: expected a node id (string), got {}", i,
                                                 toml_type_name(item)));
      all_strings = false;
      continue;
    }
    if (!seen.insert(id->get()).second) {
      error(pos(item.source()), node.id, "inputs",
            fmt::format("'{}' is listed twice; list each input once", id->get()));
      continue;
    }
    InputRef& ref = node.inputs.emplace_back();
    ref.id = id->get();
    ref.pos = pos(item.source());
    ref.node = id->get();  // the port, if any, is resolved by check_input_targets
  }
  if (!node.info || !all_strings) return;
  const auto count = static_cast<int64_t>(array->size());
  const int64_t min = node.info->min_inputs;
  const int64_t max = node.info->max_inputs;
  auto plural = [](int64_t n) { return n == 1 ? "input" : "inputs"; };
  if (min == max && count != min) {
    error(pos(inputs->source()), node.id, "inputs",
          fmt::format("type '{}' takes exactly {} {}, got {}", node.type, min, plural(min), count));
  } else if (count < min) {
    error(
        pos(inputs->source()), node.id, "inputs",
        fmt::format("type '{}' takes at least {} {}, got {}", node.type, min, plural(min), count));
  } else if (max != SL_INPUTS_UNLIMITED && count > max) {
    error(pos(inputs->source()), node.id, "inputs",
          fmt::format("type '{}' takes at most {} {}, got {}", node.type, max, plural(max), count));
  }
}

std::optional<ErrorPolicy> Validator::error_policy(const toml::node& value,
                                                   std::string_view node_id, std::string key) {
  const auto* text = value.as_string();
  if (!text) {
    error(pos(value.source()), node_id, std::move(key),
          fmt::format("expected a string, got {}; valid policies are: {}", toml_type_name(value),
                      join_names(k_error_policies)));
    return std::nullopt;
  }
  const std::string& got = text->get();
  if (got == "fail") return ErrorPolicy::fail;
  if (got == "skip") return ErrorPolicy::skip;
  if (got == "dead_letter") return ErrorPolicy::dead_letter;
  error(pos(value.source()), node_id, std::move(key),
        unknown_name_message("policy", got, k_error_policies, "policies"));
  return std::nullopt;
}

void Validator::check_error_policy(NodeSpec& node, const toml::table& table) {
  if (node.role == SL_ROLE_SOURCE) return;
  if (const toml::node* value = table.get("on_error")) {
    if (auto policy = error_policy(*value, node.id, "on_error")) node.on_error = *policy;
    return;
  }
  // [runtime] on_error applies to the nodes of the file; a node the host generated (a
  // repartition's sink and source) keeps "fail": nobody could read its dead letters.
  if (default_on_error_ && !doc_.generated.count({node.id, ""})) {
    node.on_error = *default_on_error_;
    on_error_inherited_.insert(node.id);
  }
}

// "ID.NAME" where node ID's type declares side output NAME (ABI 1.5: "window.late"): true
// when `ref` is of that form, with the port set, or after reporting a name ID's type lacks.
bool Validator::resolve_side_output(const NodeSpec& reader, InputRef& ref) {
  const size_t dot = ref.id.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == ref.id.size()) return false;
  const std::string_view base = std::string_view(ref.id).substr(0, dot);
  const std::string_view name = std::string_view(ref.id).substr(dot + 1);
  const NodeSpec* producer = spec_.find(base);
  if (producer == nullptr || producer->info == nullptr) return false;
  if (std::optional<uint32_t> index = producer->info->side_output(name)) {
    ref.node = std::string(base);
    ref.port = OutputPort::side;
    ref.side = *index;
    ref.side_name = std::string(name);
    return true;
  }
  const auto& names = producer->info->side_outputs;
  error(ref.pos, reader.id, "inputs",
        names.empty()
            ? fmt::format("'{}' ({}) has no output '{}': it has only its main output '{}'", base,
                          producer->type, name, base)
            : fmt::format("'{}' ({}) has no output '{}'; its side outputs are: {}", base,
                          producer->type, name, join_names(names)));
  return true;
}

void Validator::check_input_targets() {
  for (auto& node : spec_.nodes) {
    std::vector<std::string> readable;
    for (const auto& n : spec_.nodes) {
      if (n.role != SL_ROLE_SINK && n.id != node.id) readable.push_back(n.id);
    }
    for (auto& ref : node.inputs) {
      const NodeSpec* target = spec_.find(ref.id);
      auto dead_letter_of = target ? std::nullopt : dead_letter_producer(ref.id);
      if (dead_letter_of) {
        // "ID.dead_letter": the messages node ID failed on (Vector's "ID.dropped").
        std::string base(*dead_letter_of);
        if (const NodeSpec* producer = spec_.find(base)) {
          if (producer->role == SL_ROLE_SOURCE || producer->on_error != ErrorPolicy::dead_letter) {
            error(ref.pos, node.id, "inputs",
                  fmt::format("'{}' has no dead-letter output: set on_error = \"dead_letter\" on "
                              "node '{}' to route the messages it fails on here",
                              base, base));
            continue;
          }
          ref.node = std::move(base);
          ref.port = OutputPort::dead_letter;
          continue;
        }
      }
      if (!target && resolve_side_output(node, ref)) continue;
      if (!target) {
        error(ref.pos, node.id, "inputs",
              unknown_name_message("node", ref.id, readable, "inputs (sources and operators)"));
      } else if (target->role == SL_ROLE_SINK) {
        error(ref.pos, node.id, "inputs",
              fmt::format("'{}' is a sink: sinks have no output to read; valid inputs (sources and "
                          "operators) are: {}",
                          ref.id, join_names(readable)));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Graph-wide

void Validator::check_graph() {
  const auto& nodes = spec_.nodes;
  if (std::none_of(nodes.begin(), nodes.end(),
                   [](const NodeSpec& n) { return n.role == SL_ROLE_SOURCE; })) {
    const toml::node* sources = doc_.root.get("sources");
    SourcePos at = sources ? pos(sources->source()) : SourcePos{file_, 1, 1};
    auto types = registry_.node_type_names(SL_ROLE_SOURCE);
    error(
        at, "", "",
        fmt::format("the pipeline has no source; declare one under [sources.ID] (source types: {})",
                    join_names(types)));
  }

  spec_.topo_order = stable_topo_order(spec_);
  for (const auto& cycle : find_cycles(spec_)) {
    std::string path;
    for (size_t i : cycle) path += nodes[i].id + " -> ";
    path += nodes[cycle.front()].id;
    // Point at the edge that closes the loop: the first node reading the last.
    const NodeSpec& first = nodes[cycle.front()];
    const std::string& last = nodes[cycle.back()].id;
    auto ref = std::find_if(first.inputs.begin(), first.inputs.end(),
                            [&](const InputRef& r) { return r.id == last; });
    error(
        ref != first.inputs.end() ? ref->pos : first.pos, first.id, "inputs",
        fmt::format("cycle: {}; a pipeline must not feed a node's output back into itself", path));
  }

  // An unread-output warning is noise when some node's inputs could not be
  // read: fixing that node may well make it the reader.
  if (inputs_incomplete_) return;
  std::set<std::string_view> read;
  std::set<std::string_view> dead_letters_read;
  for (const auto& n : nodes) {
    for (const auto& ref : n.inputs) {
      if (ref.port == OutputPort::main) read.insert(ref.node);
      if (ref.port == OutputPort::dead_letter) dead_letters_read.insert(ref.node);
      // An unread side output is no config error: the host counts and logs what it drops
      // (an event_time without max_future_ms never emits on its "late").
    }
  }
  bool default_dead_letter_used = false;
  for (NodeSpec& n : spec_.nodes) {
    if (n.on_error != ErrorPolicy::dead_letter) continue;
    const bool inherited = on_error_inherited_.count(n.id) > 0;
    if (dead_letters_read.count(n.id)) {
      default_dead_letter_used = default_dead_letter_used || inherited;
      continue;
    }
    // [runtime] on_error = "dead_letter" for a node whose dead-letter output nobody reads
    // (the dead-letter sink itself, a node nobody wired): it fails as with "fail", so
    // nothing is lost without a trace, and the default stays usable without wiring every node.
    if (inherited) {
      n.on_error = ErrorPolicy::fail;
      continue;
    }
    // Dead letters nobody reads would be lost without a trace: refuse.
    auto at = n.key_pos.find("on_error");
    error(at != n.key_pos.end() ? at->second : n.pos, n.id, "on_error",
          fmt::format("\"dead_letter\" routes failed messages to the output '{}.dead_letter', but "
                      "no node reads it; add \"{}.dead_letter\" to the inputs of a sink (e.g. a "
                      "to_kafka dead-letter topic or a sink_to_textfile)",
                      n.id, n.id));
  }
  if (default_on_error_ == ErrorPolicy::dead_letter && !default_dead_letter_used) {
    warning(
        default_on_error_pos_, "", "runtime.on_error",
        "\"dead_letter\" has no effect: no node reads the dead-letter output (\"ID.dead_letter\") "
        "of a node without an on_error of its own, so those nodes fail on a bad message as "
        "with \"fail\"; add \"ID.dead_letter\" to the inputs of a sink");
  }
  for (const auto& n : nodes) {
    if (n.role == SL_ROLE_SINK || read.count(n.id)) continue;
    warning(n.pos, n.id, "",
            fmt::format("output is not read by any node; add '{}' to the inputs of an operator or "
                        "sink, or remove it",
                        n.id));
  }
}

// ---------------------------------------------------------------------------
// Non-keyed state after a grouped source (issue 13, docs/SCALING.md)

namespace {

// A source whose partitions (key groups) can move to another member (daemon or task) while
// the pipeline runs. Recognised by what the type declares, not by its name: it keeps its
// state per key group (SL_NODE_KEYED_STATE), i.e. it hands out partitions as key groups.
// A type that also declares a `group_id` param moves partitions only in a consumer group,
// so it counts only when `group_id` is set (from_kafka without it reads fixed partitions).
bool grouped_source(const NodeSpec& n) {
  if (n.role != SL_ROLE_SOURCE || n.info == nullptr) return false;
  if ((n.info->flags & SL_NODE_KEYED_STATE) == 0) return false;
  if (n.info->find_param("group_id") == nullptr) return true;
  auto group = n.config.get("group_id");
  return group && !group->is_null();
}

}  // namespace

// A node that acts on watermarks (a window) with no watermark-making node (event_time)
// upstream would fire only at end of input: legal (a bounded file), but most likely a
// forgotten event_time, so a warning.
void Validator::check_watermark_reach() {
  if (inputs_incomplete_ || spec_.topo_order.size() != spec_.nodes.size()) return;
  std::vector<bool> carries(spec_.nodes.size(), false);
  for (size_t i : spec_.topo_order) {
    const NodeSpec& n = spec_.nodes[i];
    if (n.info == nullptr) return;
    bool any = false;
    for (const InputRef& ref : n.inputs) {
      auto from = spec_.producer_of(ref);
      any = any || (from && ref.port == OutputPort::main && carries[*from]);
    }
    carries[i] = any || (n.info->flags & SL_NODE_WATERMARKS) != 0;
    // A watermark maker (event_time) may act on watermarks too, but needs none upstream.
    if (!any && n.info->vtable.on_watermark != nullptr && n.role != SL_ROLE_SOURCE &&
        (n.info->flags & SL_NODE_WATERMARKS) == 0) {
      warning(n.pos, n.id, "",
              fmt::format("'{}' ({}) acts on event time, but no node upstream makes watermarks: "
                          "its windows close only at the end of input; add an event_time node "
                          "before it (docs/EVENT_TIME.md)",
                          n.id, n.type));
    }
  }
}

void Validator::check_member_state() {
  const auto& nodes = spec_.nodes;
  std::map<std::string_view, std::vector<size_t>> readers;  // producer id -> its readers
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& ref : nodes[i].inputs) readers[ref.node].push_back(i);
  }
  // For each node, the first grouped source (in node order) it is downstream of.
  std::vector<const NodeSpec*> after(nodes.size(), nullptr);
  for (const auto& source : nodes) {
    if (!grouped_source(source)) continue;
    std::vector<std::string_view> todo{source.id};
    while (!todo.empty()) {
      std::string_view id = todo.back();
      todo.pop_back();
      auto it = readers.find(id);
      if (it == readers.end()) continue;
      for (size_t r : it->second) {
        if (after[r] != nullptr) continue;  // seen (this source or an earlier one)
        after[r] = &source;
        todo.push_back(nodes[r].id);
      }
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeSpec& n = nodes[i];
    // Sinks keep what they wrote (a file's position), which is the member's own by nature.
    if (after[i] == nullptr || n.role != SL_ROLE_OPERATOR || n.info == nullptr) continue;
    const uint32_t flags = n.info->flags;
    if ((flags & SL_NODE_STATEFUL) == 0 || (flags & SL_NODE_KEYED_STATE) != 0) continue;
    // A source the host generated (a key_by's repartition topic) is named by what wrote it.
    const NodeSpec& source = *after[i];
    const std::string source_name =
        source.generated_by.empty()
            ? fmt::format("'{}'", source.id)
            : fmt::format("'{}' (the repartition topic of '{}')", source.id, source.generated_by);
    warning(n.pos, n.id, "",
            fmt::format("its state ({}) is per member: it reads from the grouped source {}, "
                        "whose partitions move between members (daemons, and the tasks of one) "
                        "on a rebalance, while this state stays with the member that built it, "
                        "so its results count only what that member read; for state that is "
                        "exact across members, key the stream and keep the state per key: "
                        "key_by -> aggregate (docs/SCALING.md)",
                        n.type, source_name));
  }
}

}  // namespace config_detail

Diagnosed<GraphSpec> validate_config(const ConfigDocument& doc, const PluginRegistry& registry,
                                     ValidateOptions options) {
  return config_detail::Validator(doc, registry, options).run();
}

Diagnosed<GraphSpec> load_config(const std::filesystem::path& file,
                                 const PluginRegistry& registry) {
  auto parsed = parse_config_file(file);
  if (!parsed.value) return {std::nullopt, std::move(parsed.diagnostics)};
  std::vector<Diagnostic> expanded = expand_repartitions(*parsed.value);
  auto validated = validate_config(*parsed.value, registry);
  if (!expanded.empty()) {
    // The expansion's own errors, in file order with the validator's.
    validated.diagnostics.insert(validated.diagnostics.end(), expanded.begin(), expanded.end());
    std::stable_sort(validated.diagnostics.begin(), validated.diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       return config_detail::before(a.pos, b.pos);
                     });
    validated.value.reset();
  }
  return validated;
}

}  // namespace sluice::host
