// The evaluator of the native fast path: Lua 5.4's semantics (lvm.c,
// llimits.h, lobject.c of 5.4.4, the Debian package) over sluice values.
// Every function returns false where Lua would raise an error or where the
// exact result is not modelled: the caller then runs the Lua function.
#include "lua/native_expression.hpp"

#include <sluice/detail/utf8.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace sluice::host::lua {
namespace {

using Operand = NativeExpression::Operand;
using Type = Operand::Type;
using Op = NativeExpression::Op;

// Deepest nesting of a table result handed back as it came in (Lua's
// conversion stops at 200 levels: k_max_depth in lua_values.hpp).
constexpr int k_max_result_depth = 200;

Operand nil() {
  Operand o;
  o.type = Type::nil;
  return o;
}

Operand from_value(sl_value v) {
  Operand o;
  switch (v.kind) {
    case SL_KIND_BOOL:
      o.type = Type::boolean;
      o.b = v.as.i != 0;
      break;
    case SL_KIND_INT:
      o.type = Type::integer;
      o.i = v.as.i;
      break;
    case SL_KIND_FLOAT:
      o.type = Type::number;
      o.f = v.as.f;
      break;
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {  // Lua strings are byte strings
      const sl_str s = value_str(v);
      o.type = Type::string;
      o.s = std::string_view(s.data, s.size);
      o.v = v;
      break;
    }
    case SL_KIND_ARRAY:
    case SL_KIND_OBJECT:
      o.type = Type::table;
      o.v = v;
      break;
    default: o.type = Type::null; break;  // sluice.null, not nil
  }
  return o;
}

Operand string_operand(std::string_view s) {
  Operand o;
  o.type = Type::string;
  o.s = s;
  o.v = sl_null();  // not a value's: made or constant
  return o;
}

bool truthy(const Operand& o) {
  return !(o.type == Type::nil || (o.type == Type::boolean && !o.b));
}

bool is_number(const Operand& o) { return o.type == Type::integer || o.type == Type::number; }
double to_double(const Operand& o) {
  return o.type == Type::integer ? static_cast<double>(o.i) : o.f;
}

Operand integer(int64_t i) {
  Operand o;
  o.type = Type::integer;
  o.i = i;
  return o;
}
Operand number(double f) {
  Operand o;
  o.type = Type::number;
  o.f = f;
  return o;
}
Operand boolean(bool b) {
  Operand o;
  o.type = Type::boolean;
  o.b = b;
  return o;
}

// Wrapping integer arithmetic (lvm.h intop: through unsigned).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// lvm.c luaV_flttointeger with F2Ieq / F2Ifloor / F2Iceil, and
// lua_numbertointeger's range test.
enum class F2I { eq, floor, ceil };
bool float_to_integer(double n, F2I mode, int64_t& out) {
  double f = std::floor(n);
  if (n != f) {
    if (mode == F2I::eq) return false;
    if (mode == F2I::ceil) f += 1;
  }
  constexpr double k_min = static_cast<double>(std::numeric_limits<int64_t>::min());
  if (!(f >= k_min && f < -k_min)) return false;
  out = static_cast<int64_t>(f);
  return true;
}

// l_intfitsf: an integer a double holds exactly (|i| < 2^53).
bool int_fits_float(int64_t i) {
  constexpr uint64_t k_max = uint64_t{1} << 53;
  return static_cast<uint64_t>(i) + k_max <= 2 * k_max;
}

bool lt_int_float(int64_t i, double f) {
  if (int_fits_float(i)) return static_cast<double>(i) < f;
  int64_t fi = 0;
  if (float_to_integer(f, F2I::ceil, fi)) return i < fi;
  return f > 0;
}
bool le_int_float(int64_t i, double f) {
  if (int_fits_float(i)) return static_cast<double>(i) <= f;
  int64_t fi = 0;
  if (float_to_integer(f, F2I::floor, fi)) return i <= fi;
  return f > 0;
}
bool lt_float_int(double f, int64_t i) {
  if (int_fits_float(i)) return f < static_cast<double>(i);
  int64_t fi = 0;
  if (float_to_integer(f, F2I::floor, fi)) return fi < i;
  return f < 0;
}
bool le_float_int(double f, int64_t i) {
  if (int_fits_float(i)) return f <= static_cast<double>(i);
  int64_t fi = 0;
  if (float_to_integer(f, F2I::ceil, fi)) return fi <= i;
  return f < 0;
}

bool lt_num(const Operand& l, const Operand& r) {
  if (l.type == Type::integer) return r.type == Type::integer ? l.i < r.i : lt_int_float(l.i, r.f);
  return r.type == Type::number ? l.f < r.f : lt_float_int(l.f, r.i);
}
bool le_num(const Operand& l, const Operand& r) {
  if (l.type == Type::integer) {
    return r.type == Type::integer ? l.i <= r.i : le_int_float(l.i, r.f);
  }
  return r.type == Type::number ? l.f <= r.f : le_float_int(l.f, r.i);
}

// lvm.c l_strcmp: strcoll per '\0'-separated segment, as Lua compares strings
// (in the C locale sluiced runs in, byte order).
int str_compare(std::string_view ls, std::string_view rs) {
  // strcoll needs terminated strings: copy when a segment is not followed by '\0'.
  std::string lcopy(ls), rcopy(rs);
  const char* l = lcopy.c_str();
  size_t ll = lcopy.size();
  const char* r = rcopy.c_str();
  size_t lr = rcopy.size();
  for (;;) {
    const int temp = std::strcoll(l, r);
    if (temp != 0) return temp;
    size_t len = std::strlen(l);
    if (len == lr) return len == ll ? 0 : 1;
    if (len == ll) return -1;
    ++len;
    l += len;
    ll -= len;
    r += len;
    lr -= len;
  }
}

// lvm.c luaV_equalobj without metamethods; false = leave to Lua (two tables:
// their identity in the Lua state is not modelled).
bool equal(const Operand& l, const Operand& r, bool& out) {
  if (l.type != r.type) {
    if (is_number(l) && is_number(r)) {  // int and float: equal when the float is that int
      const int64_t i = l.type == Type::integer ? l.i : r.i;
      const double f = l.type == Type::number ? l.f : r.f;
      int64_t fi = 0;
      out = float_to_integer(f, F2I::eq, fi) && fi == i;
      return true;
    }
    out = false;  // different types are never equal (no __eq across types)
    return true;
  }
  switch (l.type) {
    case Type::nil:
    case Type::null: out = true; return true;  // one nil, one null sentinel
    case Type::boolean: out = l.b == r.b; return true;
    case Type::integer: out = l.i == r.i; return true;
    case Type::number: out = l.f == r.f; return true;
    case Type::string: out = l.s == r.s; return true;
    case Type::table: return false;
  }
  return false;
}

// lobject.c tostringbuff: "%lld", or "%.14g" with ".0" added when the text
// looks like an integer.
std::string number_text(const Operand& o) {
  char buf[64];
  int len = 0;
  if (o.type == Type::integer) {
    len = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(o.i));
  } else {
    len = std::snprintf(buf, sizeof buf, "%.14g", o.f);
    if (buf[std::strspn(buf, "-0123456789")] == '\0') {
      buf[len++] = '.';
      buf[len++] = '0';
    }
  }
  return {buf, static_cast<size_t>(len)};
}

// Whether `v` converts to Lua and back into an equal value of the same kinds
// (everything but bytes, which come back as strings when valid UTF-8).
bool round_trips(sl_value v, int depth) {
  if (depth > k_max_result_depth) return false;
  switch (v.kind) {
    case SL_KIND_BYTES: return false;
    case SL_KIND_ARRAY:
    case SL_KIND_OBJECT: {
      const size_t n = value_size(v);
      for (size_t k = 0; k < n; ++k) {
        if (!round_trips(value_at(v, k), depth + 1)) return false;
      }
      return true;
    }
    default: return true;
  }
}

}  // namespace

bool NativeExpression::arith(Op op, const Operand& l, const Operand& r, Operand& out) {
  // Strings would be coerced by the string library's metamethods, and the
  // rest raise errors: Lua's.
  if (!is_number(l) || !is_number(r)) return false;
  // Of two NaNs, which one a commutative + or * passes on (and so the sign
  // of the result) is the compiler's choice of operand order in Lua's VM.
  if (l.type == Type::number && r.type == Type::number && std::isnan(l.f) && std::isnan(r.f)) {
    return false;
  }
  const bool ints = l.type == Type::integer && r.type == Type::integer;
  switch (op) {
    case Op::add:
      out = ints ? integer(wrap_add(l.i, r.i)) : number(to_double(l) + to_double(r));
      return true;
    case Op::sub:
      out = ints ? integer(wrap_sub(l.i, r.i)) : number(to_double(l) - to_double(r));
      return true;
    case Op::mul:
      out = ints ? integer(wrap_mul(l.i, r.i)) : number(to_double(l) * to_double(r));
      return true;
    case Op::div: out = number(to_double(l) / to_double(r)); return true;
    case Op::pow: {
      const double a = to_double(l), b = to_double(r);
      out = number(b == 2 ? a * a : std::pow(a, b));
      return true;
    }
    case Op::idiv:
      if (ints) {  // luaV_idiv
        const int64_t m = l.i, n = r.i;
        if (n == 0) return false;  // "attempt to divide by zero"
        if (n == -1) {
          out = integer(wrap_sub(0, m));
          return true;
        }
        int64_t q = m / n;
        if ((m ^ n) < 0 && m % n != 0) q -= 1;
        out = integer(q);
        return true;
      }
      out = number(std::floor(to_double(l) / to_double(r)));
      return true;
    case Op::mod:
      if (ints) {  // luaV_mod
        const int64_t m = l.i, n = r.i;
        if (n == 0) return false;  // "attempt to perform 'n%%0'"
        if (n == -1) {
          out = integer(0);
          return true;
        }
        int64_t rem = m % n;
        if (rem != 0 && (rem ^ n) < 0) rem += n;
        out = integer(rem);
        return true;
      } else {  // luaV_modf
        const double a = to_double(l), b = to_double(r);
        double m = std::fmod(a, b);
        if ((m > 0) ? b < 0 : (m < 0 && b > 0)) m += b;
        out = number(m);
        return true;
      }
    default: return false;
  }
}

bool NativeExpression::concat(const Operand& l, const Operand& r, Operand& out) {
  auto text = [](const Operand& o, std::string& buf) -> std::optional<std::string_view> {
    if (o.type == Type::string) return o.s;
    if (!is_number(o)) return std::nullopt;  // an error, or a __concat: Lua's
    buf = number_text(o);
    return std::string_view(buf);
  };
  std::string lbuf, rbuf;
  auto ls = text(l, lbuf);
  auto rs = text(r, rbuf);
  if (!ls || !rs) return false;
  std::string& joined = scratch_.emplace_back();
  joined.reserve(ls->size() + rs->size());
  joined.append(*ls).append(*rs);
  out = string_operand(joined);
  return true;
}

bool NativeExpression::operand(uint32_t index, Operand& out) {
  const Node& n = nodes_[index];
  switch (n.op) {
    case Op::integer: out = integer(n.i); return true;
    case Op::number: out = number(n.f); return true;
    case Op::param: {
      const sl_value* v = slots_[n.a];
      out = v != nullptr ? from_value(*v) : nil();
      return true;
    }
    default: return eval(index, out);
  }
}

bool NativeExpression::eval(uint32_t index, Operand& out) {
  const Node& n = nodes_[index];
  switch (n.op) {
    case Op::nil: out = nil(); return true;
    case Op::boolean: out = boolean(n.i != 0); return true;
    case Op::integer: out = integer(n.i); return true;
    case Op::number: out = number(n.f); return true;
    case Op::string: out = string_operand(n.s); return true;
    case Op::null: out.type = Type::null; return true;
    case Op::param: {
      const sl_value* v = slots_[n.a];
      out = v != nullptr ? from_value(*v) : nil();
      return true;
    }
    case Op::index: {  // the key is a constant (the parser's rule)
      Operand table;
      if (!operand(n.a, table)) return false;
      if (table.type != Type::table) return false;  // an error, or the string library: Lua's
      const Node& key = nodes_[n.b];
      out = nil();  // unless found
      if (table.v.kind == SL_KIND_OBJECT) {
        sl_value found;
        if (key.op == Op::string && object_get(table.v, key.s.data(), key.s.size(), &found)) {
          out = from_value(found);
        }
      } else if (key.op == Op::integer && key.i >= 1 &&
                 static_cast<uint64_t>(key.i) <= value_size(table.v)) {
        out = from_value(value_at(table.v, static_cast<size_t>(key.i - 1)));
      }
      return true;
    }
    case Op::neg: {
      Operand v;
      if (!operand(n.a, v)) return false;
      if (v.type == Type::integer) {
        out = integer(wrap_sub(0, v.i));
      } else if (v.type == Type::number) {
        out = number(-v.f);
      } else {
        return false;
      }
      return true;
    }
    case Op::len: {
      Operand v;
      if (!operand(n.a, v)) return false;
      if (v.type == Type::string) {
        out = integer(static_cast<int64_t>(v.s.size()));
      } else if (v.type == Type::table && v.v.kind == SL_KIND_ARRAY) {
        out = integer(static_cast<int64_t>(value_size(v.v)));  // 1..n, no holes
      } else {
        return false;
      }
      return true;
    }
    case Op::not_: {
      Operand v;
      if (!operand(n.a, v)) return false;
      out = boolean(!truthy(v));
      return true;
    }
    case Op::and_:
    case Op::or_: {
      if (!eval(n.a, out)) return false;
      if (truthy(out) == (n.op == Op::or_)) return true;
      return eval(n.b, out);
    }
    default: break;
  }
  Operand l, r;
  if (!operand(n.a, l) || !operand(n.b, r)) return false;
  switch (n.op) {
    case Op::concat: return concat(l, r, out);
    case Op::eq:
    case Op::ne: {
      bool same = false;
      if (!equal(l, r, same)) return false;
      out = boolean(same == (n.op == Op::eq));
      return true;
    }
    case Op::lt:
    case Op::le:
      if (is_number(l) && is_number(r)) {
        out = boolean(n.op == Op::lt ? lt_num(l, r) : le_num(l, r));
        return true;
      }
      if (l.type == Type::string && r.type == Type::string) {
        const int c = str_compare(l.s, r.s);
        out = boolean(n.op == Op::lt ? c < 0 : c <= 0);
        return true;
      }
      return false;  // an error, or __lt / __le: Lua's
    default: return arith(n.op, l, r, out);
  }
}

std::optional<Value> NativeExpression::evaluate(const sl_value* argv, uint32_t argc) {
  if (function_form_) {
    for (size_t k = 0; k < slots_.size(); ++k) slots_[k] = k < argc ? &argv[k] : nullptr;
  } else {  // acc, x: x is the first argument unless there are exactly two
    slots_[0] = argc == 2 ? &argv[0] : nullptr;
    slots_[1] = argc == 0 ? nullptr : argc == 2 ? &argv[1] : &argv[0];
  }
  if (!scratch_.empty()) scratch_.clear();
  Operand out;
  if (!eval(root_, out)) return std::nullopt;
  switch (out.type) {
    case Type::nil:
    case Type::null: return Value::null();
    case Type::boolean: return Value::boolean(out.b);
    case Type::integer: return Value::integer(out.i);
    case Type::number: return Value::floating(out.f);
    case Type::string:
      if (out.v.kind == SL_KIND_STRING) return Value::borrow(out.v);  // valid UTF-8 already
      return sdk::valid_utf8(out.s) ? Value::string(out.s) : Value::bytes(out.s);
    case Type::table:
      if (!round_trips(out.v, 1)) return std::nullopt;
      return Value::borrow(out.v);
  }
  return std::nullopt;
}

}  // namespace sluice::host::lua
