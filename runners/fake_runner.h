// The fake mode: the same case on Meta tensors, with the sizes, strides and storage
// offsets eager gets, called boxed like eager. What the Meta (fake) kernel predicts is
// what torch.compile plans with; check_fake compares it with what eager did.
//
//   Observation fake = run_fake(op, contract, c, facts);
#pragma once

#include "generators/case.h"
#include "generators/layout.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

Observation run_fake(const OpBinding& op, const Contract& contract, const Case& c,
                     const CaseFacts& facts);

}  // namespace opc
