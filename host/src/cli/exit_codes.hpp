// Exit codes of sluiced (docs/OPERATIONS.md lists them).
#pragma once

namespace sluice::host {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_runtime_error = 1;  // the pipeline failed while running
inline constexpr int k_exit_invalid = 2;        // bad config, bad plugins, bad test file
inline constexpr int k_exit_tests_failed = 3;   // `sluiced test`: a case did not match;
                                                // `plugin-check`: a check failed

}  // namespace sluice::host
