#include "value/value.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "value/block_cache.hpp"

namespace sluice::host {
namespace {

TEST(Value, InlineKindsFitInSixteenBytesAndNeedNoBlock) {
  static_assert(sizeof(sl_value) == 16);
  Value i = Value::integer(9007199254740993);  // 2^53 + 1 stays exact
  EXPECT_TRUE(i.is_int());
  EXPECT_EQ(i.as_int(), 9007199254740993);
  EXPECT_FALSE(sl_value_is_boxed(i.raw()));
  EXPECT_FALSE(sl_value_is_boxed(Value::floating(1.5).raw()));
  EXPECT_FALSE(sl_value_is_boxed(Value::boolean(true).raw()));
}

TEST(Value, StringsAreCopiedAndSharedByReference) {
  std::string text = "hello";
  Value a = Value::string(text);
  text[0] = 'j';
  EXPECT_EQ(a.as_str(), "hello");
  Value b = a;  // a reference, not a copy of the text
  EXPECT_EQ(a.as_str().data(), b.as_str().data());
}

TEST(Value, ObjectsKeepInsertionOrderAndLastValueOfRepeatedKey) {
  std::vector<std::pair<std::string, Value>> entries{
      {"b", Value::integer(1)}, {"a", Value::integer(2)}, {"b", Value::integer(3)}};
  Value o = Value::object(entries);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.key_at(0), "b");
  EXPECT_EQ(o.at(0).as_int(), 3);
  EXPECT_EQ(o.key_at(1), "a");
  EXPECT_EQ(o.get("a")->as_int(), 2);
  EXPECT_FALSE(o.get("c").has_value());
}

TEST(Value, LargeObjectLookupFindsEveryKey) {
  std::vector<std::pair<std::string, Value>> entries;
  for (int i = 0; i < 500; ++i) entries.emplace_back("k" + std::to_string(i), Value::integer(i));
  Value o = Value::object(entries);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(o.get("k" + std::to_string(i))->as_int(), i);
}

TEST(Value, CompareOrdersKindsAndNumbersAcrossIntAndFloat) {
  EXPECT_LT(value_compare(sl_null(), sl_bool(0)), 0);
  EXPECT_LT(value_compare(sl_bool(1), sl_int(-5)), 0);
  EXPECT_EQ(value_compare(sl_int(1), sl_float(1.0)), 0);
  EXPECT_LT(value_compare(sl_int(9007199254740993), sl_float(9007199254740994.0)), 0);
  EXPECT_GT(value_compare(sl_int(9007199254740993), sl_float(9007199254740992.0)), 0);
  EXPECT_LT(value_compare(Value::string("abc").raw(), Value::string("abd").raw()), 0);
  EXPECT_LT(value_compare(Value::string("ab").raw(), Value::string("abc").raw()), 0);
  EXPECT_EQ(value_hash(sl_int(7)), value_hash(sl_float(7.0)));
}

TEST(Value, ObjectsCompareEqualRegardlessOfKeyOrder) {
  std::vector<std::pair<std::string, Value>> ab{{"a", Value::integer(1)}, {"b", Value::integer(2)}};
  std::vector<std::pair<std::string, Value>> ba{{"b", Value::integer(2)}, {"a", Value::integer(1)}};
  Value x = Value::object(ab), y = Value::object(ba);
  EXPECT_EQ(value_compare(x.raw(), y.raw()), 0);
  EXPECT_EQ(value_hash(x.raw()), value_hash(y.raw()));
}

TEST(Value, ObjectsOrderedDifferentlyCompareAndHashByTheirEntries) {
  std::vector<std::pair<std::string, Value>> small{{"a", Value::integer(1)}};
  std::vector<std::pair<std::string, Value>> big, big_reversed;
  for (int i = 0; i < 100; ++i) big.emplace_back("k" + std::to_string(i), Value::integer(i));
  big_reversed.assign(big.rbegin(), big.rend());
  Value x = Value::object(big), y = Value::object(big_reversed);
  EXPECT_EQ(value_compare(x.raw(), y.raw()), 0);
  EXPECT_EQ(value_hash(x.raw()), value_hash(y.raw()));
  big_reversed[5].second = Value::integer(-1);  // "k94" differs
  Value z = Value::object(big_reversed);
  EXPECT_NE(value_compare(x.raw(), z.raw()), 0);
  EXPECT_NE(value_hash(x.raw()), value_hash(z.raw()));
  // Ordered as sorted entries: {"a": 1} < {"k0": 0, ...} because "a" < "k0".
  EXPECT_LT(value_compare(Value::object(small).raw(), x.raw()), 0);
}

TEST(Value, PutUniqueAddsKeysInPlaceGrowingTheBlockAndKeepsInsertionOrder) {
  std::vector<std::pair<std::string, Value>> none;
  sl_value obj = Value::object(none).release();
  constexpr int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::string key = "user-" + std::to_string(i * 7919 % n);
    ASSERT_EQ(object_put_unique(&obj, key.data(), key.size(), sl_int(i)), 1) << i;
  }
  Value o = Value::adopt(obj);
  ASSERT_EQ(o.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(o.key_at(i), "user-" + std::to_string(i * 7919 % n));
    ASSERT_EQ(o.get("user-" + std::to_string(i * 7919 % n))->as_int(), i);
  }
  // An existing key is updated where it stands; the old value is released.
  sl_value raw = o.release();
  Value text = Value::string("replaced");
  ASSERT_EQ(object_put_unique(&raw, "user-0", 6, text.raw()), 1);
  value_retain(text.raw());  // the object took the reference we lent it
  o = Value::adopt(raw);
  EXPECT_EQ(o.size(), static_cast<size_t>(n));
  EXPECT_EQ(o.at(0).as_str(), "replaced");
}

TEST(Value, PutUniqueTakesAKeyThatLivesInTheObjectItself) {
  // The key below points into the block that must move to make room: it has to be
  // copied before the old block goes (ASan reports a use after free otherwise).
  std::vector<std::pair<std::string, Value>> one{{"a-rather-long-key", Value::integer(1)}};
  sl_value obj = Value::object(one).release();
  sl_str key = object_key_at(obj, 0);
  std::string suffix_key(key.data + 2, key.size - 2);
  ASSERT_EQ(object_put_unique(&obj, key.data + 2, key.size - 2, sl_int(2)), 1);
  Value o = Value::adopt(obj);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.key_at(1), suffix_key);
  EXPECT_EQ(o.get(suffix_key)->as_int(), 2);
}

TEST(Value, PutUniqueRefusesASharedObjectAndChangesNothing) {
  std::vector<std::pair<std::string, Value>> one{{"a", Value::integer(1)}};
  Value shared = Value::object(one);
  Value other = shared;  // two references
  sl_value raw = shared.raw();
  EXPECT_EQ(object_put_unique(&raw, "b", 1, sl_int(2)), 0);
  EXPECT_EQ(object_put_unique(&raw, "a", 1, sl_int(5)), 0);
  EXPECT_EQ(raw.as.block, shared.raw().as.block);
  EXPECT_EQ(other.size(), 1u);
  EXPECT_EQ(other.get("a")->as_int(), 1);
  sl_value not_object = sl_int(3);
  EXPECT_EQ(object_put_unique(&not_object, "a", 1, sl_int(5)), 0);
}

TEST(Value, ArrayItemsAreTheItemsInOrderAndNullForOtherKinds) {
  std::vector<Value> items{Value::integer(1), Value::string("two"), Value::floating(3.5)};
  Value a = Value::array(items);
  const sl_value* run = array_items(a.raw());
  ASSERT_NE(run, nullptr);
  for (size_t i = 0; i < items.size(); ++i) EXPECT_EQ(value_compare(run[i], items[i].raw()), 0);
  EXPECT_EQ(array_items(Value::array({}).raw()), nullptr);
  EXPECT_EQ(array_items(Value::string("abc").raw()), nullptr);
  EXPECT_EQ(array_items(sl_int(1)), nullptr);
}

TEST(Value, TruthinessFollowsPython) {
  EXPECT_FALSE(truthy(sl_null()));
  EXPECT_FALSE(truthy(sl_int(0)));
  EXPECT_FALSE(truthy(sl_float(0.0)));
  EXPECT_FALSE(truthy(Value::string("").raw()));
  EXPECT_FALSE(truthy(Value::array({}).raw()));
  EXPECT_TRUE(truthy(Value::string("0").raw()));
  EXPECT_TRUE(truthy(sl_int(-1)));
}

struct Released {
  int count = 0;
};

TEST(Value, WrappedBytesReleaseTheForeignBufferWithTheLastReference) {
  static char buffer[] = "payload";
  Released released;
  {
    Value a = Value::adopt(bytes_wrap(
        buffer, 7, [](void* p) { ++static_cast<Released*>(p)->count; }, &released));
    Value b = a;
    EXPECT_EQ(b.as_str(), "payload");
    EXPECT_EQ(b.as_str().data(), buffer);  // not copied
  }
  EXPECT_EQ(released.count, 1);
}

TEST(Value, ReferenceCountsSurviveConcurrentCopies) {
  Value shared = Value::string("shared across threads");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        Value copy = shared;
        ASSERT_EQ(copy.as_str().size(), 21u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared.as_str(), "shared across threads");
}

TEST(Value, ArraysReleaseTheirBoxedItemsWhereverTheyStand) {
  // Arrays of scalars skip the per-item release; one boxed item, first or last, must not.
  static char buffer[] = "x";
  for (const bool boxed_last : {false, true}) {
    Released released;
    {
      Value wrapped = Value::adopt(bytes_wrap(
          buffer, 1, [](void* p) { ++static_cast<Released*>(p)->count; }, &released));
      std::vector<Value> items{Value::integer(1), Value::floating(2.5), Value::null()};
      items.insert(boxed_last ? items.end() : items.begin(), wrapped);
      Value a = Value::array(items);
      items.clear();
      wrapped = Value();
      EXPECT_EQ(released.count, 0) << "the array still holds it";
      EXPECT_EQ(a.at(boxed_last ? 3 : 0).as_str(), "x");
    }
    EXPECT_EQ(released.count, 1) << (boxed_last ? "boxed item last" : "boxed item first");
  }
}

TEST(Value, TheLastOfConcurrentReleasesFreesTheBlockExactlyOnce) {
  static char buffer[] = "x";
  std::atomic<int> released{0};
  constexpr int k_rounds = 5000;
  for (int r = 0; r < k_rounds; ++r) {
    Value a = Value::adopt(bytes_wrap(
        buffer, 1, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &released));
    Value b = a;
    std::thread other([b = std::move(b)]() mutable { b = Value(); });
    a = Value();
    other.join();
  }
  EXPECT_EQ(released.load(), k_rounds);
}

// --- the per-thread block cache (block_cache.hpp); off under ASan, where these skip ------

// The class of the only cached class on this thread, or 0 (none or several).
uint32_t only_cached_class() {
  uint32_t found = 0;
  for (uint32_t c = 1; c <= block_cache::k_classes; ++c) {
    if (block_cache::cached_blocks(c) == 0) continue;
    if (found != 0) return 0;
    found = c;
  }
  return found;
}

TEST(BlockCache, AFreedBlockIsReusedByTheNextValueOfItsSize) {
  if (!block_cache::enabled()) GTEST_SKIP() << "block cache off (sanitizer build)";
  block_cache::trim();
  Value a = Value::string("twenty characters...");
  const char* first = a.as_str().data();
  a = Value();
  const uint32_t c = only_cached_class();
  ASSERT_NE(c, 0u);
  EXPECT_EQ(block_cache::cached_blocks(c), 1u);
  EXPECT_EQ(block_cache::cached_bytes(), block_cache::class_size(c));
  Value b = Value::string("another twenty chars");
  EXPECT_EQ(b.as_str().data(), first) << "the cached block was not reused";
  EXPECT_EQ(b.as_str(), "another twenty chars");
  EXPECT_EQ(block_cache::cached_bytes(), 0u);
}

TEST(BlockCache, EachClassAndEachThreadKeepAtMostTheirBound) {
  if (!block_cache::enabled()) GTEST_SKIP() << "block cache off (sanitizer build)";
  block_cache::trim();
  {
    std::vector<Value> same;  // 10,000 arrays of one size: more than a class keeps
    for (int i = 0; i < 10000; ++i) {
      const Value item[] = {Value::integer(i)};
      same.push_back(Value::array(item));
    }
  }
  const uint32_t c = only_cached_class();
  ASSERT_NE(c, 0u);
  EXPECT_EQ(block_cache::cached_blocks(c), block_cache::class_limit(c));
  EXPECT_LE(block_cache::cached_blocks(c) * block_cache::class_size(c), block_cache::k_class_bytes);

  block_cache::trim();
  {
    std::vector<Value> all;  // every class, over its bound: the thread's bound holds
    for (size_t len = 1; len < block_cache::k_max_bytes; ++len) {
      for (int i = 0; i < 300; ++i) all.push_back(Value::string(std::string(len, 'x')));
    }
  }
  EXPECT_LE(block_cache::cached_bytes(), block_cache::k_thread_bytes);
  EXPECT_GT(block_cache::cached_bytes(), block_cache::k_thread_bytes - block_cache::k_max_bytes);
  block_cache::trim();
  EXPECT_EQ(block_cache::cached_bytes(), 0u);
}

TEST(BlockCache, BlocksFreedOnAnotherThreadJoinThatThreadsCacheAndGoAtItsExit) {
  if (!block_cache::enabled()) GTEST_SKIP() << "block cache off (sanitizer build)";
  block_cache::trim();
  std::vector<Value> made_here;
  for (int i = 0; i < 100; ++i) made_here.push_back(Value::string("made on the main thread"));
  const uint64_t freed_before = block_cache::freed_at_thread_exit();
  std::thread other([&made_here] {
    made_here.clear();  // the other thread drops the last references
    const uint32_t c = only_cached_class();
    ASSERT_NE(c, 0u);
    EXPECT_EQ(block_cache::cached_blocks(c), 100u);
    Value again = Value::string("made on the other one");  // same size: a block reused
    EXPECT_EQ(again.as_str(), "made on the other one");
    EXPECT_EQ(block_cache::cached_blocks(c), 99u);
  });
  other.join();
  EXPECT_EQ(block_cache::cached_bytes(), 0u) << "the main thread's cache got nothing";
  // 99 cached, plus the one `again` gave back as the thread ended.
  EXPECT_EQ(block_cache::freed_at_thread_exit() - freed_before, 100u);
}

}  // namespace
}  // namespace sluice::host
