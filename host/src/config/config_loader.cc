#include "config/config_loader.hpp"

#include "config/detail/toml_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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
    out.value =
        ConfigDocument{file, absolute_dir_of(file), std::move(root), {}, false, {file}, {}, {}};
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

Diagnosed<std::vector<std::filesystem::path>> expand_config_paths(
    const std::vector<std::filesystem::path>& paths) {
  Diagnosed<std::vector<std::filesystem::path>> out;
  std::vector<std::filesystem::path> files;
  for (const auto& path : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) {
      out.diagnostics.push_back(
          error_at(SourcePos{path.string(), 0, 0}, "",
                   fmt::format("cannot read config {}: {}", path.string(),
                               ec ? ec.message() : std::string("no such file or directory"))));
      continue;
    }
    if (!std::filesystem::is_directory(status)) {
      files.push_back(path);
      continue;
    }
    // A config directory: its *.toml files (not its subdirectories'), by name.
    std::vector<std::filesystem::path> in_dir;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end;
         it.increment(ec)) {
      const auto& p = it->path();
      std::error_code type_ec;
      if (p.extension() == ".toml" && !p.filename().string().starts_with(".") &&
          !it->is_directory(type_ec)) {
        in_dir.push_back(p);
      }
    }
    if (ec) {
      out.diagnostics.push_back(
          error_at(SourcePos{path.string(), 0, 0}, "",
                   fmt::format("cannot read config directory: {}", ec.message())));
      continue;
    }
    if (in_dir.empty()) {
      out.diagnostics.push_back(
          error_at(SourcePos{path.string(), 0, 0}, "", "config directory has no *.toml file"));
      continue;
    }
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  if (files.empty() && out.diagnostics.empty()) {
    out.diagnostics.push_back(error_at(SourcePos{}, "", "no config file given"));
  }
  if (out.diagnostics.empty()) out.value = std::move(files);
  return out;
}

namespace {

// Where a top-level key is written, for "given twice" errors.
SourcePos written_at(const toml::node& node, const std::filesystem::path& file) {
  return pos_of(file.string(), node.source());
}

std::string where_text(const SourcePos& p) {
  return p.line > 0 ? fmt::format("{}:{}:{}", p.file, p.line, p.column) : p.file;
}

// Moves the top level of `from` (read from `file`) into `into`; findings into `diags`.
void merge_into(ConfigDocument& into, toml::table&& from, const std::filesystem::path& file,
                std::vector<Diagnostic>& diags) {
  static constexpr std::array<std::string_view, 3> k_sections{"sources", "operators", "sinks"};
  // Every node id already in `into`, with where it is written.
  auto find_node = [&](std::string_view id) -> const toml::key* {
    for (std::string_view s : k_sections) {
      if (auto* t = into.root.get_as<toml::table>(s)) {
        if (auto it = t->find(id); it != t->end()) return &it->first;
      }
    }
    return nullptr;
  };
  for (auto&& [key, node] : from) {
    const std::string name(key.str());
    const bool section = std::find(k_sections.begin(), k_sections.end(), name) != k_sections.end();
    toml::node* existing = into.root.get(name);
    if (section && node.is_table() && (!existing || existing->is_table())) {
      if (!existing) existing = &into.root.insert(name, toml::table{}).first->second;
      toml::table& target = *existing->as_table();
      for (auto&& [id, decl] : *node.as_table()) {
        if (const toml::key* first = find_node(id.str())) {
          diags.push_back(error_at(
              pos_of(file.string(), id.source()), "",
              fmt::format("node id '{}' is also given at {}; node ids are unique across every "
                          "config file",
                          id.str(), where_text(pos_of(into.source_name(), first->source())))));
          diags.back().node_id = std::string(id.str());
          diags.back().key.clear();
          continue;
        }
        target.insert(id, std::move(decl));
      }
      continue;
    }
    if (existing) {
      // [runtime], [admin], [checkpoint], plugin_dirs, name, [[tests]]: one file says it.
      diags.push_back(error_at(
          written_at(node, file), name,
          fmt::format("'{}' is also given at {}; a top-level key may be given in one config file "
                      "only",
                      name, where_text(written_at(*existing, into.source_name())))));
      continue;
    }
    into.root.insert(key, std::move(node));
  }
}

}  // namespace

Diagnosed<ConfigDocument> parse_config_files(const std::vector<std::filesystem::path>& paths) {
  Diagnosed<ConfigDocument> out;
  auto files = expand_config_paths(paths);
  out.diagnostics = std::move(files.diagnostics);
  if (!files.value) return out;
  std::optional<ConfigDocument> merged;
  for (const auto& file : *files.value) {
    auto parsed = parse_config_file(file);
    out.diagnostics.insert(out.diagnostics.end(), parsed.diagnostics.begin(),
                           parsed.diagnostics.end());
    if (!parsed.value) continue;
    if (!merged) {
      merged = std::move(*parsed.value);
      continue;
    }
    merged->files.push_back(file);
    merge_into(*merged, std::move(parsed.value->root), file, out.diagnostics);
  }
  if (merged && !out.has_errors()) out.value = std::move(*merged);
  return out;
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
      // Relative to the file the entry is written in (config files merge into one document).
      const auto& from = item.source().path;
      const std::filesystem::path base =
          from && !from->empty() ? absolute_dir_of(*from) : doc.base_dir;
      dirs.push_back(dir.is_absolute() ? dir.lexically_normal() : (base / dir).lexically_normal());
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
