// Tensors compared within a tolerance, element by element, in words: the shared measure of
// the oracles that hold one result against another (reference, misuse).
//
//   const std::string diff = beyond_tolerance(got, want, contract.tolerance_for(got.scalar_type()));
//   if (!diff.empty()) ...  // "3 of 8 elements; worst at [1, 0]: op 0.5, reference 0.25 (atol ..."
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "contracts/contract.h"

namespace opc {

// "" when `got` is within `tol` of `want` elementwise (NaN matches NaN, equal infinities
// match); otherwise how many elements are off and the worst, `got` named "op" and `want`
// named `want_name`.
std::string beyond_tolerance(const at::Tensor& got, const at::Tensor& want, Tolerance tol,
                             const std::string& want_name = "reference");

}  // namespace opc
