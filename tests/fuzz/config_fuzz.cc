// Fuzz target: the TOML loader and the config validator (host/src/config/), against the
// in-tree plugins' real declarations, loaded once from the build's plugin directory
// (SLUICE_FUZZ_PLUGIN_DIR, or the directory compiled in).
//
// What must hold for any text: no crash, no hang, no unbounded memory; a config is valid
// exactly when no finding is an error; and every finding names the file and a line and
// column, as `sluiced validate` promises.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace host = sluice::host;

namespace {

host::PluginRegistry& registry() {
  static host::PluginRegistry instance;
  return instance;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  spdlog::set_level(spdlog::level::off);
  const char* env = std::getenv("SLUICE_FUZZ_PLUGIN_DIR");
  const std::filesystem::path dir = env != nullptr ? env : SLUICE_FUZZ_PLUGIN_DIR;
  host::PluginLoader loader(registry(), host::host_api_table());
  for (const auto& problem : loader.load_directory(dir)) {
    std::fprintf(stderr, "config_fuzz: %s\n", problem.message.c_str());
  }
  if (registry().find_node_type("map") == nullptr) {
    fail("no plugins", "core_ops did not load from " + dir.string());
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path file = "/fuzz/pipeline.toml";
  auto parsed = host::parse_config_string(text, file);
  std::vector<host::Diagnostic> findings = parsed.diagnostics;
  bool valid = false;
  if (parsed.ok()) {
    static_cast<void>(host::config_plugin_dirs(*parsed.value));
    auto validated = host::validate_config(*parsed.value, registry());
    valid = validated.ok();
    if (valid == validated.has_errors()) {
      fail("valid and has errors disagree", std::to_string(validated.diagnostics.size()));
    }
    findings.insert(findings.end(), validated.diagnostics.begin(), validated.diagnostics.end());
  }
  for (const auto& d : findings) {
    if (d.pos.file != file.string() || d.pos.line == 0 || d.pos.column == 0) {
      fail("a finding without file:line:col", d.to_string());
    }
  }
  return 0;
}
