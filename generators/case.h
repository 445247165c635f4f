// A Case: one concrete, printable, replayable input to an op under contract.
//
// It holds only what decides the input: values of the context and dims, per argument
// its dtype, shape, layout (or its scalar value), and the seed of the tensor contents.
// Tensors are materialised from it (runners/materialize.h), never stored in it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "contracts/contract.h"

namespace opc {

struct TensorCase {
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> sizes;
  Layout layout = Layout::Contiguous;
  // How far the layout departs from dense: rows before the view (narrow) or extra
  // elements per row (row_strided). 0 for the other layouts.
  int64_t slack = 0;
  bool none = false;  // an optional tensor passed as None
};

struct Case {
  std::vector<int64_t> values;  // per contract value slot (context, then dims)
  // Per schema argument: a TensorCase, or the chosen scalar.
  std::vector<std::variant<TensorCase, ScalarValue>> args;
  uint64_t data_seed = 0;
  // Index into Contract::inplace: the case is also called with that argument handed the
  // other's tensor. -1: separate tensors only.
  int inplace = -1;
};

// One line, e.g. "tp_size=2 tp_rank=0 seq_len=4 hidden=1 | x: float32[4, 1] contiguous".
std::string describe(const Case& c, const Contract& contract);
// A JSON object (no trailing newline), for reports.
std::string case_json(const Case& c, const Contract& contract);
// "[2, 3]"
std::string shape_text(const std::vector<int64_t>& sizes);
// A scalar argument's value as describe() writes it: "1e-05", "true", "default".
std::string scalar_text(const ScalarValue& v);
// Elements of all tensors: how big a case is (smaller is simpler when shrinking).
int64_t case_numel(const Case& c);

}  // namespace opc
