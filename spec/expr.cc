#include "spec/expr.h"

#include <algorithm>
#include <climits>

namespace opc {
namespace {

// Hostile-input guards: compiling recurses once per nesting level, and eval() runs on a
// fixed local stack, so both are bounded here rather than by the machine.
constexpr size_t kMaxTextLength = 4096;
constexpr int kMaxDepth = 64;
constexpr int kMaxStack = 128;

// One postfix instruction. Operands are on the stack; `arg` is the constant, value
// slot, tensor index or jump target, already resolved at compile time.
enum class Op : uint8_t {
  Const, Value,
  Neg, Not,
  Add, Sub, Mul, Div, Mod, CeilDiv, Min, Max,
  Eq, Ne, Lt, Le, Gt, Ge,
  Size, Stride, Dim, Numel, Contiguous, IsNone, StorageOffset, ElementSize, Alignment, Dtype,
  // `and` / `or`: when the left operand decides the result it stays on the stack and
  // the right one is skipped (so `b != 0 and a / b > 1` cannot divide by zero);
  // otherwise it is dropped and the right operand becomes the result.
  JumpIfFalse, JumpIfTrue,
};

struct Insn {
  Op op;
  int64_t arg;
};

// How many entries an instruction adds to the stack (on the fall-through path).
int stack_effect(Op op) {
  switch (op) {
    case Op::Const: case Op::Value: case Op::Dim: case Op::Numel: case Op::Contiguous:
    case Op::IsNone: case Op::StorageOffset: case Op::ElementSize: case Op::Alignment:
    case Op::Dtype:
      return 1;
    case Op::Neg: case Op::Not: case Op::Size: case Op::Stride:
      return 0;
    default:
      return -1;
  }
}

// For eval error messages, which show the arithmetic that failed.
const char* symbol(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    default: return "%";
  }
}

enum class Tok : uint8_t {
  Int, Name, True, False, And, Or, Not,
  LParen, RParen, Comma, Dot,
  Plus, Minus, Star, Slash, Percent,
  Eq, Ne, Lt, Le, Gt, Ge,
  End,
};

struct Token {
  Tok kind;
  int off;        // 0-based offset in the text
  int len;
  uint64_t ival;  // Int only; up to 2^63 so that -9223372036854775808 can be written
};

constexpr uint64_t kLiteralMax = uint64_t{1} << 63;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string show_char(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string(1, c);
  static const char hex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return std::string("\\x") + hex[u >> 4] + hex[u & 15];
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

int find(const std::vector<std::string>& names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

struct Function {
  const char* name;
  Op op;
};
// All take two integers.
constexpr Function kFunctions[] = {{"ceil_div", Op::CeilDiv}, {"min", Op::Min}, {"max", Op::Max}};

struct Method {
  const char* name;
  Op op;
  int arity;
  ExprType type;
};
constexpr Method kMethods[] = {
    {"size", Op::Size, 1, ExprType::Int},   {"stride", Op::Stride, 1, ExprType::Int},
    {"dim", Op::Dim, 0, ExprType::Int},     {"numel", Op::Numel, 0, ExprType::Int},
    {"is_contiguous", Op::Contiguous, 0, ExprType::Bool},
    {"is_none", Op::IsNone, 0, ExprType::Bool},
    {"storage_offset", Op::StorageOffset, 0, ExprType::Int},
    {"element_size", Op::ElementSize, 0, ExprType::Int},
    {"alignment", Op::Alignment, 0, ExprType::Int},
    {"dtype", Op::Dtype, 0, ExprType::Int},
};

const char* type_name(ExprType t) { return t == ExprType::Int ? "an integer" : "a boolean"; }

// The compiled form: postfix code plus what eval() needs for its error messages.
struct Program {
  std::string text;
  ExprType type = ExprType::Int;
  std::vector<Insn> code;
  std::vector<int> value_slots;
  std::vector<std::string> tensor_names;  // for eval error messages
  bool uses_tensors = false;

  [[noreturn]] void overflow(const std::string& what) const {
    throw EvalError("integer overflow in '" + text + "': " + what);
  }
  [[noreturn]] void overflow(int64_t a, const char* op, int64_t b) const {
    overflow(std::to_string(a) + " " + op + " " + std::to_string(b));
  }
  [[noreturn]] void division_by_zero(const std::string& what) const {
    throw EvalError("division by zero in '" + text + "': " + what);
  }
  [[noreturn]] void index_out_of_range(const Insn& in, int64_t index, int64_t dim) const {
    throw EvalError(tensor_names[in.arg] + (in.op == Op::Size ? ".size(" : ".stride(") +
                    std::to_string(index) + ") is out of range for a " + std::to_string(dim) +
                    "-d tensor in '" + text + "'");
  }
};

// Recursive descent over the token list, emitting postfix code as it goes; each parse
// function returns the type of what it emitted and where it starts (for errors).
class Compiler {
 public:
  struct Operand {
    ExprType type;
    int off;
  };

  Compiler(std::string_view text, const Scope& scope, const SourceLoc& loc, Program& out)
      : text_(text), scope_(scope), loc_(loc), out_(out) {}

  void run(ExprType want) {
    if (text_.size() > kMaxTextLength)
      fail(0, "expression too long (" + std::to_string(text_.size()) +
                  " characters; the limit is " + std::to_string(kMaxTextLength) + ")");
    lex();
    if (peek().kind == Tok::End) fail(0, "empty expression");
    const Operand root = parse_or();
    if (peek().kind != Tok::End) fail_unexpected(peek());
    if (root.type != want)
      fail(root.off, std::string("expected ") +
                         (want == ExprType::Bool ? "a boolean expression, got an integer one"
                                                 : "an integer expression, got a boolean one"));
    std::sort(out_.value_slots.begin(), out_.value_slots.end());
    out_.value_slots.erase(std::unique(out_.value_slots.begin(), out_.value_slots.end()),
                           out_.value_slots.end());
    if (out_.uses_tensors) out_.tensor_names = scope_.tensors;
    out_.type = want;
  }

 private:
  // Counts one nesting level for as long as it lives.
  class Nest {
   public:
    Nest(Compiler& c, int off) : c_(c) {
      if (++c_.depth_ > kMaxDepth)
        c_.fail(off, "expression nested too deeply (the limit is " +
                         std::to_string(kMaxDepth) + " levels)");
    }
    ~Nest() { --c_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Compiler& c_;
  };

  [[noreturn]] void fail(int off, const std::string& message) const {
    throw ContractError(loc_.shifted(off), message);
  }

  std::string spelling(const Token& t) const {
    return std::string(text_.substr(static_cast<size_t>(t.off), static_cast<size_t>(t.len)));
  }

  [[noreturn]] void fail_unexpected(const Token& t) const {
    fail(t.off, t.kind == Tok::End ? "unexpected end of expression"
                                   : "unexpected '" + spelling(t) + "'");
  }

  // One loop over the text, a branch per kind of token: long, and clearer as one piece
  // than split across helpers that would share the cursor.
  void lex() {
    const int n = static_cast<int>(text_.size());
    int i = 0;
    for (;;) {
      while (i < n && is_space(text_[i])) ++i;
      if (i == n) break;
      const int start = i;
      const char c = text_[i];
      if (is_digit(c)) {
        uint64_t v = 0;
        bool too_large = false;
        for (; i < n && is_digit(text_[i]); ++i) {
          const uint64_t d = static_cast<uint64_t>(text_[i] - '0');
          if (v > (kLiteralMax - d) / 10) too_large = true;
          else v = v * 10 + d;
        }
        if (i < n && is_ident_char(text_[i])) {
          while (i < n && is_ident_char(text_[i])) ++i;
          fail(start, "invalid integer literal '" + std::string(text_.substr(start, i - start)) + "'");
        }
        if (too_large) fail(start, "integer literal too large");
        toks_.push_back({Tok::Int, start, i - start, v});
        continue;
      }
      if (is_ident_start(c)) {
        while (i < n && is_ident_char(text_[i])) ++i;
        const std::string_view word = text_.substr(start, i - start);
        Tok kind = Tok::Name;
        if (word == "true") kind = Tok::True;
        else if (word == "false") kind = Tok::False;
        else if (word == "and") kind = Tok::And;
        else if (word == "or") kind = Tok::Or;
        else if (word == "not") kind = Tok::Not;
        toks_.push_back({kind, start, i - start, 0});
        continue;
      }
      const char c2 = i + 1 < n ? text_[i + 1] : '\0';
      Tok kind;
      int len = 1;
      switch (c) {
        case '(': kind = Tok::LParen; break;
        case ')': kind = Tok::RParen; break;
        case ',': kind = Tok::Comma; break;
        case '.': kind = Tok::Dot; break;
        case '+': kind = Tok::Plus; break;
        case '-': kind = Tok::Minus; break;
        case '*': kind = Tok::Star; break;
        case '/': kind = Tok::Slash; break;
        case '%': kind = Tok::Percent; break;
        case '<': kind = c2 == '=' ? Tok::Le : Tok::Lt; break;
        case '>': kind = c2 == '=' ? Tok::Ge : Tok::Gt; break;
        case '=':
          if (c2 != '=') fail(i, "unexpected character '=' (use '==' to compare)");
          kind = Tok::Eq;
          break;
        case '!':
          if (c2 != '=') fail(i, "unexpected character '!' (use 'not')");
          kind = Tok::Ne;
          break;
        case '&': fail(i, "unexpected character '&' (use 'and')");
        case '|': fail(i, "unexpected character '|' (use 'or')");
        default: fail(i, "unexpected character '" + show_char(c) + "'");
      }
      if (kind == Tok::Le || kind == Tok::Ge || kind == Tok::Eq || kind == Tok::Ne) len = 2;
      toks_.push_back({kind, start, len, 0});
      i += len;
    }
    toks_.push_back({Tok::End, n, 0, 0});
  }

  const Token& peek() const { return toks_[pos_]; }
  // Never moves past End, which every parse path stops at.
  const Token& next() { return toks_[pos_++]; }

  void emit(Op op, int64_t arg, int off) {
    out_.code.push_back({op, arg});
    height_ += stack_effect(op);
    if (height_ > kMaxStack)
      fail(off, "expression too complex (evaluating it needs more than " +
                    std::to_string(kMaxStack) + " intermediate values)");
  }

  void need(const Operand& o, ExprType t, const std::string& what) const {
    if (o.type != t)
      fail(o.off, what + " must be " + type_name(t) + ", got " + type_name(o.type));
  }

  Operand parse_or() {
    Operand left = parse_and();
    while (peek().kind == Tok::Or) {
      const Token& op = next();
      need(left, ExprType::Bool, "operand of 'or'");
      const size_t jump = out_.code.size();
      emit(Op::JumpIfTrue, 0, op.off);
      need(parse_and(), ExprType::Bool, "operand of 'or'");
      out_.code[jump].arg = static_cast<int64_t>(out_.code.size());
      left.type = ExprType::Bool;
    }
    return left;
  }

  Operand parse_and() {
    Operand left = parse_not();
    while (peek().kind == Tok::And) {
      const Token& op = next();
      need(left, ExprType::Bool, "operand of 'and'");
      const size_t jump = out_.code.size();
      emit(Op::JumpIfFalse, 0, op.off);
      need(parse_not(), ExprType::Bool, "operand of 'and'");
      out_.code[jump].arg = static_cast<int64_t>(out_.code.size());
      left.type = ExprType::Bool;
    }
    return left;
  }

  Operand parse_not() {
    if (peek().kind != Tok::Not) return parse_comparison();
    const Token& op = next();
    Nest nest(*this, op.off);
    need(parse_not(), ExprType::Bool, "operand of 'not'");
    emit(Op::Not, 0, op.off);
    return {ExprType::Bool, op.off};
  }

  static bool is_comparison(Tok t) {
    return t == Tok::Eq || t == Tok::Ne || t == Tok::Lt || t == Tok::Le || t == Tok::Gt ||
           t == Tok::Ge;
  }

  Operand parse_comparison() {
    const Operand left = parse_additive();
    if (!is_comparison(peek().kind)) return left;
    const Token& op = next();
    const bool equality = op.kind == Tok::Eq || op.kind == Tok::Ne;
    const std::string what = "operand of '" + spelling(op) + "'";
    if (!equality) need(left, ExprType::Int, what);
    const Operand right = parse_additive();
    if (!equality) need(right, ExprType::Int, what);
    else if (left.type != right.type)
      fail(op.off, "'" + spelling(op) + "' compares " + type_name(left.type) + " with " +
                       type_name(right.type));
    static constexpr Op kOps[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
    emit(kOps[static_cast<int>(op.kind) - static_cast<int>(Tok::Eq)], 0, op.off);
    if (is_comparison(peek().kind))
      fail(peek().off, "comparisons cannot be chained; combine them with 'and'");
    return {ExprType::Bool, left.off};
  }

  Operand parse_additive() {
    Operand left = parse_multiplicative();
    while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
      const Token& op = next();
      const std::string what = "operand of '" + spelling(op) + "'";
      need(left, ExprType::Int, what);
      need(parse_multiplicative(), ExprType::Int, what);
      emit(op.kind == Tok::Plus ? Op::Add : Op::Sub, 0, op.off);
    }
    return left;
  }

  Operand parse_multiplicative() {
    Operand left = parse_unary();
    while (peek().kind == Tok::Star || peek().kind == Tok::Slash || peek().kind == Tok::Percent) {
      const Token& op = next();
      const std::string what = "operand of '" + spelling(op) + "'";
      need(left, ExprType::Int, what);
      need(parse_unary(), ExprType::Int, what);
      emit(op.kind == Tok::Star ? Op::Mul : op.kind == Tok::Slash ? Op::Div : Op::Mod, 0, op.off);
    }
    return left;
  }

  Operand parse_unary() {
    if (peek().kind != Tok::Minus) return parse_primary();
    const Token& op = next();
    if (peek().kind == Tok::Int) {
      // Folded, so that the most negative int64 can be written as a literal.
      const Token& lit = next();
      emit(Op::Const, lit.ival == kLiteralMax ? INT64_MIN : -static_cast<int64_t>(lit.ival), op.off);
      return {ExprType::Int, op.off};
    }
    Nest nest(*this, op.off);
    need(parse_unary(), ExprType::Int, "operand of unary '-'");
    emit(Op::Neg, 0, op.off);
    return {ExprType::Int, op.off};
  }

  Operand parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int:
        next();
        if (t.ival > static_cast<uint64_t>(INT64_MAX)) fail(t.off, "integer literal too large");
        emit(Op::Const, static_cast<int64_t>(t.ival), t.off);
        return {ExprType::Int, t.off};
      case Tok::True:
      case Tok::False:
        next();
        emit(Op::Const, t.kind == Tok::True, t.off);
        return {ExprType::Bool, t.off};
      case Tok::LParen: {
        next();
        Nest nest(*this, t.off);
        const Operand inner = parse_or();
        expect_close(t);
        return {inner.type, t.off};
      }
      case Tok::Name:
        return parse_name();
      default:
        fail_unexpected(t);
    }
  }

  void expect_close(const Token& open) {
    if (peek().kind == Tok::RParen) {
      next();
      return;
    }
    const std::string where = loc_.column ? "column " + std::to_string(loc_.column + open.off)
                                          : "character " + std::to_string(open.off + 1);
    const std::string got = peek().kind == Tok::End ? "end of expression" : "'" + spelling(peek()) + "'";
    fail(peek().off, "expected ')' to close '(' at " + where + ", got " + got);
  }

  // Parses `( int, int, ... )`, emitting each argument; returns how many there were.
  int parse_args(const std::string& callee) {
    const Token& open = next();
    Nest nest(*this, open.off);
    int count = 0;
    if (peek().kind != Tok::RParen) {
      for (;;) {
        ++count;
        need(parse_or(), ExprType::Int, "argument " + std::to_string(count) + " of " + callee);
        if (peek().kind != Tok::Comma) break;
        next();
      }
    }
    expect_close(open);
    return count;
  }

  void check_arity(const Token& at, const std::string& callee, int expected, int got) const {
    if (got != expected)
      fail(at.off, "wrong number of arguments to " + callee + ": expected " +
                       std::to_string(expected) + ", got " + std::to_string(got));
  }

  Operand parse_name() {
    const Token& name = next();
    const std::string id = spelling(name);
    if (peek().kind == Tok::Dot) return parse_method(name, id);
    if (peek().kind == Tok::LParen) return parse_call(name, id);
    const int slot = find(scope_.values, id);
    if (slot >= 0) {
      emit(Op::Value, slot, name.off);
      out_.value_slots.push_back(slot);
      return {ExprType::Int, name.off};
    }
    for (const auto& [constant, value] : scope_.constants)
      if (id == constant) {
        emit(Op::Const, value, name.off);
        return {ExprType::Int, name.off};
      }
    if (find(scope_.tensors, id) >= 0)
      fail(name.off, "'" + id + "' is a tensor; use " + id + ".size(i), " + id + ".numel(), ...");
    for (const Function& f : kFunctions)
      if (id == f.name) fail(name.off, "'" + id + "' is a function; call it as " + id + "(a, b)");
    fail(name.off, "unknown name '" + id + "' (" +
                       (scope_.values.empty() ? std::string("no names are in scope")
                                              : "known: " + join(scope_.values)) + ")");
  }

  Operand parse_call(const Token& name, const std::string& id) {
    const Function* fn = nullptr;
    for (const Function& f : kFunctions)
      if (id == f.name) fn = &f;
    if (!fn) fail(name.off, "'" + id + "' is not a function (functions: ceil_div, min, max)");
    check_arity(name, id, 2, parse_args(id));
    emit(fn->op, 0, name.off);
    return {ExprType::Int, name.off};
  }

  Operand parse_method(const Token& name, const std::string& id) {
    const int tensor = find(scope_.tensors, id);
    if (tensor < 0) {
      if (find(scope_.values, id) >= 0)
        fail(name.off, "'" + id + "' is a value, not a tensor; only tensors have methods");
      fail(name.off, "unknown tensor '" + id + "' (" +
                         (scope_.tensors.empty() ? std::string("no tensors are in scope")
                                                 : "tensors: " + join(scope_.tensors)) + ")");
    }
    next();  // '.'
    const Token& m = peek();
    if (m.kind != Tok::Name) fail(m.off, "expected a tensor method after '" + id + ".'");
    next();
    const std::string mname = spelling(m);
    const Method* method = nullptr;
    for (const Method& k : kMethods)
      if (mname == k.name) method = &k;
    if (!method)
      fail(m.off, "unknown tensor method '" + mname +
                      "' (known: size, stride, dim, numel, is_contiguous, is_none, storage_offset, element_size, alignment, dtype)");
    const std::string callee = id + "." + mname;
    if (peek().kind != Tok::LParen)
      fail(peek().off, "expected '(' after '" + callee + "'");
    check_arity(m, callee, method->arity, parse_args(callee));
    emit(method->op, tensor, m.off);
    out_.uses_tensors = true;
    return {method->type, name.off};
  }

  std::string_view text_;
  const Scope& scope_;
  const SourceLoc& loc_;
  Program& out_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int height_ = 0;
};

// Python's // and %: the quotient rounds toward negative infinity, the remainder takes
// the divisor's sign. Callers rule out b == 0 and INT64_MIN / -1.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// -floor(-a / b), without negating a (which overflows for INT64_MIN).
int64_t ceil_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a % b < 0) == (b < 0))) ? q + 1 : q;
}

}  // namespace

struct Expr::Impl : Program {
  static std::shared_ptr<const Impl> make_constant(int64_t v) {
    auto impl = std::make_shared<Impl>();
    impl->text = std::to_string(v);
    impl->code.push_back({Op::Const, v});
    return impl;
  }
};

Expr::Expr() : impl_(Impl::make_constant(0)) {}

Expr Expr::compile(std::string_view text, const Scope& scope, ExprType type,
                   const SourceLoc& loc) {
  auto impl = std::make_shared<Impl>();
  impl->text = std::string(text);
  Compiler(text, scope, loc, *impl).run(type);
  Expr e;
  e.impl_ = std::move(impl);
  return e;
}

Expr Expr::constant(int64_t v) {
  Expr e;
  e.impl_ = Impl::make_constant(v);
  return e;
}

// The interpreter of the compiled stack code: one case per instruction, in one function so
// that the hot loop (every case evaluates its constraints) stays a single tight switch.
int64_t Expr::eval(const EvalInput& in) const {
  const Impl& m = *impl_;
  const Insn* const code = m.code.data();
  const size_t n = m.code.size();
  int64_t st[kMaxStack];  // compile() rejected anything that would need more
  int sp = 0;  // st[sp - 1] is the top
  size_t pc = 0;
  while (pc < n) {
    const Insn& insn = code[pc++];
    switch (insn.op) {
      case Op::Const: st[sp++] = insn.arg; break;
      case Op::Value: st[sp++] = in.values[insn.arg]; break;
      case Op::Neg:
        if (st[sp - 1] == INT64_MIN) m.overflow("-(" + std::to_string(st[sp - 1]) + ")");
        st[sp - 1] = -st[sp - 1];
        break;
      case Op::Not: st[sp - 1] = !st[sp - 1]; break;
      case Op::Add: case Op::Sub: case Op::Mul: {
        const int64_t b = st[--sp], a = st[sp - 1];
        const bool bad = insn.op == Op::Add   ? __builtin_add_overflow(a, b, &st[sp - 1])
                         : insn.op == Op::Sub ? __builtin_sub_overflow(a, b, &st[sp - 1])
                                              : __builtin_mul_overflow(a, b, &st[sp - 1]);
        if (bad) m.overflow(a, symbol(insn.op), b);
        break;
      }
      case Op::Div: case Op::Mod: {
        const int64_t b = st[--sp], a = st[sp - 1];
        if (b == 0) m.division_by_zero(std::to_string(a) + " " + symbol(insn.op) + " 0");
        if (a == INT64_MIN && b == -1) {
          if (insn.op == Op::Div) m.overflow(a, "/", b);
          st[sp - 1] = 0;
        } else {
          st[sp - 1] = insn.op == Op::Div ? floor_div(a, b) : floor_mod(a, b);
        }
        break;
      }
      case Op::CeilDiv: {
        const int64_t b = st[--sp], a = st[sp - 1];
        if (b == 0) m.division_by_zero("ceil_div(" + std::to_string(a) + ", 0)");
        if (a == INT64_MIN && b == -1)
          m.overflow("ceil_div(" + std::to_string(a) + ", -1)");
        st[sp - 1] = ceil_div(a, b);
        break;
      }
      case Op::Min: --sp; st[sp - 1] = std::min(st[sp - 1], st[sp]); break;
      case Op::Max: --sp; st[sp - 1] = std::max(st[sp - 1], st[sp]); break;
      case Op::Eq: --sp; st[sp - 1] = st[sp - 1] == st[sp]; break;
      case Op::Ne: --sp; st[sp - 1] = st[sp - 1] != st[sp]; break;
      case Op::Lt: --sp; st[sp - 1] = st[sp - 1] < st[sp]; break;
      case Op::Le: --sp; st[sp - 1] = st[sp - 1] <= st[sp]; break;
      case Op::Gt: --sp; st[sp - 1] = st[sp - 1] > st[sp]; break;
      case Op::Ge: --sp; st[sp - 1] = st[sp - 1] >= st[sp]; break;
      case Op::Size: case Op::Stride: {
        const TensorFacts& t = in.tensors[insn.arg];
        const int64_t i = st[sp - 1];
        const int64_t k = i < 0 ? i + t.dim : i;
        if (k < 0 || k >= t.dim) m.index_out_of_range(insn, i, t.dim);
        st[sp - 1] = (insn.op == Op::Size ? t.sizes : t.strides)[k];
        break;
      }
      case Op::Dim: st[sp++] = in.tensors[insn.arg].dim; break;
      case Op::Numel: {
        const TensorFacts& t = in.tensors[insn.arg];
        int64_t p = 1;
        for (int64_t k = 0; k < t.dim; ++k)
          if (__builtin_mul_overflow(p, t.sizes[k], &p))
            m.overflow(m.tensor_names[insn.arg] + ".numel()");
        st[sp++] = p;
        break;
      }
      case Op::Contiguous: st[sp++] = in.tensors[insn.arg].contiguous; break;
      case Op::IsNone: st[sp++] = in.tensors[insn.arg].none; break;
      case Op::StorageOffset: st[sp++] = in.tensors[insn.arg].storage_offset; break;
      case Op::ElementSize: st[sp++] = in.tensors[insn.arg].element_size; break;
      case Op::Alignment: st[sp++] = in.tensors[insn.arg].alignment; break;
      case Op::Dtype: st[sp++] = in.tensors[insn.arg].dtype; break;
      case Op::JumpIfFalse:
        if (st[sp - 1] == 0) pc = static_cast<size_t>(insn.arg);
        else --sp;
        break;
      case Op::JumpIfTrue:
        if (st[sp - 1] != 0) pc = static_cast<size_t>(insn.arg);
        else --sp;
        break;
    }
  }
  return st[0];
}

ExprType Expr::type() const { return impl_->type; }
const std::string& Expr::text() const { return impl_->text; }
const std::vector<int>& Expr::value_slots() const { return impl_->value_slots; }
bool Expr::uses_tensors() const { return impl_->uses_tensors; }

}  // namespace opc
