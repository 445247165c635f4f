// Errors of the check itself, as opposed to findings about the op: a contract expression
// that fails to evaluate, no case that meets the constraints, a defect of opcontract's.
// Every one is said in one line with where it happened, so it can be reproduced:
//
//   try { ... } catch (...) { r.error = check_error_text(contract); }
//   // "C.yaml, target T, in the eager mode, on the case rows=2 ...: MESSAGE"
#pragma once

#include <stdexcept>
#include <string>

#include "spec/contract.h"

namespace opc {

// A check that could not be carried out, for a reason of the contract's (an expression
// that fails to evaluate, no case that meets the constraints): what() is the full text.
struct CheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Inside a catch block: the exception in flight, in words; `contract_named` says whether
// they name the contract file already (a ContractError's file:line:column, a CheckError's
// context).
std::string in_flight_text(bool& contract_named);

// Inside a catch block: the text check_contract reports for the exception in flight.
std::string check_error_text(const Contract& contract);

}  // namespace opc
