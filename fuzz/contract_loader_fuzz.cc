// libFuzzer target: the contract loader (YAML, the schema parser, every expression) on
// any bytes. A ContractError is the loader's answer to bad input; any other exception
// escaping, a crash or a sanitizer report is a bug. Built by fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/contract_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    opc::load_contract_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const opc::ContractError&) {
  }
  return 0;
}
