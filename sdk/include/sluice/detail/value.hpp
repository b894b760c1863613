// sluice/detail/value.hpp — ValueRef (a borrowed view) and Value (an owned reference) over
// sl_value. Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_VALUE_HPP
#define SLUICE_DETAIL_VALUE_HPP

#include <sluice/detail/host.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/sluice.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::sdk {

class Value;
class ValueRef;

/// Name of a value kind for messages: "null", "bool", "int", "float", "string", "bytes",
/// "array", "object" (or "unknown"). Thread-safe.
constexpr std::string_view kind_name(int32_t kind) noexcept {
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

namespace detail {

/// Read access shared by ValueRef and Value (`D` provides `sl_value raw()`). Kind tests and
/// inline reads never call the host; string, size and container reads do (thread-safe).
template <class D>
class ValueReader {
 public:
  /// SL_KIND_* of the value.
  [[nodiscard]] int32_t kind() const noexcept { return raw_().kind; }
  /// Name of kind() ("int", "string", ...), for error messages.
  [[nodiscard]] std::string_view kind_name() const noexcept { return sdk::kind_name(kind()); }
  /// Kind tests.
  [[nodiscard]] bool is_null() const noexcept { return kind() == SL_KIND_NULL; }
  /// See is_null().
  [[nodiscard]] bool is_bool() const noexcept { return kind() == SL_KIND_BOOL; }
  /// See is_null().
  [[nodiscard]] bool is_int() const noexcept { return kind() == SL_KIND_INT; }
  /// See is_null().
  [[nodiscard]] bool is_float() const noexcept { return kind() == SL_KIND_FLOAT; }
  /// Int or float.
  [[nodiscard]] bool is_number() const noexcept { return is_int() || is_float(); }
  /// See is_null().
  [[nodiscard]] bool is_string() const noexcept { return kind() == SL_KIND_STRING; }
  /// See is_null().
  [[nodiscard]] bool is_bytes() const noexcept { return kind() == SL_KIND_BYTES; }
  /// See is_null().
  [[nodiscard]] bool is_array() const noexcept { return kind() == SL_KIND_ARRAY; }
  /// See is_null().
  [[nodiscard]] bool is_object() const noexcept { return kind() == SL_KIND_OBJECT; }

  /// The bool; throws Error(INVALID_ARGUMENT) for another kind.
  [[nodiscard]] bool as_bool() const { return expect(is_bool(), "a bool"), raw_().as.i != 0; }
  /// The int; throws Error(INVALID_ARGUMENT) for another kind.
  [[nodiscard]] int64_t as_int() const { return expect(is_int(), "an int"), raw_().as.i; }
  /// The number as a double (ints convert); throws Error(INVALID_ARGUMENT) otherwise.
  [[nodiscard]] double as_float() const {
    expect(is_number(), "a number");
    return is_int() ? static_cast<double>(raw_().as.i) : raw_().as.f;
  }
  /// Text of a string or bytes value, valid while the value is; throws otherwise.
  [[nodiscard]] std::string_view as_str() const {
    expect(is_string() || is_bytes(), "a string or bytes");
    sl_str s = host().value_str(raw_());
    return {s.data, s.size};
  }
  /// Items (array), entries (object) or bytes (string, bytes); 0 for inline kinds.
  [[nodiscard]] size_t size() const noexcept {
    return sl_value_is_boxed(raw_()) ? host().value_size(raw_()) : 0;
  }
  /// Item `i` of an array or value of entry `i` of an object (a new reference); null when
  /// out of range or not a container.
  [[nodiscard]] Value operator[](size_t i) const;
  /// Key of entry `i` of an object, valid while the value is; empty when out of range.
  [[nodiscard]] std::string_view key_at(size_t i) const noexcept {
    if (!is_object()) return {};
    sl_str s = host().object_key_at(raw_(), i);
    return {s.data, s.size};
  }
  /// The value under `key` of an object (a new reference), or nullopt (also for non-objects).
  [[nodiscard]] std::optional<Value> get(std::string_view key) const;
  /// Python truthiness: null, false, 0, 0.0, "", empty bytes, array and object are false.
  /// Inline kinds never call the host.
  [[nodiscard]] bool truthy() const noexcept {
    const sl_value v = raw_();
    switch (v.kind) {
      case SL_KIND_NULL: return false;
      case SL_KIND_BOOL:
      case SL_KIND_INT: return v.as.i != 0;
      case SL_KIND_FLOAT: return v.as.f != 0.0;  // NaN is truthy, as in Python
      default: return host().value_size(v) != 0;
    }
  }
  /// Compact JSON text as a string Value (host json_dump; bytes become base64).
  [[nodiscard]] Value json_dump() const;
  /// Compact JSON text, copied into a std::string.
  [[nodiscard]] std::string to_json() const;

 private:
  [[nodiscard]] sl_value raw_() const noexcept { return static_cast<const D*>(this)->raw(); }
  void expect(bool ok, const char* what) const {
    if (!ok) {
      throw Error(SL_INVALID_ARGUMENT,
                  std::string("expected ") + what + ", got " + std::string(kind_name()));
    }
  }
};

}  // namespace detail

/// A borrowed value: a 16-byte view that never retains or releases. Valid only while
/// whoever owns the value keeps it (e.g. the batch of the current callback). Use it for
/// arguments and for reading messages; convert to Value with Value::borrow() to keep one.
class ValueRef : public detail::ValueReader<ValueRef> {
 public:
  /// The null value.
  ValueRef() noexcept : v_(sl_null()) {}
  /// Views `v` (implicit: every borrowed sl_value is a ValueRef).
  ValueRef(sl_value v) noexcept : v_(v) {}  // NOLINT(google-explicit-constructor)
  /// The C value, still borrowed.
  [[nodiscard]] sl_value raw() const noexcept { return v_; }

 private:
  sl_value v_;
};

/// An owned reference to an immutable value: copy retains, destruction releases (host
/// value_retain/value_release, which are thread-safe, so a Value may move between
/// threads). Null, bool, int and float are inline: creating, copying and destroying them
/// never calls the host. Same size and layout as sl_value.
class Value : public detail::ValueReader<Value> {
 public:
  /// The null value.
  Value() noexcept : v_(sl_null()) {}
  /// Takes over the reference `v` holds (e.g. an out-parameter the host filled).
  static Value adopt(sl_value v) noexcept { return Value(v); }
  /// Adds a reference to a borrowed `v`.
  static Value borrow(ValueRef v) noexcept {
    retain(v.raw());
    return Value(v.raw());
  }

  /// Inline factories; never call the host.
  static Value null() noexcept { return {}; }
  /// See null().
  static Value boolean(bool b) noexcept { return Value(sl_bool(b ? 1 : 0)); }
  /// See null().
  static Value integer(int64_t i) noexcept { return Value(sl_int(i)); }
  /// See null().
  static Value floating(double f) noexcept { return Value(sl_float(f)); }
  /// A string (copies `s`; the host does not check UTF-8).
  static Value string(std::string_view s) {
    return Value(host().string_create(s.data(), s.size()));
  }
  /// Bytes (copies).
  static Value bytes(const void* data, size_t size) {
    return Value(host().bytes_create(data, size));
  }
  /// Bytes (copies).
  static Value bytes(std::string_view s) { return bytes(s.data(), s.size()); }
  /// An array of `items` (each retained by the host).
  static Value array(std::span<const Value> items);
  /// See array(std::span<const Value>).
  static Value array(std::initializer_list<Value> items) {
    return array(std::span<const Value>(items.begin(), items.size()));
  }
  /// An object of `entries` in order (keys copied, values retained; a repeated key keeps
  /// its first position and its last value).
  static Value object(std::span<const std::pair<std::string_view, Value>> entries);
  /// See object(std::span<...>).
  static Value object(std::initializer_list<std::pair<std::string_view, Value>> entries) {
    return object(
        std::span<const std::pair<std::string_view, Value>>(entries.begin(), entries.size()));
  }

  /// Copy: one more reference (inline kinds: no host call).
  Value(const Value& other) noexcept : detail::ValueReader<Value>(), v_(other.v_) { retain(v_); }
  /// Move: steals the reference; `other` becomes null.
  Value(Value&& other) noexcept : v_(std::exchange(other.v_, sl_null())) {}
  /// Copy-assign.
  Value& operator=(const Value& other) noexcept {
    Value tmp(other);
    std::swap(v_, tmp.v_);
    return *this;
  }
  /// Move-assign.
  Value& operator=(Value&& other) noexcept {
    Value tmp(std::move(other));
    std::swap(v_, tmp.v_);
    return *this;
  }
  /// Drops the reference (inline kinds: no host call).
  ~Value() {
    if (sl_value_is_boxed(v_)) host().value_release(v_);
  }

  /// The C value, still owned by this Value (borrowed by the caller).
  [[nodiscard]] sl_value raw() const noexcept { return v_; }
  /// A borrowed view, valid while this Value holds its reference.
  [[nodiscard]] ValueRef ref() const noexcept { return {v_}; }
  /// A borrowed view (implicit, so a Value can be passed where a ValueRef is taken).
  operator ValueRef() const noexcept { return {v_}; }  // NOLINT(google-explicit-constructor)
  /// Hands the reference to the caller (e.g. to return it through the C ABI); this Value
  /// becomes null.
  [[nodiscard]] sl_value release() noexcept { return std::exchange(v_, sl_null()); }

 private:
  explicit Value(sl_value v) noexcept : v_(v) {}
  static void retain(sl_value v) noexcept {
    if (sl_value_is_boxed(v)) host().value_retain(v);
  }
  sl_value v_;
};

// The SDK hands arrays of Value and ValueRef to C as arrays of sl_value.
static_assert(sizeof(Value) == sizeof(sl_value) && std::is_standard_layout_v<Value>);
static_assert(sizeof(ValueRef) == sizeof(sl_value) && std::is_standard_layout_v<ValueRef>);
static_assert(std::is_trivially_copyable_v<ValueRef>);

/// The values of `items` as the C array the host reads (same layout, see static_assert).
inline const sl_value* raw_array(std::span<const Value> items) noexcept {
  return reinterpret_cast<const sl_value*>(items.data());
}
/// See raw_array(std::span<const Value>).
inline const sl_value* raw_array(std::span<const ValueRef> items) noexcept {
  return reinterpret_cast<const sl_value*>(items.data());
}

/// Host total order (null < bool < numbers < string < bytes < array < object; ints and
/// floats by numeric value): <0, 0 or >0. Thread-safe.
inline int compare(ValueRef a, ValueRef b) noexcept {
  return host().value_compare(a.raw(), b.raw());
}
/// compare(a, b) == 0.
inline bool equals(ValueRef a, ValueRef b) noexcept { return compare(a, b) == 0; }
/// Hash consistent with equals(). Thread-safe.
inline uint64_t hash(ValueRef v) noexcept { return host().value_hash(v.raw()); }

/// Hash and equality of values as the host compares them (hash() and equals(): 1 == 1.0,
/// objects regardless of key order), for std::unordered_map/set keyed by Value (ValueMap).
/// Transparent: such a map is searched with a borrowed ValueRef, so a lookup per message
/// takes no reference. The hash is deliberately not noexcept: libstdc++ then keeps each
/// node's hash, where a noexcept hash counts as cheap and is recomputed (a host call) for
/// every node a lookup or a rehash walks past (17 % of restoring a million keys).
struct ValueHash {
  using is_transparent = void;
  size_t operator()(ValueRef v) const { return static_cast<size_t>(hash(v)); }
  size_t operator()(const Value& v) const { return (*this)(v.ref()); }
};
/// See ValueHash.
struct ValueEq {
  using is_transparent = void;
  bool operator()(ValueRef a, ValueRef b) const noexcept { return equals(a, b); }
  bool operator()(const Value& a, ValueRef b) const noexcept { return equals(a.ref(), b); }
  bool operator()(ValueRef a, const Value& b) const noexcept { return equals(a, b.ref()); }
  bool operator()(const Value& a, const Value& b) const noexcept {
    return equals(a.ref(), b.ref());
  }
};
/// A hash map keyed by values as the host compares them; keys are owned Values (retained),
/// lookups may use a borrowed ValueRef: `map.find(ValueRef(m.value))`.
template <class T>
using ValueMap = std::unordered_map<Value, T, ValueHash, ValueEq>;

/// Parses one JSON document (host json_parse). With a context, a failure is reported on it
/// (Status::reported); without one, the failure is INVALID_ARGUMENT "invalid JSON".
inline Result<Value> parse_json(std::string_view text, sl_context* ctx = nullptr) {
  sl_value out = sl_null();
  sl_status st = host().json_parse(ctx, text.data(), text.size(), &out);
  if (st != SL_OK) {
    if (ctx != nullptr) return Status::reported(st);
    return Status(st, "invalid JSON");
  }
  return Value::adopt(out);
}

inline Value Value::array(std::span<const Value> items) {
  return Value(host().array_create(raw_array(items), items.size()));
}

inline Value Value::object(std::span<const std::pair<std::string_view, Value>> entries) {
  std::vector<sl_str> keys;
  std::vector<sl_value> values;
  keys.reserve(entries.size());
  values.reserve(entries.size());
  for (const auto& [k, v] : entries) {
    keys.push_back({k.data(), k.size()});
    values.push_back(v.raw());
  }
  return Value(host().object_create(keys.data(), values.data(), entries.size()));
}

template <class D>
Value detail::ValueReader<D>::operator[](size_t i) const {
  if (!sl_value_is_boxed(raw_())) return {};
  return Value::borrow(host().value_at(raw_(), i));
}

template <class D>
std::optional<Value> detail::ValueReader<D>::get(std::string_view key) const {
  if (!is_object()) return std::nullopt;
  sl_value out = sl_null();
  if (host().object_get(raw_(), key.data(), key.size(), &out) == 0) return std::nullopt;
  return Value::borrow(out);
}

template <class D>
Value detail::ValueReader<D>::json_dump() const {
  return Value::adopt(host().json_dump(raw_()));
}

template <class D>
std::string detail::ValueReader<D>::to_json() const {
  Value text = json_dump();
  return std::string(text.as_str());
}

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_VALUE_HPP
