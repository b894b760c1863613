// `sluiced test --case`: which cases a list of names and globs selects.
#include "testing/pipeline_test.hpp"

#include <gtest/gtest.h>

namespace sluice::host {
namespace {

std::vector<TestCase> cases(std::initializer_list<const char*> names) {
  std::vector<TestCase> out;
  for (const char* n : names) {
    TestCase tc;
    tc.name = n;
    out.push_back(tc);
  }
  return out;
}

std::vector<std::string> names(const std::vector<TestCase>& selected) {
  std::vector<std::string> out;
  for (const TestCase& tc : selected) out.push_back(tc.name);
  return out;
}

TEST(SelectTestCases, NoPatternSelectsEveryCase) {
  auto r = select_test_cases(cases({"a", "b"}), {}, "f.toml");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(names(r.value()), (std::vector<std::string>{"a", "b"}));
}

TEST(SelectTestCases, ExactNamesAndGlobsKeepFileOrder) {
  auto r = select_test_cases(cases({"late data", "windows [1]", "window fires", "other"}),
                             {"window*", "late data"}, "f.toml");
  ASSERT_TRUE(r.is_ok());
  // "windows [1]" matches the glob "window*"; as an exact name its brackets are not a class.
  EXPECT_EQ(names(r.value()),
            (std::vector<std::string>{"late data", "windows [1]", "window fires"}));
  auto exact = select_test_cases(cases({"windows [1]", "windows 1"}), {"windows [1]"}, "f.toml");
  ASSERT_TRUE(exact.is_ok());
  EXPECT_EQ(names(exact.value()), (std::vector<std::string>{"windows [1]", "windows 1"}));
}

TEST(SelectTestCases, APatternThatMatchesNothingListsTheCases) {
  auto r = select_test_cases(cases({"one", "two"}), {"one", "three"}, "f.tests.toml");
  ASSERT_FALSE(r.is_ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("f.tests.toml: error: --case 'three'"), std::string::npos) << m;
  EXPECT_NE(m.find("\n  one\n  two"), std::string::npos) << m;
}

}  // namespace
}  // namespace sluice::host
