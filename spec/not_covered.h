// The ops a folder of contracts leaves uncovered on purpose, each with the reason: the file
// `NOT_COVERED` beside the contracts, which `opcontract list` reads to show the reason in
// place of "NO CONTRACT".
//
//   std::map<std::string, std::string> why = load_not_covered("contracts/vllm-cpu/NOT_COVERED");
//
// Format: one op a line, its qualified name (`ns::name` or `ns::name.overload`), blanks,
// then the reason; `#` starts a comment line; blank lines are skipped. A line without a
// reason, a name that is not qualified, or an op listed twice is a ContractError at
// file:line:column.
#pragma once

#include <map>
#include <string>

namespace opc {

// op -> reason. A missing file is an empty map.
std::map<std::string, std::string> load_not_covered(const std::string& path);
// The same, from text (for tests).
std::map<std::string, std::string> parse_not_covered(const std::string& text, const std::string& file);

}  // namespace opc
