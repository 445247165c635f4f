// Turns a Case into real tensors, each a view inside a larger guarded storage.
//
//   Materialized m = materialize(case, contract, facts);
//   m.args          // IValues in schema order, ready for a boxed call
//   m.tensors[i]    // per tensor argument: its storage (guards included) and its view
//   Materialized again = copy_of(m);   // another run of the case: a copy, no new draw
//
// Storage layout of every tensor argument, in elements:
//   [ guard | base of the layout (the view and any gaps of narrow/row_strided) | guard ]
// Guards hold kGuardByte; the base holds values drawn from the contract's distribution
// with the case's data seed; a mutated argument with `sentinel: true` has its declared
// region filled with the dtype's sentinel, so an element the op never writes shows.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "generators/case.h"
#include "generators/layout.h"

namespace opc {

inline constexpr uint8_t kGuardByte = 0xA5;

struct TensorArg {
  int arg = 0;         // schema index
  at::Tensor storage;  // flat, 1-D, guards included
  at::Tensor view;     // what the op receives
};

struct Materialized {
  std::vector<c10::IValue> args;
  std::vector<TensorArg> tensors;  // tensor arguments that are not None, schema order
};

// Where each storage lives. Guarded: kGuardElems guard elements on both sides, in memory of
// PyTorch's allocator. Fenced (misuse calls): the trailing guard shrinks to what 64-byte
// alignment leaves (under 64 bytes), and a page no access is allowed to follows it, so a
// kernel that reads or writes past a tensor's end faults there (a crash with its case)
// instead of reading garbage silently, as an electric-fence allocator makes it.
enum class Placement { Guarded, Fenced };

// A case with an Index misuse (generators/misuse.h) has that value in the first element
// of its argument.
Materialized materialize(const Case& c, const Contract& contract, const CaseFacts& facts,
                         Placement placement = Placement::Guarded);

// The same tensors again on storages of their own (the same bytes, the same geometry): a
// fresh run of a case for a copy of its bytes instead of drawing its values anew.
Materialized copy_of(const Materialized& m);

// The memory around the tensor arguments' views that poison_surroundings fills: all of it,
// the gaps a strided view leaves between its first and last elements, or what lies before
// its first and past its last (the guard bands, and the rest of a parent buffer).
enum class Surroundings { All, Gaps, PastEnds };

// Fills the elements of the arguments' storages that no argument's view covers with poison
// (NaN for floating dtypes, 0x5A bytes for others, where the guards hold kGuardByte), for
// argument `arg`'s storage only when arg >= 0. An op that reads only the views it was handed
// gives the same results either way (the reads clause, oracles/reads.cc).
void poison_surroundings(const Materialized& m, Surroundings which, int arg = -1);

// A scalar argument's value as the op receives it (the schema's default where the case
// holds std::monostate; None for a `{state: NAME}` argument, which set_context fills).
c10::IValue scalar_arg(const Case& c, const Contract& contract, const ArgSpec& a);

// The sentinel's bytes for a dtype (a NaN payload for floats): what an unwritten output
// element still holds after the call.
std::vector<uint8_t> sentinel_bytes(c10::ScalarType dtype);

// Fills the padding rows (contract `padding:`) of the listed tensors with garbage: NaN
// (variant 0) or large finite values (variant 1) for floats, the extremes for integers.
void fill_padding(const Materialized& m, const Contract& contract, const EvalInput& in, int variant);

// Fills rows real..size of dim `dim` of `view` with garbage: NaN (variant 0) or large
// finite values (variant 1) for floats; the extremes for integers when `integers`
// (indices would turn out-of-range garbage into memory faults, not findings).
void fill_garbage_rows(const at::Tensor& view, int64_t dim, int64_t real, int variant, bool integers);

// The real rows of `t` along the padding dim, given its real length.
at::Tensor real_rows(const at::Tensor& t, int64_t dim, int64_t real);

// The part of `view` a Region names, evaluated on the case's facts.
at::Tensor region_of(const at::Tensor& view, const Region& region, const EvalInput& in);

}  // namespace opc
