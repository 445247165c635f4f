// The eager mode: the op on real CPU tensors, called boxed through the dispatcher
// below autograd, with every tensor argument snapshotted before the call.
//
//   Observation obs = run_eager(op, contract, c, materialize(c, contract, facts));
#pragma once

#include <optional>
#include <vector>

#include "generators/case.h"
#include "runners/materialize.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

// Sets the contract's context values into the simulated process state (ops/sim_context.h)
// and calls its python_context hook with them.
void set_context(const Contract& contract, const Case& c);
// The same, then the contract's python_state hook, which builds the state the op reads
// from the whole case and `args` (schema order), and fills the `{state: NAME}` arguments
// of `args` with the objects it returns. Called right before each call of the op.
void set_context(const Contract& contract, const Case& c, std::vector<c10::IValue>& args);

// Calls the op once on `args`, boxed and below autograd. Returns what it left on the stack.
std::vector<c10::IValue> call_boxed(const OpBinding& op, const std::vector<c10::IValue>& args);

// The pieces every runner shares. An argument's observation before the call (with a
// copy of its storage's bytes when `snapshot`):
ArgObservation observe_arg(int arg, const at::Tensor& storage, const at::Tensor& view, bool snapshot);
// The boxed call, recording a thrown error in `obs`; returns the stack (empty if it threw).
std::vector<c10::IValue> observe_call(const OpBinding& op, const std::vector<c10::IValue>& args,
                                      Observation& obs);
// Each argument's metadata after the call, and each returned value.
void observe_after(const std::vector<c10::IValue>& rets, Observation& obs);

Observation run_eager(const OpBinding& op, const Contract& contract, const Case& c,
                      Materialized m);

// The same call without the snapshots the oracles need: for re-running a case.
Observation rerun_eager(const OpBinding& op, const Contract& contract, const Case& c,
                        Materialized m);

// The case with tensor argument `arg` viewed in other sizes (one of its contract's `forms:`,
// the same elements in the same order); nullopt when its layout cannot be viewed so
// without a copy (a copy would not be the caller's memory).
std::optional<Observation> run_in_form(const OpBinding& op, const Contract& contract, const Case& c,
                                       Materialized m, int arg, const std::vector<int64_t>& sizes);

// The case's in-place call (c.inplace >= 0): the same tensors, but one argument is handed
// the other's tensor (`aliasing.inplace`).
Observation run_in_place(const OpBinding& op, const Contract& contract, const Case& c,
                         Materialized m);

}  // namespace opc
