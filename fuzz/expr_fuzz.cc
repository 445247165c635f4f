// libFuzzer target: the expression language (spec/expr.h) on any bytes, compiled
// as an integer and as a boolean expression, and each that compiles evaluated on
// ordinary and extreme values and tensors. ContractError (compile) and EvalError
// (overflow, division by zero, index out of range) are its answers to bad input; any
// other exception escaping, a crash or a sanitizer report is a bug.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spec/expr.h"

namespace {

const opc::Scope kScope{{"a", "b", "c"}, {"x", "y"}};

// x: 2x3x4 contiguous; y: INT64_MAX x 3 x 0 (a numel that overflows before the 0).
const int64_t kXSizes[] = {2, 3, 4}, kXStrides[] = {12, 4, 1};
const int64_t kYSizes[] = {INT64_MAX, 3, 0}, kYStrides[] = {0, 0, 1};
const opc::TensorFacts kTensors[] = {{kXSizes, kXStrides, 3, true},
                                     {kYSizes, kYStrides, 3, false}};
const int64_t kValues[][3] = {{0, 0, 0}, {7, -3, 1}, {INT64_MAX, INT64_MIN, -1}};

void compile_and_eval(std::string_view text, opc::ExprType type) {
  opc::Expr e;
  try {
    e = opc::Expr::compile(text, kScope, type, {"fuzz", 1, 1});
  } catch (const opc::ContractError&) {
    return;
  }
  for (const auto& values : kValues) {
    try {
      e.eval({values, kTensors});
    } catch (const opc::EvalError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  compile_and_eval(text, opc::ExprType::Int);
  compile_and_eval(text, opc::ExprType::Bool);
  return 0;
}
