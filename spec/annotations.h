// What a schema's alias annotations promise: which arguments the op may write, and
// which argument (if any) each return may alias. The oracles judge an op by the
// annotations of its *registered* schema, since that is what PyTorch trusts.
#pragma once

#include <ATen/core/function_schema.h>

#include <vector>

namespace opc {

struct Annotations {
  std::vector<bool> mutable_arg;  // Tensor! / Tensor(a!)
  std::vector<int> return_alias;  // argument index sharing an alias set, or -1
};

Annotations annotations_of(const c10::FunctionSchema& schema);

}  // namespace opc
