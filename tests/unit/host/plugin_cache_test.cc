// The plugin cache (registry/plugin_cache.hpp): a start opens only the plugins whose
// names the config looks up, and the registry answers as if every plugin had been opened:
// the same names, the same refusals, whatever the cache says. Real plugin files (core_ops,
// sinks) copied into a directory of the test's own.
#include "registry/plugin_cache.hpp"
#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace sluice::host {
namespace {

class PluginCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice-plugin-cache-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    fs::permissions(dir_, fs::perms::owner_all);
    fs::permissions(dir_ / "plugins", fs::perms::owner_all);
    for (const char* name : {"libsluice_core_ops.so", "libsluice_sinks.so"}) copy_plugin(name);
    cache_ = dir_ / "cache" / "plugins.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void copy_plugin(const std::string& name, const fs::path& to_dir = {}) {
    const fs::path target = (to_dir.empty() ? dir_ / "plugins" : to_dir) / name;
    fs::copy_file(fs::path(SLUICE_TEST_PLUGIN_DIR) / name, target,
                  fs::copy_options::overwrite_existing);
    fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                fs::perms::others_read);
  }

  // A registry filled as `sluiced run` fills it: the search path with the cache.
  std::unique_ptr<PluginRegistry> discover(std::vector<LoadProblem>* problems = nullptr,
                                           std::vector<fs::path> dirs = {}) {
    auto registry = std::make_unique<PluginRegistry>();
    PluginLoader loader(*registry, host_api_table());
    loader.use_cache(cache_, PluginCacheUse::defer);
    if (dirs.empty()) dirs = {dir_ / "plugins"};
    auto found = loader.load_search_path(dirs);
    if (problems)
      *problems = found;
    else
      EXPECT_TRUE(found.empty()) << found.front().message;
    return registry;
  }

  static std::vector<std::string> loaded_names(const PluginRegistry& registry) {
    std::vector<std::string> out;
    for (const auto& p : registry.plugins()) out.push_back(p->name);
    return out;
  }

  fs::path dir_;
  fs::path cache_;
};

TEST_F(PluginCacheTest, TheFirstStartOpensEveryPluginAndTheNextOnlyWhatItLooksUp) {
  {
    auto first = discover();
    EXPECT_EQ(loaded_names(*first), (std::vector<std::string>{"core_ops", "sinks"}));
    EXPECT_EQ(first->deferred_count(), 0u);
  }
  ASSERT_TRUE(fs::exists(cache_));
  EXPECT_EQ(fs::status(cache_).permissions() & (fs::perms::group_all | fs::perms::others_all),
            fs::perms::none);

  auto next = discover();
  EXPECT_TRUE(next->plugins().empty());
  EXPECT_EQ(next->deferred_count(), 2u);
  // Messages still list every name.
  const auto sources = next->node_type_names(SL_ROLE_SOURCE);
  EXPECT_NE(std::find(sources.begin(), sources.end(), "from_textfile"), sources.end());
  const auto sinks = next->node_type_names(SL_ROLE_SINK);
  EXPECT_NE(std::find(sinks.begin(), sinks.end(), "sink_to_textfile"), sinks.end());
  EXPECT_TRUE(next->plugins().empty()) << "listing names opened a plugin";

  const NodeTypeInfo* map = next->find_node_type("map");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->role, SL_ROLE_OPERATOR);
  EXPECT_NE(map->vtable.create, nullptr);
  EXPECT_EQ(loaded_names(*next), std::vector<std::string>{"core_ops"});
  EXPECT_NE(next->find_function("lower"), nullptr);
  EXPECT_EQ(loaded_names(*next), std::vector<std::string>{"core_ops"});
  EXPECT_EQ(next->find_node_type("no_such_type"), nullptr);
  EXPECT_EQ(loaded_names(*next), std::vector<std::string>{"core_ops"});
  EXPECT_NE(next->find_node_type("sink_to_textfile"), nullptr);
  EXPECT_EQ(loaded_names(*next), (std::vector<std::string>{"core_ops", "sinks"}));
  EXPECT_TRUE(next->take_open_problems().empty());
}

TEST_F(PluginCacheTest, APluginFileReplacedSinceIsOpenedAtDiscovery) {
  discover();
  copy_plugin("libsluice_sinks.so");  // rewritten: another mtime and ctime
  auto next = discover();
  EXPECT_EQ(loaded_names(*next), std::vector<std::string>{"sinks"});
  EXPECT_EQ(next->deferred_count(), 1u);
}

TEST_F(PluginCacheTest, APluginOthersCouldChangeIsRefusedAsWithoutTheCache) {
  discover();
  fs::permissions(dir_ / "plugins" / "libsluice_sinks.so", fs::perms::others_write,
                  fs::perm_options::add);
  std::vector<LoadProblem> problems;
  auto next = discover(&problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("writable by others"), std::string::npos)
      << problems[0].message;
  EXPECT_EQ(next->find_node_type("sink_to_textfile"), nullptr);
}

TEST_F(PluginCacheTest, ACacheThatLiesIsCaughtAtTheFirstOpenAndCorrected) {
  discover();
  // Move "map" from core_ops' entry to the sinks' entry, as an edited cache could.
  std::ifstream in(cache_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const std::string map_entry = "[\"map\",2],";
  const size_t at = text.find(map_entry);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, map_entry.size());
  const size_t sinks_types = text.find("\"node_types\":[", text.find("\"name\":\"sinks\""));
  ASSERT_NE(sinks_types, std::string::npos);
  text.insert(sinks_types + std::string("\"node_types\":[").size(), map_entry);
  std::ofstream(cache_, std::ios::trunc) << text;

  auto next = discover();
  ASSERT_EQ(next->deferred_count(), 2u);
  const NodeTypeInfo* map = next->find_node_type("map");
  ASSERT_NE(map, nullptr) << "the lie hid a type";
  EXPECT_EQ(map->plugin->name, "core_ops");
  EXPECT_EQ(next->deferred_count(), 0u);  // a lie found: every plugin opened
  // The next start reads the truth about sinks.
  const PluginCache fixed = PluginCache::read(cache_);
  for (const CachedPlugin& p : fixed.entries()) {
    if (p.name != "sinks") continue;
    EXPECT_EQ(std::count_if(p.node_types.begin(), p.node_types.end(),
                            [](const auto& t) { return t.first == "map"; }),
              0);
  }
}

TEST_F(PluginCacheTest, AnUntrustedMalformedOrForeignCacheIsIgnored) {
  discover();
  ASSERT_FALSE(PluginCache::read(cache_).entries().empty());
  fs::permissions(cache_, fs::perms::group_write, fs::perm_options::add);
  EXPECT_TRUE(PluginCache::read(cache_).entries().empty());
  fs::permissions(cache_, fs::perms::group_write, fs::perm_options::remove);

  std::ifstream in(cache_);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (const std::string& bad :
       {good.substr(0, good.size() / 2), std::string("[]"),
        std::string(good).replace(good.find("\"host\":\"sluiced"), 15, "\"host\":\"sluicex"),
        std::string(good).replace(good.find("\"inode\":"), 8, "\"inode\":\"x\",\"y\":")}) {
    std::ofstream(cache_, std::ios::trunc) << bad;
    EXPECT_TRUE(PluginCache::read(cache_).entries().empty()) << bad.substr(0, 200);
    // ... and the plugins are opened as without a cache.
    EXPECT_EQ(loaded_names(*discover()), (std::vector<std::string>{"core_ops", "sinks"}));
    std::ofstream(cache_, std::ios::trunc) << good;
  }
}

TEST_F(PluginCacheTest, TheSamePluginInTwoDirectoriesIsRefusedAsWithoutTheCache) {
  const fs::path other = dir_ / "more";
  fs::create_directories(other);
  fs::permissions(other, fs::perms::owner_all);
  copy_plugin("libsluice_sinks.so", other);
  std::vector<LoadProblem> first_problems;
  discover(&first_problems, {dir_ / "plugins", other});
  ASSERT_EQ(first_problems.size(), 1u);
  EXPECT_NE(first_problems[0].message.find("already loaded from"), std::string::npos);

  std::vector<LoadProblem> problems;
  auto next = discover(&problems, {dir_ / "plugins", other});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].message, first_problems[0].message);
}

}  // namespace
}  // namespace sluice::host
