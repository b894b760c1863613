// Block storage for boxed values. Each block is one allocation: a header, then
// the payload laid out behind it (characters, items, or object entries), so a
// value costs one allocation and one pointer chase. Blocks of up to 512 bytes come from
// the calling thread's block cache (block_cache.hpp), which gives back freed blocks.
#include "value/value.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "value/block_cache.hpp"

// The C header declares `struct sl_block` opaque; this is its definition.
struct sl_block {
  std::atomic<uint32_t> refs;
  uint8_t kind;        // SL_KIND_*
  uint8_t flags;       // k_plain
  uint16_t cache_cls;  // block_cache class of the allocation, or 0: operator new's own
  size_t size;         // bytes (string, bytes) or entries (array, object)
};

namespace sluice::host {
namespace {

struct BytesPayload {
  const void* data;  // points behind the payload, or at a wrapped foreign buffer
  sl_release_fn release;
  void* private_data;
};

constexpr size_t k_header =
    (sizeof(sl_block) + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);

char* payload(sl_block* b) noexcept { return reinterpret_cast<char*>(b) + k_header; }
const char* payload(const sl_block* b) noexcept {
  return reinterpret_cast<const char*>(b) + k_header;
}

// A block that holds no reference and no foreign buffer (a string, copied bytes, an array
// none of whose items is boxed): freeing it is all its release does.
constexpr uint8_t k_plain = 1;

sl_block* allocate(int32_t kind, size_t size, size_t payload_bytes) {
  const size_t bytes = k_header + payload_bytes;
  const uint32_t cls = block_cache::class_of(bytes);
  void* mem = cls != 0 ? block_cache::take(cls) : ::operator new(bytes);
  return new (mem) sl_block{{1}, static_cast<uint8_t>(kind), 0, static_cast<uint16_t>(cls), size};
}

sl_value boxed(sl_block* b) noexcept {
  sl_value v = sl_null();
  v.kind = b->kind;
  v.as.block = b;
  return v;
}

// Object layout behind the header (block->size = entries, in insertion order):
//   ObjectHead, values[capacity], keys[capacity], slots[slot_count], key characters.
// `slots` is an open-addressing hash index of the entries (linear probing; 0 = empty,
// else entry index + 1), at most half full, so a lookup is a hash and a probe or two,
// and building an object needs no sort and no separate table to drop duplicates.
// object_create leaves no spare room (capacity = count); object_put_unique grows a
// uniquely held object by doubling, so adding keys one at a time (count_by over many
// distinct keys) costs O(1) amortised per key, as a Python dict does, instead of a copy
// of every entry per new key.
struct ObjectHead {
  uint32_t capacity;
  uint32_t slot_count;  // a power of two, >= 2 * capacity and >= 1
  size_t chars_capacity;
  size_t chars_used;
};
struct ObjectView {
  ObjectHead* head;
  sl_value* values;
  sl_str* keys;
  uint32_t* slots;
  char* chars;
};
ObjectView object_view(const sl_block* b) noexcept {
  auto* head = reinterpret_cast<ObjectHead*>(const_cast<char*>(payload(b)));
  char* p = reinterpret_cast<char*>(head + 1);
  auto* values = reinterpret_cast<sl_value*>(p);
  p += head->capacity * sizeof(sl_value);
  auto* keys = reinterpret_cast<sl_str*>(p);
  p += head->capacity * sizeof(sl_str);
  auto* slots = reinterpret_cast<uint32_t*>(p);
  p += head->slot_count * sizeof(uint32_t);
  return {head, values, keys, slots, p};
}

int compare_str(sl_str a, sl_str b) noexcept {
  int c = std::memcmp(a.data, b.data, std::min(a.size, b.size));
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size < b.size ? -1 : (a.size > b.size ? 1 : 0);
}

bool equal_str(sl_str a, sl_str b) noexcept {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size) == 0);
}

uint64_t key_hash(sl_str k) noexcept {
  return std::hash<std::string_view>{}(std::string_view(k.data, k.size));
}

// The slot holding `key`, or the empty slot where it would go.
uint32_t* probe(const ObjectView& o, sl_str key, uint64_t hash) noexcept {
  const uint32_t mask = o.head->slot_count - 1;
  for (auto i = static_cast<uint32_t>(hash) & mask;; i = (i + 1) & mask) {
    const uint32_t s = o.slots[i];
    if (s == 0 || equal_str(o.keys[s - 1], key)) return &o.slots[i];
  }
}

sl_block* allocate_object(size_t capacity, size_t chars_capacity) {
  if (capacity > (uint32_t{1} << 30)) throw std::length_error("object: too many entries");
  const size_t slot_count = std::bit_ceil(std::max<size_t>(1, 2 * capacity));
  const size_t bytes = sizeof(ObjectHead) + capacity * (sizeof(sl_value) + sizeof(sl_str)) +
                       slot_count * sizeof(uint32_t) + chars_capacity;
  sl_block* b = allocate(SL_KIND_OBJECT, 0, bytes);
  new (payload(b)) ObjectHead{static_cast<uint32_t>(capacity), static_cast<uint32_t>(slot_count),
                              chars_capacity, 0};
  ObjectView o = object_view(b);
  std::memset(o.slots, 0, slot_count * sizeof(uint32_t));
  return b;
}

// Appends entry key = value (the reference is taken over) at the empty `slot` found by
// probe(); the caller made sure there is room.
void append_entry(sl_block* b, const ObjectView& o, sl_str key, sl_value value,
                  uint32_t* slot) noexcept {
  char* chars = o.chars + o.head->chars_used;
  if (key.size) std::memcpy(chars, key.data, key.size);
  chars[key.size] = '\0';
  o.head->chars_used += key.size + 1;
  const size_t e = b->size++;
  o.keys[e] = {chars, key.size};
  o.values[e] = value;
  *slot = static_cast<uint32_t>(e + 1);
}

// Frees a block whose values were moved elsewhere (not released).
void deallocate(sl_block* b) noexcept {
  const uint32_t cls = b->cache_cls;
  b->~sl_block();
  if (cls != 0) {
    block_cache::give_back(b, cls);
  } else {
    ::operator delete(b);
  }
}

// Entry indices of an object sorted by key: objects compare and print-independently of
// insertion order. Small objects sort on the stack.
class SortedEntries {
 public:
  explicit SortedEntries(const sl_block* b) : view_(object_view(b)), size_(b->size) {
    if (size_ > k_inline) heap_ = std::make_unique<uint32_t[]>(size_);
    uint32_t* p = data();
    for (size_t i = 0; i < size_; ++i) p[i] = static_cast<uint32_t>(i);
    std::sort(p, p + size_, [this](uint32_t x, uint32_t y) {
      return compare_str(view_.keys[x], view_.keys[y]) < 0;
    });
  }
  uint32_t operator[](size_t i) const noexcept { return data()[i]; }

 private:
  static constexpr size_t k_inline = 32;
  uint32_t* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const uint32_t* data() const noexcept { return heap_ ? heap_.get() : inline_; }
  ObjectView view_;
  size_t size_;
  uint32_t inline_[k_inline];
  std::unique_ptr<uint32_t[]> heap_;
};

// What a block that is not k_plain holds: its references and foreign buffer, released.
[[gnu::noinline]] void release_contents(sl_block* b) noexcept {
  switch (b->kind) {
    case SL_KIND_BYTES: {
      auto* p = reinterpret_cast<BytesPayload*>(payload(b));
      if (p->release) p->release(p->private_data);
      break;
    }
    case SL_KIND_ARRAY: {
      auto* items = reinterpret_cast<sl_value*>(payload(b));
      for (size_t i = 0, n = b->size; i < n; ++i) {
        if (sl_value_is_boxed(items[i])) value_release(items[i]);
      }
      break;
    }
    case SL_KIND_OBJECT: {
      ObjectView o = object_view(b);
      for (size_t i = 0, n = b->size; i < n; ++i) {
        if (sl_value_is_boxed(o.values[i])) value_release(o.values[i]);
      }
      break;
    }
    default: break;
  }
}

// The last reference is gone. A plain block (the common case: strings, arrays of
// numbers) is just given back, without the register saves the item loops need.
void destroy(sl_block* b) noexcept {
  if (!(b->flags & k_plain)) release_contents(b);
  deallocate(b);
}

int rank(int32_t kind) noexcept {
  // null < bool < numbers < string < bytes < array < object
  switch (kind) {
    case SL_KIND_NULL: return 0;
    case SL_KIND_BOOL: return 1;
    case SL_KIND_INT:
    case SL_KIND_FLOAT: return 2;
    case SL_KIND_STRING: return 3;
    case SL_KIND_BYTES: return 4;
    case SL_KIND_ARRAY: return 5;
    default: return 6;
  }
}

int compare_numbers(sl_value a, sl_value b) noexcept {
  if (a.kind == SL_KIND_INT && b.kind == SL_KIND_INT) {
    return a.as.i < b.as.i ? -1 : (a.as.i > b.as.i ? 1 : 0);
  }
  // long double holds every int64 exactly on x86-64; NaN sorts after all numbers.
  long double x = a.kind == SL_KIND_INT ? static_cast<long double>(a.as.i) : a.as.f;
  long double y = b.kind == SL_KIND_INT ? static_cast<long double>(b.as.i) : b.as.f;
  bool xn = std::isnan(x), yn = std::isnan(y);
  if (xn || yn) return xn == yn ? 0 : (xn ? 1 : -1);
  return x < y ? -1 : (x > y ? 1 : 0);
}

uint64_t mix(uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

void value_retain(sl_value v) noexcept {
  if (sl_value_is_boxed(v)) v.as.block->refs.fetch_add(1, std::memory_order_relaxed);
}

void value_release(sl_value v) noexcept {
  if (!sl_value_is_boxed(v)) return;
  sl_block* b = v.as.block;
  // refs == 1: the caller holds the only reference, so no other thread can retain or
  // release this block now (it could only get a reference from a holder); the locked
  // decrement is skipped. Acquire pairs with the release of references dropped elsewhere,
  // as in object_set_unique.
  if (b->refs.load(std::memory_order_acquire) == 1 ||
      b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    destroy(b);
  }
}

sl_value string_create(const char* data, size_t size) {
  sl_block* b = allocate(SL_KIND_STRING, size, size + 1);
  b->flags = k_plain;
  if (size) std::memcpy(payload(b), data, size);
  payload(b)[size] = '\0';  // lets host code hand the text to C APIs
  return boxed(b);
}

sl_value bytes_create(const void* data, size_t size) {
  sl_block* b = allocate(SL_KIND_BYTES, size, sizeof(BytesPayload) + size);
  b->flags = k_plain;
  char* inline_data = payload(b) + sizeof(BytesPayload);
  if (size) std::memcpy(inline_data, data, size);
  new (payload(b)) BytesPayload{inline_data, nullptr, nullptr};
  return boxed(b);
}

sl_value bytes_wrap(const void* data, size_t size, sl_release_fn release, void* private_data) {
  sl_block* b = allocate(SL_KIND_BYTES, size, sizeof(BytesPayload));
  new (payload(b)) BytesPayload{data, release, private_data};
  return boxed(b);
}

namespace {
// array_create's body: `adopt` takes the items' references over instead of adding one each.
sl_value make_array(const sl_value* items, size_t count, bool adopt) {
  sl_block* b = allocate(SL_KIND_ARRAY, count, count * sizeof(sl_value));
  auto* out = reinterpret_cast<sl_value*>(payload(b));
  // One pass copies and ORs the kinds together (one instruction per item, no branch; a
  // memcpy call cost more than the copy for the short arrays of a sliding window): the OR
  // is below SL_KIND_STRING only when every kind is (sl_value_is_boxed is kind >=
  // SL_KIND_STRING; a negative kind makes it large, and the exact pass below decides).
  uint32_t kinds = 0;
#pragma GCC unroll 4
  for (size_t i = 0; i < count; ++i) {
    out[i] = items[i];
    kinds |= static_cast<uint32_t>(items[i].kind);
  }
  if (kinds >= SL_KIND_STRING) {
    if (!adopt) {
      for (size_t i = 0; i < count; ++i) value_retain(items[i]);
    }
  } else {
    b->flags = k_plain;
  }
  return boxed(b);
}

// object_create's body: `adopt` takes the values' references over.
sl_value make_object(const sl_str* keys, const sl_value* values, size_t count, bool adopt) {
  size_t key_bytes = 0;
  for (size_t i = 0; i < count; ++i) key_bytes += keys[i].size + 1;
  sl_block* b = allocate_object(count, key_bytes);
  ObjectView o = object_view(b);
  for (size_t i = 0; i < count; ++i) {
    uint32_t* slot = probe(o, keys[i], key_hash(keys[i]));
    if (!adopt) value_retain(values[i]);
    if (*slot != 0) {  // a repeated key keeps its first position and its last value
      value_release(std::exchange(o.values[*slot - 1], values[i]));
    } else {
      append_entry(b, o, keys[i], values[i], slot);
    }
  }
  return boxed(b);
}
}  // namespace

sl_value array_create(const sl_value* items, size_t count) {
  return make_array(items, count, false);
}
sl_value array_adopt(const sl_value* items, size_t count) { return make_array(items, count, true); }

sl_value object_create(const sl_str* keys, const sl_value* values, size_t count) {
  return make_object(keys, values, count, false);
}
sl_value object_adopt(const sl_str* keys, const sl_value* values, size_t count) {
  return make_object(keys, values, count, true);
}

sl_str value_str(sl_value v) noexcept {
  if (v.kind == SL_KIND_STRING) return {payload(v.as.block), v.as.block->size};
  if (v.kind == SL_KIND_BYTES) {
    const auto* p = reinterpret_cast<const BytesPayload*>(payload(v.as.block));
    return {static_cast<const char*>(p->data), v.as.block->size};
  }
  return {nullptr, 0};
}

namespace {
inline uint64_t bytes_of(sl_value v) noexcept {
  switch (v.kind) {
    case SL_KIND_BOOL: return 1;
    case SL_KIND_INT:
    case SL_KIND_FLOAT: return 8;
    case SL_KIND_STRING:
    case SL_KIND_BYTES: return v.as.block->size;
    case SL_KIND_ARRAY:
    case SL_KIND_OBJECT: return sizeof(sl_value) * v.as.block->size;  // entries
    default: return 0;                                                // null
  }
}

// A first pass without branches (vectorised) sums the inline kinds and notes whether any
// value is boxed; only then a second pass reads the blocks. A loop with a switch per element
// cost a chain of ten int maps ~20 % (bench/operator_bench map10); this pass is the kind of
// the one release_all makes there.
template <class ValueAt>
uint64_t sum_bytes(size_t count, ValueAt value_at) noexcept {
  uint64_t inline_total = 0;
  uint32_t boxed = 0;
  for (size_t i = 0; i < count; ++i) {
    const auto kind = static_cast<uint32_t>(value_at(i).kind);
    boxed |= kind >> 2;  // kinds are 0..7: SL_KIND_STRING and up have bit 2 set
    inline_total += k_inline_payload_bytes[kind & 7u];
  }
  if (boxed == 0) return inline_total;
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += bytes_of(value_at(i));
  return total;
}
}  // namespace

uint64_t payload_bytes(const sl_message* messages, size_t count) noexcept {
  return sum_bytes(count, [messages](size_t i) -> const sl_value& { return messages[i].value; });
}

uint64_t payload_bytes(const sl_value* values, size_t count) noexcept {
  return sum_bytes(count, [values](size_t i) -> const sl_value& { return values[i]; });
}

size_t value_size(sl_value v) noexcept { return sl_value_is_boxed(v) ? v.as.block->size : 0; }

sl_value value_at(sl_value v, size_t index) noexcept {
  if (!sl_value_is_boxed(v) || index >= v.as.block->size) return sl_null();
  if (v.kind == SL_KIND_ARRAY) return reinterpret_cast<const sl_value*>(payload(v.as.block))[index];
  if (v.kind == SL_KIND_OBJECT) return object_view(v.as.block).values[index];
  return sl_null();
}

const sl_value* array_items(sl_value v) noexcept {
  if (v.kind != SL_KIND_ARRAY || v.as.block->size == 0) return nullptr;
  return reinterpret_cast<const sl_value*>(payload(v.as.block));
}

sl_str object_key_at(sl_value v, size_t index) noexcept {
  if (v.kind != SL_KIND_OBJECT || index >= v.as.block->size) return {nullptr, 0};
  return object_view(v.as.block).keys[index];
}

int32_t object_get(sl_value v, const char* key, size_t key_size, sl_value* out) noexcept {
  *out = sl_null();
  if (v.kind != SL_KIND_OBJECT) return 0;
  ObjectView o = object_view(v.as.block);
  const sl_str want{key, key_size};
  const uint32_t slot = *probe(o, want, key_hash(want));
  if (slot == 0) return 0;
  *out = o.values[slot - 1];
  return 1;
}

int32_t object_set_unique(sl_value obj, size_t index, sl_value value) noexcept {
  // refs == 1 means the caller's is the only reference: no other thread can hold
  // one (it could only get it from a holder), so the change is invisible to all
  // others. Acquire pairs with the release of references dropped elsewhere.
  if (obj.kind != SL_KIND_OBJECT || index >= obj.as.block->size ||
      obj.as.block->refs.load(std::memory_order_acquire) != 1) {
    return 0;
  }
  sl_value* slot = &object_view(obj.as.block).values[index];
  const sl_value old = *slot;
  *slot = value;
  value_release(old);
  return 1;
}

int32_t object_put_unique(sl_value* obj, const char* key, size_t key_size,
                          sl_value value) noexcept {
  // Same ownership argument as object_set_unique: with refs == 1 nobody else can see
  // the block, so changing it, or moving it to a larger one, is invisible to others.
  if (obj == nullptr || obj->kind != SL_KIND_OBJECT ||
      obj->as.block->refs.load(std::memory_order_acquire) != 1) {
    return 0;
  }
  sl_block* b = obj->as.block;
  ObjectView o = object_view(b);
  const sl_str k{key, key_size};
  const uint64_t hash = key_hash(k);
  uint32_t* slot = probe(o, k, hash);
  if (*slot != 0) {
    value_release(std::exchange(o.values[*slot - 1], value));
    return 1;
  }
  sl_block* old = nullptr;
  if (b->size == o.head->capacity || o.head->chars_used + key_size + 1 > o.head->chars_capacity) {
    sl_block* grown;
    try {
      grown =
          allocate_object(std::max<size_t>(4, 2 * size_t{o.head->capacity}),
                          std::max(2 * o.head->chars_capacity, o.head->chars_used + key_size + 1));
    } catch (...) {
      return 0;  // out of memory: the caller's copying path reports it
    }
    ObjectView g = object_view(grown);
    for (size_t e = 0; e < b->size; ++e) {  // values move: no retain, no release
      append_entry(grown, g, o.keys[e], o.values[e], probe(g, o.keys[e], key_hash(o.keys[e])));
    }
    old = b;  // freed after the append: `key` may point into it (object_key_at)
    b = grown;
    o = g;
    slot = probe(o, k, hash);
  }
  append_entry(b, o, k, value, slot);
  if (old != nullptr) deallocate(old);
  obj->as.block = b;
  return 1;
}

int32_t value_compare(sl_value a, sl_value b) noexcept {
  int ra = rank(a.kind), rb = rank(b.kind);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (a.kind) {
    case SL_KIND_NULL: return 0;
    case SL_KIND_BOOL: return a.as.i == b.as.i ? 0 : (a.as.i < b.as.i ? -1 : 1);
    case SL_KIND_INT:
    case SL_KIND_FLOAT: return compare_numbers(a, b);
    case SL_KIND_STRING:
    case SL_KIND_BYTES: return compare_str(value_str(a), value_str(b));
    case SL_KIND_ARRAY: {
      size_t na = a.as.block->size, nb = b.as.block->size;
      for (size_t i = 0; i < std::min(na, nb); ++i) {
        int32_t c = value_compare(value_at(a, i), value_at(b, i));
        if (c != 0) return c;
      }
      return na < nb ? -1 : (na > nb ? 1 : 0);
    }
    default: {
      // Objects compare as their entries sorted by key, so order of insertion
      // does not matter (as with Python dicts).
      ObjectView x = object_view(a.as.block), y = object_view(b.as.block);
      size_t na = a.as.block->size, nb = b.as.block->size;
      SortedEntries xs(a.as.block), ys(b.as.block);
      for (size_t i = 0; i < std::min(na, nb); ++i) {
        int c = compare_str(x.keys[xs[i]], y.keys[ys[i]]);
        if (c != 0) return c;
        int32_t cv = value_compare(x.values[xs[i]], y.values[ys[i]]);
        if (cv != 0) return cv;
      }
      return na < nb ? -1 : (na > nb ? 1 : 0);
    }
  }
}

uint64_t value_hash(sl_value v) noexcept {
  switch (v.kind) {
    case SL_KIND_NULL: return 0x9e3779b97f4a7c15ULL;
    case SL_KIND_BOOL: return mix(0x100 + static_cast<uint64_t>(v.as.i));
    case SL_KIND_INT: return mix(static_cast<uint64_t>(v.as.i));
    case SL_KIND_FLOAT: {
      double f = v.as.f;
      // Equal numbers hash alike: 1.0 hashes as 1.
      if (std::isfinite(f) && f == std::trunc(f) && f >= -9.2e18 && f <= 9.2e18) {
        return mix(static_cast<uint64_t>(static_cast<int64_t>(f)));
      }
      if (std::isnan(f)) return 0x7ff8000000000000ULL;
      uint64_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return mix(bits);
    }
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      sl_str s = value_str(v);
      return mix(std::hash<std::string_view>{}(std::string_view(s.data, s.size)) +
                 static_cast<uint64_t>(v.kind));
    }
    case SL_KIND_ARRAY: {
      uint64_t h = 0xa11a7;
      for (size_t i = 0; i < v.as.block->size; ++i) h = mix(h * 31 + value_hash(value_at(v, i)));
      return h;
    }
    default: {
      // A sum over the entries: independent of insertion order, as value_compare is.
      uint64_t h = 0x0b1ec7 + v.as.block->size;
      ObjectView o = object_view(v.as.block);
      for (size_t e = 0; e < v.as.block->size; ++e) {
        h += mix(key_hash(o.keys[e]) * 31 + value_hash(o.values[e]));
      }
      return mix(h);
    }
  }
}

std::string_view kind_name(int32_t kind) noexcept {
  switch (kind) {
    case SL_KIND_NULL: return "null";
    case SL_KIND_BOOL: return "bool";
    case SL_KIND_INT: return "int";
    case SL_KIND_FLOAT: return "float";
    case SL_KIND_STRING: return "string";
    case SL_KIND_BYTES: return "bytes";
    case SL_KIND_ARRAY: return "array";
    case SL_KIND_OBJECT: return "object";
    default: return "unknown";
  }
}

bool truthy(sl_value v) noexcept {
  switch (v.kind) {
    case SL_KIND_NULL: return false;
    case SL_KIND_BOOL:
    case SL_KIND_INT: return v.as.i != 0;
    case SL_KIND_FLOAT: return v.as.f != 0.0;
    default: return v.as.block->size != 0;
  }
}

Value Value::array(std::span<const Value> items) {
  std::vector<sl_value> raw;
  raw.reserve(items.size());
  for (const Value& i : items) raw.push_back(i.raw());
  return adopt(array_create(raw.data(), raw.size()));
}

Value Value::object(std::span<const std::pair<std::string, Value>> entries) {
  std::vector<sl_str> keys;
  std::vector<sl_value> values;
  keys.reserve(entries.size());
  values.reserve(entries.size());
  for (const auto& [k, v] : entries) {
    keys.push_back({k.data(), k.size()});
    values.push_back(v.raw());
  }
  return adopt(object_create(keys.data(), values.data(), keys.size()));
}

std::optional<Value> Value::get(std::string_view key) const noexcept {
  sl_value out;
  if (!object_get(v_, key.data(), key.size(), &out)) return std::nullopt;
  return borrow(out);
}

}  // namespace sluice::host
