// Parsing and rendering of to_files's path template (path_template.hpp).
#include "path_template.hpp"

#include <array>
#include <cstdio>

namespace sluice::files {

namespace {

/// The checks on one '/'-separated segment of the template's text; "" when fine.
std::string check_segment(std::string_view seg, std::string_view whole) {
  if (seg.empty()) {
    return "has an empty path segment (\"//\", or a '/' at the end) in \"" + std::string(whole) +
           "\"";
  }
  if (seg == "." || seg == "..") {
    return "must stay inside `dir`: the segment \"" + std::string(seg) + "\" is not allowed";
  }
  if (seg.front() == '.') {
    return "segments must not start with '.' (\"" + std::string(seg) +
           "\"): hidden names are the in-progress part files'";
  }
  return {};
}

void append_number(std::string& out, int value, int width) {
  char digits[16];
  const int n = std::snprintf(digits, sizeof digits, "%0*d", width, value);
  out.append(digits, static_cast<size_t>(n));
}

/// One allowed strftime field of `t`, as strftime renders it in the C locale (digits only).
void append_field(std::string& out, char field, const std::tm& t) {
  switch (field) {
    case 'Y': append_number(out, t.tm_year + 1900, 4); return;
    case 'y': append_number(out, (t.tm_year + 1900) % 100, 2); return;
    case 'm': append_number(out, t.tm_mon + 1, 2); return;
    case 'd': append_number(out, t.tm_mday, 2); return;
    case 'H': append_number(out, t.tm_hour, 2); return;
    case 'M': append_number(out, t.tm_min, 2); return;
    case 'S': append_number(out, t.tm_sec, 2); return;
    case 'j': append_number(out, t.tm_yday + 1, 3); return;
    case 'u': append_number(out, t.tm_wday == 0 ? 7 : t.tm_wday, 1); return;
    case 'w': append_number(out, t.tm_wday, 1); return;
    default: {
      // G, V, U, W: ISO and week numbers, left to strftime (digits only as well).
      const std::array<char, 3> fmt{'%', field, '\0'};
      char buf[16];
      const size_t n = std::strftime(buf, sizeof buf, fmt.data(), &t);
      out.append(buf, n);
      return;
    }
  }
}

}  // namespace

std::variant<PathTemplate, std::string> PathTemplate::parse(std::string_view text) {
  PathTemplate t;
  if (text.empty()) return std::string("must not be empty");
  if (text.front() == '/') {
    return "must be relative to `dir` (got the absolute path \"" + std::string(text) + "\")";
  }
  if (text.find('\\') != std::string_view::npos || text.find('\0') != std::string_view::npos) {
    return std::string("must not hold '\\' or NUL bytes");
  }
  // Segment checks on the text as written: placeholders never render '/', "" or a leading '.'.
  for (size_t from = 0;;) {
    const size_t slash = text.find('/', from);
    const std::string problem = check_segment(
        text.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from),
        text);
    if (!problem.empty()) return problem;
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  std::string literal;
  auto flush_literal = [&] {
    if (!literal.empty()) t.pieces_.push_back({Kind::literal, std::move(literal)});
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 1 == text.size()) return std::string("ends with a lone '%' (write %% for '%')");
      const char f = text[++i];
      if (f == '%') {
        literal.push_back('%');
        continue;
      }
      if (k_time_fields.find(f) == std::string_view::npos) {
        return "the strftime field %" + std::string(1, f) +
               " is not allowed (allowed: %Y %y %m %d %H %M %S %j %G %V %U %W %u %w and %%: "
               "fields that render digits only, so a rendered path cannot leave `dir`)";
      }
      flush_literal();
      t.pieces_.push_back({Kind::time, std::string(1, f)});
      t.uses_time_ = true;
    } else if (c == '{') {
      const size_t close = text.find('}', i);
      if (close == std::string_view::npos) return std::string("has a '{' without its '}'");
      const std::string_view name = text.substr(i + 1, close - i - 1);
      flush_literal();
      if (name == "key") {
        t.pieces_.push_back({Kind::key, {}});
        t.uses_key_ = true;
      } else if (name == "task") {
        t.pieces_.push_back({Kind::task, {}});
      } else {
        return "has the unknown placeholder {" + std::string(name) + "} (known: {key}, {task})";
      }
      i = close;
    } else if (c == '}') {
      return std::string("has a '}' without its '{'");
    } else {
      literal.push_back(c);
    }
  }
  flush_literal();
  if (t.pieces_.empty()) return std::string("must not be empty");
  // The extension: the last literal piece's tail from its last '.', within the file name.
  Piece& last = t.pieces_.back();
  if (last.kind == Kind::literal) {
    const size_t dot = last.text.rfind('.');
    const size_t slash = last.text.rfind('/');
    // (A '.' cannot start a segment, so the name before the extension is never empty.)
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      t.extension_ = last.text.substr(dot);
      last.text.resize(dot);
      if (last.text.empty()) t.pieces_.pop_back();
    }
  }
  return t;
}

std::string PathTemplate::time_text(const std::tm& t) const {
  std::string out;
  for (const Piece& p : pieces_) {
    if (p.kind == Kind::time) append_field(out, p.text[0], t);
  }
  return out;
}

std::string PathTemplate::render(std::string_view key_segment, uint32_t task,
                                 const std::tm& t) const {
  std::string out;
  for (const Piece& p : pieces_) {
    switch (p.kind) {
      case Kind::literal: out.append(p.text); break;
      case Kind::key: out.append(key_segment); break;
      case Kind::task: out.append(std::to_string(task)); break;
      case Kind::time: append_field(out, p.text[0], t); break;
    }
  }
  return out;
}

std::string key_segment(std::string_view key) {
  if (key.empty()) return "__empty__";
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == '%' || (i == 0 && c == '.')) {
      out.push_back('%');
      out.push_back(k_hex[c >> 4]);
      out.push_back(k_hex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace sluice::files
