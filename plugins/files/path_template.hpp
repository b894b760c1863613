// The `path` template of to_files: literal text, `{key}`, `{task}` and a small set of
// strftime fields, parsed once at create (and at validate, for the errors).
//
// Why a parsed template rather than strftime over the whole string: the rendered path must
// stay inside `dir` whatever the element holds. Literal segments are checked once here (no
// absolute path, no "." or ".." segment, no hidden names); `{key}` is percent-encoded into
// one safe path segment (key_segment); the strftime fields allowed render digits only, so no
// rendered part can add a '/' or a "..".
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::files {

class PathTemplate {
 public:
  /// The strftime fields a template may use: each renders digits only.
  static constexpr std::string_view k_time_fields = "YymdHMSjGVUWuw";

  /// Parses `text`; the error names the problem ("unknown placeholder {x} ...").
  static std::variant<PathTemplate, std::string> parse(std::string_view text);

  [[nodiscard]] bool uses_key() const noexcept { return uses_key_; }
  [[nodiscard]] bool uses_time() const noexcept { return uses_time_; }
  /// The extension of the file name (".jsonl"), kept last in part names; "" when the name
  /// has none or it is not literal.
  [[nodiscard]] const std::string& extension() const noexcept { return extension_; }

  /// The time fields of `t` alone, in template order ("2026|12|02|14" without the
  /// separators): equal for two instants exactly when they share a time bucket.
  [[nodiscard]] std::string time_text(const std::tm& t) const;
  /// The relative path for `key_segment` (already encoded by key_segment()), task `task` and
  /// time `t`, without the extension.
  [[nodiscard]] std::string render(std::string_view key_segment, uint32_t task,
                                   const std::tm& t) const;

 private:
  enum class Kind { literal, key, task, time };
  struct Piece {
    Kind kind;
    std::string text;  // literal: the text; time: the field letter
  };
  std::vector<Piece> pieces_;  // the extension is cut off the last literal piece
  std::string extension_;
  bool uses_key_ = false;
  bool uses_time_ = false;
};

/// `key` as one path segment that cannot leave its directory: '/', '\\', '%', control bytes
/// and a leading '.' are percent-encoded ("../etc" becomes "%2E.%2Fetc"), so distinct keys
/// stay distinct; "" becomes "__empty__".
std::string key_segment(std::string_view key);

}  // namespace sluice::files
