// "did you mean" suggestions and name lists for config messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::config_detail {

// Levenshtein distance (insert, delete, substitute each cost 1), case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// Names longer than this get no suggestion: no real name is that long, and the edit
// distance costs length x candidate length (a 10 MB key took 7.7 s).
inline constexpr size_t k_max_suggest_length = 64;

// The candidate nearest to `wrong`, if it is near enough to be a plausible typo:
// at most 1 edit for names up to 4 characters, 2 up to 8, 3 beyond. Ties go to
// the earlier candidate. Nothing for a name over k_max_suggest_length bytes.
std::optional<std::string> closest_name(std::string_view wrong,
                                        const std::vector<std::string>& candidates);

// "; did you mean 'X'?" or "" when nothing is close.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& candidates);

// How an error message shows a name from the input: as is up to k_max_shown_length
// bytes, else its first bytes (cut at a UTF-8 character boundary), an ellipsis and the
// length, e.g. "aaaa…(10485760 bytes)", so that a huge name cannot flood the log.
inline constexpr size_t k_max_shown_length = 64;
std::string shorten_name(std::string_view name);

// "a, b, c" (or `empty_text` for an empty list).
std::string join_names(const std::vector<std::string>& names, std::string_view empty_text = "none");

}  // namespace sluice::host::config_detail
