// I/O watches (sl_host_api.io_watch, ABI 1.1) on real socketpairs: first the
// table itself (one-shot, level-triggered, unwatch, per-node cancel, the fd
// stays the plugin's), then through a Task with a C source registered like a
// plugin's: data reaches the sink through on_io, a failing on_io fails the
// task, a node type without on_io is refused, and the virtual clock works.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "executor/io_watches.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"
#include "support/task_fixture.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace sluice::host {
namespace {

using namespace std::chrono_literals;

// A non-blocking socketpair, closed at scope exit.
struct Pair {
  int a = -1, b = -1;
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0) {
      a = fds[0];
      b = fds[1];
    }
  }
  ~Pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
  void close_b() {
    ::close(b);
    b = -1;
  }
};

void send_text(int fd, const std::string& text) {
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

struct Fired {
  size_t node;
  uint64_t id;
  uint32_t ready;
  bool operator==(const Fired&) const = default;
};

class IoWatchesTest : public ::testing::Test {
 protected:
  // Runs the loop until `n` callbacks fired or `limit` passed, then a little
  // longer to catch extra ones.
  void pump(size_t n, std::chrono::milliseconds limit = 2000ms) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (fired_.size() < n && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(10ms);
    }
    io_.restart();
    io_.run_for(30ms);
  }

  boost::asio::io_context io_;
  std::vector<Fired> fired_;
  IoWatches watches_{io_, [this](size_t node, uint64_t id, uint32_t ready) {
                       fired_.push_back({node, id, ready});
                     }};
  std::string error_;
};

TEST_F(IoWatchesTest, AReadWatchFiresOnceWhenDataArrives) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 5, &error_), SL_OK) << error_;
  pump(0, 0ms);
  EXPECT_TRUE(fired_.empty()) << "fired with nothing to read";
  EXPECT_EQ(watches_.armed(), 1u);
  send_text(p.b, "x");
  pump(1);
  EXPECT_EQ(fired_, (std::vector<Fired>{{0, 5, SL_IO_READ}}));
  EXPECT_EQ(watches_.armed(), 0u);
  // One-shot: more data, no re-arm, no more callbacks.
  send_text(p.b, "y");
  pump(2, 100ms);
  EXPECT_EQ(fired_.size(), 1u);
}

TEST_F(IoWatchesTest, ReArmingWithUnreadDataFiresAgainAtOnce) {
  // Asio's reactor is edge-triggered: data left unread while nothing watched
  // must still wake a watch armed later (a source paused by back-pressure).
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
  send_text(p.b, "x");
  pump(1);
  ASSERT_EQ(fired_.size(), 1u);
  for (int round = 2; round <= 3; ++round) {
    ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
    pump(round);
    ASSERT_EQ(fired_.size(), static_cast<size_t>(round)) << "round " << round;
  }
}

TEST_F(IoWatchesTest, TwoWatchesOnOneDescriptorBothFire) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK) << error_;
  ASSERT_EQ(watches_.watch(1, p.a, SL_IO_READ, 2, &error_), SL_OK) << error_;
  send_text(p.b, "x");
  pump(2);
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(watches_.armed(), 0u);
}

TEST_F(IoWatchesTest, UnwatchAndCancelNodeDisarm) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 2, &error_), SL_OK);
  ASSERT_EQ(watches_.watch(1, p.a, SL_IO_READ, 1, &error_), SL_OK);
  ASSERT_EQ(watches_.watch(2, p.a, SL_IO_READ, 9, &error_), SL_OK);
  watches_.unwatch(0, 1);
  watches_.unwatch(0, 1);  // no-op when not armed
  watches_.cancel_node(1);
  EXPECT_EQ(watches_.armed(), 2u);
  send_text(p.b, "x");
  pump(2);
  std::vector<Fired> want{{0, 2, SL_IO_READ}, {2, 9, SL_IO_READ}};
  std::sort(fired_.begin(), fired_.end(),
            [](const Fired& x, const Fired& y) { return x.node < y.node; });
  EXPECT_EQ(fired_, want);
}

TEST_F(IoWatchesTest, ReArmingAnArmedIdReplacesIt) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_WRITE, 1, &error_), SL_OK);  // writable at once
  EXPECT_EQ(watches_.armed(), 1u);
  pump(1);
  EXPECT_EQ(fired_, (std::vector<Fired>{{0, 1, SL_IO_WRITE}}));
}

TEST_F(IoWatchesTest, HangUpCountsAsReadable) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
  p.close_b();
  pump(1);
  EXPECT_EQ(fired_, (std::vector<Fired>{{0, 1, SL_IO_READ}}));
  char c;
  EXPECT_EQ(::read(p.a, &c, 1), 0) << "the plugin sees end of file";
}

TEST_F(IoWatchesTest, BadArgumentsAreRefusedWithAReason) {
  Pair p;
  EXPECT_EQ(watches_.watch(0, -1, SL_IO_READ, 1, &error_), SL_INVALID_ARGUMENT);
  EXPECT_NE(error_.find("fd -1"), std::string::npos) << error_;
  EXPECT_EQ(watches_.watch(0, p.a, 0, 1, &error_), SL_INVALID_ARGUMENT);
  EXPECT_NE(error_.find("events"), std::string::npos) << error_;
  EXPECT_EQ(watches_.watch(0, p.a, 4, 1, &error_), SL_INVALID_ARGUMENT);
  int closed = ::dup(p.a);
  ::close(closed);
  EXPECT_EQ(watches_.watch(0, closed, SL_IO_READ, 1, &error_), SL_INVALID_ARGUMENT);
  EXPECT_NE(error_.find("not open"), std::string::npos) << error_;
  EXPECT_EQ(watches_.armed(), 0u);
}

TEST_F(IoWatchesTest, TheDescriptorStaysOpenAndUsable) {
  Pair p;
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK);
  watches_.cancel_all();
  EXPECT_NE(::fcntl(p.a, F_GETFD), -1) << "released, not closed";
  send_text(p.a, "ping");
  char buf[8];
  EXPECT_EQ(::read(p.b, buf, sizeof buf), 4);
  // And it can be watched again after release.
  ASSERT_EQ(watches_.watch(0, p.a, SL_IO_READ, 1, &error_), SL_OK) << error_;
  send_text(p.b, "x");
  pump(1);
  EXPECT_EQ(fired_.size(), 1u);
}

// -- through a Task ------------------------------------------------------------

const sl_host_api* host() { return host_api_table(); }

std::vector<std::string> g_log;
int g_fd = -1;                      // the socket the io_src nodes read
uint32_t g_mode = 0;                // what io_src does (see below)
constexpr uint32_t k_read_all = 0;  // read to EOF, re-arming; emit what was read
constexpr uint32_t k_fail = 1;      // on_io fails
constexpr uint32_t k_no_rearm = 2;  // reads nothing, never re-arms; a 100 ms timer ends it

struct IoSrc {
  std::string pending;
  bool done = false;
};

sl_status io_src_create(const sl_node_init*, void** self) {
  *self = new IoSrc;
  return SL_OK;
}
void io_src_destroy(void* self) { delete static_cast<IoSrc*>(self); }
sl_status io_src_start(void*, sl_context* ctx) {
  if (g_mode == k_no_rearm) {
    sl_status st = host()->timer_start(ctx, 1, 100'000'000);
    if (st != SL_OK) return st;
  }
  return host()->io_watch(ctx, g_fd, SL_IO_READ, 42);
}
sl_status io_src_on_io(void* self, sl_context* ctx, uint64_t id, uint32_t ready) {
  auto* s = static_cast<IoSrc*>(self);
  g_log.push_back("io:" + std::to_string(id) + ":" + std::to_string(ready));
  if (g_mode == k_fail) {
    const char msg[] = "socket broke";
    host()->set_error(ctx, msg, sizeof msg - 1);
    return SL_DATA_LOSS;
  }
  if (g_mode == k_no_rearm) return SL_OK;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(g_fd, buf, sizeof buf);
    if (n > 0) {
      s->pending.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      s->done = true;
      return SL_OK;
    } else if (errno == EAGAIN) {
      return host()->io_watch(ctx, g_fd, SL_IO_READ, id);
    } else if (errno != EINTR) {
      return SL_UNKNOWN;
    }
  }
}
sl_status io_src_on_timer(void* self, sl_context*, uint64_t) {
  static_cast<IoSrc*>(self)->done = true;
  return SL_OK;
}
sl_status io_src_poll(void* self, sl_context* ctx, uint32_t, int32_t* state) {
  auto* s = static_cast<IoSrc*>(self);
  sl_status st = SL_OK;
  if (!s->pending.empty()) {
    sl_value v = host()->string_create(s->pending.data(), s->pending.size());
    s->pending.clear();
    st = host()->emit_values(ctx, &v, 1);
    host()->value_release(v);
  }
  *state = s->done ? SL_SOURCE_DONE : SL_SOURCE_IDLE;
  return st;
}

sl_status rec_create(const sl_node_init*, void** self) {
  *self = nullptr;
  return SL_OK;
}
void rec_destroy(void*) {}
sl_status rec_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    sl_str s = host()->value_str(sl_batch_at(batch, i)->value);
    g_log.push_back("got:" + std::string(s.data, s.size));
  }
  return SL_OK;
}

class IoTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    g_mode = k_read_all;
    g_fd = pair_.a;
    static sl_node_type io_src = [] {
      sl_node_type t{};
      t.struct_size = sizeof t;
      t.role = SL_ROLE_SOURCE;
      t.name = "io_src";
      t.create = io_src_create;
      t.destroy = io_src_destroy;
      t.start = io_src_start;
      t.poll = io_src_poll;
      t.on_io = io_src_on_io;
      t.on_timer = io_src_on_timer;
      return t;
    }();
    static sl_node_type no_on_io = [] {
      sl_node_type t = io_src;
      t.name = "no_on_io";
      t.on_io = nullptr;
      return t;
    }();
    static sl_node_type rec = [] {
      sl_node_type t{};
      t.struct_size = sizeof t;
      t.role = SL_ROLE_SINK;
      t.name = "rec";
      t.min_inputs = 1;
      t.max_inputs = 1;
      t.create = rec_create;
      t.destroy = rec_destroy;
      t.process = rec_process;
      return t;
    }();
    static const sl_node_type* types[] = {&io_src, &no_on_io, &rec};
    static sl_plugin plugin = test_support::in_process_plugin("io_test_nodes", types);
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
    spec_ = load(R"(
[sources.src]
type = "io_src"
[sinks.out]
type = "rec"
inputs = ["src"]
)");
  }

  GraphSpec load(const std::string& toml) {
    return test_support::load_spec(toml, registry_, "io_watch_test.toml");
  }

  // The text the sink received (in however many elements it came).
  static std::string received() {
    std::string all;
    for (const auto& e : g_log) {
      if (e.rfind("got:", 0) == 0) all += e.substr(4);
    }
    return all;
  }

  Pair pair_;
  PluginRegistry registry_;
  RealClock real_clock_;
  GraphSpec spec_;
};

TEST_F(IoTaskTest, SocketDataReachesTheSinkThroughOnIo) {
  send_text(pair_.b, "before start;");  // ready before the first watch
  int writer = pair_.b;
  std::thread feed([writer] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(10ms);
      std::string piece = "part" + std::to_string(i) + ";";
      if (::write(writer, piece.data(), piece.size()) < 0) return;
    }
  });
  Task task(spec_, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  std::thread closer([&] {
    feed.join();
    pair_.close_b();  // EOF ends the source
  });
  Status st = task.run();
  closer.join();
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_TRUE(task.complete());
  EXPECT_EQ(received(), "before start;part0;part1;part2;part3;part4;");
  for (const auto& e : g_log) {
    if (e.rfind("io:", 0) == 0) {
      EXPECT_EQ(e, "io:42:1");
    }
  }
}

TEST_F(IoTaskTest, AFailingOnIoFailsTheTaskWithTheNodeAndMessage) {
  g_mode = k_fail;
  send_text(pair_.b, "x");
  Task task(spec_, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  Status st = task.run();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), SL_DATA_LOSS);
  EXPECT_NE(st.message().find("node 'src' (io_src): on_io failed: DATA_LOSS: socket broke"),
            std::string::npos)
      << st.message();
}

TEST_F(IoTaskTest, AWatchIsOneShot) {
  g_mode = k_no_rearm;
  send_text(pair_.b, "unread data stays ready");
  Task task(spec_, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  ASSERT_TRUE(task.run().is_ok());  // the 100 ms timer ends the source
  EXPECT_EQ(g_log, std::vector<std::string>{"io:42:1"});
}

TEST_F(IoTaskTest, ANodeTypeWithoutOnIoCannotWatch) {
  GraphSpec spec = load(R"(
[sources.src]
type = "no_on_io"
[sinks.out]
type = "rec"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  Status st = task.start();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("start failed: FAILED_PRECONDITION: io_watch: the node type has no "
                              "on_io callback"),
            std::string::npos)
      << st.message();
}

TEST_F(IoTaskTest, WatchesWorkOnTheVirtualClock) {
  VirtualClock clock(0);
  Task task(spec_, TaskOptions{16, 0, 1, &clock});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  ASSERT_TRUE(task.run_until_idle().is_ok());
  EXPECT_EQ(received(), "");
  send_text(pair_.b, "hello");
  // The reactor runs inside run_until_idle (io_context::poll); the data is on
  // the socket already, so a few rounds suffice.
  for (int i = 0; i < 50 && received().empty(); ++i) {
    ASSERT_TRUE(task.run_until_idle().is_ok());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(received(), "hello");
  pair_.close_b();
  for (int i = 0; i < 50 && !task.complete(); ++i) {
    ASSERT_TRUE(task.run_until_idle().is_ok());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(task.complete());
}

}  // namespace
}  // namespace sluice::host
