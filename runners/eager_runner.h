// The eager mode: the op on real CPU tensors, called boxed through the dispatcher
// below autograd, with every tensor argument snapshotted before the call.
//
//   Observation obs = run_eager(op, contract, c, materialize(c, contract, facts));
#pragma once

#include "generators/case.h"
#include "runners/materialize.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

// Sets the contract's context values into the simulated process state (ops/sim_context.h).
void set_context(const Contract& contract, const Case& c);

// Calls the op once on `args`, boxed and below autograd. Returns what it left on the stack.
std::vector<c10::IValue> call_boxed(const OpBinding& op, const std::vector<c10::IValue>& args);

Observation run_eager(const OpBinding& op, const Contract& contract, const Case& c,
                      Materialized m);

// The same call without the snapshots the oracles need: for re-running a case.
Observation rerun_eager(const OpBinding& op, const Contract& contract, const Case& c,
                        Materialized m);

}  // namespace opc
