// What the loader does before validation: `${VAR}` interpolation, secrets from files,
// variables and systemd credentials, several files merged into one document; and how
// secrets are redacted (graph/redact.hpp). Real files in a temporary directory.
#include "config/config_values.hpp"
#include "config/config_validator.hpp"
#include "graph/graph_export.hpp"
#include "graph/redact.hpp"
#include "test_plugin.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

namespace fs = std::filesystem;

class ConfigValues : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("sluice_config_values_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    testing::register_test_plugin(registry_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  EnvLookup env() const {
    return [this](std::string_view name) -> std::optional<std::string> {
      auto it = env_.find(std::string(name));
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
  }

  // Parse + resolve; the findings of both.
  struct Resolved {
    std::optional<ConfigDocument> doc;
    std::vector<Diagnostic> diags;
  };
  Resolved resolve(const std::string& text) {
    const fs::path file = write("p.toml", text);
    auto parsed = parse_config_file(file);
    EXPECT_TRUE(parsed.ok());
    Resolved out;
    out.diags = resolve_config_values(*parsed.value, env());
    out.doc = std::move(*parsed.value);
    return out;
  }

  static std::string all(const std::vector<Diagnostic>& diags) {
    std::string out;
    for (const auto& d : diags) out += d.to_string() + "\n";
    return out;
  }

  fs::path dir_;
  std::map<std::string, std::string> env_;
  PluginRegistry registry_;
};

TEST_F(ConfigValues, InterpolateText) {
  env_ = {{"HOST", "kafka1"}, {"EMPTY", ""}};
  EXPECT_EQ(interpolate("${HOST}:9092", env()).text, "kafka1:9092");
  EXPECT_EQ(interpolate("${PORT:-9092}", env()).text, "9092");
  EXPECT_EQ(interpolate("${EMPTY:-x}", env()).text, "x");  // set but empty: the default
  EXPECT_EQ(interpolate("${EMPTY}", env()).text, "");
  EXPECT_EQ(interpolate("$${HOST} costs $$5", env()).text, "${HOST} costs $5");
  EXPECT_EQ(interpolate("^a.*$", env()).text, "^a.*$");  // a lone '$' stays
  EXPECT_FALSE(interpolate("^a.*$", env()).changed);
  EXPECT_NE(interpolate("${MISSING}", env()).error.find("'MISSING' is not set"), std::string::npos);
  EXPECT_NE(interpolate("${HOST", env()).error.find("not closed"), std::string::npos);
  EXPECT_NE(interpolate("${9x}", env()).error.find("not a variable reference"), std::string::npos);
}

TEST_F(ConfigValues, InterpolatesEveryStringButLuaAndTests) {
  env_ = {{"WHO", "world"}, {"N", "3"}};
  auto r = resolve(R"(name = "p-${WHO}"
[sources.s]
type = "from_iterable"
values = ["hello ${WHO}", { nested = ["${WHO}"] }]
[operators.m]
type = "map"
inputs = ["s"]
lua = 'function(x) return "${WHO}" end'
[operators.w]
type = "window"
inputs = ["m"]
n = "${N}"
[sinks.out]
type = "print"
inputs = ["w"]
prefix = { lua = "${WHO}", other = "${WHO}" }
[[tests]]
name = "${WHO}"
)");
  ASSERT_TRUE(r.diags.empty()) << all(r.diags);
  const toml::table& root = r.doc->root;
  EXPECT_EQ(root["name"].value<std::string>(), "p-world");
  EXPECT_EQ(root["sources"]["s"]["values"][0].value<std::string>(), "hello world");
  EXPECT_EQ(root["sources"]["s"]["values"][1]["nested"][0].value<std::string>(), "world");
  // Lua code is never interpolated, at any depth; neither are the [[tests]].
  EXPECT_EQ(root["operators"]["m"]["lua"].value<std::string>(),
            R"(function(x) return "${WHO}" end)");
  EXPECT_EQ(root["sinks"]["out"]["prefix"]["lua"].value<std::string>(), "${WHO}");
  EXPECT_EQ(root["sinks"]["out"]["prefix"]["other"].value<std::string>(), "world");
  EXPECT_EQ(root["tests"][0]["name"].value<std::string>(), "${WHO}");
}

TEST_F(ConfigValues, UnsetVariableIsAnErrorAtTheString) {
  auto r = resolve("[sources.s]\ntype = \"from_iterable\"\nvalues = [\"a\",   \"${NOPE}\"]\n");
  ASSERT_EQ(r.diags.size(), 1u) << all(r.diags);
  const Diagnostic& d = r.diags[0];
  EXPECT_EQ(d.pos.file, (dir_ / "p.toml").string());
  EXPECT_EQ(d.pos.line, 3u);
  EXPECT_EQ(d.pos.column, 18u);
  EXPECT_EQ(d.node_id, "s");
  EXPECT_EQ(d.key, "values.1");
  EXPECT_NE(d.message.find("environment variable 'NOPE' is not set"), std::string::npos);
}

TEST_F(ConfigValues, NumberFromVariableIsParsedByTheDeclaredType) {
  env_ = {{"N", "4"}, {"BAD", "four"}, {"MS", "250"}};
  const std::string text = R"([sources.s]
type = "from_iterable"
values = [1]
[operators.w]
type = "window"
inputs = ["s"]
n = "${N}"
interval_ms = "${MS}"
[sinks.out]
type = "print"
inputs = ["w"]
)";
  auto r = resolve(text);
  ASSERT_TRUE(r.diags.empty()) << all(r.diags);
  auto v = validate_config(*r.doc, registry_);
  ASSERT_TRUE(v.ok()) << all(v.diagnostics);
  EXPECT_EQ(v.value->find("w")->config.get("n")->as_int(), 4);
  EXPECT_EQ(v.value->find("w")->config.get("interval_ms")->as_int(), 250);

  // A literal string stays a type error; an interpolated one that does not parse says so.
  r = resolve(text + "\n[operators.w2]\ntype = \"window\"\ninputs = [\"s\"]\nn = \"${BAD}\"\n");
  ASSERT_TRUE(r.diags.empty()) << all(r.diags);
  v = validate_config(*r.doc, registry_);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(all(v.diagnostics)
                .find(":16:5: error: node 'w2': key 'n': expected int; the value "
                      "after ${...} interpolation does not parse"),
            std::string::npos)
      << all(v.diagnostics);
}

TEST_F(ConfigValues, SecretFromFileEnvAndCredential) {
  write("secrets/kafka.pass", "hunter2\n");
  write("creds/db.pass", "s3cret");
  env_ = {{"API", "tok-123"}, {"CREDENTIALS_DIRECTORY", (dir_ / "creds").string()}};
  auto r = resolve(R"([sources.s]
type = "from_iterable"
values = [{ secret_file = "secrets/kafka.pass" }, { secret_env = "API" },
          { secret_credential = "db.pass" }, { secret_file = "x", other = 1 }]
)");
  ASSERT_TRUE(r.diags.empty()) << all(r.diags);
  const toml::node& values = *r.doc->root["sources"]["s"]["values"].node();
  EXPECT_EQ((*values.as_array())[0].value<std::string>(), "hunter2");  // newline stripped
  EXPECT_EQ((*values.as_array())[1].value<std::string>(), "tok-123");
  EXPECT_EQ((*values.as_array())[2].value<std::string>(), "s3cret");
  // A table with other keys is not a secret reference.
  EXPECT_TRUE((*values.as_array())[3].is_table());
  EXPECT_EQ(r.doc->secrets, (std::vector<std::string>{"hunter2", "tok-123", "s3cret"}));
  // The new string keeps the table's position, for later findings on it.
  EXPECT_EQ((*values.as_array())[0].source().begin.line, 3u);
  EXPECT_EQ((*values.as_array())[0].source().begin.column, 11u);
}

TEST_F(ConfigValues, SecretErrorsNeverShowTheContent) {
  write("big.pass", std::string(k_max_secret_bytes + 1, 'x'));
  fs::create_directories(dir_ / "adir");
  env_ = {{"CREDENTIALS_DIRECTORY", dir_.string()}};
  auto r = resolve(R"([sources.s]
type = "from_iterable"
values = [{ secret_file = "missing.pass" }, { secret_file = "big.pass" },
          { secret_file = "adir" }, { secret_env = "UNSET" },
          { secret_credential = "../etc/passwd" }, { secret_credential = "a/b" }]
)");
  ASSERT_EQ(r.diags.size(), 6u) << all(r.diags);
  EXPECT_EQ(r.diags[0].pos.line, 3u);
  EXPECT_EQ(r.diags[0].pos.column, 11u);
  EXPECT_NE(r.diags[0].message.find("No such file or directory"), std::string::npos);
  EXPECT_NE(r.diags[1].message.find("more than the 65536"), std::string::npos);
  EXPECT_NE(r.diags[2].message.find("not a regular file"), std::string::npos);
  EXPECT_NE(r.diags[3].message.find("'UNSET' is not set"), std::string::npos);
  EXPECT_NE(r.diags[4].message.find("no '/' and no '..'"), std::string::npos);
  EXPECT_NE(r.diags[5].message.find("no '/' and no '..'"), std::string::npos);
  EXPECT_EQ(all(r.diags).find("xxxx"), std::string::npos);
}

TEST_F(ConfigValues, CredentialNeedsCredentialsDirectory) {
  auto r = resolve("name = { secret_credential = \"p\" }\n");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags[0].key, "name");
  EXPECT_NE(r.diags[0].message.find("$CREDENTIALS_DIRECTORY is not set"), std::string::npos);
}

TEST_F(ConfigValues, SecretIsRedactedUnderAnInnocentKey) {
  write("p.pass", "hunter2\n");
  auto r = resolve(R"(name = "p"
[sources.s]
type = "from_iterable"
values = ["plain", { secret_file = "p.pass" }]
[sinks.out]
type = "print"
inputs = ["s"]
prefix = { secret_file = "p.pass" }
)");
  ASSERT_TRUE(r.diags.empty()) << all(r.diags);
  auto v = validate_config(*r.doc, registry_);
  ASSERT_TRUE(v.ok()) << all(v.diagnostics);
  GraphSpec& g = *v.value;
  g.secrets = r.doc->secrets;
  const std::string json = to_json(g);
  EXPECT_EQ(json.find("hunter2"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("values":["plain","<redacted>"])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("prefix":"<redacted>")"), std::string::npos) << json;
  EXPECT_EQ(redact_text("auth failed for hunter2 (hunter2)", g.secrets),
            "auth failed for <redacted> (<redacted>)");
  EXPECT_EQ(redact_text("nothing here", {""}), "nothing here");
}

TEST_F(ConfigValues, SeveralFilesMerge) {
  const fs::path a = write("conf.d/10-sources.toml",
                           "name = \"merged\"\n[sources.s]\ntype = \"from_iterable\"\n"
                           "values = [1]\n");
  write("conf.d/20-sinks.toml", "[sinks.out]\ntype = \"print\"\ninputs = [\"s\"]\n");
  write("conf.d/notes.txt", "not a config");
  write("conf.d/sub/30-ignored.toml", "[sinks.never]\n");
  auto files = expand_config_paths({dir_ / "conf.d"});
  ASSERT_TRUE(files.ok()) << all(files.diagnostics);
  EXPECT_EQ(*files.value, (std::vector<fs::path>{a, dir_ / "conf.d" / "20-sinks.toml"}));

  auto parsed = parse_config_files({dir_ / "conf.d"});
  ASSERT_TRUE(parsed.ok()) << all(parsed.diagnostics);
  auto v = validate_config(*parsed.value, registry_);
  ASSERT_TRUE(v.ok()) << all(v.diagnostics);
  EXPECT_EQ(v.value->name, "merged");
  ASSERT_EQ(v.value->nodes.size(), 2u);
  // Each node keeps its own file.
  EXPECT_EQ(v.value->find("out")->pos.file, (dir_ / "conf.d" / "20-sinks.toml").string());
  EXPECT_EQ(v.value->find("out")->pos.line, 1u);

  // A finding in the second file points into the second file.
  write("conf.d/20-sinks.toml", "[sinks.out]\ntype = \"print\"\ninputs = [\"nope\"]\n");
  parsed = parse_config_files({dir_ / "conf.d"});
  ASSERT_TRUE(parsed.ok());
  v = validate_config(*parsed.value, registry_);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(all(v.diagnostics).find((dir_ / "conf.d" / "20-sinks.toml").string() + ":3:"),
            std::string::npos)
      << all(v.diagnostics);
}

TEST_F(ConfigValues, DuplicatesAcrossFilesNameBothPlaces) {
  const fs::path a = write("a.toml",
                           "[runtime]\ntasks = 1\n[sources.s]\ntype = \"from_iterable\"\n"
                           "values = [1]\n");
  const fs::path b = write("b.toml",
                           "\n[operators.s]\ntype = \"map\"\ninputs = [\"s\"]\nfunction = \"x\"\n"
                           "[runtime]\ntasks = 2\n");
  auto parsed = parse_config_files({a, b});
  ASSERT_FALSE(parsed.ok());
  const std::string text = all(parsed.diagnostics);
  EXPECT_NE(text.find(fmt::format("{}:2:12: error: node 's': node id 's' is also given at {}:3:10",
                                  b.string(), a.string())),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(fmt::format("{}:6:1: error: key 'runtime': 'runtime' is also given at {}:1:1",
                                  b.string(), a.string())),
            std::string::npos)
      << text;

  auto missing = parse_config_files({dir_ / "nope.toml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(all(missing.diagnostics).find("nope.toml: error: cannot read config"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::host
