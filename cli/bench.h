// `opcontract bench`: how fast the op runs alone, and how fast a whole checked case runs,
// on the same generated inputs, so the checker's own overhead shows as a ratio.
//
//   bare: 412345 calls/s      (the op alone, boxed through the dispatcher)
//   eager: 5123 cases/s       (generate + materialise + call + every eager oracle)
//   bare/eager: 80.5
//   fake: 9000 cases/s        (generate + the same case on Meta tensors)
//   compiled: 9000 cases/s    (generate + functionalized call, guard, copy-back, dead inputs)
//   fake (PyTorch ...), compiled (torch.compile backend=...): the real PyTorch's rates, with
//                             per backend the graphs compiled, why, and the warm-up's time
//   slowest: ...              the slowest of every mode measured
//   regressions ...           per listed regression and clause: cases until caught, the
//                             shrunk case's elements and shrink steps
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "spec/contract.h"

namespace opc::cli {

// Throws ContractError / EvalError like check_contract.
// `python`: also the real PyTorch's fake and compiled rates (false: --no-python).
void run_bench(const Contract& contract, const std::string& target, int cases, uint64_t seed,
               bool python, std::ostream& out);

}  // namespace opc::cli
