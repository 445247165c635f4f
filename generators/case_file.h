// Case files: one shrunk failing case on disk, replayable by itself.
//
//   write_case_file(path, record, contract);            // atomically: temp file + rename
//   CaseFileRecord r = read_case_file(path);             // the fields, the case still raw
//   Case c = parse_case(r, contract);                    // checked against the contract
//
// A fuzz campaign writes one per new finding into its corpus and replays the corpus
// before generating anything; `opcontract replay FILE` runs one. The format is JSON (so
// YAML) after a comment line, with the case in the form reports use (case_json).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "spec/contract.h"
#include "generators/case.h"

namespace opc {

struct CaseFileRecord {
  std::string file;      // where it was read from
  std::string contract;  // the contract file, relative to the working directory
  std::string target;    // the op that failed on it
  Clause clause = Clause::Crash;
  std::optional<Mode> mode;
  std::string message;
  uint64_t seed = 0;
  int found_at = 0;  // the generated case (1-based) it was first seen in; 0: replayed
  YAML::Node case_node;
};

void write_case_file(const std::string& path, const CaseFileRecord& record, const Case& c,
                     const Contract& contract);

// Throws ContractError (file:line:column) for a file that is not a case file. The text is
// held to a contract's guards (spec/text_guard.h): size, UTF-8, no anchors, depth.
CaseFileRecord read_case_file(const std::string& path);
CaseFileRecord read_case_text(const std::string& text, const std::string& file);

// The case, checked against the contract (case_misfit): ContractError when it does not fit.
Case parse_case(const CaseFileRecord& record, const Contract& contract);

// A relative path without "..": what a case file may name as its contract.
bool stays_inside(const std::string& path);

}  // namespace opc
