// "did you mean" suggestions and name lists for config messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::config_detail {

// Levenshtein distance (insert, delete, substitute each cost 1), case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `wrong`, if it is near enough to be a plausible typo:
// at most 1 edit for names up to 4 characters, 2 up to 8, 3 beyond. Ties go to
// the earlier candidate.
std::optional<std::string> closest_name(std::string_view wrong,
                                        const std::vector<std::string>& candidates);

// "; did you mean 'X'?" or "" when nothing is close.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& candidates);

// "a, b, c" (or `empty_text` for an empty list).
std::string join_names(const std::vector<std::string>& names, std::string_view empty_text = "none");

}  // namespace sluice::host::config_detail
