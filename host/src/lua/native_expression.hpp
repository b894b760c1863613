// The native fast path of Lua functions (docs/LUA.md, "The fast path"): a
// simple expression (`x % 2 == 0`, `x.amount > 50 and x.user ~= ""`) compiled
// once into a small tree evaluated straight over sluice values, without
// crossing into the Lua state.
//
// Exactness is the contract: for every argument, evaluate() either returns
// the very value the Lua function returns, or nothing, and then the caller
// runs the Lua function itself. So evaluate() never reports an error: every
// case where Lua would raise one (an integer `//` or `%` by zero, arithmetic
// on nil or on a string, comparing a number with a string, indexing a
// non-table), and every case whose exact result it does not model (a table
// result holding bytes, `==` between two tables, `#` of an object, arithmetic
// on two NaNs, whose result's sign depends on how Lua was compiled), is left
// to Lua, which gives the same message through the same error policy as
// without the fast path. Its semantics are Lua 5.4's (lvm.c): 64-bit integers
// that wrap, floats, exact int/float comparison, `and`/`or` returning an
// operand, only nil and false falsy; sluice.null is Lua's null sentinel
// (truthy, not nil), a missing field is nil.
//
// Eligible code (decided once, at compile time, on code Lua already
// compiled): the expression form (docs/LUA.md) or `function(a, b) return
// EXPR end`, where EXPR uses only the arguments, constants (numbers, short
// strings, nil, true, false, sluice.null, math.huge, math.pi,
// math.maxinteger, math.mininteger), field access with a constant key
// (`x.k`, `x["k"]`, `x[2]`), arithmetic (+ - * / // % ^ and unary -),
// comparisons, `..`, `#`, `and`, `or`, `not` and parentheses. Anything else
// (a call, another global, `...`, bitwise operators, a statement) is not
// eligible: the function runs in Lua only.
#pragma once

#include "value/value.hpp"

#include <sluice/sluice.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::host::lua {

class NativeExpression {
 public:
  enum class Op : uint8_t {
    nil,
    boolean,
    integer,
    number,
    string,
    null,  // sluice.null
    param,
    index,  // a[b], b a constant
    neg,
    len,
    not_,
    add,
    sub,
    mul,
    div,
    idiv,
    mod,
    pow,
    concat,
    eq,
    ne,
    lt,
    le,
    and_,
    or_,
  };
  struct Node {
    Op op = Op::nil;
    uint32_t a = 0, b = 0;  // operand nodes; param: the argument's slot
    int64_t i = 0;          // integer, boolean
    double f = 0;           // number
    std::string s;          // string
  };

  // Compiles the code of a function in the expression form (`function_form`
  // false: its names are acc and x, see docs/LUA.md) or the function form.
  // The code must be valid Lua (compiled by Lua first). Returns the tree, or
  // why the code is not eligible.
  [[nodiscard]] static std::variant<NativeExpression, std::string> compile(std::string_view code,
                                                                           bool function_form);

  // f(argv...) (borrowed) as the Lua function returns it, or nullopt: then
  // run the Lua function (see the header comment). Not thread-safe (a
  // scratch buffer): one task's thread, as the Lua state.
  [[nodiscard]] std::optional<Value> evaluate(const sl_value* argv, uint32_t argc);

  // A value during evaluation: a Lua value, with strings and tables viewed
  // in place (never copied out of the argument). Trivial, so that locals
  // cost nothing: only the fields of its type are set.
  struct Operand {
    enum class Type : uint8_t { nil, null, boolean, integer, number, string, table };
    Type type;
    union {
      bool b;
      int64_t i;
      double f;
    };
    std::string_view s;  // string
    sl_value v;          // table: the array or object; string: the value it is, or null
  };

 private:
  NativeExpression() = default;
  [[nodiscard]] bool eval(uint32_t node, Operand& out);
  // eval() with the leaves (arguments and number constants) done in place.
  [[nodiscard]] bool operand(uint32_t node, Operand& out);
  [[nodiscard]] bool arith(Op op, const Operand& l, const Operand& r, Operand& out);
  [[nodiscard]] bool concat(const Operand& l, const Operand& r, Operand& out);

  friend class NativeParser;
  std::vector<Node> nodes_;
  uint32_t root_ = 0;
  bool function_form_ = false;
  // Arguments of the current evaluation by slot (expression form: 0 = acc,
  // 1 = x); nullptr is nil.
  std::vector<const sl_value*> slots_;
  std::deque<std::string> scratch_;  // strings made by `..` in the current evaluation
};

}  // namespace sluice::host::lua
