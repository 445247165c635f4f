// The contract's expression language: small, typed, safe integer/boolean expressions.
//
// Used for dim bounds, favoured values, shapes, constraints, requires and branches:
//
//   Scope scope;
//   scope.values = {"tp_size", "seq_len"};      // slot i holds value i at evaluation
//   scope.tensors = {"x"};                      // arg.size(i) etc. refer to tensor i
//   Expr e = Expr::compile("seq_len % tp_size == 0", scope, ExprType::Bool, loc);
//   int64_t vals[] = {4, 12};
//   bool hit = e.eval({vals, nullptr}) != 0;
//
// Grammar (precedence low to high): `or`, `and`, `not`, comparisons (== != < <= > >=,
// non-associative), + -, * / %, unary -, primary. Primaries: integer literals, `true`,
// `false`, names from the scope, `( e )`, `ceil_div(a, b)`, `min(a, b)`, `max(a, b)`,
// `T.size(i)`, `T.stride(i)` (i may be negative, counted from the end), `T.dim()`,
// `T.numel()`, `T.is_contiguous()`, `T.is_none()`, `T.storage_offset()`,
// `T.element_size()`, `T.alignment()` (bytes), `T.dtype()` for a tensor name T; dtype
// names (`float16`, `int32`, ...) are constants to compare `T.dtype()` with.
// `/` and `%` round toward negative infinity, as Python's // and % do.
// Nothing else exists: no host calls, no loops, no recursion; an expression is a tree
// of bounded depth over values fixed before evaluation.
//
// Compile errors throw ContractError at the exact column (loc is where the expression
// text starts; the error points `offset` characters further). Evaluation errors
// (division by zero, overflow, size index out of range) throw EvalError.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "spec/source_loc.h"

namespace opc {

enum class ExprType { Int, Bool };

// The names an expression may use, resolved to indices when it is compiled.
struct Scope {
  std::vector<std::string> values;   // integer names; slot = index
  std::vector<std::string> tensors;  // tensor names; index into EvalInput::tensors
  // Named integer constants (the dtype names, which T.dtype() is compared with); a value
  // of the same name wins.
  std::vector<std::pair<std::string, int64_t>> constants;
};

// A tensor's metadata as expressions see it.
struct TensorFacts {
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t dim = 0;
  bool contiguous = true;
  bool none = false;            // an optional tensor passed as None
  int64_t storage_offset = 0;   // elements from its storage's start to its first element
  int64_t element_size = 0;     // bytes
  int64_t alignment = 0;        // the largest power of two (<= 64) its data pointer is a multiple of
  int64_t dtype = -1;           // c10::ScalarType, compared with dtype names
};

struct EvalInput {
  const int64_t* values = nullptr;      // one per Scope::values slot
  const TensorFacts* tensors = nullptr; // one per Scope::tensors entry
};

class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Expr {
 public:
  Expr();  // the constant 0; compile() makes real ones
  static Expr compile(std::string_view text, const Scope& scope, ExprType type,
                      const SourceLoc& loc);
  // An integer constant (for defaults).
  static Expr constant(int64_t v);

  // Booleans evaluate to 0 or 1.
  int64_t eval(const EvalInput& in) const;

  ExprType type() const;
  const std::string& text() const;
  // Value slots this expression reads, sorted, unique.
  const std::vector<int>& value_slots() const;
  // Whether it reads any tensor metadata.
  bool uses_tensors() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;  // immutable once compiled: cheap to copy
};

}  // namespace opc
