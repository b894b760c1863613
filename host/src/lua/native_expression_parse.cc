// The compiler of the native fast path: a recursive-descent parser of the
// eligible subset of Lua 5.4 expressions (lparser.c's subexpr, with its
// operator priorities), building NativeExpression's tree. Whatever falls
// outside the subset makes the code ineligible (the reason is returned), so
// the parser only has to be right on what it accepts.
#include "lua/native_expression.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <utility>

namespace sluice::host::lua {

namespace {

// Deeper trees are left to Lua (the evaluator recurses).
constexpr int k_max_depth = 64;
// More nodes than a simple expression needs.
constexpr size_t k_max_nodes = 512;
// Function-form parameters the fast path binds.
constexpr size_t k_max_params = 16;

enum class Tok : uint8_t {
  end,
  name,
  integer,
  number,
  string,
  symbol,  // text holds it: + - * / // % ^ # == ~= < <= > >= ( ) [ ] . .. , ; :
};

struct Token {
  Tok kind = Tok::end;
  std::string text;  // name, symbol, or string contents
  int64_t i = 0;
  double f = 0;
};

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

class NativeParser {
 public:
  explicit NativeParser(std::string_view code) : code_(code) {}

  std::variant<NativeExpression, std::string> parse(bool function_form) {
    expr_.function_form_ = function_form;
    if (!advance()) return reason_;
    if (function_form) {
      if (!parse_function_header()) return reason_;
    } else {
      params_ = {"acc", "x"};  // slots 0 and 1
    }
    uint32_t root = 0;
    if (!expression(0, 0, root)) return reason_;
    if (is_symbol(";") && !advance()) return reason_;
    if (function_form) {
      if (!(tok_.kind == Tok::name && tok_.text == "end")) {
        fail("more than `return EXPR`");
        return reason_;
      }
      if (!advance()) return reason_;
    }
    if (tok_.kind != Tok::end) {
      fail(is_symbol(",") ? "several results" : "more than one expression");
      return reason_;
    }
    expr_.root_ = root;
    expr_.slots_.assign(params_.size(), nullptr);
    return std::move(expr_);
  }

 private:
  // --- tokens ---------------------------------------------------------------

  bool fail(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason);
    return false;
  }

  void skip_blank() {
    while (pos_ < code_.size()) {
      if (std::isspace(static_cast<unsigned char>(code_[pos_])) != 0) {
        ++pos_;
      } else if (code_.substr(pos_, 2) == "--") {
        pos_ += 2;
        if (pos_ < code_.size() && code_[pos_] == '[') {
          size_t j = pos_ + 1;
          while (j < code_.size() && code_[j] == '=') ++j;
          if (j < code_.size() && code_[j] == '[') {
            const std::string close = "]" + std::string(j - pos_ - 1, '=') + "]";
            const size_t end = code_.find(close, j + 1);
            pos_ = end == std::string_view::npos ? code_.size() : end + close.size();
            continue;
          }
        }
        const size_t eol = code_.find('\n', pos_);
        pos_ = eol == std::string_view::npos ? code_.size() : eol + 1;
      } else {
        break;
      }
    }
  }

  bool advance() {
    skip_blank();
    tok_ = Token{};
    if (pos_ >= code_.size()) return true;
    const char c = code_[pos_];
    if (name_start(c)) {
      const size_t start = pos_;
      while (pos_ < code_.size() && name_char(code_[pos_])) ++pos_;
      tok_.kind = Tok::name;
      tok_.text = code_.substr(start, pos_ - start);
      return true;
    }
    if (digit(c) || (c == '.' && pos_ + 1 < code_.size() && digit(code_[pos_ + 1]))) {
      return numeral();
    }
    if (c == '"' || c == '\'') return short_string(c);
    static constexpr std::string_view k_two[] = {"//", "==", "~=", "<=", ">=", ".."};
    for (std::string_view s : k_two) {
      if (code_.substr(pos_, 2) == s) {
        if (s == ".." && code_.substr(pos_, 3) == "...") return fail("`...`");
        tok_.kind = Tok::symbol;
        tok_.text = s;
        pos_ += 2;
        return true;
      }
    }
    if (std::string_view("+-*/%^#<>()[].,;:").find(c) != std::string_view::npos) {
      tok_.kind = Tok::symbol;
      tok_.text = std::string(1, c);
      ++pos_;
      return true;
    }
    return fail(fmt::format("the symbol '{}'", c));
  }

  // A decimal numeral as Lua reads it (llex.c read_numeral, then
  // lobject.c l_str2int / l_str2d): an integer when it has no '.' nor
  // exponent and fits in 64 bits, else a float (strtod, as Lua).
  bool numeral() {
    const size_t start = pos_;
    if (code_.substr(pos_, 2) == "0x" || code_.substr(pos_, 2) == "0X") {
      return fail("a hexadecimal numeral");
    }
    bool is_float = false;
    while (pos_ < code_.size() && digit(code_[pos_])) ++pos_;
    if (pos_ < code_.size() && code_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < code_.size() && digit(code_[pos_])) ++pos_;
    }
    if (pos_ < code_.size() && (code_[pos_] == 'e' || code_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < code_.size() && (code_[pos_] == '+' || code_[pos_] == '-')) ++pos_;
      if (pos_ >= code_.size() || !digit(code_[pos_])) return fail("a malformed numeral");
      while (pos_ < code_.size() && digit(code_[pos_])) ++pos_;
    }
    if (pos_ < code_.size() && (name_char(code_[pos_]) || code_[pos_] == '.')) {
      return fail("a malformed numeral");
    }
    const std::string text(code_.substr(start, pos_ - start));
    if (!is_float) {
      uint64_t value = 0;
      bool overflow = false;
      for (char d : text) {
        const auto digit_value = static_cast<uint64_t>(d - '0');
        if (value > (std::numeric_limits<uint64_t>::max() - digit_value) / 10) {
          overflow = true;
          break;
        }
        value = value * 10 + digit_value;
      }
      if (!overflow && value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        tok_.kind = Tok::integer;
        tok_.i = static_cast<int64_t>(value);
        return true;
      }
      // Lua reads a decimal integer that does not fit as a float.
    }
    errno = 0;
    char* end = nullptr;
    const double f = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return fail("a numeral strtod does not read whole");
    tok_.kind = Tok::number;
    tok_.f = f;
    return true;
  }

  // '...' or "..." with the common escapes; others are left to Lua.
  bool short_string(char quote) {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= code_.size()) return fail("an unfinished string");
      const char c = code_[pos_++];
      if (c == quote) break;
      if (c == '\n' || c == '\r') return fail("an unfinished string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= code_.size()) return fail("an unfinished string");
      const char e = code_[pos_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\\':
        case '"':
        case '\'': out.push_back(e); break;
        case 'x': {  // \xXX: exactly two hexadecimal digits
          int value = 0;
          for (int k = 0; k < 2; ++k) {
            if (pos_ >= code_.size() ||
                std::isxdigit(static_cast<unsigned char>(code_[pos_])) == 0) {
              return fail("a malformed \\x escape");
            }
            const char h = code_[pos_++];
            value = value * 16 + (digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          out.push_back(static_cast<char>(value));
          break;
        }
        default:
          if (digit(e)) {  // \ddd: up to three decimal digits, at most 255
            int value = e - '0';
            for (int k = 0; k < 2 && pos_ < code_.size() && digit(code_[pos_]); ++k) {
              value = value * 10 + (code_[pos_++] - '0');
            }
            if (value > 255) return fail("a string escape out of range");
            out.push_back(static_cast<char>(value));
            break;
          }
          return fail(fmt::format("the string escape '\\{}'", e));
      }
    }
    tok_.kind = Tok::string;
    tok_.text = std::move(out);
    return true;
  }

  [[nodiscard]] bool is_symbol(std::string_view s) const {
    return tok_.kind == Tok::symbol && tok_.text == s;
  }

  bool expect(std::string_view s) {
    if (!is_symbol(s)) return fail(fmt::format("expected '{}'", s));
    return advance();
  }

  // --- grammar ----------------------------------------------------------------

  // `function ( [NAME {, NAME}] ) return`
  bool parse_function_header() {
    if (!(tok_.kind == Tok::name && tok_.text == "function")) return fail("not a function");
    if (!advance() || !expect("(")) return false;
    while (!is_symbol(")")) {
      if (tok_.kind != Tok::name || keyword(tok_.text)) return fail("a parameter list with `...`");
      params_.push_back(tok_.text);
      if (params_.size() > k_max_params) return fail("too many parameters");
      if (!advance()) return false;
      if (is_symbol(",")) {
        if (!advance()) return false;
      } else if (!is_symbol(")")) {
        return fail("a parameter list with `...`");
      }
    }
    if (!advance()) return false;
    if (!(tok_.kind == Tok::name && tok_.text == "return")) {
      return fail("a function body with statements (only `return EXPR` is native)");
    }
    return advance();
  }

  static bool keyword(std::string_view s) {
    static constexpr std::string_view k_keywords[] = {
        "and",      "break",  "do",   "else", "elseif", "end",  "false", "for",
        "function", "goto",   "if",   "in",   "local",  "nil",  "not",   "or",
        "repeat",   "return", "then", "true", "until",  "while"};
    for (std::string_view k : k_keywords) {
      if (s == k) return true;
    }
    return false;
  }

  static NativeExpression::Node node(NativeExpression::Op op, uint32_t a = 0, uint32_t b = 0) {
    NativeExpression::Node n;
    n.op = op;
    n.a = a;
    n.b = b;
    return n;
  }

  uint32_t add(NativeExpression::Node n) {
    expr_.nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(expr_.nodes_.size() - 1);
  }

  struct Binary {
    NativeExpression::Op op;
    int left, right;  // lparser.c priorities
    bool swap;        // a > b is b < a, as Lua compiles it
  };

  std::optional<Binary> binary_op() const {
    using Op = NativeExpression::Op;
    if (tok_.kind == Tok::name) {
      if (tok_.text == "and") return Binary{Op::and_, 2, 2, false};
      if (tok_.text == "or") return Binary{Op::or_, 1, 1, false};
      return std::nullopt;
    }
    if (tok_.kind != Tok::symbol) return std::nullopt;
    const std::string& t = tok_.text;
    if (t == "+") return Binary{Op::add, 10, 10, false};
    if (t == "-") return Binary{Op::sub, 10, 10, false};
    if (t == "*") return Binary{Op::mul, 11, 11, false};
    if (t == "%") return Binary{Op::mod, 11, 11, false};
    if (t == "^") return Binary{Op::pow, 14, 13, false};
    if (t == "/") return Binary{Op::div, 11, 11, false};
    if (t == "//") return Binary{Op::idiv, 11, 11, false};
    if (t == "..") return Binary{Op::concat, 9, 8, false};
    if (t == "==") return Binary{Op::eq, 3, 3, false};
    if (t == "~=") return Binary{Op::ne, 3, 3, false};
    if (t == "<") return Binary{Op::lt, 3, 3, false};
    if (t == "<=") return Binary{Op::le, 3, 3, false};
    if (t == ">") return Binary{Op::lt, 3, 3, true};
    if (t == ">=") return Binary{Op::le, 3, 3, true};
    return std::nullopt;
  }

  // lparser.c subexpr: unary operators bind at priority 12, then binary
  // operators whose left priority exceeds `limit`.
  bool expression(int limit, int depth, uint32_t& out) {
    using Op = NativeExpression::Op;
    if (depth > k_max_depth || expr_.nodes_.size() > k_max_nodes) return fail("too deep or long");
    constexpr int k_unary_priority = 12;
    std::optional<Op> unary;
    if (is_symbol("-")) unary = Op::neg;
    if (is_symbol("#")) unary = Op::len;
    if (tok_.kind == Tok::name && tok_.text == "not") unary = Op::not_;
    if (unary) {
      if (!advance()) return false;
      uint32_t operand = 0;
      if (!expression(k_unary_priority, depth + 1, operand)) return false;
      out = add(node(*unary, operand));
    } else if (!simple(depth, out)) {
      return false;
    }
    while (auto op = binary_op()) {
      if (op->left <= limit) break;
      if (!advance()) return false;
      uint32_t right = 0;
      if (!expression(op->right, depth + 1, right)) return false;
      out = op->swap ? add(node(op->op, right, out)) : add(node(op->op, out, right));
    }
    return true;
  }

  bool simple(int depth, uint32_t& out) {
    using Op = NativeExpression::Op;
    switch (tok_.kind) {
      case Tok::integer: {
        NativeExpression::Node n = node(Op::integer);
        n.i = tok_.i;
        out = add(std::move(n));
        return advance();
      }
      case Tok::number: {
        NativeExpression::Node n = node(Op::number);
        n.f = tok_.f;
        out = add(std::move(n));
        return advance();
      }
      case Tok::string: {
        NativeExpression::Node n = node(Op::string);
        n.s = tok_.text;
        out = add(std::move(n));
        return advance();
      }
      case Tok::name:
        if (tok_.text == "nil" || tok_.text == "true" || tok_.text == "false") {
          NativeExpression::Node n = node(tok_.text == "nil" ? Op::nil : Op::boolean);
          n.i = tok_.text == "true" ? 1 : 0;
          out = add(std::move(n));
          return advance();
        }
        break;
      default: break;
    }
    return suffixed(depth, out);
  }

  // primary { '.' NAME | '[' EXPR ']' }, without calls.
  bool suffixed(int depth, uint32_t& out) {
    using Op = NativeExpression::Op;
    if (is_symbol("(")) {
      if (!advance() || !expression(0, depth + 1, out) || !expect(")")) return false;
    } else if (tok_.kind == Tok::name && !keyword(tok_.text)) {
      const std::string name = tok_.text;
      if (!advance()) return false;
      if (!name_value(name, out)) return false;
    } else {
      return fail(tok_.kind == Tok::name ? fmt::format("the keyword '{}'", tok_.text)
                                         : "an unexpected token");
    }
    while (true) {
      if (is_symbol(".")) {
        if (!advance()) return false;
        if (tok_.kind != Tok::name) return fail("a field name expected");
        NativeExpression::Node key = node(Op::string);
        key.s = tok_.text;
        const uint32_t k = add(std::move(key));
        out = add(node(Op::index, out, k));
        if (!advance()) return false;
      } else if (is_symbol("[")) {
        if (!advance()) return false;
        if (tok_.kind != Tok::string && tok_.kind != Tok::integer) {
          return fail("an index that is not a constant string or integer");
        }
        const uint32_t table = out;
        uint32_t key = 0;
        if (!simple(depth, key) || !expect("]")) return false;
        out = add(node(Op::index, table, key));
      } else if (is_symbol("(") || is_symbol(":") || tok_.kind == Tok::string) {
        return fail("a function call");
      } else {
        return true;
      }
    }
  }

  // A name: an argument, or one of the constant library values.
  bool name_value(const std::string& name, uint32_t& out) {
    using Op = NativeExpression::Op;
    for (size_t k = params_.size(); k-- > 0;) {  // the last of equal names shadows
      if (params_[k] == name) {
        NativeExpression::Node n = node(Op::param);
        n.a = static_cast<uint32_t>(k);
        out = add(std::move(n));
        return true;
      }
    }
    if ((name == "math" || name == "sluice") && is_symbol(".")) {
      if (!advance()) return false;
      if (tok_.kind != Tok::name) return fail("a field name expected");
      const std::string field = tok_.text;
      NativeExpression::Node n;
      if (name == "sluice" && field == "null") {
        n.op = Op::null;
      } else if (name == "math" && field == "huge") {
        n.op = Op::number;
        n.f = HUGE_VAL;
      } else if (name == "math" && field == "pi") {
        n.op = Op::number;
        n.f = std::numbers::pi;
      } else if (name == "math" && field == "maxinteger") {
        n.op = Op::integer;
        n.i = std::numeric_limits<int64_t>::max();
      } else if (name == "math" && field == "mininteger") {
        n.op = Op::integer;
        n.i = std::numeric_limits<int64_t>::min();
      } else {
        return fail(fmt::format("the library value '{}.{}'", name, field));
      }
      out = add(std::move(n));
      return advance();
    }
    return fail(fmt::format("the global '{}'", name));
  }

  std::string_view code_;
  size_t pos_ = 0;
  Token tok_;
  std::string reason_;
  std::vector<std::string> params_;
  NativeExpression expr_;
};

std::variant<NativeExpression, std::string> NativeExpression::compile(std::string_view code,
                                                                      bool function_form) {
  return NativeParser(code).parse(function_form);
}

}  // namespace sluice::host::lua
