#include "spec/source_loc.h"

namespace opc {

std::string to_string(const SourceLoc& loc) {
  std::string s = loc.file.empty() ? "<contract>" : loc.file;
  if (loc.line > 0) {
    s += ":" + std::to_string(loc.line);
    if (loc.column > 0) s += ":" + std::to_string(loc.column);
  }
  return s;
}

ContractError::ContractError(const SourceLoc& loc, const std::string& message)
    : std::runtime_error(to_string(loc) + ": " + message), loc_(loc), message_(message) {}

}  // namespace opc
