// The checkpoint file format and the built-in filesystem store: round trips,
// listing and removal, a corrupt or truncated newest file (the loader falls back
// to the previous one), and a disk-write failure (a clear error; the previous
// checkpoint stays readable; no temporary file is left behind).
#include "checkpoint/store.hpp"
#include "checkpoint/coordinator.hpp"
#include "checkpoint/format.hpp"
#include "checkpoint/fs_store.hpp"
#include "registry/plugin_registry.hpp"

#include <sys/resource.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sluice::host::checkpoint {
namespace {

namespace fs = std::filesystem;

Checkpoint sample(uint64_t epoch, int64_t offset) {
  Checkpoint cp;
  cp.epoch = epoch;
  cp.time_ns = 1'700'000'000'000'000'000;
  cp.pipeline = "p";
  TaskState t;
  t.nodes.push_back(NodeState{"src", "from_textfile", SL_ROLE_SOURCE,
                              Value::object(std::vector<std::pair<std::string, Value>>{
                                  {"offset", Value::integer(offset)}})});
  t.nodes.push_back(
      NodeState{"blob", "x", SL_ROLE_OPERATOR, Value::bytes(std::string("\0\1\2", 3))});
  cp.tasks.push_back(std::move(t));
  return cp;
}

class FsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice-store-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(register_builtin_stores(registry_).is_ok());
    store_ = open_dir(dir_.string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<StoreHandle> open_dir(const std::string& dir) {
    Value cfg =
        Value::object(std::vector<std::pair<std::string, Value>>{{"dir", Value::string(dir)}});
    auto h = StoreHandle::open(*registry_.find_store("fs"), "p", cfg);
    EXPECT_TRUE(h.is_ok()) << h.status().message();
    return h.is_ok() ? std::move(h).value() : nullptr;
  }
  void write(uint64_t epoch, int64_t offset, bool committed = true) {
    ASSERT_TRUE(store_->write(epoch, encode_checkpoint(sample(epoch, offset))).is_ok());
    if (committed) {
      ASSERT_TRUE(store_->mark_committed(epoch).is_ok());
    }
  }

  PluginRegistry registry_;
  fs::path dir_;
  std::unique_ptr<StoreHandle> store_;
};

TEST(CheckpointFormat, RoundTripKeepsKindsAndOrder) {
  Checkpoint cp = sample(7, 42);
  auto back = decode_checkpoint(encode_checkpoint(cp));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->epoch, 7u);
  ASSERT_EQ(back->tasks.size(), 1u);
  ASSERT_EQ(back->tasks[0].nodes.size(), 2u);
  EXPECT_EQ(back->tasks[0].nodes[0].state.get("offset")->as_int(), 42);
  EXPECT_EQ(back->tasks[0].nodes[1].state.kind(), SL_KIND_BYTES);  // JSON would make it a string
  EXPECT_EQ(back->tasks[0].nodes[1].state.as_str(), std::string("\0\1\2", 3));
  EXPECT_EQ(back->tasks[0].nodes[0].role, SL_ROLE_SOURCE);
}

TEST(CheckpointFormat, Crc32cKnownAnswerAndImplementationsAgree) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c_portable("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 300; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 16));
  }
  // Every length and alignment around the 8-byte steps, and chained calls.
  for (size_t at = 0; at < 9; ++at) {
    for (size_t n = 0; at + n <= data.size(); n += (n < 40 ? 1 : 37)) {
      std::string_view part = std::string_view(data).substr(at, n);
      ASSERT_EQ(crc32c(part), crc32c_portable(part)) << at << " " << n;
      ASSERT_EQ(crc32c(part.substr(n / 3), crc32c(part.substr(0, n / 3))), crc32c(part));
    }
  }
}

TEST(CheckpointFormat, EncodingIsTheDocumentedVersion1) {
  // docs/CHECKPOINTING.md "On-disk format": tag, LE numbers, varint lengths, keys in order.
  std::string big_key(200, 'k');  // a 2-byte varint length
  Value v = Value::object(std::vector<std::pair<std::string, Value>>{
      {"b", Value::array(std::vector<Value>{
                Value::null(), Value::boolean(true), Value::boolean(false), Value::floating(1.5),
                Value::string("s"), Value::bytes(std::string("\0", 1))})},
      {"a", Value::integer(-2)},
      {big_key, Value::integer(258)}});
  std::string out;
  encode_value(v, out);
  std::string want("\x08\x03", 2);
  want += std::string(
      "\x01"
      "b"
      "\x07\x06"
      "\x00\x02\x01",
      7);
  want += std::string("\x04\x00\x00\x00\x00\x00\x00\xF8\x3F", 9);  // 1.5
  want += std::string(
      "\x05\x01s"
      "\x06\x01\x00",
      6);
  want += std::string(
      "\x01"
      "a"
      "\x03\xFE\xFF\xFF\xFF\xFF\xFF\xFF\xFF",
      11);
  want += std::string("\xC8\x01", 2) + big_key + std::string("\x03\x02\x01\0\0\0\0\0\0", 9);
  EXPECT_EQ(out, want);
  auto back = decode_value(out);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->key_at(0), "b");  // insertion order kept
  EXPECT_EQ(back->get(big_key)->as_int(), 258);

  const std::string file = encode_checkpoint(sample(3, 9));
  ASSERT_GT(file.size(), k_header_size);
  EXPECT_EQ(file.substr(0, 8), "SLUICECK");
  auto le = [&](size_t at, int n) {
    uint64_t r = 0;
    for (int i = 0; i < n; ++i) {
      r |= uint64_t{static_cast<unsigned char>(file[at + static_cast<size_t>(i)])} << (8 * i);
    }
    return r;
  };
  EXPECT_EQ(le(8, 4), 1u);
  EXPECT_EQ(le(12, 4), crc32c(std::string_view(file).substr(k_header_size)));
  EXPECT_EQ(le(16, 8), file.size() - k_header_size);
}

TEST(CheckpointFormat, LargeStateRoundTrip) {
  // A count_by-like table: many keys, kept in their order, each found by lookup.
  constexpr int k_keys = 100'000;
  std::vector<std::pair<std::string, Value>> entries;
  for (int i = 0; i < k_keys; ++i) {
    entries.emplace_back("w" + std::to_string((i * 7919) % k_keys), Value::integer(i));
  }
  Checkpoint cp = sample(5, 1);
  cp.tasks[0].nodes.push_back(
      NodeState{"counts", "accumulate", SL_ROLE_OPERATOR, Value::object(entries)});
  auto back = decode_checkpoint(encode_checkpoint(cp));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  const Value& state = back->tasks[0].nodes[2].state;
  ASSERT_EQ(state.size(), static_cast<size_t>(k_keys));
  for (int i = 0; i < k_keys; i += 997) {
    EXPECT_EQ(state.key_at(static_cast<size_t>(i)), entries[static_cast<size_t>(i)].first);
    EXPECT_EQ(state.get(entries[static_cast<size_t>(i)].first)->as_int(), i);
  }
  EXPECT_FALSE(state.get("absent").has_value());
}

TEST(CheckpointFormat, DamageIsDataLossWithTheReason) {
  std::string bytes = encode_checkpoint(sample(1, 1));
  auto truncated = decode_checkpoint(std::string_view(bytes).substr(0, bytes.size() - 3));
  ASSERT_FALSE(truncated.is_ok());
  EXPECT_EQ(truncated.status().code(), SL_DATA_LOSS);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);
  bytes[bytes.size() - 2] ^= 0x40;
  auto flipped = decode_checkpoint(bytes);
  ASSERT_FALSE(flipped.is_ok());
  EXPECT_NE(flipped.status().message().find("checksum"), std::string::npos);
  EXPECT_FALSE(decode_checkpoint("hello").is_ok());
}

TEST_F(FsStoreTest, WriteReadListRemove) {
  write(1, 10);
  write(2, 20, /*committed=*/false);
  auto list = store_->list();
  ASSERT_TRUE(list.is_ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].epoch, 2u);  // newest first
  EXPECT_FALSE((*list)[0].committed);
  EXPECT_TRUE((*list)[1].committed);
  EXPECT_GT((*list)[0].size, k_header_size);
  auto bytes = store_->read(1);
  ASSERT_TRUE(bytes.is_ok());
  EXPECT_EQ(decode_checkpoint(bytes.value())->tasks[0].nodes[0].state.get("offset")->as_int(), 10);
  EXPECT_TRUE(fs::exists(dir_ / fs_epoch_file(2)));
  ASSERT_TRUE(store_->remove(1).is_ok());
  ASSERT_TRUE(store_->remove(1).is_ok());  // absent: fine
  EXPECT_EQ(store_->list()->size(), 1u);
  auto missing = store_->read(1);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), SL_NOT_FOUND);
}

TEST_F(FsStoreTest, LargeCheckpointReadsBackWhole) {
  Checkpoint cp = sample(4, 4);
  std::vector<std::pair<std::string, Value>> entries;
  for (int i = 0; i < 50'000; ++i)
    entries.emplace_back("key" + std::to_string(i), Value::integer(i));
  cp.tasks[0].nodes.push_back(
      NodeState{"counts", "accumulate", SL_ROLE_OPERATOR, Value::object(entries)});
  const std::string bytes = encode_checkpoint(cp);
  ASSERT_GT(bytes.size(), 65536u * 4);  // several of the old read buffers
  ASSERT_TRUE(store_->write(4, bytes).is_ok());
  auto back = store_->read(4);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->view(), bytes);
  auto decoded = decode_checkpoint(back.value());
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
  EXPECT_EQ(decoded->tasks[0].nodes[2].state.get("key49999")->as_int(), 49999);
}

TEST_F(FsStoreTest, CorruptNewestFallsBackToThePrevious) {
  write(1, 10);
  write(2, 20);
  {
    std::fstream f(dir_ / fs_epoch_file(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('\x7f');
  }
  auto loaded = load_newest(*store_, 2);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].checkpoint.epoch, 1u);
  EXPECT_EQ((*loaded)[0].checkpoint.tasks[0].nodes[0].state.get("offset")->as_int(), 10);
}

TEST_F(FsStoreTest, TruncatedNewestFallsBackToThePrevious) {
  write(1, 10);
  write(2, 20);
  fs::resize_file(dir_ / fs_epoch_file(2), 20);
  auto loaded = load_newest(*store_, 2);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].checkpoint.epoch, 1u);
}

TEST_F(FsStoreTest, UncommittedNewestAlsoLoadsItsPredecessor) {
  write(1, 10);
  write(2, 20, /*committed=*/false);
  auto loaded = load_newest(*store_, 2);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].checkpoint.epoch, 2u);
  EXPECT_FALSE((*loaded)[0].committed);
  EXPECT_EQ((*loaded)[1].checkpoint.epoch, 1u);
}

TEST_F(FsStoreTest, DiskWriteFailureIsAClearErrorAndThePreviousStaysUsable) {
  write(1, 10);
  // A real write failure: the file size limit (EFBIG), which applies to root too.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Checkpoint big = sample(2, 20);
  big.tasks[0].nodes[1].state = Value::bytes(std::string(4096, 'x'));
  Status st = store_->write(2, encode_checkpoint(big));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), SL_RESOURCE_EXHAUSTED);
  EXPECT_NE(st.message().find("epoch 2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("File too large"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(dir_.string()), std::string::npos) << st.message();
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().extension(), e.path().extension() == ".tmp" ? ".none" : e.path().extension())
        << "a temporary file was left behind: " << e.path();
  }
  auto loaded = load_newest(*store_, 2);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].checkpoint.epoch, 1u);
}

// Several daemons share one directory (the members of a pipeline, docs/SCALING.md).
TEST_F(FsStoreTest, TwoStoresOnOneDirectorySeeEachOthersEpochs) {
  write(1, 10);
  std::unique_ptr<StoreHandle> other = open_dir(dir_.string());
  ASSERT_TRUE(other);
  ASSERT_TRUE(other->write(7, encode_checkpoint(sample(7, 70))).is_ok());
  ASSERT_TRUE(other->mark_committed(7).is_ok());
  // The store opened first lists and reads what the other wrote after it opened.
  auto list = store_->list();
  ASSERT_TRUE(list.is_ok()) << list.status().message();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].epoch, 7u);
  EXPECT_TRUE((*list)[0].committed);
  auto bytes = store_->read(7);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  EXPECT_EQ(decode_checkpoint(bytes.value())->tasks[0].nodes[0].state.get("offset")->as_int(), 70);
  EXPECT_EQ(other->list()->size(), 2u);
}

TEST_F(FsStoreTest, OpeningKeepsAnotherWritersTemporaryFileAndDropsAStaleOne) {
  // Another process in the middle of writing epoch 3, and one that crashed long ago while
  // writing epoch 4: a store opened now must not pull the first from under its writer.
  const fs::path busy = dir_ / ("." + fs_epoch_file(3) + ".4242.0000beef.tmp");
  const fs::path stale = dir_ / ("." + fs_epoch_file(4) + ".4243.0000cafe.tmp");
  for (const fs::path& p : {busy, stale}) std::ofstream(p) << "partial";
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  std::unique_ptr<StoreHandle> other = open_dir(dir_.string());
  ASSERT_TRUE(other);
  EXPECT_TRUE(fs::exists(busy));
  EXPECT_FALSE(fs::exists(stale));
  // Neither is an epoch.
  EXPECT_EQ(other->list()->size(), 0u);
  // And two stores writing into the directory use temporary files of their own.
  ASSERT_TRUE(other->write(5, encode_checkpoint(sample(5, 50))).is_ok());
  EXPECT_TRUE(fs::exists(busy));
}

TEST_F(FsStoreTest, DotDotInDirIsRefused) {
  Value cfg = Value::object(std::vector<std::pair<std::string, Value>>{
      {"dir", Value::string((dir_ / ".." / "elsewhere").string())}});
  auto h = StoreHandle::open(*registry_.find_store("fs"), "p", cfg);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("'..'"), std::string::npos) << h.status().message();
}

TEST(FsStoreDefaults, DirFollowsStateDirectory) {
  ::unsetenv("STATE_DIRECTORY");
  EXPECT_EQ(default_fs_dir("wc"), fs::path("./wc.checkpoints"));
  ::setenv("STATE_DIRECTORY", "/var/lib/sluice:/var/lib/other", 1);
  EXPECT_EQ(default_fs_dir("wc"), fs::path("/var/lib/sluice/wc"));
  ::unsetenv("STATE_DIRECTORY");
}

}  // namespace
}  // namespace sluice::host::checkpoint
