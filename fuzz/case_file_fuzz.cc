// libFuzzer target: the case-file reader (read_case_text, then parse_case against a real
// contract) on any bytes. A ContractError is the reader's answer to bad input; any other
// exception escaping, a crash or a sanitizer report is a bug. Built by fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/contract_loader.h"
#include "generators/case_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const opc::Contract contract = opc::load_contract(OPC_FUZZ_CONTRACT);
  try {
    const opc::CaseFileRecord r =
        opc::read_case_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.case");
    opc::parse_case(r, contract);
  } catch (const opc::ContractError&) {
  }
  return 0;
}
