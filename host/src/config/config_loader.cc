#include "config/config_loader.hpp"

#include "config/detail/toml_util.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

namespace sluice::host {
namespace {

using config_detail::pos_of;
using config_detail::toml_type_name;

Diagnostic error_at(SourcePos pos, std::string key, std::string message) {
  return Diagnostic{Severity::error, std::move(pos), "", std::move(key), std::move(message)};
}

std::filesystem::path absolute_dir_of(const std::filesystem::path& file) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(file, ec);
  return (ec ? file : abs).parent_path().lexically_normal();
}

}  // namespace

Diagnosed<ConfigDocument> parse_config_string(std::string_view text,
                                              const std::filesystem::path& file) {
  Diagnosed<ConfigDocument> out;
  const std::string name = file.string();
  try {
    toml::table root = toml::parse(text, name);
    out.value = ConfigDocument{file, absolute_dir_of(file), std::move(root), {}, false};
  } catch (const toml::parse_error& err) {
    out.diagnostics.push_back(error_at(pos_of(name, err.source()), "",
                                       fmt::format("invalid TOML: {}", err.description())));
  }
  return out;
}

Diagnosed<ConfigDocument> parse_config_file(const std::filesystem::path& file) {
  // Read the file ourselves so "cannot open" says why (errno), instead of
  // toml++'s generic message.
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    Diagnosed<ConfigDocument> out;
    out.diagnostics.push_back(
        error_at(SourcePos{file.string(), 0, 0}, "",
                 fmt::format("cannot read config file: {}", std::strerror(errno))));
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config_string(text.str(), file);
}

Diagnosed<std::vector<std::filesystem::path>> config_plugin_dirs(const ConfigDocument& doc) {
  Diagnosed<std::vector<std::filesystem::path>> out;
  const std::string name = doc.source_name();
  const toml::node* node = doc.root.get("plugin_dirs");
  std::vector<std::filesystem::path> dirs;
  if (node) {
    const toml::array* array = node->as_array();
    if (!array) {
      out.diagnostics.push_back(
          error_at(pos_of(name, node->source()), "plugin_dirs",
                   fmt::format("expected an array of directory paths (strings), got {}; write "
                               "plugin_dirs = [\"./plugins\"]",
                               toml_type_name(*node))));
      return out;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = (*array)[i];
      const auto* text = item.as_string();
      if (!text) {
        out.diagnostics.push_back(
            error_at(pos_of(name, item.source()), "plugin_dirs",
                     fmt::format("item {}: expected a directory path (string), got {}", i,
                                 toml_type_name(item))));
        continue;
      }
      if (text->get().empty()) {
        out.diagnostics.push_back(error_at(pos_of(name, item.source()), "plugin_dirs",
                                           fmt::format("item {}: empty directory path", i)));
        continue;
      }
      std::filesystem::path dir(text->get());
      dirs.push_back(dir.is_absolute() ? dir.lexically_normal()
                                       : (doc.base_dir / dir).lexically_normal());
    }
  }
  if (out.diagnostics.empty()) out.value = std::move(dirs);
  return out;
}

std::vector<SourcePos> config_plugin_dir_positions(const ConfigDocument& doc) {
  std::vector<SourcePos> out;
  const toml::node* node = doc.root.get("plugin_dirs");
  const toml::array* array = node ? node->as_array() : nullptr;
  if (!array) return out;
  const std::string name = doc.source_name();
  for (const toml::node& item : *array) out.push_back(pos_of(name, item.source()));
  return out;
}

}  // namespace sluice::host
