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

#include "spec/contract.h"

namespace opc {

// The values a tensor holds: drawn from its contract's distribution, or one of the edge
// forms random data never draws (generators/edge_values.h), laid over the drawn values.
enum class ValueForm : uint8_t {
  Drawn,
  ZeroRows,      // every other row all zero (a padded batch's rows)
  ConstantRows,  // each row one value throughout
  Huge,          // one element near the dtype's largest finite magnitude
  TiedMax,       // each row's maximum twice
  Denormals,     // every other element a subnormal
  NonFinite,     // a NaN, an infinity and a negative infinity
  Low,           // an `ints:` tensor at the bottom of its range throughout
  High,          // ... at the top
  Repeated,      // ... one value repeated
};

// Where a Layout::View tensor lies in its buffer's storage: what the contract's `view:`
// steps give at the case's dims (generators/view_carve.h), or a recorded call's geometry.
struct Carved {
  std::vector<int64_t> strides;
  int64_t offset = 0;      // elements from the start of the buffer
  int64_t base_elems = 0;  // elements of the buffer
  int buffer = 0;          // Contract::buffers index: views of one buffer share a storage
  bool operator==(const Carved&) const = default;
};

struct TensorCase {
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int64_t> sizes;
  Layout layout = Layout::Contiguous;
  // How far the layout departs from dense: rows before the view (narrow) or extra
  // elements per row (row_strided). 0 for the other layouts.
  int64_t slack = 0;
  bool none = false;  // an optional tensor passed as None
  ValueForm form = ValueForm::Drawn;
  Carved carved;  // Layout::View only
};

// A caller's mistake made on purpose (generators/misuse.h): one relation the contract
// states, broken for one argument of an otherwise valid case (MisuseKind lives in
// spec/contract.h). The case's own arguments stay the valid ones; apply_misuse()
// gives the case the op is handed.
struct Misuse {
  MisuseKind kind = MisuseKind::None;
  int arg = -1;       // schema index of the argument misused (a tensor; a scalar for Scalar)
  int dim = -1;       // Size: the dim whose size changes
  int64_t value = 0;  // Size: a SizeChange; Rank: +1 or -1; Dtype: a c10::ScalarType;
                      // Layout: a Layout; Index: the value one element holds; Scalar: the
                      // int handed (a str argument is handed kUnlistedString instead)
  bool operator==(const Misuse&) const = default;
  explicit operator bool() const { return kind != MisuseKind::None; }
};

struct Case {
  std::vector<int64_t> values;  // per contract value slot (context, then dims)
  // Per schema argument: a TensorCase, or the chosen scalar.
  std::vector<std::variant<TensorCase, ScalarValue>> args;
  uint64_t data_seed = 0;
  // Index into Contract::inplace: the case is also called with that argument handed the
  // other's tensor. -1: separate tensors only.
  int inplace = -1;
  Misuse misuse;  // None: a valid call
  // A valid call run in fenced memory, as a caller's mistake is (runners/materialize.h):
  // how a mistake's fault is told from one the valid call has too (check/case_worker.h).
  bool fenced = false;
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
