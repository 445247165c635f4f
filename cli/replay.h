// `opcontract replay CASE.yaml`: one case file run again, in every mode it can, with what
// the op did to each tensor printed, to look at one failure closely.
//
//   ReplayOptions o;  o.case_file = "corpus/contracts_vllm_rms_norm/x.yaml";
//   int exit_code = run_replay(o, std::cout);  // 0 no finding now, 1 findings, 2 errors
//
// The case names its contract (a relative path inside the working directory, or pass
// `contract` to name it), its target op and what was found when it was written.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "spec/contract.h"

namespace opc::cli {

struct ReplayOptions {
  std::string case_file;
  std::string contract;     // overrides the case file's own
  std::vector<Mode> modes;  // besides eager; empty: the contract's
  bool isolate = true;
  bool python = true;  // the real PyTorch for fake and compiled (--no-python: false)
  double case_timeout_s = 0;  // 0: the contract's time_limit, else the default
};

int run_replay(const ReplayOptions& options, std::ostream& out);

}  // namespace opc::cli
