// Block storage for boxed values. Each block is one allocation: a header, then
// the payload laid out behind it (characters, items, or object entries), so a
// value costs one allocation and one pointer chase.
#include "value/value.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <new>
#include <unordered_map>
#include <vector>

// The C header declares `struct sl_block` opaque; this is its definition.
struct sl_block {
  std::atomic<uint32_t> refs;
  int32_t kind;
  size_t size;  // bytes (string, bytes) or entries (array, object)
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

sl_block* allocate(int32_t kind, size_t size, size_t payload_bytes) {
  void* mem = ::operator new(k_header + payload_bytes);
  auto* b = new (mem) sl_block{{1}, kind, size};
  return b;
}

sl_value boxed(sl_block* b) noexcept {
  sl_value v = sl_null();
  v.kind = b->kind;
  v.as.block = b;
  return v;
}

// Object layout behind the header: values[n], keys[n], order[n] (entry indices
// sorted by key, for lookup and order-independent comparison), key characters.
struct ObjectView {
  sl_value* values;
  sl_str* keys;
  uint32_t* order;
};
ObjectView object_view(const sl_block* b) noexcept {
  auto* base = const_cast<char*>(payload(b));
  size_t n = b->size;
  auto* values = reinterpret_cast<sl_value*>(base);
  auto* keys = reinterpret_cast<sl_str*>(base + n * sizeof(sl_value));
  auto* order = reinterpret_cast<uint32_t*>(base + n * (sizeof(sl_value) + sizeof(sl_str)));
  return {values, keys, order};
}

int compare_str(sl_str a, sl_str b) noexcept {
  int c = std::memcmp(a.data, b.data, std::min(a.size, b.size));
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size < b.size ? -1 : (a.size > b.size ? 1 : 0);
}

void destroy(sl_block* b) noexcept {
  switch (b->kind) {
    case SL_KIND_BYTES: {
      auto* p = reinterpret_cast<BytesPayload*>(payload(b));
      if (p->release) p->release(p->private_data);
      break;
    }
    case SL_KIND_ARRAY: {
      auto* items = reinterpret_cast<sl_value*>(payload(b));
      for (size_t i = 0; i < b->size; ++i) value_release(items[i]);
      break;
    }
    case SL_KIND_OBJECT: {
      ObjectView o = object_view(b);
      for (size_t i = 0; i < b->size; ++i) value_release(o.values[i]);
      break;
    }
    default: break;
  }
  b->~sl_block();
  ::operator delete(b);
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
  if (v.as.block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(v.as.block);
}

sl_value string_create(const char* data, size_t size) {
  sl_block* b = allocate(SL_KIND_STRING, size, size + 1);
  if (size) std::memcpy(payload(b), data, size);
  payload(b)[size] = '\0';  // lets host code hand the text to C APIs
  return boxed(b);
}

sl_value bytes_create(const void* data, size_t size) {
  sl_block* b = allocate(SL_KIND_BYTES, size, sizeof(BytesPayload) + size);
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

sl_value array_create(const sl_value* items, size_t count) {
  sl_block* b = allocate(SL_KIND_ARRAY, count, count * sizeof(sl_value));
  auto* out = reinterpret_cast<sl_value*>(payload(b));
  for (size_t i = 0; i < count; ++i) {
    value_retain(items[i]);
    out[i] = items[i];
  }
  return boxed(b);
}

sl_value object_create(const sl_str* keys, const sl_value* values, size_t count) {
  // Deduplicate: a repeated key keeps its first position and its last value.
  std::vector<size_t> first;  // for each kept entry, index of the key's first occurrence
  std::vector<size_t> last;   // ...and of its last value
  first.reserve(count);
  last.reserve(count);
  std::unordered_map<std::string_view, size_t> seen;
  size_t key_bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    std::string_view k(keys[i].data, keys[i].size);
    auto [it, inserted] = seen.emplace(k, first.size());
    if (inserted) {
      first.push_back(i);
      last.push_back(i);
      key_bytes += keys[i].size + 1;
    } else {
      last[it->second] = i;
    }
  }
  size_t n = first.size();
  size_t bytes = n * (sizeof(sl_value) + sizeof(sl_str) + sizeof(uint32_t)) + key_bytes;
  sl_block* b = allocate(SL_KIND_OBJECT, n, bytes);
  ObjectView o = object_view(b);
  char* chars = reinterpret_cast<char*>(o.order + n);
  for (size_t e = 0; e < n; ++e) {
    const sl_str& k = keys[first[e]];
    if (k.size) std::memcpy(chars, k.data, k.size);
    chars[k.size] = '\0';
    o.keys[e] = {chars, k.size};
    chars += k.size + 1;
    o.values[e] = values[last[e]];
    value_retain(o.values[e]);
    o.order[e] = static_cast<uint32_t>(e);
  }
  std::sort(o.order, o.order + n,
            [&](uint32_t x, uint32_t y) { return compare_str(o.keys[x], o.keys[y]) < 0; });
  return boxed(b);
}

sl_str value_str(sl_value v) noexcept {
  if (v.kind == SL_KIND_STRING) return {payload(v.as.block), v.as.block->size};
  if (v.kind == SL_KIND_BYTES) {
    const auto* p = reinterpret_cast<const BytesPayload*>(payload(v.as.block));
    return {static_cast<const char*>(p->data), v.as.block->size};
  }
  return {nullptr, 0};
}

size_t value_size(sl_value v) noexcept { return sl_value_is_boxed(v) ? v.as.block->size : 0; }

sl_value value_at(sl_value v, size_t index) noexcept {
  if (!sl_value_is_boxed(v) || index >= v.as.block->size) return sl_null();
  if (v.kind == SL_KIND_ARRAY) return reinterpret_cast<const sl_value*>(payload(v.as.block))[index];
  if (v.kind == SL_KIND_OBJECT) return object_view(v.as.block).values[index];
  return sl_null();
}

sl_str object_key_at(sl_value v, size_t index) noexcept {
  if (v.kind != SL_KIND_OBJECT || index >= v.as.block->size) return {nullptr, 0};
  return object_view(v.as.block).keys[index];
}

int32_t object_get(sl_value v, const char* key, size_t key_size, sl_value* out) noexcept {
  *out = sl_null();
  if (v.kind != SL_KIND_OBJECT) return 0;
  ObjectView o = object_view(v.as.block);
  size_t n = v.as.block->size;
  sl_str want{key, key_size};
  auto it = std::lower_bound(o.order, o.order + n, want, [&](uint32_t e, const sl_str& k) {
    return compare_str(o.keys[e], k) < 0;
  });
  if (it == o.order + n || compare_str(o.keys[*it], want) != 0) return 0;
  *out = o.values[*it];
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
      for (size_t i = 0; i < std::min(na, nb); ++i) {
        int c = compare_str(x.keys[x.order[i]], y.keys[y.order[i]]);
        if (c != 0) return c;
        int32_t cv = value_compare(x.values[x.order[i]], y.values[y.order[i]]);
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
      uint64_t h = 0x0b1ec7;
      ObjectView o = object_view(v.as.block);
      for (size_t i = 0; i < v.as.block->size; ++i) {
        uint32_t e = o.order[i];
        std::string_view k(o.keys[e].data, o.keys[e].size);
        h = mix(h * 31 + std::hash<std::string_view>{}(k));
        h = mix(h * 31 + value_hash(o.values[e]));
      }
      return h;
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
