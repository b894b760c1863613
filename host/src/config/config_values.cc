#include "config/config_values.hpp"

#include "config/detail/toml_util.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace sluice::host {

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {

bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }

}  // namespace

Interpolated interpolate(std::string_view text, const EnvLookup& env) {
  Interpolated out;
  out.text.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '$' || i + 1 >= text.size() || (text[i + 1] != '$' && text[i + 1] != '{')) {
      out.text.push_back(c);
      continue;
    }
    out.changed = true;
    if (text[i + 1] == '$') {  // "$$" is one literal '$'
      out.text.push_back('$');
      ++i;
      continue;
    }
    const size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      out.error = "'${' is not closed by '}'; write '$${' for a literal '${'";
      return out;
    }
    const std::string_view inside = text.substr(i + 2, close - i - 2);
    const size_t sep = inside.find(":-");
    const std::string_view name = inside.substr(0, sep);
    if (name.empty() || !name_start(name[0]) ||
        std::find_if_not(name.begin(), name.end(), [](char ch) {
          return name_start(ch) || (ch >= '0' && ch <= '9');
        }) != name.end()) {
      out.error = fmt::format(
          "'${{{}}}' is not a variable reference: write ${{NAME}} or ${{NAME:-default}} (NAME "
          "of letters, digits and '_'), or '$${{' for a literal '${{'",
          inside.substr(0, std::min<size_t>(inside.size(), 64)));
      return out;
    }
    std::optional<std::string> value = env(name);
    if (sep != std::string_view::npos) {
      if (!value || value->empty()) value = std::string(inside.substr(sep + 2));
    } else if (!value) {
      out.error = fmt::format(
          "environment variable '{}' is not set; set it, or give a default: ${{{}:-DEFAULT}}", name,
          name);
      return out;
    }
    out.text += *value;
    i = close;
  }
  return out;
}

namespace {

using config_detail::pos_of;

bool is_lua_key(std::string_view key) {
  return key == "lua" || (key.size() > 4 && key.substr(key.size() - 4) == "_lua");
}

// The file a node was read from (several config files merge into one document).
std::string file_of(const toml::node& node, const ConfigDocument& doc) {
  const auto& path = node.source().path;
  return path ? *path : doc.source_name();
}

// A string node holding `text` at `region`'s position, so later findings on the key keep
// their file:line:col. toml++ has no public way to set a node's position, and it does not
// copy positions; but it moves them, and a parsed node has one: parse a placeholder at that
// line and column, then put the text in.
toml::value<std::string> string_node_at(std::string text, const toml::source_region& region) {
  const uint32_t line = region.begin.line;
  const uint32_t column = region.begin.column;
  if (line == 0) return toml::value<std::string>(std::move(text));
  // "k" + spaces + "= " puts the value at column (spaces + 4).
  std::string placeholder(line - 1, '\n');
  placeholder += "k";
  placeholder.append(column > 4 ? column - 4 : 0, ' ');
  placeholder += "= \"\"\n";
  try {
    toml::table parsed =
        region.path ? toml::parse(placeholder, *region.path) : toml::parse(placeholder);
    if (auto* v = parsed.get_as<std::string>("k")) {
      toml::value<std::string> out(std::move(*v));
      out.get() = std::move(text);
      return out;
    }
  } catch (const toml::parse_error&) {
  }
  return toml::value<std::string>(std::move(text));
}

class Resolver {
 public:
  Resolver(ConfigDocument& doc, const EnvLookup& env) : doc_(doc), env_(env) {}

  std::vector<Diagnostic> run() && {
    for (auto&& [key, node] : doc_.root) {
      if (key.str() == "tests") continue;  // injected records and expectations: literal
      // A named copy: clang before 16 (the fuzz build's clang 14) refuses a lambda that
      // captures a structured binding.
      const std::string name(key.str());
      path_.push_back(name);
      visit(node, [&](toml::value<std::string>&& replacement) {
        doc_.root.insert_or_assign(name, std::move(replacement));
      });
      path_.pop_back();
    }
    return std::move(diags_);
  }

 private:
  // Puts a new node where the visited one is (a secret table becomes its text). Not a
  // template parameter: each level would instantiate visit again with a new lambda type.
  using Replace = std::function<void(toml::value<std::string>&&)>;

  void visit(toml::node& node, const Replace& replace) {
    if (auto* s = node.as_string()) {
      interpolate_string(*s);
    } else if (auto* table = node.as_table()) {
      if (auto secret = secret_reference(*table)) {
        if (auto text = read_secret(*table, *secret)) {
          doc_.secrets.push_back(*text);
          replace(string_node_at(std::move(*text), table->source()));
        }
        return;
      }
      for (auto&& [key, child] : *table) {
        if (is_lua_key(key.str())) continue;  // Lua code: never interpolated
        const std::string name(key.str());
        path_.push_back(name);
        visit(child, [&](toml::value<std::string>&& replacement) {
          table->insert_or_assign(name, std::move(replacement));
        });
        path_.pop_back();
      }
    } else if (auto* array = node.as_array()) {
      for (size_t i = 0; i < array->size(); ++i) {
        path_.push_back(fmt::format("{}", i));
        visit(*array->get(i), [&](toml::value<std::string>&& replacement) {
          array->replace(array->cbegin() + static_cast<std::ptrdiff_t>(i), std::move(replacement));
        });
        path_.pop_back();
      }
    }
  }

  void interpolate_string(toml::value<std::string>& s) {
    if (s.get().find('$') == std::string::npos) return;
    Interpolated r = interpolate(s.get(), env_);
    if (!r.error.empty()) {
      error(s, r.error);
      return;
    }
    if (!r.changed) return;
    s.get() = std::move(r.text);  // in place: the node keeps its position
    doc_.interpolated.insert(&s);
  }

  // Which secret key a table names: a table of exactly one key, one of the three.
  static std::optional<std::string_view> secret_reference(const toml::table& table) {
    if (table.size() != 1) return std::nullopt;
    const std::string_view key = table.begin()->first.str();
    for (std::string_view k : {k_secret_file_key, k_secret_env_key, k_secret_credential_key}) {
      if (key == k) return k;
    }
    return std::nullopt;
  }

  std::optional<std::string> read_secret(const toml::table& table, std::string_view kind) {
    const toml::node& arg = table.begin()->second;
    const auto* name = arg.as_string();
    if (!name || name->get().empty()) {
      error(table, fmt::format("'{}' takes a non-empty string", kind));
      return std::nullopt;
    }
    const std::string& what = name->get();
    if (kind == k_secret_env_key) {
      auto value = env_(what);
      if (!value) {
        error(table, fmt::format("secret_env: environment variable '{}' is not set", what));
        return std::nullopt;
      }
      return value;
    }
    std::filesystem::path file;
    if (kind == k_secret_credential_key) {
      if (what.find('/') != std::string::npos || what.find("..") != std::string::npos) {
        error(table, fmt::format("secret_credential '{}': a credential name has no '/' and no "
                                 "'..' (systemd's LoadCredential=NAME:PATH names it)",
                                 what));
        return std::nullopt;
      }
      auto dir = env_("CREDENTIALS_DIRECTORY");
      if (!dir || dir->empty()) {
        error(table,
              fmt::format("secret_credential '{}': $CREDENTIALS_DIRECTORY is not set (systemd "
                          "sets it for a unit with LoadCredential=)",
                          what));
        return std::nullopt;
      }
      file = std::filesystem::path(*dir) / what;
    } else {
      file = what;
      if (file.is_relative()) {
        std::error_code ec;
        const auto abs = std::filesystem::absolute(file_of(table, doc_), ec);
        file = (ec ? doc_.base_dir : abs.parent_path()) / file;
      }
    }
    return read_secret_file(table, kind, file);
  }

  std::optional<std::string> read_secret_file(const toml::table& at, std::string_view kind,
                                              const std::filesystem::path& file) {
    auto fail = [&](const std::string& why) {
      error(at, fmt::format("{}: cannot read secret file {}: {}", kind, file.string(), why));
      return std::nullopt;
    };
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return fail(std::strerror(errno));
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return fail("not a regular file");
    if (static_cast<uint64_t>(st.st_size) > k_max_secret_bytes) {
      return fail(fmt::format("{} bytes, more than the {} a secret may have",
                              static_cast<uint64_t>(st.st_size), k_max_secret_bytes));
    }
    std::string text;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        return fail(std::strerror(errno));
      }
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > k_max_secret_bytes) {
        return fail(fmt::format("more than the {} bytes a secret may have", k_max_secret_bytes));
      }
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
    return text;
  }

  void error(const toml::node& at, std::string message) {
    Diagnostic d;
    d.severity = Severity::error;
    d.pos = pos_of(file_of(at, doc_), at.source());
    // [sources.ID] key... -> node ID, the rest as the key.
    size_t first = 0;
    if (path_.size() >= 2 &&
        (path_[0] == "sources" || path_[0] == "operators" || path_[0] == "sinks")) {
      d.node_id = path_[1];
      first = 2;
    }
    for (size_t i = first; i < path_.size(); ++i) {
      if (!d.key.empty()) d.key += '.';
      d.key += path_[i];
    }
    d.message = std::move(message);
    diags_.push_back(std::move(d));
  }

  ConfigDocument& doc_;
  const EnvLookup& env_;
  std::vector<std::string> path_;  // keys (and array indices) from the root to the value
  std::vector<Diagnostic> diags_;
};

}  // namespace

std::vector<Diagnostic> resolve_config_values(ConfigDocument& doc, const EnvLookup& env) {
  return Resolver(doc, env).run();
}

}  // namespace sluice::host
