#include "spec/expr.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <climits>
#include <string>
#include <vector>

namespace opc {
namespace {

// Errors point at loc.column + offset, so a nonzero start column checks the shift.
const SourceLoc kLoc{"contracts/vllm/op.yaml", 7, 10};

Scope abc_scope() {
  Scope s;
  s.values = {"a", "b", "c"};
  s.tensors = {"x", "y"};
  return s;
}

// x is 2x3x4, strides (12, 4, 1), contiguous; y is 0-d and not contiguous.
struct Tensors {
  int64_t x_sizes[3] = {2, 3, 4};
  int64_t x_strides[3] = {12, 4, 1};
  TensorFacts facts[2];
  Tensors() {
    facts[0] = {x_sizes, x_strides, 3, true};
    facts[1] = {nullptr, nullptr, 0, false};
  }
};

int64_t eval_with(const std::string& text, std::vector<int64_t> vals,
                  ExprType type = ExprType::Int) {
  vals.resize(3);
  Tensors t;
  return Expr::compile(text, abc_scope(), type, kLoc).eval({vals.data(), t.facts});
}

int64_t ival(const std::string& text, std::vector<int64_t> vals = {}) {
  return eval_with(text, std::move(vals));
}

int64_t bval(const std::string& text, std::vector<int64_t> vals = {}) {
  return eval_with(text, std::move(vals), ExprType::Bool);
}

// Asserts that compiling fails at `offset` into the text with a message containing `part`.
void expect_compile_error(const std::string& text, int offset, const std::string& part,
                          ExprType type = ExprType::Int) {
  try {
    Expr::compile(text, abc_scope(), type, kLoc);
    ADD_FAILURE() << "compiled without error: " << text;
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().file, kLoc.file) << text;
    EXPECT_EQ(e.loc().line, kLoc.line) << text;
    EXPECT_EQ(e.loc().column, kLoc.column + offset) << text << ": " << e.message();
    EXPECT_NE(e.message().find(part), std::string::npos)
        << text << ": '" << e.message() << "' lacks '" << part << "'";
  }
}

// Asserts that evaluation fails with a message containing `part`.
void expect_eval_error(const std::string& text, std::vector<int64_t> vals,
                       const std::string& part, ExprType type = ExprType::Int) {
  try {
    eval_with(text, std::move(vals), type);
    ADD_FAILURE() << "evaluated without error: " << text;
  } catch (const EvalError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << text << ": '" << e.what() << "' lacks '" << part << "'";
  }
}

TEST(Expr, ExampleFromHeader) {
  Scope scope;
  scope.values = {"tp_size", "seq_len"};
  scope.tensors = {"x"};
  const Expr e = Expr::compile("seq_len % tp_size == 0", scope, ExprType::Bool, kLoc);
  int64_t vals[] = {4, 12};
  EXPECT_EQ(e.eval({vals, nullptr}), 1);
  vals[1] = 13;
  EXPECT_EQ(e.eval({vals, nullptr}), 0);
}

TEST(Expr, ArithmeticPrecedenceAndAssociativity) {
  EXPECT_EQ(ival("a - b - c", {10, 3, 2}), 5);
  EXPECT_EQ(ival("a / b * c", {12, 4, 3}), 9);
  EXPECT_EQ(ival("a % b * c", {7, 4, 2}), 6);
  EXPECT_EQ(ival("a + b * c", {1, 2, 3}), 7);
  EXPECT_EQ(ival("(a + b) * c", {1, 2, 3}), 9);
  EXPECT_EQ(ival("a - (b - c)", {10, 3, 2}), 9);
  EXPECT_EQ(ival("-a * b", {2, 3}), -6);
  EXPECT_EQ(ival("- -a", {5}), 5);
  EXPECT_EQ(ival("-a % 3", {7}), 2);  // (-7) % 3, as in Python
  EXPECT_EQ(ival("2 * -3"), -6);
  EXPECT_EQ(ival(" \t1+2*3\n"), 7);
}

TEST(Expr, LiteralsAtTheLimits) {
  EXPECT_EQ(ival("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ival("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(ival("007"), 7);
}

TEST(Expr, FloorDivisionAndModuloOnNegatives) {
  EXPECT_EQ(ival("a / b", {7, 2}), 3);
  EXPECT_EQ(ival("a / b", {-7, 2}), -4);
  EXPECT_EQ(ival("a / b", {7, -2}), -4);
  EXPECT_EQ(ival("a / b", {-7, -2}), 3);
  EXPECT_EQ(ival("a % b", {-7, 2}), 1);
  EXPECT_EQ(ival("a % b", {7, -2}), -1);
  EXPECT_EQ(ival("a % b", {-7, -2}), -1);
  EXPECT_EQ(ival("a % b", {-6, 3}), 0);
  EXPECT_EQ(ival("a % b", {INT64_MIN, -1}), 0);
  EXPECT_EQ(ival("a / b", {INT64_MIN, 1}), INT64_MIN);
}

// Floor division is the unique q, r with a == q * b + r and r between 0 and b
// (excluding b); check that directly, in 128-bit arithmetic.
RC_GTEST_PROP(ExprProperty, FloorDivModMatchPython, (int64_t a, int64_t b)) {
  RC_PRE(b != 0);
  RC_PRE(!(a == INT64_MIN && b == -1));
  const int64_t q = ival("a / b", {a, b});
  const int64_t r = ival("a % b", {a, b});
  RC_ASSERT(static_cast<__int128>(q) * b + r == static_cast<__int128>(a));
  if (b > 0) RC_ASSERT(r >= 0 && r < b);
  else RC_ASSERT(r <= 0 && r > b);
}

RC_GTEST_PROP(ExprProperty, FloorDivModSmallValues, ()) {
  const int64_t a = *rc::gen::inRange<int64_t>(-100, 101);
  const int64_t b = *rc::gen::nonZero<int64_t>();
  const int64_t small_b = b % 13 == 0 ? 7 : b % 13;
  const int64_t q = ival("a / b", {a, small_b});
  const int64_t r = ival("a % b", {a, small_b});
  RC_ASSERT(q * small_b + r == a);
  RC_ASSERT(r == 0 || (r < 0) == (small_b < 0));
}

RC_GTEST_PROP(ExprProperty, CeilDivIsNegatedFloorOfNegation, (int64_t a, int64_t b)) {
  RC_PRE(b != 0 && a != INT64_MIN);
  RC_ASSERT(ival("ceil_div(a, b)", {a, b}) == ival("-((-a) / b)", {a, b}));
}

RC_GTEST_PROP(ExprProperty, ArithmeticIsExactOrThrows, (int64_t a, int64_t b)) {
  const __int128 exact[] = {static_cast<__int128>(a) + b, static_cast<__int128>(a) - b,
                            static_cast<__int128>(a) * b};
  const char* texts[] = {"a + b", "a - b", "a * b"};
  for (int i = 0; i < 3; ++i) {
    const bool fits = exact[i] >= INT64_MIN && exact[i] <= INT64_MAX;
    try {
      const int64_t v = ival(texts[i], {a, b});
      RC_ASSERT(fits);
      RC_ASSERT(static_cast<__int128>(v) == exact[i]);
    } catch (const EvalError&) {
      RC_ASSERT(!fits);
    }
  }
}

// A flat chain of small literals with + - * / %, against a two-level reference
// evaluator: checks precedence and left associativity on many shapes.
RC_GTEST_PROP(ExprProperty, FlatChainsFollowPrecedence, ()) {
  const int terms = *rc::gen::inRange(1, 8);
  std::string text;
  int64_t sum = 0, term = 0;
  char add_op = '+';
  for (int i = 0; i < terms; ++i) {
    const char op = i == 0 ? '+' : "+-*/%"[*rc::gen::inRange(0, 5)];
    int64_t v = *rc::gen::inRange<int64_t>(-20, 21);
    if ((op == '/' || op == '%') && v == 0) v = 3;
    if (i > 0) text += std::string(" ") + op + " ";
    text += std::to_string(v);
    if (op == '+' || op == '-') {
      if (i > 0) sum += add_op == '+' ? term : -term;
      add_op = op;
      term = v;
    } else if (op == '*') {
      term *= v;
    } else {
      // Python semantics, computed with the truncating operators.
      const int64_t q = term / v, r = term % v;
      const bool adjust = r != 0 && ((r < 0) != (v < 0));
      term = op == '/' ? (adjust ? q - 1 : q) : (adjust ? r + v : r);
    }
  }
  sum += add_op == '+' ? term : -term;
  RC_ASSERT(ival(text) == sum);
}

TEST(Expr, CeilDivMinMax) {
  EXPECT_EQ(ival("ceil_div(a, b)", {7, 2}), 4);
  EXPECT_EQ(ival("ceil_div(a, b)", {8, 2}), 4);
  EXPECT_EQ(ival("ceil_div(a, b)", {-7, 2}), -3);
  EXPECT_EQ(ival("ceil_div(a, b)", {7, -2}), -3);
  EXPECT_EQ(ival("ceil_div(a, b)", {-7, -2}), 4);
  EXPECT_EQ(ival("ceil_div(a, b)", {0, 5}), 0);
  EXPECT_EQ(ival("ceil_div(a, b)", {INT64_MIN, 1}), INT64_MIN);
  EXPECT_EQ(ival("min(a, b)", {3, -4}), -4);
  EXPECT_EQ(ival("max(a, b)", {3, -4}), 3);
  EXPECT_EQ(ival("max(min(a, b), c) * 2", {1, 5, 3}), 6);
}

TEST(Expr, Comparisons) {
  EXPECT_EQ(bval("a < b", {1, 2}), 1);
  EXPECT_EQ(bval("a < b", {2, 2}), 0);
  EXPECT_EQ(bval("a <= b", {2, 2}), 1);
  EXPECT_EQ(bval("a > b", {3, 2}), 1);
  EXPECT_EQ(bval("a >= b", {1, 2}), 0);
  EXPECT_EQ(bval("a == b", {2, 2}), 1);
  EXPECT_EQ(bval("a != b", {2, 2}), 0);
  EXPECT_EQ(bval("a + 1 == b * 2", {3, 2}), 1);
  EXPECT_EQ(bval("(a < b) == (b < c)", {1, 2, 3}), 1);
  EXPECT_EQ(bval("(a < b) != true", {1, 2}), 0);
}

TEST(Expr, BooleanOperators) {
  EXPECT_EQ(bval("true"), 1);
  EXPECT_EQ(bval("false"), 0);
  EXPECT_EQ(bval("not false"), 1);
  EXPECT_EQ(bval("not not true"), 1);
  EXPECT_EQ(bval("true and false"), 0);
  EXPECT_EQ(bval("false or true"), 1);
  // `and` binds tighter than `or`; `not` looser than comparisons.
  EXPECT_EQ(bval("true or false and false"), 1);
  EXPECT_EQ(bval("(true or false) and false"), 0);
  EXPECT_EQ(bval("not a == b", {1, 2}), 1);
  EXPECT_EQ(bval("a > 0 and b > 0 or c > 0", {0, 0, 1}), 1);
  EXPECT_EQ(bval("a > 0 and b > 0 and c > 0", {1, 1, 0}), 0);
  EXPECT_EQ(bval("a > 0 or b > 0 or c > 0", {0, 0, 0}), 0);
  // `not` binds tighter than `or`: "not X or Y" is "(not X) or Y".
  for (const std::vector<int64_t> v : {std::vector<int64_t>{1, 2}, {1, 3}, {0, 3}, {0, 2}})
    EXPECT_EQ(bval("not a == 1 or b == 2", v), bval("(not a == 1) or b == 2", v)) << v[0] << " " << v[1];
  EXPECT_EQ(bval("not a == 1 or b == 2", {1, 3}), 0);
}

TEST(Expr, AndOrSkipTheUnneededSide) {
  EXPECT_EQ(bval("b != 0 and a / b > 1", {5, 0}), 0);
  EXPECT_EQ(bval("b == 0 or a % b == 0", {5, 0}), 1);
  EXPECT_EQ(bval("b != 0 and a / b > 1", {5, 2}), 1);
  expect_eval_error("b == 0 and a / b > 1", {5, 0}, "division by zero", ExprType::Bool);
}

TEST(Expr, TensorMethods) {
  EXPECT_EQ(ival("x.size(0)"), 2);
  EXPECT_EQ(ival("x.size(2)"), 4);
  EXPECT_EQ(ival("x.size(-1)"), 4);
  EXPECT_EQ(ival("x.size(-3)"), 2);
  EXPECT_EQ(ival("x.stride(-2)"), 4);
  EXPECT_EQ(ival("x.stride(a)", {0}), 12);
  EXPECT_EQ(ival("x.size(x.dim() - 2)"), 3);
  EXPECT_EQ(ival("x.dim()"), 3);
  EXPECT_EQ(ival("x.numel()"), 24);
  EXPECT_EQ(ival("y.numel()"), 1);  // 0-d: the empty product
  EXPECT_EQ(ival("y.dim()"), 0);
  EXPECT_EQ(bval("x.is_contiguous()"), 1);
  EXPECT_EQ(bval("not y.is_contiguous()"), 1);
  EXPECT_EQ(ival("x . size ( 1 )"), 3);
}

// The facts kernels check: None, storage offset, element size, pointer alignment, dtype.
TEST(Expr, TensorFactsAndDtypeConstants) {
  Scope s = abc_scope();
  s.constants = {{"float16", 5}, {"float32", 6}, {"a", 99}};
  Tensors t;
  t.facts[0].storage_offset = 19;
  t.facts[0].element_size = 2;
  t.facts[0].alignment = 2;
  t.facts[0].dtype = 5;
  t.facts[1].none = true;
  const int64_t vals[3] = {7, 0, 0};
  auto eval = [&](const std::string& text, ExprType type) {
    return Expr::compile(text, s, type, kLoc).eval({vals, t.facts});
  };
  EXPECT_EQ(eval("y.is_none() and not x.is_none()", ExprType::Bool), 1);
  EXPECT_EQ(eval("x.storage_offset()", ExprType::Int), 19);
  EXPECT_EQ(eval("x.element_size() * x.numel()", ExprType::Int), 48);
  EXPECT_EQ(eval("x.alignment() % 16 != 0", ExprType::Bool), 1);
  EXPECT_EQ(eval("x.dtype() == float16 and x.dtype() != float32", ExprType::Bool), 1);
  EXPECT_EQ(eval("a", ExprType::Int), 7) << "a value wins over a constant of its name";
  expect_compile_error("x.is_none", 9, "expected '(' after 'x.is_none'");
  expect_compile_error("x.aligned()", 2, "known: size, stride, dim, numel, is_contiguous, is_none");
}

TEST(Expr, SizeIndexOutOfRange) {
  expect_eval_error("x.size(3)", {}, "x.size(3) is out of range for a 3-d tensor in 'x.size(3)'");
  expect_eval_error("x.size(-4)", {}, "x.size(-4) is out of range for a 3-d tensor");
  expect_eval_error("x.stride(a)", {7}, "x.stride(7) is out of range");
  expect_eval_error("y.size(0)", {}, "y.size(0) is out of range for a 0-d tensor");
  expect_eval_error("x.size(a)", {INT64_MIN}, "out of range");
}

TEST(Expr, DivisionByZero) {
  Scope scope;
  scope.values = {"seq_len", "tp_size"};
  const Expr e = Expr::compile("seq_len % tp_size", scope, ExprType::Int, kLoc);
  const int64_t vals[] = {12, 0};
  try {
    e.eval({vals, nullptr});
    ADD_FAILURE() << "no error";
  } catch (const EvalError& err) {
    EXPECT_NE(std::string(err.what()).find("division by zero in 'seq_len % tp_size'"),
              std::string::npos)
        << err.what();
  }
  expect_eval_error("a / b", {1, 0}, "division by zero in 'a / b'");
  expect_eval_error("ceil_div(a, b)", {1, 0}, "division by zero in 'ceil_div(a, b)'");
}

TEST(Expr, Overflow) {
  expect_eval_error("a + 1", {INT64_MAX}, "integer overflow in 'a + 1'");
  expect_eval_error("a - 1", {INT64_MIN}, "integer overflow in 'a - 1'");
  expect_eval_error("a * b", {INT64_MAX / 2 + 1, 2}, "integer overflow in 'a * b'");
  expect_eval_error("-a", {INT64_MIN}, "integer overflow in '-a'");
  expect_eval_error("a / b", {INT64_MIN, -1}, "integer overflow in 'a / b'");
  expect_eval_error("ceil_div(a, b)", {INT64_MIN, -1}, "integer overflow");
  expect_eval_error("9223372036854775807 + 1", {}, "9223372036854775807 + 1");

  int64_t sizes[3] = {int64_t{1} << 32, int64_t{1} << 31, 2};
  int64_t strides[3] = {1, 1, 1};
  const TensorFacts big{sizes, strides, 3, true};
  Scope scope;
  scope.tensors = {"t"};
  const Expr e = Expr::compile("t.numel()", scope, ExprType::Int, kLoc);
  try {
    e.eval({nullptr, &big});
    ADD_FAILURE() << "no error";
  } catch (const EvalError& err) {
    EXPECT_NE(std::string(err.what()).find("integer overflow in 't.numel()'"), std::string::npos)
        << err.what();
  }
}

TEST(Expr, TypeErrors) {
  expect_compile_error("a == b", 0, "expected an integer expression, got a boolean one");
  expect_compile_error("  a + b", 2, "expected a boolean expression, got an integer one",
                       ExprType::Bool);
  expect_compile_error("a + true", 4, "operand of '+' must be an integer, got a boolean");
  expect_compile_error("(a < b) * 2", 0, "operand of '*' must be an integer");
  expect_compile_error("a < true", 4, "operand of '<' must be an integer");
  expect_compile_error("a == true", 2, "'==' compares an integer with a boolean", ExprType::Bool);
  expect_compile_error("a and true", 0, "operand of 'and' must be a boolean, got an integer",
                       ExprType::Bool);
  expect_compile_error("true or 1", 8, "operand of 'or' must be a boolean", ExprType::Bool);
  expect_compile_error("not a", 4, "operand of 'not' must be a boolean", ExprType::Bool);
  expect_compile_error("-true", 1, "operand of unary '-' must be an integer");
  expect_compile_error("min(a, b > 1)", 7, "argument 2 of min must be an integer");
  expect_compile_error("x.size(true)", 7, "argument 1 of x.size must be an integer");
  expect_compile_error("x.is_contiguous() + 1", 0, "operand of '+' must be an integer");
}

TEST(Expr, CompileErrorsPointAtTheToken) {
  Scope scope;
  scope.values = {"seq_len", "hidden", "tp_size"};
  try {
    Expr::compile("seq_len % seqlen", scope, ExprType::Int, kLoc);
    ADD_FAILURE() << "no error";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().column, kLoc.column + 10);
    EXPECT_EQ(e.message(), "unknown name 'seqlen' (known: seq_len, hidden, tp_size)");
  }
  expect_compile_error("x.sizes(0)", 2,
                       "unknown tensor method 'sizes' (known: size, stride, dim, numel, "
                       "is_contiguous, is_none, storage_offset, element_size, alignment, dtype)");
  expect_compile_error("a + b)", 5, "unexpected ')'");
  expect_compile_error("a b", 2, "unexpected 'b'");
  expect_compile_error("a * (b + c", 10, "expected ')' to close '(' at column 14");
  expect_compile_error("(a b", 3, "expected ')' to close '(' at column 10, got 'b'");
  expect_compile_error("foo(a)", 0, "'foo' is not a function (functions: ceil_div, min, max)");
  expect_compile_error("a + min(b)", 4, "wrong number of arguments to min: expected 2, got 1");
  expect_compile_error("max(a, b, c)", 0, "wrong number of arguments to max: expected 2, got 3");
  expect_compile_error("ceil_div()", 0, "wrong number of arguments to ceil_div: expected 2, got 0");
  expect_compile_error("x.size()", 2, "wrong number of arguments to x.size: expected 1, got 0");
  expect_compile_error("x.dim(1)", 2, "wrong number of arguments to x.dim: expected 0, got 1");
  expect_compile_error("1 + 9223372036854775808", 4, "integer literal too large");
  expect_compile_error("99999999999999999999999", 0, "integer literal too large");
  expect_compile_error("-9223372036854775809", 1, "integer literal too large");
  expect_compile_error("12ab", 0, "invalid integer literal '12ab'");
  expect_compile_error("a +", 3, "unexpected end of expression");
  expect_compile_error("a + $", 4, "unexpected character '$'");
  expect_compile_error("a = b", 2, "unexpected character '=' (use '==' to compare)");
  expect_compile_error("a > 1 && b", 6, "unexpected character '&' (use 'and')", ExprType::Bool);
  expect_compile_error("a > 1 || b", 6, "unexpected character '|' (use 'or')", ExprType::Bool);
  expect_compile_error("!a", 0, "unexpected character '!' (use 'not')", ExprType::Bool);
  expect_compile_error("a + \xc3\xa9", 4, "unexpected character '\\xc3'");
  expect_compile_error("", 0, "empty expression");
  expect_compile_error("   ", 0, "empty expression");
  expect_compile_error("x + 1", 0, "'x' is a tensor; use x.size(i), x.numel(), ...");
  expect_compile_error("a.size(0)", 0, "'a' is a value, not a tensor");
  expect_compile_error("z.size(0)", 0, "unknown tensor 'z' (tensors: x, y)");
  expect_compile_error("x.", 2, "expected a tensor method after 'x.'");
  expect_compile_error("x.dim + 1", 6, "expected '(' after 'x.dim'");
  expect_compile_error("min + 1", 0, "'min' is a function; call it as min(a, b)");
  expect_compile_error("a < b < c", 6, "comparisons cannot be chained", ExprType::Bool);
  expect_compile_error("a == not b", 5, "unexpected 'not'", ExprType::Bool);
  expect_compile_error("a + and", 4, "unexpected 'and'");
}

TEST(Expr, ErrorsWithEmptyScopeOrUnknownColumn) {
  try {
    Expr::compile("n.size(0) + m", Scope{}, ExprType::Int, kLoc);
    ADD_FAILURE() << "no error";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.message(), "unknown tensor 'n' (no tensors are in scope)");
  }
  try {
    Expr::compile("m", Scope{}, ExprType::Int, kLoc);
    ADD_FAILURE() << "no error";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.message(), "unknown name 'm' (no names are in scope)");
  }
  // Without a known column the error stays column-less and counts characters instead.
  try {
    Expr::compile("(1 + 2", Scope{}, ExprType::Int, SourceLoc{"f.yaml", 3, 0});
    ADD_FAILURE() << "no error";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().column, 0);
    EXPECT_NE(e.message().find("at character 1"), std::string::npos) << e.message();
  }
}

TEST(Expr, ValueSlotsAndTensorUse) {
  const Expr e = Expr::compile("c + a * a - c", abc_scope(), ExprType::Int, kLoc);
  EXPECT_EQ(e.value_slots(), (std::vector<int>{0, 2}));
  EXPECT_FALSE(e.uses_tensors());
  const Expr t = Expr::compile("x.size(b) > 1", abc_scope(), ExprType::Bool, kLoc);
  EXPECT_EQ(t.value_slots(), (std::vector<int>{1}));
  EXPECT_TRUE(t.uses_tensors());
  EXPECT_TRUE(Expr::compile("1 + 2", abc_scope(), ExprType::Int, kLoc).value_slots().empty());
}

TEST(Expr, AccessorsDefaultAndConstant) {
  const Expr e = Expr::compile(" a < 3 ", abc_scope(), ExprType::Bool, kLoc);
  EXPECT_EQ(e.text(), " a < 3 ");
  EXPECT_EQ(e.type(), ExprType::Bool);
  const Expr d;
  EXPECT_EQ(d.type(), ExprType::Int);
  EXPECT_EQ(d.eval({}), 0);
  EXPECT_EQ(d.text(), "0");
  EXPECT_TRUE(d.value_slots().empty());
  EXPECT_FALSE(d.uses_tensors());
  const Expr c = Expr::constant(-42);
  EXPECT_EQ(c.eval({}), -42);
  EXPECT_EQ(c.type(), ExprType::Int);
  EXPECT_EQ(c.text(), "-42");
  const Expr copy = e;
  const int64_t vals[] = {2, 0, 0};
  EXPECT_EQ(copy.eval({vals, nullptr}), 1);
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Expr, NestingDepthLimit) {
  EXPECT_EQ(ival(repeat("(", 64) + "a" + repeat(")", 64), {5}), 5);
  expect_compile_error(repeat("(", 65) + "a" + repeat(")", 65), 64, "nested too deeply");
  expect_compile_error(repeat("- ", 65) + "a", 128, "nested too deeply");
  expect_compile_error(repeat("not ", 65) + "true", 256, "nested too deeply", ExprType::Bool);
  expect_compile_error(repeat("min(a, ", 65) + "a" + repeat(")", 65), 3 + 7 * 64,
                       "nested too deeply");
  // Hostile input of the maximum length fails cleanly instead of overflowing the stack.
  expect_compile_error(repeat("(", 4096), 64, "nested too deeply");
}

TEST(Expr, EvaluationStackLimit) {
  // Each level leaves three values pending (the left sides of + and *, and max's first
  // argument), so the 129th is max's first argument on the 43rd level.
  const std::string level = "a + a * max(a, ";
  expect_compile_error(repeat(level, 43) + "a" + repeat(")", 43), 42 * 15 + 12,
                       "expression too complex");
  EXPECT_EQ(ival(repeat(level, 20) + "a" + repeat(")", 20), {1}), 21);
}

TEST(Expr, TextLengthLimit) {
  const std::string longest = "1" + repeat("+1", 2047) + " ";
  ASSERT_EQ(longest.size(), 4096u);
  EXPECT_EQ(ival(longest), 2048);
  expect_compile_error(longest + "x", 0, "expression too long (4097 characters; the limit is 4096)");
}

}  // namespace
}  // namespace opc
