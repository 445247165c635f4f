// Port of vllm::sequence_parallel_chunk_impl (vllm/model_executor/models/utils.py):
// pad the token dim of x up to a multiple of the TP size, return this rank's chunk.
//
//   opc_vllm::sequence_parallel_chunk_impl              the fixed op (after vLLM PR 44130)
//   opc_regress::sequence_parallel_chunk_impl_pr44130   as shipped before it: when
//       seq_len % tp_size == 0 nothing is padded and a narrow view of x itself is
//       returned, so the return aliases the input.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "ops/sim_context.h"

namespace {

struct TpGroup {
  int64_t size, rank;
};

TpGroup tp_group() {
  const int64_t tp_size = opc::sim::get_int("tp_size");
  const int64_t tp_rank = opc::sim::get_int("tp_rank");
  TORCH_CHECK(tp_size > 0 && tp_rank >= 0 && tp_rank < tp_size, "bad TP context: rank ",
              tp_rank, " of ", tp_size);
  return {tp_size, tp_rank};
}

at::Tensor chunk_of_padded(const at::Tensor& x, bool clone_when_divisible) {
  const auto [tp_size, tp_rank] = tp_group();
  const int64_t seq_len = x.size(0);
  const int64_t remainder = seq_len % tp_size;
  at::Tensor padded;
  if (remainder != 0) {
    // Pad rows at the end of dim 0 (F.pad(x, (0, 0, 0, pad)) for a 2-D x).
    std::vector<int64_t> pad(2 * x.dim(), 0);
    pad[pad.size() - 1] = tp_size - remainder;
    padded = at::constant_pad_nd(x, pad, 0);
  } else {
    padded = clone_when_divisible ? x.clone() : x;
  }
  const int64_t chunk = padded.size(0) / tp_size;
  return padded.narrow(0, tp_rank * chunk, chunk);
}

// chunk_of_padded's result, for sizes that may be symbolic (FakeTensorMode under
// torch.compile(dynamic=True)): constant_pad_nd and narrow read x's sizes and storage offset
// as ints, which pins or refuses the symbols, so the padded tensor is allocated as
// constant_pad_nd allocates it (fresh, in x's suggested memory format) and the chunk is the
// as_strided view narrow would give. seq_len % tp_size != 0 becomes a guard.
at::Tensor chunk_of_padded_meta(const at::Tensor& x, bool clone_when_divisible) {
  const auto [tp_size, tp_rank] = tp_group();
  const c10::SymInt seq_len = x.sym_size(0);
  const c10::SymInt remainder = seq_len % tp_size;
  at::Tensor padded;
  if (remainder != 0) {
    std::vector<c10::SymInt> padded_sizes(x.sym_sizes().begin(), x.sym_sizes().end());
    padded_sizes[0] = seq_len + (tp_size - remainder);
    padded = at::empty_symint(padded_sizes,
                              x.options().memory_format(x.suggest_memory_format()));
  } else {
    padded = clone_when_divisible ? x.clone() : x;
  }
  const c10::SymInt chunk = padded.sym_size(0) / tp_size;
  std::vector<c10::SymInt> chunk_sizes(padded.sym_sizes().begin(), padded.sym_sizes().end());
  chunk_sizes[0] = chunk;
  return padded.as_strided_symint(
      chunk_sizes, padded.sym_strides(),
      padded.sym_storage_offset() + tp_rank * chunk * padded.sym_stride(0));
}

at::Tensor sequence_parallel_chunk_impl(const at::Tensor& x) { return chunk_of_padded(x, true); }
at::Tensor sequence_parallel_chunk_impl_pr44130(const at::Tensor& x) {
  return chunk_of_padded(x, false);
}
at::Tensor sequence_parallel_chunk_impl_meta(const at::Tensor& x) {
  return chunk_of_padded_meta(x, true);
}
at::Tensor sequence_parallel_chunk_impl_pr44130_meta(const at::Tensor& x) {
  return chunk_of_padded_meta(x, false);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_vllm, m) { m.def("sequence_parallel_chunk_impl(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_vllm, CPU, m) {
  m.impl("sequence_parallel_chunk_impl", &sequence_parallel_chunk_impl);
}

TORCH_LIBRARY_FRAGMENT(opc_regress, m) {
  m.def("sequence_parallel_chunk_impl_pr44130(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_regress, CPU, m) {
  m.impl("sequence_parallel_chunk_impl_pr44130", &sequence_parallel_chunk_impl_pr44130);
}

// The Meta kernels predict eager exactly: sizes, strides, storage offset of the chunk, and
// (for the as-shipped variant) the alias.
TORCH_LIBRARY_IMPL(opc_vllm, Meta, m) {
  m.impl("sequence_parallel_chunk_impl", &sequence_parallel_chunk_impl_meta);
}
TORCH_LIBRARY_IMPL(opc_regress, Meta, m) {
  m.impl("sequence_parallel_chunk_impl_pr44130", &sequence_parallel_chunk_impl_pr44130_meta);
}
