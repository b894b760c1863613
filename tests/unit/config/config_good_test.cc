// Valid configs: what the GraphSpec holds (order, defaults, normalised
// functions, positions) and which warnings come with it.
#include "config/config_validator.hpp"
#include "config/detail/suggest.hpp"
#include "test_plugin.hpp"
#include "value/json.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

const std::filesystem::path k_dir = SLUICE_CONFIG_TEST_DIR;

class GoodConfig : public ::testing::Test {
 protected:
  void SetUp() override { testing::register_test_plugin(registry_); }

  GraphSpec load_ok(const std::string& name) {
    auto result = load_config(k_dir / "good" / name, registry_);
    for (const auto& d : result.diagnostics) ADD_FAILURE() << d.to_string();
    EXPECT_TRUE(result.ok());
    return result.ok() ? std::move(*result.value) : GraphSpec{};
  }

  Diagnosed<GraphSpec> validate_text(std::string_view text) {
    auto parsed = parse_config_string(text, "/configs/inline.toml");
    EXPECT_TRUE(parsed.ok());
    return validate_config(*parsed.value, registry_);
  }

  static std::vector<std::string> ids(const GraphSpec& g) {
    std::vector<std::string> out;
    for (const auto& n : g.nodes) out.push_back(n.id);
    return out;
  }
  static std::vector<std::string> topo_ids(const GraphSpec& g) {
    std::vector<std::string> out;
    for (size_t i : g.topo_order) out.push_back(g.nodes[i].id);
    return out;
  }
  static std::string config_json(const GraphSpec& g, std::string_view id) {
    const NodeSpec* n = g.find(id);
    return n ? json_dump(n->config.raw()) : "<no node>";
  }

  PluginRegistry registry_;
};

TEST_F(GoodConfig, WordcountSpec) {
  GraphSpec g = load_ok("wordcount.toml");
  EXPECT_EQ(g.name, "wordcount");
  EXPECT_EQ(g.file, k_dir / "good" / "wordcount.toml");
  ASSERT_EQ(g.plugin_dirs.size(), 2u);
  EXPECT_EQ(g.plugin_dirs[0], k_dir / "good" / "plugins");
  EXPECT_EQ(g.plugin_dirs[1], std::filesystem::path("/opt/sluice/plugins"));
  EXPECT_EQ(g.runtime.batch_size, 256u);
  EXPECT_EQ(g.runtime.tasks, 4u);
  EXPECT_EQ(g.runtime.shutdown_timeout_ms, 0);

  // The sink comes first in the file; node order is by section, then file.
  EXPECT_EQ(ids(g), (std::vector<std::string>{"lines", "words", "counts", "out"}));
  EXPECT_EQ(topo_ids(g), (std::vector<std::string>{"lines", "words", "counts", "out"}));

  const NodeSpec& words = *g.find("words");
  EXPECT_EQ(words.role, SL_ROLE_OPERATOR);
  EXPECT_EQ(words.type, "map");
  ASSERT_NE(words.info, nullptr);
  EXPECT_EQ(words.info->name, "map");
  EXPECT_EQ(words.info->plugin->name, "config_test_plugin");
  EXPECT_EQ(words.pos.line, 18u);
  EXPECT_EQ(words.pos.column, 1u);
  ASSERT_EQ(words.inputs.size(), 1u);
  EXPECT_EQ(words.inputs[0].id, "lines");
  EXPECT_EQ(words.inputs[0].pos.line, 20u);
  EXPECT_EQ(words.inputs[0].pos.column, 11u);
  ASSERT_TRUE(words.key_pos.count("function"));
  EXPECT_EQ(words.key_pos.at("function").line, 21u);
  EXPECT_EQ(words.key_pos.at("args").line, 22u);
  EXPECT_EQ(words.key_pos.at("args").column, 1u);

  // Defaults filled in, declared order.
  EXPECT_EQ(config_json(g, "lines"), R"({"path":"input.txt","encoding":"utf-8"})");
  EXPECT_EQ(config_json(g, "counts"),
            R"({"reducer":{"name":"sum","args":{}},"start":0,"returns_state":false})");
  EXPECT_EQ(config_json(g, "out"), R"({"prefix":""})");
}

TEST_F(GoodConfig, FunctionsAreNormalised) {
  GraphSpec g = load_ok("functions.toml");
  // String form, defaults from the function.
  EXPECT_EQ(config_json(g, "split_default"), R"({"function":{"name":"split","args":{"sep":" "}}})");
  // String form with the sibling `args`.
  EXPECT_EQ(config_json(g, "split_args"), R"({"function":{"name":"split","args":{"sep":","}}})");
  // Inline table form.
  EXPECT_EQ(config_json(g, "inline"), R"({"function":{"name":"add","args":{"value":10}}})");
  // A [operators.x.function] sub-table is the same table form.
  EXPECT_EQ(config_json(g, "subtable"), R"({"function":{"name":"split","args":{"sep":";"}}})");
  // `<param>_args` for a function param not named `function`.
  EXPECT_EQ(config_json(g, "total"),
            R"({"reducer":{"name":"sum","args":{}},"start":0,"returns_state":false})");
  // An optional function param without default stays absent.
  EXPECT_EQ(config_json(g, "plain_filter"), "{}");
  // A function param's default (a name) is normalised like a given one.
  EXPECT_EQ(config_json(g, "defaulted"), R"({"function":{"name":"split","args":{"sep":" "}}})");
}

TEST_F(GoodConfig, TopoOrderIsStableAndNodesKeepFileOrder) {
  GraphSpec g = load_ok("topo.toml");
  // Sources in file order (b before a, not sorted by name), then operators, then sinks.
  EXPECT_EQ(ids(g), (std::vector<std::string>{"b", "a", "joined", "late", "early", "out"}));
  // Ready ties go to node order: b and a first, then early (a's reader)...
  EXPECT_EQ(g.topo_order, (std::vector<size_t>{0, 1, 4, 3, 2, 5}));
  const NodeSpec& joined = *g.find("joined");
  ASSERT_EQ(joined.inputs.size(), 3u);
  EXPECT_EQ(joined.inputs[0].id, "late");
  EXPECT_EQ(joined.inputs[1].id, "early");
  EXPECT_EQ(joined.inputs[2].id, "b");
}

TEST_F(GoodConfig, ValuesConvertFromToml) {
  GraphSpec g = load_ok("topo.toml");
  const NodeSpec& late = *g.find("late");
  // FLOAT params accept ints and hand the plugin a float; tables keep file
  // order; dates become ISO 8601 text.
  EXPECT_TRUE(late.config.get("ratio")->is_float());
  EXPECT_EQ(
      config_json(g, "late"),
      R"({"n":3,"interval_ms":1000,"ratio":1.0,"options":{"z":1,"a":[1,"two"],"when":"1979-05-27T07:32:00Z"}})");
}

TEST_F(GoodConfig, UnreadOutputsAreWarningsOnly) {
  auto result = load_config(k_dir / "good" / "unread.toml", registry_);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result.has_errors());
  const std::string prefix = k_dir.string() + "/";
  std::vector<std::string> got;
  for (const auto& d : result.diagnostics) {
    EXPECT_EQ(d.severity, Severity::warning);
    got.push_back(d.to_string().substr(prefix.size()));
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "good/unread.toml:5:1: warning: node 'unused': output is not read by any node; "
                "add 'unused' to the inputs of an operator or sink, or remove it",
                "good/unread.toml:9:1: warning: node 'dangling': output is not read by any "
                "node; add 'dangling' to the inputs of an operator or sink, or remove it"}));
}

// Issue 13 item 6: non-keyed state downstream of a grouped source (a keyed source: its
// partitions, i.e. key groups, move between members) is a warning with the node's position.
TEST_F(GoodConfig, NonKeyedStateAfterAGroupedSourceIsAWarning) {
  testing::register_state_test_plugin(registry_);
  auto result = validate_text(R"([sources.in]
type = "from_partitions"
group_id = "g"

[operators.m]
type = "map"
inputs = ["in"]
function = "split"

  [operators.counts]
  type = "count_state"
  inputs = ["m"]

[operators.per_key]
type = "keyed_count"
inputs = ["m"]

[operators.after_keyed]
type = "count_state"
inputs = ["per_key"]

[sinks.out]
type = "file_sink"
inputs = ["counts", "after_keyed"]
)");
  ASSERT_TRUE(result.ok());  // a warning does not fail validation
  EXPECT_FALSE(result.has_errors());
  std::vector<std::string> got;
  for (const auto& d : result.diagnostics) {
    EXPECT_EQ(d.severity, Severity::warning);
    got.push_back(d.to_string());
  }
  auto message = [](std::string_view id, std::string_view pos) {
    return fmt::format(
        "/configs/inline.toml:{}: warning: node '{}': its state (count_state) is per member: it "
        "reads from the grouped source 'in', whose partitions move between members (daemons, "
        "and the tasks of one) on a rebalance, while this state stays with the member that built "
        "it, so its results count only what that member read; for state that is exact across "
        "members, key the stream and keep the state per key: key_by -> aggregate "
        "(docs/SCALING.md)",
        pos, id);
  };
  // Not the keyed operator, not the map (stateless), not the sink (a sink's state is what it
  // wrote). Downstream of a keyed operator still counts.
  EXPECT_EQ(got,
            (std::vector<std::string>{message("counts", "10:3"), message("after_keyed", "18:1")}));
  ASSERT_EQ(result.diagnostics.size(), 2u);
  EXPECT_EQ(result.diagnostics[0].node_id, "counts");
}

TEST_F(GoodConfig, NonKeyedStateWithoutAGroupedSourceIsQuiet) {
  testing::register_state_test_plugin(registry_);
  const char* rest = R"(
[operators.counts]
type = "count_state"
inputs = ["in"]
[sinks.out]
type = "print"
inputs = ["counts"]
)";
  // A keyed source that declares group_id but has none reads fixed partitions; a source
  // that is stateful but not keyed has no partitions to move.
  for (const char* source :
       {"[sources.in]\ntype = \"from_partitions\"\n", "[sources.in]\ntype = \"from_counter\"\n",
        "[sources.in]\ntype = \"from_iterable\"\nvalues = [1]\n"}) {
    auto result = validate_text(std::string(source) + rest);
    ASSERT_TRUE(result.ok()) << source;
    for (const auto& d : result.diagnostics) ADD_FAILURE() << source << d.to_string();
  }
  // A keyed source without a group_id param counts as grouped (its partitions may move).
  auto keyed = validate_text(std::string("[sources.in]\ntype = \"from_keyed\"\n") + rest);
  ASSERT_TRUE(keyed.ok());
  ASSERT_EQ(keyed.diagnostics.size(), 1u);
  EXPECT_EQ(keyed.diagnostics[0].severity, Severity::warning);
  EXPECT_EQ(keyed.diagnostics[0].node_id, "counts");
  EXPECT_EQ(keyed.diagnostics[0].pos.line, 4u);
}

TEST_F(GoodConfig, DefaultsWithoutOptionalSections) {
  auto result = validate_text(R"(
[sources.s]
type = "from_iterable"
values = []
[sinks.k]
type = "print"
inputs = ["s"]
)");
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.diagnostics.empty());
  const GraphSpec& g = *result.value;
  EXPECT_EQ(g.name, "inline");  // the file's stem
  EXPECT_TRUE(g.plugin_dirs.empty());
  EXPECT_EQ(g.runtime.batch_size, 1024u);
  EXPECT_EQ(g.runtime.tasks, 1u);
  EXPECT_EQ(g.runtime.shutdown_timeout_ms, 10000);
}

// [runtime] on_error: the policy of every operator and sink without its own; a node's own
// wins; sources have none. "dead_letter" as the default: a node whose dead-letter output
// nobody reads (here the sinks) fails as with "fail" instead of being a config error.
TEST_F(GoodConfig, RuntimeOnErrorDefault) {
  const char* graph = R"(
[sources.s]
type = "from_iterable"
values = []
[sources.t]
type = "from_iterable"
values = []
[operators.a]
type = "zip"
inputs = ["s", "t"]
[operators.b]
type = "zip"
inputs = ["a", "t"]
on_error = "fail"
[sinks.k]
type = "print"
inputs = ["b"]
[sinks.letters]
type = "print"
inputs = ["a.dead_letter"]
)";
  auto skip = validate_text(std::string("[runtime]\non_error = \"skip\"\n") +
                            std::string(graph).replace(std::string(graph).find("[sinks.letters]"),
                                                       std::string::npos, ""));
  ASSERT_TRUE(skip.ok()) << (skip.diagnostics.empty() ? "" : skip.diagnostics[0].to_string());
  EXPECT_EQ(skip.value->find("s")->on_error, ErrorPolicy::fail);  // a source: no policy
  EXPECT_EQ(skip.value->find("a")->on_error, ErrorPolicy::skip);
  EXPECT_EQ(skip.value->find("b")->on_error, ErrorPolicy::fail);  // its own
  EXPECT_EQ(skip.value->find("k")->on_error, ErrorPolicy::skip);

  auto dead = validate_text(std::string("[runtime]\non_error = \"dead_letter\"\n") + graph);
  ASSERT_TRUE(dead.ok()) << (dead.diagnostics.empty() ? "" : dead.diagnostics[0].to_string());
  EXPECT_TRUE(dead.diagnostics.empty()) << dead.diagnostics[0].to_string();
  EXPECT_EQ(dead.value->find("a")->on_error, ErrorPolicy::dead_letter);  // read: letters
  EXPECT_EQ(dead.value->find("b")->on_error, ErrorPolicy::fail);
  EXPECT_EQ(dead.value->find("k")->on_error, ErrorPolicy::fail);        // unread: fail
  EXPECT_EQ(dead.value->find("letters")->on_error, ErrorPolicy::fail);  // unread: fail

  // Nothing reads any inherited dead-letter output: the default does nothing, a warning.
  auto unused = validate_text(std::string("[runtime]\non_error = \"dead_letter\"\n") +
                              std::string(graph).replace(std::string(graph).find("[sinks.letters]"),
                                                         std::string::npos, ""));
  ASSERT_TRUE(unused.ok());
  ASSERT_EQ(unused.diagnostics.size(), 1u);
  EXPECT_EQ(unused.diagnostics[0].to_string(),
            "/configs/inline.toml:2:12: warning: key 'runtime.on_error': \"dead_letter\" has no "
            "effect: no node reads the dead-letter output (\"ID.dead_letter\") of a node without "
            "an on_error of its own, so those nodes fail on a bad message as with \"fail\"; add "
            "\"ID.dead_letter\" to the inputs of a sink");
  EXPECT_EQ(unused.value->find("a")->on_error, ErrorPolicy::fail);

  // A bad value, with its position.
  auto bad = validate_text(std::string("[runtime]\non_error = \"drop\"\n") + graph);
  EXPECT_FALSE(bad.ok());
  ASSERT_FALSE(bad.diagnostics.empty());
  EXPECT_EQ(bad.diagnostics[0].to_string(),
            "/configs/inline.toml:2:12: error: key 'runtime.on_error': unknown policy 'drop'; "
            "valid policies are: fail, skip, dead_letter");
}

TEST_F(GoodConfig, AdminSettings) {
  const char* graph = R"(
[sources.s]
type = "from_iterable"
values = []
[sinks.k]
type = "print"
inputs = ["s"]
)";
  auto off = validate_text(graph);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off.value->admin.enabled);  // no [admin]: no endpoint

  auto defaults = validate_text(std::string("[admin]\n") + graph);
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults.value->admin.enabled);
  EXPECT_EQ(defaults.value->admin.address, "127.0.0.1");
  EXPECT_EQ(defaults.value->admin.port, 9850);
  EXPECT_EQ(defaults.value->admin.token, "");

  auto given =
      validate_text(std::string("[admin]\naddress = \"::1\"\nport = 0\ntoken = \"abc\"\n") + graph);
  ASSERT_TRUE(given.ok());
  EXPECT_TRUE(given.diagnostics.empty());
  EXPECT_EQ(given.value->admin.address, "::1");
  EXPECT_EQ(given.value->admin.port, 0);
  EXPECT_EQ(given.value->admin.token, "abc");
}

TEST_F(GoodConfig, InlineNodeTablesAndDottedKeys) {
  auto result = validate_text(R"(
sources.s = { type = "from_iterable", values = [1] }
[operators]
w = { type = "window", inputs = ["s"], n = 2, interval_ms = 0, ratio = 0.5 }
[sinks]
k.type = "print"
k.inputs = ["w"]
k.prefix = "> "
)");
  ASSERT_TRUE(result.ok()) << (result.diagnostics.empty() ? "" : result.diagnostics[0].to_string());
  EXPECT_EQ(json_dump(result.value->find("w")->config.raw()),
            R"({"n":2,"interval_ms":0,"ratio":0.5})");
  EXPECT_EQ(json_dump(result.value->find("k")->config.raw()), R"({"prefix":"> "})");
}

TEST_F(GoodConfig, PluginDirsBeforeValidation) {
  auto parsed = parse_config_string(
      "plugin_dirs = [\"plugins\", \"../shared/./p\", \"/abs/dir\"]\n[checkpoint]\n",
      "/etc/sluice/p.toml");
  ASSERT_TRUE(parsed.ok());
  auto dirs = config_plugin_dirs(*parsed.value);
  ASSERT_TRUE(dirs.ok());
  EXPECT_EQ(*dirs.value, (std::vector<std::filesystem::path>{"/etc/sluice/plugins", "/etc/shared/p",
                                                             "/abs/dir"}));

  auto none = parse_config_string("", "/etc/sluice/empty.toml");
  ASSERT_TRUE(none.ok());
  auto empty = config_plugin_dirs(*none.value);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value->empty());

  auto bad = parse_config_string("plugin_dirs = [\"\"]", "/etc/sluice/bad.toml");
  ASSERT_TRUE(bad.ok());
  auto errors = config_plugin_dirs(*bad.value);
  EXPECT_FALSE(errors.ok());
  ASSERT_EQ(errors.diagnostics.size(), 1u);
  EXPECT_EQ(errors.diagnostics[0].to_string(),
            "/etc/sluice/bad.toml:1:16: error: key 'plugin_dirs': item 0: empty directory path");
}

TEST_F(GoodConfig, SyntaxErrorFromString) {
  auto parsed = parse_config_string("a = [1,\n", "mem.toml");
  EXPECT_FALSE(parsed.ok());
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  // toml++ places end-of-file errors after the last character it read.
  EXPECT_EQ(
      parsed.diagnostics[0].to_string(),
      "mem.toml:1:9: error: invalid TOML: Error while parsing array: encountered end-of-file");
}

TEST(Diagnostic, ToStringOmitsWhatIsUnknown) {
  Diagnostic d{Severity::error, {"p.toml", 3, 8}, "x", "type", "bad"};
  EXPECT_EQ(d.to_string(), "p.toml:3:8: error: node 'x': key 'type': bad");
  d.node_id.clear();
  EXPECT_EQ(d.to_string(), "p.toml:3:8: error: key 'type': bad");
  d.key.clear();
  d.severity = Severity::warning;
  EXPECT_EQ(d.to_string(), "p.toml:3:8: warning: bad");
  d.pos.column = 0;
  EXPECT_EQ(d.to_string(), "p.toml:3: warning: bad");
  d.pos.line = 0;
  EXPECT_EQ(d.to_string(), "p.toml: warning: bad");
}

TEST(GraphSpecLookup, FindAndIndexOf) {
  GraphSpec g;
  g.nodes.resize(2);
  g.nodes[0].id = "a";
  g.nodes[1].id = "b";
  EXPECT_EQ(g.index_of("b"), 1u);
  EXPECT_EQ(g.find("a"), &g.nodes[0]);
  EXPECT_FALSE(g.index_of("c").has_value());
  EXPECT_EQ(g.find("c"), nullptr);
}

TEST(Suggest, EditDistanceAndClosest) {
  using config_detail::closest_name;
  using config_detail::edit_distance;
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("Map", "map"), 0u);
  const std::vector<std::string> names{"map", "filter", "from_textfile", "from_iterable"};
  EXPECT_EQ(closest_name("mapp", names), "map");
  EXPECT_EQ(closest_name("fliter", names), "filter");
  EXPECT_EQ(closest_name("from_textfiel", names), "from_textfile");
  EXPECT_FALSE(closest_name("kafka", names).has_value());
  EXPECT_FALSE(closest_name("x", {"y"}).has_value());
}

TEST(Suggest, HugeNamesGetNoSuggestionAndAreShownShort) {
  using config_detail::closest_name;
  using config_detail::shorten_name;
  const std::vector<std::string> names{"map", "filter"};
  const std::string huge(10 * 1024 * 1024, 'm');
  EXPECT_FALSE(closest_name(huge, names).has_value());  // no 10 MB x names edit distance
  EXPECT_EQ(closest_name(std::string(64, 'm'), {std::string(63, 'm')}), std::string(63, 'm'));
  EXPECT_FALSE(closest_name(std::string(65, 'm'), {std::string(64, 'm')}).has_value());

  EXPECT_EQ(shorten_name("map"), "map");
  EXPECT_EQ(shorten_name(std::string(64, 'a')), std::string(64, 'a'));
  EXPECT_EQ(shorten_name(huge), std::string(64, 'm') + "\u2026(10485760 bytes)");
  // Cut at a character boundary: 63 ASCII bytes, then a 2-byte "é" across byte 64.
  const std::string accented = std::string(63, 'a') + "\xC3\xA9" + std::string(100, 'b');
  EXPECT_EQ(shorten_name(accented), std::string(63, 'a') + "\u2026(165 bytes)");
}

TEST(Suggest, DiagnosticsShowHugeNamesShort) {
  const std::string huge(10 * 1024 * 1024, 'k');
  Diagnostic d{Severity::error, SourcePos{"p.toml", 3, 1}, huge, huge,
               "unknown key '" + huge + "'; valid keys are: a, b"};
  const std::string text = d.to_string();
  EXPECT_LT(text.size(), 1024u) << text.substr(0, 300);
  EXPECT_NE(text.find("valid keys are: a, b"), std::string::npos) << text;
  EXPECT_NE(text.find("(10485760 bytes)'; valid"), std::string::npos) << text;
}

}  // namespace
}  // namespace sluice::host
