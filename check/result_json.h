// The results JSON (docs/format.md, "Results", version 2): one writer and one reader of
// the result model (check/result.h), side by side, so that what `check --json` writes is
// what `report` and the Python package (python/opcontract/results.py) read back.
//
//   std::string text = results_json(results, read_platform());     // check --json
//   ResultsFile file = read_results_json(text, "cpu.json");        // report; ResultsError
//   file.results[0].findings[0].clause == Clause::Alias
//
// Round trip: read_results_json(results_json(r, p)) gives r back, field for field, except
// what lives only in the checking process (a finding's minimal Case: its JSON is kept).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "check/result.h"
#include "support/platform.h"

namespace opc {

inline constexpr int kResultsVersion = 2;

// A file that is not a results file of this version, or a field of one that is broken:
// "FILE: contracts[2].modes.eager.status: '...' is none of pass, fail, not_run".
struct ResultsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string results_json(const std::vector<ContractResult>& results, const Platform& platform);

struct ResultsFile {
  // The machine it was judged on, in words: "x86_64, <model>; avx2 avx512f (no amx_tile);
  // 2 cores"; "" when the file does not say.
  std::string platform;
  std::vector<ContractResult> results;
};

// `name` names the file in errors.
ResultsFile read_results_json(const std::string& text, const std::string& name);

}  // namespace opc
