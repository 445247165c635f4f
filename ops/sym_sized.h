// Shape checks written once for a port's CPU kernel and its Meta kernel.
//
// Under torch.compile(dynamic=True) FakeTensorMode runs a Meta kernel on tensors whose sizes
// are symbols of a ShapeEnv, and at::Tensor's int accessors cannot answer for those: numel()
// and storage_offset() throw, size(d) and stride(d) pin the symbol to this trace's value (a
// guard: torch.compile recompiles for every other size, or fails for a dim marked dynamic).
// A check helper templated on the tensor type reads the same expressions on both:
//
//   template <typename T> auto row_shape(const T& input) { const auto hidden = input.size(-1); ...
//   row_shape(input)                        the CPU kernel: at::Tensor, int64_t
//   row_shape<opc::port::SymSized>(input)   the Meta kernel: c10::SymInt
//
// SymSized's size, stride and numel return c10::SymInt: arithmetic on them stays symbolic,
// and a comparison guards on the symbols, so TORCH_CHECK(a == b) holds for every size the
// compiled graph is reused for, as the CPU kernel's check does for the one it sees.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/SymInt.h>

#include <cstdint>
#include <utility>

namespace opc::port {

struct SymSized : at::Tensor {
  // Implicit, so that an std::optional<at::Tensor> argument converts as well.
  SymSized(const at::Tensor& t) : at::Tensor(t) {}
  c10::SymInt size(int64_t d) const { return sym_size(d); }
  c10::SymInt stride(int64_t d) const { return sym_stride(d); }
  c10::SymInt numel() const { return sym_numel(); }
};

// The integer a check helper computes in: int64_t for at::Tensor, c10::SymInt for SymSized.
template <typename T>
using SizeOf = decltype(std::declval<const T&>().size(0));

}  // namespace opc::port
