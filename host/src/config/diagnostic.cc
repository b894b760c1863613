#include "config/diagnostic.hpp"

#include "common/log_fields.hpp"
#include "config/detail/suggest.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace sluice::host {
namespace {

// Every word (a run without spaces) over this many bytes is shown shortened: a name
// from the input can be megabytes long, and each message that quotes it would carry all
// of it. Longer than any path (PATH_MAX is 4096), so real words are never cut.
constexpr size_t k_max_word_length = 4096;

std::string shorten_long_words(const std::string& message) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    const size_t space = std::min(message.find(' ', at), message.size());
    const std::string_view word = std::string_view(message).substr(at, space - at);
    if (word.size() > k_max_word_length) {
      // Quotes and punctuation around the name stay: "'NAME';" -> "'NAME…(N bytes)';".
      constexpr std::string_view k_around = "'\"`;:,.?!()[]";
      const size_t lead = std::min(word.find_first_not_of(k_around), word.size());
      const size_t last = word.find_last_not_of(k_around);
      const size_t tail = last == std::string_view::npos || last < lead ? word.size() : last + 1;
      out += word.substr(0, lead);
      out += config_detail::shorten_name(word.substr(lead, tail - lead));
      out += word.substr(tail);
    } else {
      out += word;
    }
    if (space < message.size()) out.push_back(' ');
    at = space + 1;
  }
  // A huge name with spaces in it is many short words: cut the whole message then.
  constexpr size_t k_max_message = size_t{64} * 1024;
  if (out.size() > k_max_message) {
    const size_t total = out.size();
    size_t cut = k_max_message;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += fmt::format("\u2026(message cut, {} bytes)", total);
  }
  return out;
}

}  // namespace

std::string Diagnostic::to_string() const {
  std::string out = pos.file;
  // A position of 0 means "unknown": print only what is known, so the line
  // still starts with the file and stays clickable in editors.
  if (pos.line > 0) {
    out += fmt::format(":{}", pos.line);
    if (pos.column > 0) out += fmt::format(":{}", pos.column);
  }
  // Without a file (a plugin that is not in a configured directory) the line starts
  // with the severity.
  if (!out.empty()) out += ": ";
  out += severity == Severity::error ? "error: " : "warning: ";
  if (!node_id.empty()) out += fmt::format("node '{}': ", config_detail::shorten_name(node_id));
  if (!key.empty()) out += fmt::format("key '{}': ", config_detail::shorten_name(key));
  out += message.size() > k_max_word_length ? shorten_long_words(message) : message;
  return out;
}

void log_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    const auto level = d.severity == Severity::error ? spdlog::level::err : spdlog::level::warn;
    if (d.node_id.empty()) {
      spdlog::log(level, "{}", d.to_string());
    } else {
      log_with(level, {{"node", d.node_id}}, "{}", d.to_string());
    }
  }
}

}  // namespace sluice::host
