// Loads and validates a contract YAML file into a Contract.
//
//   try { Contract c = load_contract("contracts/vllm/foo.yaml"); }
//   catch (const ContractError& e) { std::cerr << e.what(); }   // "file:line:col: message"
//
// Validation is total: unknown keys, wrong types, bad expressions, names that resolve to
// nothing, a schema PyTorch's parser rejects, arguments the schema lacks or the contract
// leaves undescribed — each is a ContractError naming the exact place. Whether the op is
// registered is not the loader's business (see runners/op_binding.h).
#pragma once

#include <string>

#include "spec/contract.h"

namespace opc {

Contract load_contract(const std::string& path);
// For tests: the same from text, `file` naming it in errors.
Contract load_contract_text(const std::string& text, const std::string& file);

}  // namespace opc
