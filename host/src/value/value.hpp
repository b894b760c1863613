// Values on the host side: the storage behind sl_value blocks, and an owning
// C++ handle. Blocks are immutable after creation and reference-counted with
// atomics (values may be released on a librdkafka thread); inline kinds never
// touch a block.
#pragma once

#include <sluice/sluice.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::host {

// Free functions with C linkage semantics; these are what the host table points at.
void value_retain(sl_value v) noexcept;
void value_release(sl_value v) noexcept;
sl_value string_create(const char* data, size_t size);
sl_value bytes_create(const void* data, size_t size);
sl_value bytes_wrap(const void* data, size_t size, sl_release_fn release, void* private_data);
sl_value array_create(const sl_value* items, size_t count);
sl_value object_create(const sl_str* keys, const sl_value* values, size_t count);
// array_create and object_create that take over the caller's references to the items
// instead of adding their own (the caller must not release them afterwards): a decoder that
// made the items for the container saves a retain and a release per boxed item. Host only.
sl_value array_adopt(const sl_value* items, size_t count);
sl_value object_adopt(const sl_str* keys, const sl_value* values, size_t count);
sl_str value_str(sl_value v) noexcept;
size_t value_size(sl_value v) noexcept;
sl_value value_at(sl_value v, size_t index) noexcept;
sl_str object_key_at(sl_value v, size_t index) noexcept;
int32_t object_get(sl_value v, const char* key, size_t key_size, sl_value* out) noexcept;
// In-place update of entry `index` of an object only the caller references
// (sl_host_api.object_set_unique): 1 = done, `value` taken; 0 = nothing changed.
int32_t object_set_unique(sl_value obj, size_t index, sl_value value) noexcept;
// In-place insert or update of `key` in an object only the caller references
// (sl_host_api.object_put_unique); the block may move (*obj is updated).
// 1 = done, `value` taken; 0 = nothing changed.
// The items of an array, contiguous (sl_host_api.array_items); nullptr if none.
const sl_value* array_items(sl_value v) noexcept;
int32_t object_put_unique(sl_value* obj, const char* key, size_t key_size, sl_value value) noexcept;
int32_t value_compare(sl_value a, sl_value b) noexcept;
uint64_t value_hash(sl_value v) noexcept;

// A message's size as sluice_node_bytes_in_total / _out_total count it (docs/OPERATIONS.md,
// "Read metrics"): its value only (not key, headers or timestamp), taken from the block
// header without a walk: a string's or bytes' length, 8 for an int or a float, 1 for a bool,
// 0 for null, and 16 (one sl_value) per top-level entry of an array or object, nested
// payloads not counted. An estimate for structured values, cheap enough for every delivery.
uint64_t payload_bytes(const sl_message* messages, size_t count) noexcept;
uint64_t payload_bytes(const sl_value* values, size_t count) noexcept;
// The same for one value of an inline kind (null, bool, int, float; 0 for the others), and
// for any value.
// A table, not compares: this runs once per element in the loops that count bytes.
inline constexpr uint8_t k_inline_payload_bytes[8] = {0, 1, 8, 8, 0, 0, 0, 0};
inline uint64_t inline_payload_bytes(int32_t kind) noexcept {
  return k_inline_payload_bytes[static_cast<uint32_t>(kind) & 7u];
}
inline uint64_t payload_bytes(sl_value v) noexcept {
  if (!sl_value_is_boxed(v)) return inline_payload_bytes(v.kind);
  const uint64_t size = value_size(v);
  return v.kind == SL_KIND_ARRAY || v.kind == SL_KIND_OBJECT ? sizeof(sl_value) * size : size;
}

// Name of a kind for messages ("int", "string", ...).
std::string_view kind_name(int32_t kind) noexcept;

// An owned reference to a value. Copy retains, destruction releases.
class Value {
 public:
  Value() noexcept : v_(sl_null()) {}
  // Takes over the reference held by `v`.
  static Value adopt(sl_value v) noexcept { return Value(v); }
  // Adds a reference to a borrowed `v`.
  static Value borrow(sl_value v) noexcept {
    value_retain(v);
    return Value(v);
  }
  static Value null() noexcept { return {}; }
  static Value boolean(bool b) noexcept { return Value(sl_bool(b ? 1 : 0)); }
  static Value integer(int64_t i) noexcept { return Value(sl_int(i)); }
  static Value floating(double f) noexcept { return Value(sl_float(f)); }
  static Value string(std::string_view s) { return Value(string_create(s.data(), s.size())); }
  static Value bytes(std::string_view s) { return Value(bytes_create(s.data(), s.size())); }
  static Value array(std::span<const Value> items);
  // Keys and values in insertion order.
  static Value object(std::span<const std::pair<std::string, Value>> entries);

  Value(const Value& o) noexcept : v_(o.v_) { value_retain(v_); }
  Value(Value&& o) noexcept : v_(std::exchange(o.v_, sl_null())) {}
  Value& operator=(Value o) noexcept {
    std::swap(v_, o.v_);
    return *this;
  }
  ~Value() {
    if (sl_value_is_boxed(v_)) value_release(v_);
  }

  // Borrowed view for C calls.
  [[nodiscard]] sl_value raw() const noexcept { return v_; }
  // Hands the reference to the caller.
  [[nodiscard]] sl_value release() noexcept { return std::exchange(v_, sl_null()); }

  [[nodiscard]] int32_t kind() const noexcept { return v_.kind; }
  [[nodiscard]] bool is_null() const noexcept { return v_.kind == SL_KIND_NULL; }
  [[nodiscard]] bool is_bool() const noexcept { return v_.kind == SL_KIND_BOOL; }
  [[nodiscard]] bool is_int() const noexcept { return v_.kind == SL_KIND_INT; }
  [[nodiscard]] bool is_float() const noexcept { return v_.kind == SL_KIND_FLOAT; }
  [[nodiscard]] bool is_string() const noexcept { return v_.kind == SL_KIND_STRING; }
  [[nodiscard]] bool is_array() const noexcept { return v_.kind == SL_KIND_ARRAY; }
  [[nodiscard]] bool is_object() const noexcept { return v_.kind == SL_KIND_OBJECT; }
  [[nodiscard]] bool as_bool() const noexcept { return v_.as.i != 0; }
  [[nodiscard]] int64_t as_int() const noexcept { return v_.as.i; }
  [[nodiscard]] double as_float() const noexcept { return v_.as.f; }
  [[nodiscard]] std::string_view as_str() const noexcept {
    sl_str s = value_str(v_);
    return {s.data, s.size};
  }
  [[nodiscard]] size_t size() const noexcept { return value_size(v_); }
  // Item of an array / value of an object entry (a new reference).
  [[nodiscard]] Value at(size_t i) const noexcept { return borrow(value_at(v_, i)); }
  [[nodiscard]] std::string_view key_at(size_t i) const noexcept {
    sl_str s = object_key_at(v_, i);
    return {s.data, s.size};
  }
  [[nodiscard]] std::optional<Value> get(std::string_view key) const noexcept;

  friend bool operator==(const Value& a, const Value& b) noexcept {
    return value_compare(a.v_, b.v_) == 0;
  }

 private:
  explicit Value(sl_value v) noexcept : v_(v) {}
  sl_value v_;
};

// Python-like truthiness: null, false, 0, 0.0, "" and empty containers are false.
bool truthy(sl_value v) noexcept;

}  // namespace sluice::host
