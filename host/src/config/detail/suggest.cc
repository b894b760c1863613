#include "config/detail/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace sluice::host::config_detail {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

size_t max_typo_distance(size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return 3;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // One rolling row: names are short, this runs only on errors.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(std::string_view wrong,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  if (wrong.size() > k_max_suggest_length) return best;
  size_t best_distance = max_typo_distance(wrong.size()) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(wrong, c);
    // A candidate is only a typo fix if it keeps something of the original:
    // "x" is one edit from "y" but suggesting it would be noise.
    if (d < best_distance && d < std::max(wrong.size(), c.size())) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& candidates) {
  auto best = closest_name(wrong, candidates);
  return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

std::string shorten_name(std::string_view name) {
  if (name.size() <= k_max_shown_length) return std::string(name);
  size_t cut = k_max_shown_length;
  // Back up over continuation bytes so the shown part stays valid UTF-8.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}\u2026({} bytes)", name.substr(0, cut), name.size());
}

std::string join_names(const std::vector<std::string>& names, std::string_view empty_text) {
  if (names.empty()) return std::string(empty_text);
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace sluice::host::config_detail
