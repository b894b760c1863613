// The validator's working state. One instance checks one document; its
// methods are spread over validator.cc (top level, nodes, graph) and
// node_params.cc (params, function specs), which share this declaration.
#pragma once

#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "config/detail/toml_util.hpp"
#include "graph/graph_spec.hpp"
#include "registry/plugin_registry.hpp"

#include <toml++/toml.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::config_detail {

// Where a finding belongs: the node and the (possibly dotted) key.
struct Where {
  std::string_view node_id;
  std::string key;
};

class Validator {
 public:
  Validator(const ConfigDocument& doc, const PluginRegistry& registry, ValidateOptions options);
  Diagnosed<GraphSpec> run() &&;

 private:
  struct NodeDecl {
    std::string id;
    int32_t role;
    const toml::key* key;
    const toml::node* node;
  };

  // validator.cc
  void check_top_level();
  void check_runtime(const toml::node& node);
  // "fail" | "skip" | "dead_letter", or nullopt after reporting what else `value` is.
  std::optional<ErrorPolicy> error_policy(const toml::node& value, std::string_view node_id,
                                          std::string key);
  void check_admin(const toml::node& node);
  void check_checkpoint(const toml::node& node);  // checkpoint_settings.cc
  // An int key of a top-level settings table ([runtime], [admin]) within min..max.
  std::optional<int64_t> runtime_int(const toml::node& node, std::string_view key, int64_t min,
                                     int64_t max, std::string_view table = "runtime");
  std::vector<NodeDecl> collect_nodes();
  NodeSpec check_node(const NodeDecl& decl);
  void check_type(NodeSpec& node, const toml::table& table);
  void check_inputs_syntax(NodeSpec& node, const toml::table& table);
  void check_error_policy(NodeSpec& node, const toml::table& table);
  // A key_by whose repartition_topic was not expanded (repartition_expansion.hpp) is an error.
  void check_expanded(const NodeSpec& node);
  void check_input_targets();
  bool resolve_side_output(const NodeSpec& reader, InputRef& ref);
  void check_graph();
  void check_member_state();     // non-keyed state after a grouped source
  void check_watermark_reach();  // event-time operators with no watermark upstream

  // node_params.cc
  Value check_node_params(const NodeSpec& node, const toml::table& table);
  std::optional<Value> check_value(const ParamInfo& param, const toml::node& value,
                                   const Where& where);
  // `args_key` names the arguments in messages when they come from a sibling
  // key or are missing (the string form).
  std::optional<Value> normalise_function(const toml::node& spec, const TableEntry* sibling_args,
                                          const Where& where, const std::string& args_key);
  // A named function's kind against the param's allowed kinds (sl_param.choices).
  bool function_kind_fits(const ParamInfo& param, const Value& spec, SourcePos at,
                          const Where& where);
  std::optional<Value> check_function_args(const FunctionInfo& fn, const toml::table* args,
                                           SourcePos missing_pos, const Where& where);
  // Lua source for a function param (`lua`, `<name>_lua`, `{ lua = ... }`):
  // compiled now, normalised to { lua, file, line } (docs/LUA.md).
  std::optional<Value> normalise_lua(const toml::node& code, const Where& where);
  std::optional<Value> function_default(const ParamInfo& param, SourcePos at, const Where& where);
  std::optional<Value> parsed_default(const ParamInfo& param);
  // The plugins' own checks (sl_node_type.validate, ABI 1.2) on every node whose params
  // passed, with the input count known: after check_input_targets.
  void run_node_validators();
  // Runs a validate callback; each reported problem becomes an error at the key's position.
  // `key_prefix` (may be empty) is prepended to reported keys ("fn.args.").
  void run_validator(sl_status (*validate)(const sl_validate_init*), sl_validate_init& init,
                     const std::function<SourcePos(std::string_view key)>& where_is,
                     std::string_view node_id, std::string_view key_prefix, std::string_view what);

  // Findings.
  void error(SourcePos pos, std::string_view node_id, std::string key, std::string message);
  void warning(SourcePos pos, std::string_view node_id, std::string key, std::string message);
  // Records a finding; one on what the host generated goes where it comes from.
  void report(Diagnostic d);
  [[nodiscard]] SourcePos pos(const toml::source_region& region) const {
    return pos_of(file_, region);
  }
  [[nodiscard]] bool has_errors() const;
  [[nodiscard]] size_t error_count() const;

  const ConfigDocument& doc_;
  const PluginRegistry& registry_;
  ValidateOptions options_;
  std::string file_;
  GraphSpec spec_;
  std::vector<Diagnostic> diags_;
  bool inputs_incomplete_ = false;  // some node's `inputs` was missing or malformed
  // [runtime] on_error: the default policy, where it is written, and the nodes that took
  // it (no `on_error` of their own).
  std::optional<ErrorPolicy> default_on_error_;
  SourcePos default_on_error_pos_;
  std::set<std::string, std::less<>> on_error_inherited_;
};

// "unknown WHAT 'wrong'; did you mean 'x'? valid LABEL are: a, b" (the
// suggestion only when one is near).
std::string unknown_name_message(std::string_view what, std::string_view wrong,
                                 const std::vector<std::string>& candidates,
                                 std::string_view valid_label);

// An interpolated string (`port = "${PORT}"`) as a value of a bool, int, duration or float
// param: nullopt when it does not parse as one, or for any other type.
std::optional<Value> parse_interpolated(int32_t param_type, std::string_view text);

// What a param type accepts, for "expected ..." messages.
std::string expected_text(int32_t param_type);

}  // namespace sluice::host::config_detail
