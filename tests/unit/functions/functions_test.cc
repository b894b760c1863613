// The core_ops function library, loaded from the built plugin and called through the host
// API exactly as operators call it: function_bind with a { name, args } spec, then
// function_call (and function_call_batch, whose result must match element by element).
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

class FunctionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = std::make_shared<PluginRegistry>();
    PluginLoader loader(*registry_, host_api_table());
    const auto file = std::filesystem::path(SLUICE_TEST_PLUGIN_DIR) / "libsluice_core_ops.so";
    Status loaded = loader.load_file(file);
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    // A task of one node, only to have a real context to bind functions on.
    auto doc = parse_config_string("[sources.src]\ntype = \"from_iterable\"\nvalues = []\n",
                                   "functions_test.toml");
    ASSERT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, *registry_);
    ASSERT_TRUE(spec.ok());
    spec_ = std::make_unique<GraphSpec>(std::move(*spec.value));
    spec_->registry = registry_;  // function_bind resolves names in the task's graph
    clock_ = std::make_unique<VirtualClock>(0);
    task_ = std::make_unique<Task>(*spec_, TaskOptions{1024, 0, 1, clock_.get()});
    ASSERT_TRUE(task_->create().is_ok());
  }
  static void TearDownTestSuite() {
    task_.reset();
    spec_.reset();
    registry_.reset();
  }

  static sl_context* ctx() { return task_->node(0).ctx.get(); }
  static std::string error_text(sl_status st) {
    return std::string("error ") + sl_status_name(st) + ": " + task_->node(0).error;
  }
  static Value parse(std::string_view json) {
    auto v = json_parse(json);
    EXPECT_TRUE(v.is_ok()) << "bad JSON in the test: " << json;
    return v.is_ok() ? std::move(v).value() : Value();
  }

  /// Binds `name` with `args_json`; the binding, or "error CODE: message".
  static std::pair<sl_bound_function*, std::string> bind(std::string_view name,
                                                         std::string_view args_json) {
    std::vector<std::pair<std::string, Value>> entries;
    entries.emplace_back("name", Value::string(name));
    entries.emplace_back("args", parse(args_json));
    Value spec = Value::object(entries);
    sl_bound_function* fn = nullptr;
    task_->node(0).error.clear();
    sl_status st = host_api_table()->function_bind(ctx(), spec.raw(), &fn);
    if (st != SL_OK) return {nullptr, error_text(st)};
    return {fn, ""};
  }

  /// name(args)(argv...) as compact JSON, or "error CODE: message". A one-argument call is
  /// also made through the batch form, which must give the same answer.
  static std::string call(std::string_view name, std::string_view args_json,
                          std::vector<std::string_view> argv_json) {
    auto [fn, bind_error] = bind(name, args_json);
    if (fn == nullptr) return "bind " + bind_error;
    std::vector<Value> argv;
    std::vector<sl_value> raw;
    for (std::string_view a : argv_json) {
      argv.push_back(parse(a));
      raw.push_back(argv.back().raw());
    }
    sl_value out = sl_null();
    task_->node(0).error.clear();
    sl_status st =
        host_api_table()->function_call(fn, raw.data(), static_cast<uint32_t>(raw.size()), &out);
    std::string got = st == SL_OK ? json_dump(out) : error_text(st);
    host_api_table()->value_release(out);
    if (raw.size() == 1 && host_api_table()->function_kind(fn) != SL_FUNCTION_REDUCER) {
      sl_value bout = sl_null();
      task_->node(0).error.clear();
      sl_status bst = host_api_table()->function_call_batch(fn, raw.data(), 1, &bout);
      std::string batch = bst == SL_OK ? json_dump(bout) : error_text(bst);
      host_api_table()->value_release(bout);
      EXPECT_EQ(batch, got) << name << " batch form differs on " << argv_json[0];
    }
    host_api_table()->function_release(fn);
    return got;
  }
  static std::string f(std::string_view name, std::string_view args, std::string_view x) {
    return call(name, args, {x});
  }
  static std::string f(std::string_view name, std::string_view x) { return f(name, "{}", x); }
  static std::string r(std::string_view name, std::string_view acc, std::string_view x,
                       std::string_view args = "{}") {
    return call(name, args, {acc, x});
  }

  static std::shared_ptr<PluginRegistry> registry_;
  static std::unique_ptr<GraphSpec> spec_;
  static std::unique_ptr<VirtualClock> clock_;
  static std::unique_ptr<Task> task_;
};

std::shared_ptr<PluginRegistry> FunctionsTest::registry_;
std::unique_ptr<GraphSpec> FunctionsTest::spec_;
std::unique_ptr<VirtualClock> FunctionsTest::clock_;
std::unique_ptr<Task> FunctionsTest::task_;

TEST_F(FunctionsTest, EveryFunctionOfTheLibraryIsRegisteredWithItsKind) {
  const std::vector<std::pair<std::string, int32_t>> want = {
      {"identity", SL_FUNCTION_MAP},
      {"json_parse", SL_FUNCTION_MAP},
      {"json_dump", SL_FUNCTION_MAP},
      {"get", SL_FUNCTION_MAP},
      {"split", SL_FUNCTION_MAP},
      {"lower", SL_FUNCTION_MAP},
      {"upper", SL_FUNCTION_MAP},
      {"strip", SL_FUNCTION_MAP},
      {"len", SL_FUNCTION_MAP},
      {"add", SL_FUNCTION_MAP},
      {"sub", SL_FUNCTION_MAP},
      {"mul", SL_FUNCTION_MAP},
      {"div", SL_FUNCTION_MAP},
      {"mod", SL_FUNCTION_MAP},
      {"to_int", SL_FUNCTION_MAP},
      {"to_float", SL_FUNCTION_MAP},
      {"to_string", SL_FUNCTION_MAP},
      {"eq", SL_FUNCTION_PREDICATE},
      {"ne", SL_FUNCTION_PREDICATE},
      {"gt", SL_FUNCTION_PREDICATE},
      {"ge", SL_FUNCTION_PREDICATE},
      {"lt", SL_FUNCTION_PREDICATE},
      {"le", SL_FUNCTION_PREDICATE},
      {"not_null", SL_FUNCTION_PREDICATE},
      {"truthy", SL_FUNCTION_PREDICATE},
      {"sum", SL_FUNCTION_REDUCER},
      {"count", SL_FUNCTION_REDUCER},
      {"min", SL_FUNCTION_REDUCER},
      {"max", SL_FUNCTION_REDUCER},
      {"count_by", SL_FUNCTION_REDUCER},
      {"collect_list", SL_FUNCTION_REDUCER},
  };
  for (const auto& [name, kind] : want) {
    const FunctionInfo* info = registry_->find_function(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->kind, kind) << name;
    EXPECT_FALSE(info->doc.empty()) << name;
    if (kind == SL_FUNCTION_REDUCER) {  // (acc, x); sum, min and max also take (array)
      const bool one = name == "sum" || name == "min" || name == "max";
      EXPECT_EQ(info->min_arity, one ? 1u : 2u) << name;
      EXPECT_EQ(info->max_arity, 2u) << name;
    }
  }
}

TEST_F(FunctionsTest, IdentityAndJson) {
  EXPECT_EQ(f("identity", R"({"a":[1,null]})"), R"({"a":[1,null]})");
  EXPECT_EQ(f("json_parse", R"("{\"a\": [1, 2.5, true]}")"), R"({"a":[1,2.5,true]})");
  EXPECT_EQ(f("json_parse", R"("[1,")").substr(0, 22), "error INVALID_ARGUMENT");
  EXPECT_EQ(f("json_parse", "5"),
            "error INVALID_ARGUMENT: json_parse: expected a string or "
            "bytes, got int");
  EXPECT_EQ(f("json_dump", R"({"a":[1,"x"]})"), R"("{\"a\":[1,\"x\"]}")");
}

TEST_F(FunctionsTest, GetFollowsKeysAndIndexesAndGivesNullOrTheDefaultWhenMissing) {
  const std::string_view doc = R"({"user":{"name":"ann","tags":["a","b","c"]},"n":1})";
  EXPECT_EQ(f("get", R"({"path":"n"})", doc), "1");
  EXPECT_EQ(f("get", R"({"path":["user","name"]})", doc), R"("ann")");
  EXPECT_EQ(f("get", R"({"path":["user","tags",0]})", doc), R"("a")");
  EXPECT_EQ(f("get", R"({"path":["user","tags",-1]})", doc), R"("c")");
  EXPECT_EQ(f("get", R"({"path":["user","tags",-3]})", doc), R"("a")");
  EXPECT_EQ(f("get", R"({"path":1})", "[10,20]"), "20");
  EXPECT_EQ(f("get", R"({"path":[]})", "[10,20]"), "[10,20]");  // empty path: x itself
  // Missing: absent key, index out of range either way, a step into the wrong kind.
  EXPECT_EQ(f("get", R"({"path":"zz"})", doc), "null");
  EXPECT_EQ(f("get", R"({"path":["user","tags",3]})", doc), "null");
  EXPECT_EQ(f("get", R"({"path":["user","tags",-4]})", doc), "null");
  EXPECT_EQ(f("get", R"({"path":["n","x"]})", doc), "null");
  EXPECT_EQ(f("get", R"({"path":0})", R"({"0":1})"), "null");  // an int indexes arrays only
  EXPECT_EQ(f("get", R"({"path":"a"})", R"("abc")"), "null");
  EXPECT_EQ(f("get", R"({"path":"zz","default":-1})", doc), "-1");
  EXPECT_EQ(f("get", R"({"path":"n","default":-1})", doc), "1");
  EXPECT_EQ(f("get", R"({"path":"n"})", R"({"n":null})"), "null");  // present null is kept
  // Bad paths fail at bind, naming the key.
  EXPECT_EQ(f("get", R"({"path":1.5})", doc),
            "bind error INVALID_ARGUMENT: node 'src': function 'get': key 'path' must be a key "
            "(string), an index (int) or an array of them (got float)");
  EXPECT_EQ(f("get", R"({"path":["a",true]})", doc).substr(0, 27), "bind error INVALID_ARGUMENT");
  EXPECT_EQ(f("get", "{}", doc),
            "bind error INVALID_ARGUMENT: function 'get' needs argument 'path'");
}

TEST_F(FunctionsTest, SplitAsPythonStrSplit) {
  EXPECT_EQ(f("split", R"(" a  b\tc \n")"), R"(["a","b","c"])");
  EXPECT_EQ(f("split", R"("")"), "[]");
  EXPECT_EQ(f("split", R"("   ")"), "[]");
  EXPECT_EQ(f("split", R"("\u3000x\u00a0y\u001f")"), R"(["x","y"])");  // Unicode whitespace
  EXPECT_EQ(f("split", R"("héllo wörld")"), R"(["héllo","wörld"])");
  EXPECT_EQ(f("split", R"({"maxsplit":1})", R"("  a b c  ")"), R"(["a","b c  "])");
  EXPECT_EQ(f("split", R"({"maxsplit":0})", R"("  a b ")"), R"(["a b "])");
  EXPECT_EQ(f("split", R"({"sep":","})", R"("a,,b")"), R"(["a","","b"])");
  EXPECT_EQ(f("split", R"({"sep":","})", R"("")"), R"([""])");
  EXPECT_EQ(f("split", R"({"sep":","})", R"(",a,")"), R"(["","a",""])");
  EXPECT_EQ(f("split", R"({"sep":"::"})", R"("a::b:c")"), R"(["a","b:c"])");
  EXPECT_EQ(f("split", R"({"sep":",","maxsplit":1})", R"("a,b,c")"), R"(["a","b,c"])");
  EXPECT_EQ(f("split", R"({"sep":""})", R"("a")"),
            "bind error INVALID_ARGUMENT: node 'src': function 'split': key 'sep' must not be "
            "empty (omit it to split on whitespace)");
  EXPECT_EQ(f("split", "[1]"), "error INVALID_ARGUMENT: split: expected a string, got array");
}

TEST_F(FunctionsTest, CaseAndStrip) {
  EXPECT_EQ(f("upper", R"("abc Déf")"), R"("ABC DéF")");  // ASCII only
  EXPECT_EQ(f("lower", R"("ABC")"), R"("abc")");
  EXPECT_EQ(f("lower", R"("abc")"), R"("abc")");
  EXPECT_EQ(f("lower", "null"), "error INVALID_ARGUMENT: lower: expected a string, got null");
  EXPECT_EQ(f("upper", "1"), "error INVALID_ARGUMENT: upper: expected a string, got int");
  EXPECT_EQ(f("strip", R"("  x y \n\t")"), R"("x y")");
  EXPECT_EQ(f("strip", R"("\u00a0x\u3000")"), R"("x")");
  EXPECT_EQ(f("strip", R"("   ")"), R"("")");
  EXPECT_EQ(f("strip", R"("x")"), R"("x")");
  EXPECT_EQ(f("strip", R"({"chars":"x"})", R"("xxhixx")"), R"("hi")");
  EXPECT_EQ(f("strip", R"({"chars":"é"})", R"("ébéb")"), R"("béb")");  // whole characters
  EXPECT_EQ(f("strip", R"({"chars":"ab"})", R"("abba")"), R"("")");
  EXPECT_EQ(f("strip", R"({"chars":""})", R"(" x ")"), R"(" x ")");
  EXPECT_EQ(f("strip", "true"), "error INVALID_ARGUMENT: strip: expected a string, got bool");
}

TEST_F(FunctionsTest, LenCountsCharactersItemsAndEntries) {
  EXPECT_EQ(f("len", R"("héllo")"), "5");
  EXPECT_EQ(f("len", R"("日本")"), "2");
  EXPECT_EQ(f("len", R"("")"), "0");
  EXPECT_EQ(f("len", "[1,[2,3]]"), "2");
  EXPECT_EQ(f("len", R"({"a":1,"b":2})"), "2");
  EXPECT_EQ(f("len", "5"),
            "error INVALID_ARGUMENT: len: expected a string, bytes, an array "
            "or an object, got int");
  EXPECT_EQ(f("len", "null").substr(0, 44), "error INVALID_ARGUMENT: len: expected a stri");
}

TEST_F(FunctionsTest, ArithmeticKeepsIntsAndFailsOnOverflow) {
  EXPECT_EQ(f("add", R"({"value":1})", "41"), "42");
  EXPECT_EQ(f("add", R"({"value":0.5})", "1"), "1.5");
  EXPECT_EQ(f("add", R"({"value":1})", "1.5"), "2.5");
  EXPECT_EQ(f("add", R"({"value":"!"})", R"("hi")"), R"("hi!")");
  EXPECT_EQ(f("add", R"({"value":"!"})", "1"),
            "error INVALID_ARGUMENT: add: expected a string (value is a string), got int");
  EXPECT_EQ(f("add", R"({"value":1})", R"("a")"),
            "error INVALID_ARGUMENT: add: expected a number, got string");
  EXPECT_EQ(f("add", R"({"value":1})", "true"),
            "error INVALID_ARGUMENT: add: expected a number, got bool");
  EXPECT_EQ(f("add", R"({"value":1})", "9223372036854775807"),
            "error OUT_OF_RANGE: add: 9223372036854775807 + 1 does not fit in a 64-bit int");
  EXPECT_EQ(f("sub", R"({"value":3})", "1"), "-2");
  EXPECT_EQ(f("sub", R"({"value":1})", "-9223372036854775808"),
            "error OUT_OF_RANGE: sub: -9223372036854775808 - 1 does not fit in a 64-bit int");
  EXPECT_EQ(f("mul", R"({"value":3})", "-4"), "-12");
  EXPECT_EQ(f("mul", R"({"value":2})", "4611686018427387904").substr(0, 18), "error OUT_OF_RANGE");
  EXPECT_EQ(f("mul", R"({"value":"x"})", "1"),
            "bind error INVALID_ARGUMENT: node 'src': function 'mul': key 'value' must be a "
            "number (got string)");
}

TEST_F(FunctionsTest, DivAndModFollowPython) {
  EXPECT_EQ(f("div", R"({"value":2})", "7"), "3.5");
  EXPECT_EQ(f("div", R"({"value":2})", "6"), "3.0");  // true division: always a float
  EXPECT_EQ(f("div", R"({"value":-0.5})", "1"), "-2.0");
  EXPECT_EQ(f("mod", R"({"value":3})", "-7"), "2");
  EXPECT_EQ(f("mod", R"({"value":-3})", "7"), "-2");
  EXPECT_EQ(f("mod", R"({"value":3})", "7"), "1");
  EXPECT_EQ(f("mod", R"({"value":-1})", "-9223372036854775808"), "0");
  EXPECT_EQ(f("mod", R"({"value":2})", "-7.5"), "0.5");
  EXPECT_EQ(f("mod", R"({"value":-2})", "7.0"), "-1.0");
  EXPECT_EQ(f("mod", R"({"value":3})", "\"a\""),
            "error INVALID_ARGUMENT: mod: expected a number, got string");
  EXPECT_EQ(f("div", R"({"value":0})", "1"),
            "bind error INVALID_ARGUMENT: node 'src': function 'div': key 'value' must not be "
            "zero (division by zero)");
  EXPECT_EQ(f("mod", R"({"value":0.0})", "1"),
            "bind error INVALID_ARGUMENT: node 'src': function 'mod': key 'value' must not be "
            "zero (division by zero)");
}

// to_int's fast path (1 to 18 ASCII digits, an optional '-') against its general path: the
// same text with surrounding spaces (which only the general path takes) must give the same
// int, and texts just outside the fast path's shape must still get the general path's answer.
TEST_F(FunctionsTest, ToIntFastPathAgreesWithTheGeneralPath) {
  for (std::string_view digits :
       {"0", "-0", "7", "-7", "007", "-007", "42", "999999999999999999", "-999999999999999999",
        "100000000000000000", "123456789012345678", "-123456789012345678"}) {
    const std::string plain = "\"" + std::string(digits) + "\"";
    const std::string padded = "\" " + std::string(digits) + "\\t\"";
    const std::string fast = f("to_int", plain);
    EXPECT_EQ(fast, f("to_int", padded)) << digits;
    EXPECT_EQ(fast.find("error"), std::string::npos) << digits << ": " << fast;
  }
  EXPECT_EQ(f("to_int", R"("-0")"), "0");
  EXPECT_EQ(f("to_int", R"("999999999999999999")"), "999999999999999999");
  // 19 digits and more: the general path, with its range check.
  EXPECT_EQ(f("to_int", R"("9223372036854775807")"), "9223372036854775807");
  EXPECT_EQ(f("to_int", R"("-9223372036854775808")"), "-9223372036854775808");
  EXPECT_EQ(f("to_int", R"("-9223372036854775809")"),
            "error OUT_OF_RANGE: to_int: \"-9223372036854775809\" does not fit in a 64-bit int");
  EXPECT_EQ(f("to_int", R"("1000000000000000000")"), "1000000000000000000");
  // Not the fast path's shape: the general path decides, as before.
  EXPECT_EQ(f("to_int", R"("+5")"), "5");
  EXPECT_EQ(f("to_int", R"("1_000")"), "1000");
  EXPECT_EQ(f("to_int", R"("12\r")"), "12");  // a CRLF file's line keeps its \r
  for (const char* bad : {R"("-")", R"("--1")", R"("1-")", R"("1a")", R"("½")", R"("1.")"}) {
    EXPECT_EQ(f("to_int", bad).substr(0, 48), "error INVALID_ARGUMENT: to_int: not a decimal in")
        << bad;
  }
}

TEST_F(FunctionsTest, Conversions) {
  EXPECT_EQ(f("to_int", "3.9"), "3");
  EXPECT_EQ(f("to_int", "-3.9"), "-3");
  EXPECT_EQ(f("to_int", "true"), "1");
  EXPECT_EQ(f("to_int", "7"), "7");
  EXPECT_EQ(f("to_int", R"(" -1_000 ")"), "-1000");
  EXPECT_EQ(f("to_int", R"("+5")"), "5");
  EXPECT_EQ(f("to_int", R"("-9223372036854775808")"), "-9223372036854775808");
  EXPECT_EQ(f("to_int", R"("9223372036854775808")"),
            "error OUT_OF_RANGE: to_int: \"9223372036854775808\" does not fit in a 64-bit int");
  EXPECT_EQ(f("to_int", R"("3.5")"),
            "error INVALID_ARGUMENT: to_int: not a decimal integer: \"3.5\" (string)");
  for (const char* bad :
       {R"("")", R"("-")", R"("+-5")", R"("1__0")", R"("_1")", R"("0x10")", R"("1 2")"}) {
    EXPECT_EQ(f("to_int", bad).substr(0, 48), "error INVALID_ARGUMENT: to_int: not a decimal in")
        << bad;
  }
  EXPECT_EQ(f("to_int", "1e300"),
            "error OUT_OF_RANGE: to_int: float 1e+300 does not fit in a 64-bit int");
  EXPECT_EQ(f("to_int", "null"),
            "error INVALID_ARGUMENT: to_int: expected a number, a bool or a string, got null");

  EXPECT_EQ(f("to_float", "2"), "2.0");
  EXPECT_EQ(f("to_float", "false"), "0.0");
  EXPECT_EQ(f("to_float", R"(" 1e3 ")"), "1000.0");
  EXPECT_EQ(f("to_float", R"("-2.5")"), "-2.5");
  EXPECT_EQ(f("to_float", R"("1_0.5")"), "10.5");
  EXPECT_EQ(f("to_float", R"("abc")"),
            "error INVALID_ARGUMENT: to_float: not a number: \"abc\" (string)");
  EXPECT_EQ(f("to_float", R"("0x10")").substr(0, 32), "error INVALID_ARGUMENT: to_float");
  EXPECT_EQ(f("to_float", R"("+-1")").substr(0, 32), "error INVALID_ARGUMENT: to_float");
  EXPECT_EQ(f("to_float", "[1]"),
            "error INVALID_ARGUMENT: to_float: expected a number, a bool or a string, got array");

  EXPECT_EQ(f("to_string", R"("a")"), R"("a")");
  EXPECT_EQ(f("to_string", "-12"), R"("-12")");
  EXPECT_EQ(f("to_string", "1.0"), R"("1.0")");
  EXPECT_EQ(f("to_string", "0.1"), R"("0.1")");
  EXPECT_EQ(f("to_string", "1e16"), R"("1e+16")");
  EXPECT_EQ(f("to_string", "1e15"), R"("1000000000000000.0")");
  EXPECT_EQ(f("to_string", "0.0001"), R"("0.0001")");
  EXPECT_EQ(f("to_string", "0.00001"), R"("1e-05")");
  EXPECT_EQ(f("to_string", "123.456"), R"("123.456")");
  EXPECT_EQ(f("to_string", "-2.5e-7"), R"("-2.5e-07")");
  EXPECT_EQ(f("to_string", "null"), R"("null")");
  EXPECT_EQ(f("to_string", "true"), R"("true")");
  EXPECT_EQ(f("to_string", R"([1,"a"])"), R"("[1,\"a\"]")");
}

TEST_F(FunctionsTest, ToStringOfNonFiniteFloats) {
  // JSON has no inf/nan literal: make them with to_float.
  auto [fn, err] = bind("to_float", "{}");
  ASSERT_NE(fn, nullptr) << err;
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {"-inf", "-inf"}, {"1e400", "inf"}, {"nan", "nan"}, {"Infinity", "inf"}}) {
    Value in = Value::string(text);
    const sl_value in_raw = in.raw();
    sl_value x = sl_null();
    ASSERT_EQ(host_api_table()->function_call(fn, &in_raw, 1, &x), SL_OK) << text;
    Value as_float = Value::adopt(x);
    auto [ts, err2] = bind("to_string", "{}");
    ASSERT_NE(ts, nullptr) << err2;
    const sl_value f_raw = as_float.raw();
    sl_value s = sl_null();
    ASSERT_EQ(host_api_table()->function_call(ts, &f_raw, 1, &s), SL_OK);
    Value str = Value::adopt(s);
    EXPECT_EQ(str.as_str(), want) << text;
    host_api_table()->function_release(ts);
  }
  host_api_table()->function_release(fn);
}

TEST_F(FunctionsTest, Predicates) {
  EXPECT_EQ(f("eq", R"({"value":1})", "1.0"), "true");
  EXPECT_EQ(f("eq", R"({"value":1})", R"("1")"), "false");
  EXPECT_EQ(f("ne", R"({"value":1})", R"("1")"), "true");
  EXPECT_EQ(f("ne", R"({"value":"a"})", R"("a")"), "false");
  EXPECT_EQ(f("gt", R"({"value":2})", "3"), "true");
  EXPECT_EQ(f("gt", R"({"value":2})", "2"), "false");
  EXPECT_EQ(f("ge", R"({"value":2})", "2"), "true");
  EXPECT_EQ(f("ge", R"({"value":2})", "1.5"), "false");
  EXPECT_EQ(f("lt", R"({"value":2})", "1.5"), "true");
  EXPECT_EQ(f("lt", R"({"value":2})", "2"), "false");
  EXPECT_EQ(f("le", R"({"value":2})", "2.0"), "true");
  EXPECT_EQ(f("le", R"({"value":"b"})", R"("c")"), "false");
  EXPECT_EQ(f("gt", R"({"value":5})", "null"), "false");  // kinds order: null first
  EXPECT_EQ(f("eq", R"({"value":{"a":[1]}})", R"({"a":[1.0]})"), "true");
  // With a path, the value there is compared (missing: null).
  EXPECT_EQ(f("eq", R"({"value":"click","path":"type"})", R"({"type":"click"})"), "true");
  EXPECT_EQ(f("eq", R"({"value":"click","path":"type"})", R"({"kind":"click"})"), "false");
  EXPECT_EQ(f("eq", R"({"value":null,"path":"type"})", R"({"kind":"click"})"),  // null: absent
            "bind error INVALID_ARGUMENT: node 'src': function 'eq': key 'value' is required");
  EXPECT_EQ(f("gt", R"({"value":10,"path":["a",1]})", R"({"a":[0,11]})"), "true");
  EXPECT_EQ(f("le", R"({"value":10,"path":["a",1]})", R"({"a":[0,11]})"), "false");
  EXPECT_EQ(f("ne", R"({"value":1,"path":"x"})", "{}"), "true");
  EXPECT_EQ(f("not_null", "0"), "true");
  EXPECT_EQ(f("not_null", "null"), "false");
  for (const char* falsy : {"null", "false", "0", "0.0", R"("")", "[]", "{}"}) {
    EXPECT_EQ(f("truthy", falsy), "false") << falsy;
  }
  for (const char* truthy : {"true", "-1", "0.5", R"(" ")", "[0]", R"({"a":null})"}) {
    EXPECT_EQ(f("truthy", truthy), "true") << truthy;
  }
}

TEST_F(FunctionsTest, SumCountMinMax) {
  EXPECT_EQ(r("sum", "1", "2"), "3");
  EXPECT_EQ(r("sum", "1", "2.5"), "3.5");
  EXPECT_EQ(r("sum", "9223372036854775807", "1"),
            "error OUT_OF_RANGE: sum: 9223372036854775807 + 1 does not fit in a 64-bit int");
  EXPECT_EQ(r("sum", "1", R"("a")"), "error INVALID_ARGUMENT: sum: expected a number, got string");
  EXPECT_EQ(r("sum", "null", "1"),
            "error INVALID_ARGUMENT: sum: the total so far must be a number, got null");
  EXPECT_EQ(r("count", "0", R"("x")"), "1");
  EXPECT_EQ(r("count", "41", "null"), "42");
  EXPECT_EQ(r("count", R"("the")", R"("x")"),
            "error INVALID_ARGUMENT: count: the count so far must be an int, got string (give "
            "accumulate start = 0)");
  EXPECT_EQ(r("min", "3", "2.5"), "2.5");
  EXPECT_EQ(r("min", "2", "3"), "2");
  EXPECT_EQ(r("min", R"("b")", R"("a")"), R"("a")");
  EXPECT_EQ(r("max", "3", "2.5"), "3");
  EXPECT_EQ(r("max", "1", "1.0"), "1");  // a tie keeps acc
  EXPECT_EQ(r("max", "null", "0"), "0");
  EXPECT_EQ(call("count", "{}", {"1"}),
            "error INVALID_ARGUMENT: function 'count' takes 2..2 arguments, got 1");
  EXPECT_EQ(call("sum", "{}", {"1", "2", "3"}),
            "error INVALID_ARGUMENT: function 'sum' takes 1..2 arguments, got 3");
}

// sum, min and max with one argument: Python's sum(iterable), min(iterable), max(iterable)
// on an array (map(function = "sum") after a window is streamz's map(sum)). Each answer is
// also checked through the batch form, which map uses.
TEST_F(FunctionsTest, SumMinMaxOfAnArray) {
  const auto one = [](std::string_view name, std::string_view x) {
    std::string got = call(name, "{}", {x});
    auto [fn, bind_error] = bind(name, "{}");
    EXPECT_EQ(bind_error, "");
    Value in = parse(x);
    sl_value out = sl_null();
    task_->node(0).error.clear();
    sl_value raw = in.raw();
    sl_status st = host_api_table()->function_call_batch(fn, &raw, 1, &out);
    EXPECT_EQ(st == SL_OK ? json_dump(out) : error_text(st), got) << name << " batch on " << x;
    host_api_table()->value_release(out);
    host_api_table()->function_release(fn);
    return got;
  };
  EXPECT_EQ(one("sum", "[]"), "0");  // Python: sum([]) == 0
  EXPECT_EQ(one("sum", "[1,2,3]"), "6");
  EXPECT_EQ(one("sum", "[1,2.5]"), "3.5");
  EXPECT_EQ(one("sum", "[0.5,1]"), "1.5");
  EXPECT_EQ(one("sum", "[1.0]"), "1.0");  // a float stays a float
  EXPECT_EQ(one("sum", "[-3,-4]"), "-7");
  // Left to right as Python: 0.1 + 0.2 first, then + 0.3.
  EXPECT_EQ(one("sum", "[0.1,0.2,0.3]"), "0.6000000000000001");
  EXPECT_EQ(one("sum", "[9223372036854775807,1]"),
            "error OUT_OF_RANGE: sum: 9223372036854775807 + 1 does not fit in a 64-bit int");
  EXPECT_EQ(one("sum", "[1,2.5,9223372036854775807]"), "9.223372036854776e+18");  // floats
  EXPECT_EQ(one("sum", R"([1,"a"])"),
            "error INVALID_ARGUMENT: sum: item 1 of the array: expected a number, got string");
  EXPECT_EQ(one("sum", "[true]"),
            "error INVALID_ARGUMENT: sum: item 0 of the array: expected a number, got bool");
  EXPECT_EQ(one("sum", "5"),
            "error INVALID_ARGUMENT: sum: with one argument, expected an array, got int");
  EXPECT_EQ(one("sum", R"({"a":1})"),
            "error INVALID_ARGUMENT: sum: with one argument, expected an array, got object");
  EXPECT_EQ(one("max", "[3,9,2]"), "9");
  EXPECT_EQ(one("min", "[3,9,2]"), "2");
  EXPECT_EQ(one("max", "[1,1.0]"), "1");  // the first of equal items, as Python
  EXPECT_EQ(one("min", "[1.0,1]"), "1.0");
  EXPECT_EQ(one("max", R"(["b","a"])"), R"("b")");
  EXPECT_EQ(one("min", "[[2],[1,5]]"), "[1,5]");
  EXPECT_EQ(one("max", "[]"), "error INVALID_ARGUMENT: max: the array is empty");
  EXPECT_EQ(one("min", "3"),
            "error INVALID_ARGUMENT: min: with one argument, expected an array, got int");
}

TEST_F(FunctionsTest, CountByCountsStringFormsInFirstSeenOrder) {
  EXPECT_EQ(r("count_by", "{}", R"("the")"), R"({"the":1})");
  EXPECT_EQ(r("count_by", R"({"the":1,"cat":1})", R"("the")"), R"({"the":2,"cat":1})");
  EXPECT_EQ(r("count_by", R"({"the":1})", "1"), R"({"the":1,"1":1})");
  EXPECT_EQ(r("count_by", R"({"1":1})", "1.0"), R"({"1":1,"1.0":1})");  // as to_string
  EXPECT_EQ(r("count_by", "{}", "null"), R"({"null":1})");
  // No `start`: the state is the first element, which is counted too.
  EXPECT_EQ(r("count_by", R"("the")", R"("cat")"), R"({"the":1,"cat":1})");
  EXPECT_EQ(r("count_by", R"("the")", R"("the")"), R"({"the":2})");
  // With a path.
  const std::string_view by_user = R"({"path":"user"})";
  EXPECT_EQ(r("count_by", R"({"ann":2})", R"({"user":"ann"})", by_user), R"({"ann":3})");
  EXPECT_EQ(r("count_by", "{}", R"({"x":1})", by_user), R"({"null":1})");
  EXPECT_EQ(r("count_by", R"({"a":"x"})", R"("a")"),
            "error INVALID_ARGUMENT: count_by: the count of \"a\" must be an int, got string");
}

TEST_F(FunctionsTest, CollectListAppends) {
  EXPECT_EQ(r("collect_list", "[]", "1"), "[1]");
  EXPECT_EQ(r("collect_list", R"([1,"a"])", "[2]"), R"([1,"a",[2]])");
  EXPECT_EQ(r("collect_list", "1", "2"), "[1,2]");  // no `start`: acc is the first element
}

}  // namespace
}  // namespace sluice::host
