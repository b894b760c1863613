#include "lua/lua_values.hpp"

#include "lua/lua_runtime.hpp"

#include <fmt/format.h>
#include <lua.hpp>
#include <sluice/detail/utf8.hpp>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace sluice::host::lua {
namespace {

// -- host -> Lua (runs inside a protected call; POD only) -------------------

void push_at_depth(lua_State* L, sl_value v, int depth) {
  if (depth > k_max_depth) luaL_error(L, "value nested deeper than %d levels", k_max_depth);
  if (!lua_checkstack(L, 6)) luaL_error(L, "Lua stack overflow while converting a value");
  switch (v.kind) {
    case SL_KIND_BOOL: lua_pushboolean(L, v.as.i != 0); return;
    case SL_KIND_INT: lua_pushinteger(L, v.as.i); return;
    case SL_KIND_FLOAT: lua_pushnumber(L, v.as.f); return;
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      const sl_str s = value_str(v);
      lua_pushlstring(L, s.data, s.size);
      return;
    }
    case SL_KIND_ARRAY: {
      const size_t n = value_size(v);
      lua_createtable(L, static_cast<int>(std::min<size_t>(n, INT32_MAX)), 0);
      const sl_value* items = array_items(v);
      for (size_t i = 0; i < n; ++i) {
        const sl_value item = items != nullptr ? items[i] : value_at(v, i);
        // Numbers inline (the common array, e.g. a sliding window): no
        // recursion, no stack check per item (the 6 slots checked above).
        if (item.kind == SL_KIND_INT) {
          lua_pushinteger(L, item.as.i);
        } else if (item.kind == SL_KIND_FLOAT) {
          lua_pushnumber(L, item.as.f);
        } else {
          push_at_depth(L, item, depth + 1);
        }
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
      }
      lua_rawgetp(L, LUA_REGISTRYINDEX, &k_array_meta_key);
      lua_setmetatable(L, -2);
      return;
    }
    case SL_KIND_OBJECT: {
      const size_t n = value_size(v);
      lua_createtable(L, 0, static_cast<int>(std::min<size_t>(n, INT32_MAX)));
      const bool ordered = n > 1;  // order matters only from two keys on
      if (ordered) lua_createtable(L, static_cast<int>(std::min<size_t>(n, INT32_MAX)), 0);
      const int table = ordered ? -3 : -2;  // with a key on top
      for (size_t i = 0; i < n; ++i) {
        const sl_str key = object_key_at(v, i);
        lua_pushlstring(L, key.data, key.size);
        if (ordered) {
          lua_pushvalue(L, -1);
          lua_rawseti(L, -3, static_cast<lua_Integer>(i + 1));
        }
        push_at_depth(L, value_at(v, i), depth + 1);
        lua_rawset(L, table - 1);
      }
      if (ordered) {  // key_order[object] = order
        lua_rawgetp(L, LUA_REGISTRYINDEX, &k_key_order_key);
        lua_pushvalue(L, -3);
        lua_pushvalue(L, -3);
        lua_rawset(L, -3);
        lua_pop(L, 2);
      }
      lua_rawgetp(L, LUA_REGISTRYINDEX, &k_object_meta_key);
      lua_setmetatable(L, -2);
      return;
    }
    default: lua_rawgetp(L, LUA_REGISTRYINDEX, &k_null_key); return;
  }
}

// -- Lua -> host (no Lua call that can raise) --------------------------------

Status conversion_error(std::string message) {
  return Status(SL_INVALID_ARGUMENT, std::move(message));
}

// Restores the stack top on every exit path.
class StackGuard {
 public:
  explicit StackGuard(lua_State* L) : L_(L), top_(lua_gettop(L)) {}
  ~StackGuard() { lua_settop(L_, top_); }
  StackGuard(const StackGuard&) = delete;
  StackGuard& operator=(const StackGuard&) = delete;

 private:
  lua_State* L_;
  int top_;
};

std::string_view string_at(lua_State* L, int index) {
  size_t len = 0;
  const char* s = lua_tolstring(L, index, &len);  // a string already: no conversion
  return {s, len};
}

// "[3]" or ".name" for error paths.
std::string index_label(lua_Integer i) { return fmt::format("[{}]", i); }
std::string key_label(std::string_view k) { return fmt::format(".{}", k); }

// Prefixes the path of the item that failed: "at [2].user: ..." builds up
// from the inside out.
Status at_path(const Status& inner, const std::string& label) {
  const std::string& m = inner.message();
  if (m.starts_with("at ")) {
    return Status(inner.code(), fmt::format("at {}{}", label, m.substr(3)));
  }
  return Status(inner.code(), fmt::format("at {}: {}", label, m));
}

class Converter {
 public:
  explicit Converter(lua_State* L) : L_(L), rt_(LuaRuntime::of(L)) {}

  Result<Value> convert(int index, int depth) {
    switch (lua_type(L_, index)) {
      case LUA_TNIL: return Value::null();
      case LUA_TBOOLEAN: return Value::boolean(lua_toboolean(L_, index) != 0);
      case LUA_TNUMBER:
        if (lua_isinteger(L_, index)) return Value::integer(lua_tointeger(L_, index));
        return Value::floating(lua_tonumber(L_, index));
      case LUA_TSTRING: {
        const std::string_view s = string_at(L_, index);
        return sdk::valid_utf8(s) ? Value::string(s) : Value::bytes(s);
      }
      case LUA_TUSERDATA: return userdata(index);
      case LUA_TTABLE: return table(index, depth);
      default:
        return conversion_error(
            fmt::format("a Lua {} is not a value (return null, a boolean, a "
                        "number, a string or a table)",
                        lua_typename(L_, lua_type(L_, index))));
    }
  }

 private:
  enum class Mark { none, array, object };

  Result<Value> userdata(int index) {
    if (lua_touserdata(L_, index) == rt_.null_sentinel()) return Value::null();
    if (metatable_of(index) == rt_.bytes_meta()) {
      const auto* data = static_cast<const char*>(lua_touserdata(L_, index));
      return Value::bytes(std::string_view(data, lua_rawlen(L_, index)));
    }
    return conversion_error("a Lua userdata is not a value");
  }

  const void* metatable_of(int index) {
    if (!lua_getmetatable(L_, index)) return nullptr;
    const void* mt = lua_topointer(L_, -1);
    lua_pop(L_, 1);
    return mt;
  }

  Result<Value> table(int index, int depth) {
    if (depth >= k_max_depth) {
      return conversion_error(fmt::format(
          "tables nested deeper than {} levels (does a table contain itself?)", k_max_depth));
    }
    if (!lua_checkstack(L_, 8)) return conversion_error("Lua stack overflow");
    index = lua_absindex(L_, index);
    const void* mt = metatable_of(index);
    const Mark mark = mt == rt_.array_meta()    ? Mark::array
                      : mt == rt_.object_meta() ? Mark::object
                                                : Mark::none;
    if (mark == Mark::object) return object_in_order(index, depth);

    // One pass over the entries, sorting them into integer and string keys.
    StackGuard guard(L_);
    std::vector<std::pair<lua_Integer, Value>> items;
    std::vector<std::pair<std::string_view, Value>> fields;
    lua_pushnil(L_);
    while (lua_next(L_, index) != 0) {
      const int key_type = lua_type(L_, -2);
      if (key_type == LUA_TNUMBER && lua_isinteger(L_, -2)) {
        const lua_Integer k = lua_tointeger(L_, -2);
        auto item = convert(-1, depth + 1);
        if (!item.is_ok()) return at_path(item.status(), index_label(k));
        items.emplace_back(k, std::move(item).value());
      } else if (key_type == LUA_TSTRING && mark == Mark::none) {
        const std::string_view k = string_at(L_, -2);
        auto field = convert(-1, depth + 1);
        if (!field.is_ok()) return at_path(field.status(), key_label(k));
        fields.emplace_back(k, std::move(field).value());
      } else {
        return conversion_error(fmt::format(
            "{} has a {} key{}", mark == Mark::array ? "an array (sluice.array)" : "a table",
            key_type == LUA_TNUMBER ? "non-integer number" : lua_typename(L_, key_type),
            key_type == LUA_TSTRING ? fmt::format(" '{}'", string_at(L_, -2)) : std::string()));
      }
      lua_pop(L_, 1);
    }
    if (!items.empty() && !fields.empty()) {
      return conversion_error(fmt::format(
          "a table mixes integer keys (an array) and string keys (an object), e.g. [{}] and "
          "'{}'; use one kind",
          items.front().first, fields.front().first));
    }
    if (!fields.empty() && mark == Mark::none) {
      std::sort(fields.begin(), fields.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      return make_object(fields);
    }
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Value> values;
    values.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].first != static_cast<lua_Integer>(i + 1)) {
        return conversion_error(
            fmt::format("an array's keys must be 1..n without holes; found key {} where {} was "
                        "expected (use sluice.null, not nil, for a missing item)",
                        items[i].first, i + 1));
      }
      values.push_back(std::move(items[i].second));
    }
    return Value::array(values);
  }

  // A sluice.object table: the keys it had when it came from the host first,
  // in that order (those still present), then keys added by Lua code, sorted.
  Result<Value> object_in_order(int index, int depth) {
    StackGuard guard(L_);
    std::vector<std::pair<std::string_view, Value>> fields;
    std::unordered_set<std::string_view> seen;
    lua_rawgetp(L_, LUA_REGISTRYINDEX, &k_key_order_key);
    lua_pushvalue(L_, index);
    lua_rawget(L_, -2);  // the order list or nil
    const int order = lua_gettop(L_);
    if (lua_type(L_, order) == LUA_TTABLE) {
      const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L_, order));
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L_, order, i);  // key
        lua_pushvalue(L_, -1);
        if (lua_rawget(L_, index) != LUA_TNIL) {
          const std::string_view k = string_at(L_, -2);
          auto field = convert(-1, depth + 1);
          if (!field.is_ok()) return at_path(field.status(), key_label(k));
          seen.insert(k);
          fields.emplace_back(k, std::move(field).value());
        }
        lua_pop(L_, 2);
      }
    }
    std::vector<std::pair<std::string_view, Value>> added;
    lua_pushnil(L_);
    while (lua_next(L_, index) != 0) {
      if (lua_type(L_, -2) != LUA_TSTRING) {
        return conversion_error(fmt::format(
            "an object (sluice.object) has a {} key; object keys are strings",
            lua_type(L_, -2) == LUA_TNUMBER ? "number" : lua_typename(L_, lua_type(L_, -2))));
      }
      const std::string_view k = string_at(L_, -2);
      if (!seen.contains(k)) {
        auto field = convert(-1, depth + 1);
        if (!field.is_ok()) return at_path(field.status(), key_label(k));
        added.emplace_back(k, std::move(field).value());
      }
      lua_pop(L_, 1);
    }
    std::sort(added.begin(), added.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& f : added) fields.push_back(std::move(f));
    return make_object(fields);
  }

  // The keys point into Lua strings that the table being converted keeps alive.
  static Value make_object(const std::vector<std::pair<std::string_view, Value>>& fields) {
    std::vector<sl_str> keys;
    std::vector<sl_value> values;
    keys.reserve(fields.size());
    values.reserve(fields.size());
    for (const auto& [k, v] : fields) {
      keys.push_back({k.data(), k.size()});
      values.push_back(v.raw());
    }
    return Value::adopt(object_create(keys.data(), values.data(), keys.size()));
  }

  lua_State* L_;
  const LuaRuntime& rt_;
};

}  // namespace

void push_value(lua_State* L, sl_value v) { push_at_depth(L, v, 0); }

Result<Value> to_value(lua_State* L, int index) { return Converter(L).convert(index, 0); }

}  // namespace sluice::host::lua
