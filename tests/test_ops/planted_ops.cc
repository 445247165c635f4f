// Test ops for the oracles: each planted violation next to a clean twin with the same
// schema. tests/contracts/*.yaml states the contracts, listing the planted ops under
// `regressions:` with the one clause that must catch each.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdlib>
#include <string>

namespace {

at::Tensor fresh_copy(const at::Tensor& x) { return x.clone(); }
at::Tensor returns_input(const at::Tensor& x) { return x; }
at::Tensor returns_view(const at::Tensor& x) { return x.narrow(0, 0, x.size(0) / 2 + (x.size(0) % 2)); }
// A different StorageImpl over x's own bytes: PyTorch's same-storage rule misses it.
at::Tensor returns_from_blob(const at::Tensor& x) {
  return at::from_blob(x.data_ptr(), x.sizes(), x.strides(), x.options());
}
at::Tensor throws_when_empty(const at::Tensor& x) {
  TORCH_CHECK(x.numel() > 0, "empty input not supported");
  return x.clone();
}

std::tuple<at::Tensor, at::Tensor> two_fresh(const at::Tensor& x) { return {x.clone(), x.clone()}; }
// Two returns cut from one fresh buffer: they share a StorageImpl.
std::tuple<at::Tensor, at::Tensor> two_of_one_buffer(const at::Tensor& x) {
  at::Tensor both = at::cat({x, x}, 0);
  return {both.narrow(0, 0, x.size(0)), both.narrow(0, x.size(0), x.size(0))};
}

at::Tensor doubled(const at::Tensor& x) { return x * 2; }
at::Tensor doubles_in_place(const at::Tensor& x) {
  const_cast<at::Tensor&>(x).mul_(2);
  return x.clone();
}
at::Tensor resizes_input(const at::Tensor& x) {
  at::Tensor out = x.clone();
  const_cast<at::Tensor&>(x).resize_({0});
  return out;
}

void copy_into(at::Tensor& out, const at::Tensor& x) { out.copy_(x); }
// Writes only the first half of the rows: the rest keep whatever the caller had.
void copy_into_half(at::Tensor& out, const at::Tensor& x) {
  const int64_t half = x.size(0) / 2;
  out.narrow(0, 0, half).copy_(x.narrow(0, 0, half));
}
// The "phantom tensor": the result goes to a temporary, never to the caller's buffer.
void copy_into_temporary(at::Tensor& out, const at::Tensor& x) {
  at::Tensor tmp = at::empty_like(out);
  tmp.copy_(x);
}
// Correct values, plus one element written just past the view's last element.
void copy_into_one_past_end(at::Tensor& out, const at::Tensor& x) {
  out.copy_(x);
  if (out.numel() == 0) return;
  int64_t last = 0;
  for (int64_t d = 0; d < out.dim(); ++d) last += (out.size(d) - 1) * out.stride(d);
  at::Tensor flat = out.as_strided({1}, {1}, out.storage_offset() + last + 1);
  flat.fill_(0);
}
// Declares `out` mutable and never touches it: over-declared, worth a warning only.
void ignores_out(at::Tensor& out, const at::Tensor& x) {}
// The schema forgets the `!`: same body as copy_into.
void copy_into_unannotated(const at::Tensor& out, const at::Tensor& x) { const_cast<at::Tensor&>(out).copy_(x); }

// out has padding rows after the first x.size(0) ones; only the first are the op's.
void copy_prefix(at::Tensor& out, const at::Tensor& x) { out.narrow(0, 0, x.size(0)).copy_(x); }
void copy_prefix_zeroes_padding(at::Tensor& out, const at::Tensor& x) {
  copy_prefix(out, x);
  out.narrow(0, x.size(0), out.size(0) - x.size(0)).zero_();
}

}  // namespace

TORCH_LIBRARY(opc_test, m) {
  m.def("fresh_copy(Tensor x) -> Tensor");
  m.def("returns_input(Tensor x) -> Tensor");
  m.def("returns_view(Tensor x) -> Tensor");
  m.def("returns_from_blob(Tensor x) -> Tensor");
  m.def("throws_when_empty(Tensor x) -> Tensor");
  m.def("doubled(Tensor x) -> Tensor");
  m.def("doubles_in_place(Tensor x) -> Tensor");
  m.def("resizes_input(Tensor x) -> Tensor");
  m.def("two_fresh(Tensor x) -> (Tensor, Tensor)");
  m.def("two_of_one_buffer(Tensor x) -> (Tensor, Tensor)");
  m.def("copy_into(Tensor! out, Tensor x) -> ()");
  m.def("copy_into_half(Tensor! out, Tensor x) -> ()");
  m.def("copy_into_temporary(Tensor! out, Tensor x) -> ()");
  m.def("copy_into_one_past_end(Tensor! out, Tensor x) -> ()");
  m.def("copy_prefix(Tensor! out, Tensor x) -> ()");
  m.def("copy_prefix_zeroes_padding(Tensor! out, Tensor x) -> ()");
  m.def("ignores_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_into_unannotated(Tensor out, Tensor x) -> ()");
}

TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("fresh_copy", &fresh_copy);
  m.impl("returns_input", &returns_input);
  m.impl("returns_view", &returns_view);
  m.impl("returns_from_blob", &returns_from_blob);
  m.impl("throws_when_empty", &throws_when_empty);
  m.impl("doubled", &doubled);
  m.impl("doubles_in_place", &doubles_in_place);
  m.impl("resizes_input", &resizes_input);
  m.impl("two_fresh", &two_fresh);
  m.impl("two_of_one_buffer", &two_of_one_buffer);
  m.impl("copy_into", &copy_into);
  m.impl("copy_into_half", &copy_into_half);
  m.impl("copy_into_temporary", &copy_into_temporary);
  m.impl("copy_into_one_past_end", &copy_into_one_past_end);
  m.impl("ignores_out", &ignores_out);
  m.impl("copy_into_unannotated", &copy_into_unannotated);
  m.impl("copy_prefix", &copy_prefix);
  m.impl("copy_prefix_zeroes_padding", &copy_prefix_zeroes_padding);
}

// Fake-mode twins. The clean one's Meta kernel is its own composite code; the planted
// ones predict contiguous strides for a transposed input, or an alias eager never makes.
namespace {

at::Tensor clone_like(const at::Tensor& x) { return x.clone(); }  // keeps x's strides
at::Tensor meta_contiguous(const at::Tensor& x) { return at::empty(x.sizes(), x.options()); }
at::Tensor meta_aliasing(const at::Tensor& x) { return x.view(x.sizes()); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("clone_like(Tensor x) -> Tensor");
  m.def("clone_like_meta_contiguous(Tensor x) -> Tensor");
  m.def("clone_like_meta_aliasing(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("clone_like", &clone_like);
  m.impl("clone_like_meta_contiguous", &clone_like);
  m.impl("clone_like_meta_aliasing", &clone_like);
}
TORCH_LIBRARY_IMPL(opc_test, Meta, m) {
  m.impl("clone_like", &clone_like);
  m.impl("clone_like_meta_contiguous", &meta_contiguous);
  m.impl("clone_like_meta_aliasing", &meta_aliasing);
}

// Compiled-mode twins. The planted one computes differently when `out` sits at a storage
// offset, as a kernel choosing a vectorised path by address would: eager hands it the
// caller's buffer (offset > 0 here), functionalization a fresh clone at offset 0.
namespace {

void add_into(at::Tensor& out, const at::Tensor& x) { out.copy_(x + 1); }
void depends_on_out_offset(at::Tensor& out, const at::Tensor& x) {
  out.copy_(out.storage_offset() != 0 ? x + 1 : x + 2);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("add_into(Tensor! out, Tensor x) -> ()");
  m.def("depends_on_out_offset(Tensor! out, Tensor x) -> ()");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("add_into", &add_into);
  m.impl("depends_on_out_offset", &depends_on_out_offset);
}

// Determinism twins: the planted op adds a call counter, so no two runs agree.
namespace {

at::Tensor counts_calls(const at::Tensor& x) {
  static int64_t calls = 0;
  return x + static_cast<double>(++calls);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) { m.def("counts_calls(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { m.impl("counts_calls", &counts_calls); }

// Padding twins: row-wise scaling ignores the padding rows; scaling by the whole
// tensor's amax (a per-tensor fp8 quant's scale) reads them.
namespace {

void scale_rows(at::Tensor& out, const at::Tensor& x) { out.copy_(x * 2); }
void scale_by_amax(at::Tensor& out, const at::Tensor& x) { out.copy_(x.numel() ? x / (x.abs().max() + 1) : x); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("scale_rows(Tensor! out, Tensor x) -> ()");
  m.def("scale_by_amax(Tensor! out, Tensor x) -> ()");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("scale_rows", &scale_rows);
  m.impl("scale_by_amax", &scale_by_amax);
}

// A fake kernel that agrees with eager, both one row short of what the contract says.
namespace {

at::Tensor clone_but_last_row(const at::Tensor& x) {
  return x.narrow(0, 0, std::max<int64_t>(x.size(0) - 1, 0)).clone();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) { m.def("clone_but_last_row(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { m.impl("clone_but_last_row", &clone_but_last_row); }
TORCH_LIBRARY_IMPL(opc_test, Meta, m) { m.impl("clone_but_last_row", &clone_but_last_row); }

// CUDA-graph twins, registered for CPU, CUDA and Meta: row-wise normalisation holds
// under graphs; normalising by the whole tensor's amax reads the padded rows of the
// capture-size buffer; a host-side NaN check syncs, which a capture refuses.
namespace {

at::Tensor row_normalize(const at::Tensor& x) { return x / (x.abs().amax({1}, /*keepdim=*/true) + 1); }
at::Tensor tensor_normalize(const at::Tensor& x) { return x.numel() ? x / (x.abs().max() + 1) : x.clone(); }
at::Tensor row_normalize_synced(const at::Tensor& x) {
  TORCH_CHECK(!x.isnan().any().item<bool>(), "NaN in input");
  return row_normalize(x);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("row_normalize(Tensor x) -> Tensor");
  m.def("tensor_normalize(Tensor x) -> Tensor");
  m.def("row_normalize_synced(Tensor x) -> Tensor");
}
namespace {
void impl_normalize_twins(torch::Library& m) {
  m.impl("row_normalize", &row_normalize);
  m.impl("tensor_normalize", &tensor_normalize);
  m.impl("row_normalize_synced", &row_normalize_synced);
}
}  // namespace
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { impl_normalize_twins(m); }
TORCH_LIBRARY_IMPL(opc_test, CUDA, m) { impl_normalize_twins(m); }
// Meta: shapes only (abs has no C++ Meta kernel, and the sync no Meta meaning).
namespace {
at::Tensor normalize_meta(const at::Tensor& x) { return at::empty_like(x, at::MemoryFormat::Contiguous); }
}  // namespace
TORCH_LIBRARY_IMPL(opc_test, Meta, m) {
  m.impl("row_normalize", &normalize_meta);
  m.impl("tensor_normalize", &normalize_meta);
  m.impl("row_normalize_synced", &normalize_meta);
}

// Reference twins: x * 2 and x + x agree bitwise; scaling by 2.01 does not.
// Precondition twins: copy_into_checked refuses a non-contiguous out, as its contract
// requires; copy_into (above) accepts one silently.
namespace {

at::Tensor twice(const at::Tensor& x) { return x + x; }
at::Tensor doubled_roughly(const at::Tensor& x) { return x * 2.01; }
void copy_into_checked(at::Tensor& out, const at::Tensor& x) {
  TORCH_CHECK(out.is_contiguous(), "out must be contiguous");
  out.copy_(x);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("twice(Tensor x) -> Tensor");
  m.def("doubled_roughly(Tensor x) -> Tensor");
  m.def("copy_into_checked(Tensor! out, Tensor x) -> ()");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("twice", &twice);
  m.impl("doubled_roughly", &doubled_roughly);
  m.impl("copy_into_checked", &copy_into_checked);
}

// Donation twins (vLLM IR's functional op + maybe_inplace overload): add_scaled is
// x + 2y, fresh; its maybe_inplace writes the sum into the donated x and returns x.
// Planted: a functional overload that writes x; maybe_inplace overloads that compute
// something else, write the undonated y, or leave the donated x unannotated.
namespace {

at::Tensor add_scaled(const at::Tensor& x, const at::Tensor& y) { return x + 2 * y; }
at::Tensor add_scaled_inplace(at::Tensor& x, const at::Tensor& y) { return x.add_(y, 2); }
at::Tensor add_scaled_writes_input(const at::Tensor& x, const at::Tensor& y) {
  at::Tensor written = x;
  return written.add_(y, 2).clone();
}
at::Tensor add_scaled_inplace_differs(at::Tensor& x, const at::Tensor& y) { return x.add_(y); }
at::Tensor add_scaled_inplace_writes_y(at::Tensor& x, const at::Tensor& y) {
  x.add_(y, 2);
  at::Tensor scratch = y;
  scratch.zero_();
  return x;
}
at::Tensor add_scaled_inplace_unmarked(const at::Tensor& x, const at::Tensor& y) {
  at::Tensor written = x;
  return written.add_(y, 2);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  for (const char* name : {"add_scaled", "add_scaled_writes_input", "add_scaled_inplace_differs",
                           "add_scaled_inplace_writes_y", "add_scaled_inplace_unmarked"})
    m.def((std::string(name) + "(Tensor x, Tensor y) -> Tensor").c_str());
  for (const char* name :
       {"add_scaled", "add_scaled_writes_input", "add_scaled_inplace_differs", "add_scaled_inplace_writes_y"})
    m.def((std::string(name) + ".maybe_inplace(Tensor(a0!) x, Tensor y) -> Tensor").c_str());
  m.def("add_scaled_inplace_unmarked.maybe_inplace(Tensor x, Tensor y) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("add_scaled", &add_scaled);
  m.impl("add_scaled.maybe_inplace", &add_scaled_inplace);
  m.impl("add_scaled_writes_input", &add_scaled_writes_input);
  m.impl("add_scaled_writes_input.maybe_inplace", &add_scaled_inplace);
  m.impl("add_scaled_inplace_differs", &add_scaled);
  m.impl("add_scaled_inplace_differs.maybe_inplace", &add_scaled_inplace_differs);
  m.impl("add_scaled_inplace_writes_y", &add_scaled);
  m.impl("add_scaled_inplace_writes_y.maybe_inplace", &add_scaled_inplace_writes_y);
  m.impl("add_scaled_inplace_unmarked", &add_scaled);
  m.impl("add_scaled_inplace_unmarked.maybe_inplace", &add_scaled_inplace_unmarked);
}

// Crash-isolation twins: ops that take the process down, each only on some inputs, so the
// run must survive them and shrink to the smallest input that still does. `doubled`
// (above) is the clean twin.
namespace {

at::Tensor segfaults_when_tall(const at::Tensor& x) {
  if (x.size(0) >= 3) *static_cast<volatile int*>(nullptr) = 1;
  return x * 2;
}
at::Tensor aborts_when_wide(const at::Tensor& x) {
  if (x.size(1) >= 3) std::abort();
  return x * 2;
}
at::Tensor traps_when_tall(const at::Tensor& x) {
  if (x.size(0) >= 3) __builtin_trap();  // SIGILL on x86-64 (ud2)
  return x * 2;
}
at::Tensor exits_when_wide(const at::Tensor& x) {
  if (x.size(1) >= 3) std::_Exit(3);
  return x * 2;
}
at::Tensor loops_when_tallest(const at::Tensor& x) {
  volatile bool forever = x.size(0) == 8 && x.size(1) >= 6;
  while (forever) {
  }
  return x * 2;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  for (const char* name :
       {"segfaults_when_tall", "aborts_when_wide", "traps_when_tall", "exits_when_wide", "loops_when_tallest"})
    m.def((std::string(name) + "(Tensor x) -> Tensor").c_str());
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("segfaults_when_tall", &segfaults_when_tall);
  m.impl("aborts_when_wide", &aborts_when_wide);
  m.impl("traps_when_tall", &traps_when_tall);
  m.impl("exits_when_wide", &exits_when_wide);
  m.impl("loops_when_tallest", &loops_when_tallest);
}

// Throws what is not a std::exception, when x is empty: still a crash finding, not an error.
namespace {

at::Tensor throws_an_int_when_empty(const at::Tensor& x) {
  if (x.numel() == 0) throw 42;
  return x.clone();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) { m.def("throws_an_int_when_empty(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { m.impl("throws_an_int_when_empty", &throws_an_int_when_empty); }

// Metadata changes: an op that gives a tensor it was handed another shape, strides,
// storage or dtype, mutable or not. Registered CompositeExplicitAutograd, so the same code
// runs in every mode (CPU, Meta, CUDA): each mode must survive it and report it.
namespace {

void copy_rows(at::Tensor& out, const at::Tensor& x) { out.copy_(x); }
// The resize_ + copy_ pattern behind vLLM's MLA phantom output: for some inputs the
// caller's buffer is resized to what the op thinks it should be.
void copy_rows_shrinking_out(at::Tensor& out, const at::Tensor& x) {
  if (x.size(0) < 2) return out.copy_(x), void();
  out.resize_({x.size(0) - 1, x.size(1)});
  out.copy_(x.narrow(0, 0, x.size(0) - 1));
}
// Grows past the storage's bytes, so its data is reallocated.
void copy_rows_growing_out(at::Tensor& out, const at::Tensor& x) {
  out.resize_({x.size(0) + 64, x.size(1)});
  out.narrow(0, 0, x.size(0)).copy_(x);
}
void copy_rows_restriding_out(at::Tensor& out, const at::Tensor& x) {
  if (x.size(0) > 1 && x.size(1) > 1) out.as_strided_(x.sizes(), {1, x.size(0)}, out.storage_offset());
  out.copy_(x);
}
void copy_rows_repointing_out(at::Tensor& out, const at::Tensor& x) {
  out.set_(at::empty_like(x));
  out.copy_(x);
}
// A tensor of another dtype over fresh memory, through the TensorImpl: what
// `out.data = ...` does in Python.
void retype(const at::Tensor& t) {
  // As many elements as the old storage, so t's sizes, strides and offset still fit.
  const int64_t elems = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  at::Tensor other = at::empty({elems}, t.options().dtype(at::kDouble));
  t.unsafeGetTensorImpl()->set_storage_and_dtype(other.storage(), other.dtype());
}
void copy_rows_retyping_out(at::Tensor& out, const at::Tensor& x) {
  retype(out);
  out.copy_(x);
}
// Eager copies; only the Meta kernel shrinks `out`: a fake that mispredicts the arguments.
void copy_rows_shrinking_out_in_meta(at::Tensor& out, const at::Tensor& x) {
  if (x.size(0) >= 2) out.resize_({x.size(0) - 1, x.size(1)});
}

at::Tensor doubles(const at::Tensor& x) { return x * 2; }
at::Tensor doubles_shrinking_input(const at::Tensor& x) {
  at::Tensor y = x * 2;
  if (x.size(0) > 1) x.resize_({x.size(0) - 1, x.size(1)});
  return y;
}
at::Tensor doubles_restriding_input(const at::Tensor& x) {
  at::Tensor y = x * 2;
  if (x.size(0) > 1 && x.size(1) > 1) x.as_strided_(x.sizes(), {1, x.size(0)}, x.storage_offset());
  return y;
}
at::Tensor doubles_repointing_input(const at::Tensor& x) {
  at::Tensor y = x * 2;
  x.set_(at::empty_like(x));
  return y;
}
at::Tensor doubles_retyping_input(const at::Tensor& x) {
  at::Tensor y = x * 2;
  retype(x);
  return y;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("copy_rows(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_shrinking_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_growing_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_restriding_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_repointing_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_retyping_out(Tensor! out, Tensor x) -> ()");
  m.def("copy_rows_shrinking_out_in_meta(Tensor! out, Tensor x) -> ()");
  m.def("doubles(Tensor x) -> Tensor");
  m.def("doubles_shrinking_input(Tensor x) -> Tensor");
  m.def("doubles_restriding_input(Tensor x) -> Tensor");
  m.def("doubles_repointing_input(Tensor x) -> Tensor");
  m.def("doubles_retyping_input(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CompositeExplicitAutograd, m) {
  m.impl("copy_rows", &copy_rows);
  m.impl("copy_rows_shrinking_out", &copy_rows_shrinking_out);
  m.impl("copy_rows_growing_out", &copy_rows_growing_out);
  m.impl("copy_rows_restriding_out", &copy_rows_restriding_out);
  m.impl("copy_rows_repointing_out", &copy_rows_repointing_out);
  m.impl("copy_rows_retyping_out", &copy_rows_retyping_out);
  m.impl("doubles", &doubles);
  m.impl("doubles_shrinking_input", &doubles_shrinking_input);
  m.impl("doubles_restriding_input", &doubles_restriding_input);
  m.impl("doubles_repointing_input", &doubles_repointing_input);
  m.impl("doubles_retyping_input", &doubles_retyping_input);
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { m.impl("copy_rows_shrinking_out_in_meta", &copy_rows); }
TORCH_LIBRARY_IMPL(opc_test, Meta, m) { m.impl("copy_rows_shrinking_out_in_meta", &copy_rows_shrinking_out_in_meta); }

// A sparse return: no strides, so observing it fails inside the check. Used by the CLI
// tests of how an error of the check itself is printed (one line, where, no backtrace).
namespace {
at::Tensor returns_sparse(const at::Tensor& x) { return x.to_sparse(); }
}  // namespace
TORCH_LIBRARY_FRAGMENT(opc_test, m) { m.def("returns_sparse(Tensor x) -> Tensor"); }
TORCH_LIBRARY_IMPL(opc_test, CPU, m) { m.impl("returns_sparse", &returns_sparse); }

// Fakes under symbolic sizes (torch.compile(dynamic=True), as vLLM compiles): a Meta
// kernel that asks for numel() as an int cannot run on symbolic sizes; its twin asks for
// sym_numel(). Both are right on concrete sizes.
namespace {
at::Tensor flat_copy(const at::Tensor& x) { return x.reshape({-1}).clone(); }
at::Tensor flat_copy_meta(const at::Tensor& x) { return at::empty_symint({x.sym_numel()}, x.options()); }
at::Tensor flat_copy_meta_numel(const at::Tensor& x) { return at::empty({x.numel()}, x.options()); }
}  // namespace
TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("flat_copy(Tensor x) -> Tensor");
  m.def("flat_copy_numel_meta(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("flat_copy", &flat_copy);
  m.impl("flat_copy_numel_meta", &flat_copy);
}
TORCH_LIBRARY_IMPL(opc_test, Meta, m) {
  m.impl("flat_copy", &flat_copy_meta);
  m.impl("flat_copy_numel_meta", &flat_copy_meta_numel);
}

// An in-place op that returns its argument, annotated (Tensor(a!) -> Tensor(a!)): PyTorch
// does not functionalize custom ops whose returns carry alias annotations, so the real
// torch.compile refuses it. Its twin mutates and returns nothing.
namespace {
at::Tensor& doubles_in_place_returning(at::Tensor& x) { return x.mul_(2); }
void doubles_in_place_only(at::Tensor& x) { x.mul_(2); }
}  // namespace
TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("doubles_in_place_returning(Tensor(a!) x) -> Tensor(a!)");
  m.def("doubles_in_place_only(Tensor(a!) x) -> ()");
}
TORCH_LIBRARY_IMPL(opc_test, CompositeExplicitAutograd, m) {
  m.impl("doubles_in_place_returning", &doubles_in_place_returning);
  m.impl("doubles_in_place_only", &doubles_in_place_only);
}

// Reads twins: row sums of a [rows, cols] float32 x, read through its strides. The planted
// op reads one element past each row (cols + 1 of them): into the gap after a row of a
// row-strided view, and past the view's end on the last row, where the guard band lies.
namespace {

at::Tensor sums_rows(const at::Tensor& x, int64_t extra) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "x must be a 2-D float32 tensor");
  at::Tensor out = at::empty({x.size(0)}, x.options());
  const float* p = x.const_data_ptr<float>();
  for (int64_t i = 0; i < x.size(0); ++i) {
    float sum = 0;
    for (int64_t j = 0; j < x.size(1) + extra; ++j) sum += p[i * x.stride(0) + j * x.stride(1)];
    out[i] = sum;
  }
  return out;
}
at::Tensor row_sums(const at::Tensor& x) { return sums_rows(x, 0); }
at::Tensor row_sums_one_past(const at::Tensor& x) { return sums_rows(x, 1); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_test, m) {
  m.def("row_sums(Tensor x) -> Tensor");
  m.def("row_sums_one_past(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(opc_test, CPU, m) {
  m.impl("row_sums", &row_sums);
  m.impl("row_sums_one_past", &row_sums_one_past);
}
