// The fake mode: what the op's fake predicts for a case, which is what torch.compile plans
// with; check_fake compares it with what eager did. Two ways to run it:
//
//   Observation fake = run_fake_pytorch(op, contract, c, facts, /*symbolic=*/true);
//     PyTorch's own FakeTensorMode in the embedded Python (runners/python/bridge.h): a
//     Python fake (register_fake) or the Meta kernel, whichever PyTorch picks, on fakes of
//     eager's tensors; with `symbolic`, every dim of size >= 2 a ShapeEnv symbol, as under
//     torch.compile(dynamic=True), where a fake that is not SymInt-safe fails.
//   Observation fake = run_fake_meta(op, contract, c, facts);
//     Without Python: the op called boxed on Meta tensors with eager's sizes, strides and
//     storage offsets; it sees C++ Meta kernels only, on concrete sizes.
#pragma once

#include "generators/case.h"
#include "generators/layout.h"
#include "runners/observation.h"
#include "runners/op_binding.h"

namespace opc {

Observation run_fake_pytorch(const OpBinding& op, const Contract& contract, const Case& c,
                             const CaseFacts& facts, bool symbolic);
Observation run_fake_meta(const OpBinding& op, const Contract& contract, const Case& c,
                          const CaseFacts& facts);

}  // namespace opc
