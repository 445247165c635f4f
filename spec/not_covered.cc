#include "spec/not_covered.h"

#include <filesystem>
#include <sstream>

#include "spec/source_loc.h"
#include "spec/text_guard.h"

namespace opc {
namespace {

constexpr const char* kBlanks = " \t\r";

bool qualified_name(const std::string& s) {
  const size_t sep = s.find("::");
  return sep != std::string::npos && sep > 0 && sep + 2 < s.size();
}

}  // namespace

std::map<std::string, std::string> parse_not_covered(const std::string& text, const std::string& file) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t start = line.find_first_not_of(kBlanks);
    if (start == std::string::npos || line[start] == '#') continue;
    const size_t name_end = std::min(line.find_first_of(kBlanks, start), line.size());
    const std::string op = line.substr(start, name_end - start);
    const SourceLoc at{file, number, static_cast<int>(start) + 1};
    if (!qualified_name(op)) throw ContractError(at, "'" + op + "' is not a qualified op name (ns::name)");
    const size_t reason_start = line.find_first_not_of(kBlanks, name_end);
    if (reason_start == std::string::npos) throw ContractError(at, op + " is listed without a reason");
    const size_t reason_end = line.find_last_not_of(kBlanks);
    if (!out.emplace(op, line.substr(reason_start, reason_end + 1 - reason_start)).second)
      throw ContractError(at, op + " is listed twice");
  }
  return out;
}

std::map<std::string, std::string> load_not_covered(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  return parse_not_covered(read_contract_file(path), path);
}

}  // namespace opc
