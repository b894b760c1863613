// sl_host_api.post_owned (ABI 1.6): once the host accepts a post, it releases the argument
// exactly once, after the callback or instead of it when the callback never runs (the task
// failed or ended first); a refused post leaves the argument with the caller.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"
#include "support/task_fixture.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

// What happened to each posted argument, by the value it carries.
struct Fate {
  int ran = 0;
  int released = 0;
  bool ran_after_release = false;
};
std::map<int64_t, Fate> g_fates;
sl_context* g_poster_ctx = nullptr;

struct Posted {
  int64_t value;
};
void run_posted(sl_context*, void* arg) {
  Fate& f = g_fates[static_cast<Posted*>(arg)->value];
  if (f.released > 0) f.ran_after_release = true;
  ++f.ran;
}
void release_posted(void* arg) {
  auto* p = static_cast<Posted*>(arg);
  ++g_fates[p->value].released;
  delete p;
}

// numbers: emits 0..4 in one poll, then ends.
sl_status numbers_poll(void*, sl_context* ctx, uint32_t, int32_t* state) {
  sl_value v[5] = {sl_int(0), sl_int(1), sl_int(2), sl_int(3), sl_int(4)};
  *state = SL_SOURCE_DONE;
  return host()->emit_values(ctx, v, 5);
}

// poster: posts one owned argument per element; with `fail_at` it fails on that value,
// after posting for it.
sl_status poster_create(const sl_node_init* init, void** self) {
  sl_value v;
  *self = reinterpret_cast<void*>(
      host()->object_get(init->config, "fail_at", 7, &v) ? static_cast<intptr_t>(v.as.i) : -1);
  g_poster_ctx = init->ctx;
  return SL_OK;
}
sl_status poster_process(void* self, sl_context* ctx, uint32_t, const sl_batch* batch) {
  const auto fail_at = static_cast<int64_t>(reinterpret_cast<intptr_t>(self));
  for (size_t i = 0; i < batch->count; ++i) {
    const int64_t value = sl_batch_at(batch, i)->value.as.i;
    auto* arg = new Posted{value};
    if (host()->post_owned(ctx, run_posted, arg, release_posted) != SL_OK) delete arg;
    if (value == fail_at) {
      host()->set_error(ctx, "refused", 7);
      return SL_INVALID_ARGUMENT;
    }
  }
  return SL_OK;
}

const sl_param k_poster_params[] = {
    {sizeof(sl_param), "fail_at", SL_PARAM_INT, 0, "-1", "", 0, 0, 0.0, 0.0, nullptr}};

class PostOwnedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fates.clear();
    g_poster_ctx = nullptr;
    static sl_node_type numbers = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SOURCE, "numbers");
      t.poll = numbers_poll;
      return t;
    }();
    static sl_node_type poster = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "poster");
      t.params = k_poster_params;
      t.param_count = 1;
      t.create = poster_create;
      t.process = poster_process;
      return t;
    }();
    static const sl_node_type* types[] = {&numbers, &poster};
    static sl_plugin plugin = test_support::in_process_plugin("post_nodes", types);
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
  }

  GraphSpec load(const std::string& toml) {
    return test_support::load_spec(toml, registry_, "post_owned_test.toml");
  }

  // Every value 0..4 was posted, released exactly once, and never ran after its release.
  static void expect_each_released_once() {
    ASSERT_EQ(g_fates.size(), 5u);
    for (const auto& [value, fate] : g_fates) {
      SCOPED_TRACE(value);
      EXPECT_EQ(fate.released, 1);
      EXPECT_LE(fate.ran, 1);
      EXPECT_FALSE(fate.ran_after_release);
    }
  }

  PluginRegistry registry_;
  RealClock clock_;
};

TEST_F(PostOwnedTest, EachAcceptedArgumentIsReleasedOnceWhetherItRanOrNot) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
[sinks.out]
type = "poster"
inputs = ["src"]
)");
  {
    Task task(spec, TaskOptions{16, 0, 1, &clock_});
    ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  }
  expect_each_released_once();
}

TEST_F(PostOwnedTest, PostsDroppedByAFailingTaskAreReleasedNotLeaked) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
[sinks.out]
type = "poster"
inputs = ["src"]
fail_at = 2
)");
  {
    Task task(spec, TaskOptions{1, 0, 1, &clock_});
    Status s = test_support::run_to_end(task);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("refused"), std::string::npos) << s.message();
  }
  // The sink failed at 2: 3 and 4 never reached it, so only 0..2 were posted; whatever was
  // still queued when the task failed never ran, and was released all the same.
  ASSERT_EQ(g_fates.size(), 3u);
  for (const auto& [value, fate] : g_fates) {
    SCOPED_TRACE(value);
    EXPECT_EQ(fate.released, 1);
    EXPECT_FALSE(fate.ran_after_release);
  }
  EXPECT_EQ(g_fates[2].ran, 0);  // posted by the failing call: the task had failed first
}

TEST_F(PostOwnedTest, ARefusedPostLeavesTheArgumentWithTheCaller) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
[sinks.out]
type = "poster"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{16, 0, 1, &clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  ASSERT_NE(g_poster_ctx, nullptr);
  // The task ended: it takes no more posts, and must not release what it did not take.
  Posted mine{42};
  EXPECT_EQ(host()->post_owned(g_poster_ctx, run_posted, &mine, release_posted), SL_CANCELLED);
  EXPECT_EQ(g_fates.count(42), 0u);
}

}  // namespace
}  // namespace sluice::host
