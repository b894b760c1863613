// What the executor's unit tests each did by hand: a config text validated into a GraphSpec
// against a test's registry (any diagnostic fails the test), and a task run from create to
// the end of its sources.
#pragma once

#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/task.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace sluice::test_support {

/// `toml` (named `file` in messages) validated against `registry`; warnings fail the test.
inline host::GraphSpec load_spec(const std::string& toml, const host::PluginRegistry& registry,
                                 const std::string& file) {
  auto doc = host::parse_config_string(toml, file);
  EXPECT_TRUE(doc.ok());
  auto spec = host::validate_config(*doc.value, registry);
  for (const auto& d : spec.diagnostics) ADD_FAILURE() << d.to_string();
  return std::move(*spec.value);
}

/// The whole life of a task that runs until its sources end: create, start, run.
inline host::Status run_to_end(host::Task& task) {
  SLUICE_RETURN_IF_ERROR(task.create());
  SLUICE_RETURN_IF_ERROR(task.start());
  return task.run();
}

}  // namespace sluice::test_support
