// Config validation of functions written in Lua: `lua` / `<name>_lua` keys and
// `{ lua = ... }` tables are compiled by `sluiced validate`, errors point at the
// file line and column inside the TOML string, and valid ones are normalised to
// { lua, file, line } for function_bind.
#include "config/config_validator.hpp"
#include "test_plugin.hpp"
#include "value/json.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::host {
namespace {

class LuaConfig : public ::testing::Test {
 protected:
  void SetUp() override { testing::register_test_plugin(registry_); }

  Diagnosed<GraphSpec> validate(std::string_view text) {
    auto parsed = parse_config_string(text, "pipe.toml");
    EXPECT_TRUE(parsed.ok());
    if (!parsed.ok()) return {};
    return validate_config(*parsed.value, registry_);
  }

  // The errors (warnings left out), as `sluiced validate` prints them.
  std::vector<std::string> errors(std::string_view text) {
    std::vector<std::string> out;
    for (const auto& d : validate(text).diagnostics) {
      if (d.severity == Severity::error) out.push_back(d.to_string());
    }
    return out;
  }

  // The node's normalised config as JSON.
  std::string config_of(std::string_view text, std::string_view id) {
    auto result = validate(text);
    for (const auto& d : result.diagnostics) {
      if (d.severity == Severity::error) ADD_FAILURE() << d.to_string();
    }
    if (!result.ok()) return "<invalid>";
    const NodeSpec* n = result.value->find(id);
    return n ? json_dump(n->config.raw()) : "<no node>";
  }

  PluginRegistry registry_;
};

constexpr std::string_view k_head = R"([sources.src]
type = "from_iterable"
values = [1]
)";

std::string pipeline(std::string_view nodes) {
  return std::string(k_head) + std::string(nodes) +
         "\n[sinks.out]\ntype = \"print\"\ninputs = [\"f\"]\n";
}

TEST_F(LuaConfig, LuaKeyIsNormalisedWithItsFileLine) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = "x % 2 == 0"
)");
  EXPECT_EQ(config_of(text, "f"),
            R"({"function":{"lua":"x % 2 == 0","file":"pipe.toml","line":8}})");
}

TEST_F(LuaConfig, NamedKeyLuaForOtherFunctionParams) {
  const std::string text = pipeline(R"(
[operators.f]
type = "accumulate"
inputs = ["src"]
reducer_lua = "acc + x"
)");
  EXPECT_EQ(config_of(text, "f"),
            R"({"reducer":{"lua":"acc + x","file":"pipe.toml","line":8},"start":0,)"
            R"("returns_state":false})");
}

TEST_F(LuaConfig, MultiLineStringsStartOnTheLineAfterTheDelimiter) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = """
function(x)
  return x
end
"""
)");
  EXPECT_EQ(config_of(text, "f"),
            R"({"function":{"lua":"function(x)\n  return x\nend\n","file":"pipe.toml","line":9}})");
}

TEST_F(LuaConfig, FunctionTableWithLua) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
function = { lua = "x .. '!'" }
)");
  EXPECT_EQ(config_of(text, "f"), R"({"function":{"lua":"x .. '!'","file":"pipe.toml","line":8}})");
}

TEST_F(LuaConfig, SyntaxErrorPointsIntoTheString) {
  const std::string text = pipeline(R"(
[operators.f]
type = "filter"
inputs = ["src"]
lua = "x %% 2 == 0"
)");
  EXPECT_EQ(errors(text),
            std::vector<std::string>{
                "pipe.toml:8:10: error: node 'f': key 'lua': Lua: unexpected symbol near '%' (this "
                "is read as an expression of x; write a full 'function(x) ... end' for "
                "statements)"});
}

TEST_F(LuaConfig, SyntaxErrorInsideAMultiLineFunction) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = """
function(x)
  local y = x +
  return y
end
"""
)");
  EXPECT_EQ(errors(text), std::vector<std::string>{"pipe.toml:11:3: error: node 'f': key 'lua': "
                                                   "Lua: unexpected symbol near 'return'"});
}

TEST_F(LuaConfig, UnfinishedExpressionIsReportedAtItsEnd) {
  const std::string text = pipeline(R"(
[operators.f]
type = "accumulate"
inputs = ["src"]
reducer_lua = "acc +"
)");
  EXPECT_EQ(errors(text),
            std::vector<std::string>{
                "pipe.toml:8:21: error: node 'f': key 'reducer_lua': Lua: unexpected symbol at the "
                "end of the code (this is read as an expression of x; write a full 'function(x) "
                "... end' for statements)"});
}

TEST_F(LuaConfig, ChunkThatReturnsNoFunction) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = """
local helper = 1
"""
)");
  EXPECT_EQ(errors(text), std::vector<std::string>{
                              "pipe.toml:9:1: error: node 'f': key 'lua': Lua: code that starts "
                              "with a statement must return the function (e.g. 'return "
                              "function(x) ... end'); it returned nil"});
}

TEST_F(LuaConfig, FunctionAndLuaBothGiven) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
function = "split"
lua = "x"
)");
  EXPECT_EQ(errors(text),
            std::vector<std::string>{"pipe.toml:9:1: error: node 'f': key 'lua': both 'function' "
                                     "(a named function) and 'lua' (a function in Lua) are given; "
                                     "keep one"});
}

TEST_F(LuaConfig, ArgsWithLuaAreRefused) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = "x"
args = { sep = "," }
)");
  EXPECT_EQ(errors(text), std::vector<std::string>{
                              "pipe.toml:9:1: error: node 'f': key 'args': 'args' holds arguments "
                              "for a named function, but 'function' is written in Lua ('lua'), "
                              "which takes none; write the values into the Lua code"});
}

TEST_F(LuaConfig, NameAndLuaInOneTableAreRefused) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
function = { name = "split", lua = "x" }
)");
  EXPECT_EQ(errors(text), std::vector<std::string>{
                              "pipe.toml:8:30: error: node 'f': key 'function.lua': a function "
                              "table holds either 'name' (and 'args') or 'lua', not both"});
}

TEST_F(LuaConfig, LuaKeyWithoutAFunctionParam) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = "x"
key_lua = "x"
)");
  EXPECT_EQ(errors(text),
            std::vector<std::string>{
                "pipe.toml:9:1: error: node 'f': key 'key_lua': 'key_lua' holds a Lua function for "
                "a function parameter named 'key', which type 'map' does not have; valid keys for "
                "type 'map' are: type, inputs, on_error, function, args, lua"});
}

TEST_F(LuaConfig, LuaMustBeAString) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
lua = 5
)");
  EXPECT_EQ(errors(text), std::vector<std::string>{
                              "pipe.toml:8:7: error: node 'f': key 'lua': expected Lua code (a "
                              "string: an expression of x, or function(x) ... end), got int"});
}

TEST_F(LuaConfig, MissingFunctionMentionsLua) {
  const std::string text = pipeline(R"(
[operators.f]
type = "map"
inputs = ["src"]
)");
  auto found = errors(text);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("or 'lua' with a function in Lua"), std::string::npos) << found[0];
}

}  // namespace
}  // namespace sluice::host
