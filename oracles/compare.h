// Tensors compared element by element, in words: the shared measures of the oracles that
// hold one result against another, within a tolerance (reference, misuse) or bitwise
// (in-place use, shape forms).
//
//   const std::string diff = beyond_tolerance(got, want, contract.tolerance_for(got.scalar_type()));
//   if (!diff.empty()) ...  // "3 of 8 elements; worst at [1, 0]: op 0.5, reference 0.25 (atol ..."
//   bytes_differ(a, b)      // "3 of 16 elements differ, first at [1, 2]", or ""
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "spec/contract.h"

namespace opc {

// "" when `got` is within `tol` of `want` elementwise (NaN matches NaN, equal infinities
// match); otherwise how many elements are off and the worst, `got` named "op" and `want`
// named `want_name`.
std::string beyond_tolerance(const at::Tensor& got, const at::Tensor& want, Tolerance tol,
                             const std::string& want_name = "reference");

// "" when `a` and `b` hold the same bytes element by element, in row-major order (their
// sizes may differ, as a shape form's do); otherwise how many elements differ and where the
// first is, in `a`'s indices.
std::string bytes_differ(const at::Tensor& a, const at::Tensor& b);

}  // namespace opc
