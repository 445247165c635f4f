// Where a piece of contract text came from, and the error that names it.
//
// Every error about a contract carries a SourceLoc so the user sees
// "contracts/vllm/foo.yaml:12:7: unknown key 'shapes'". Lines and columns are 1-based;
// 0 means unknown (the message then names just the file).
#pragma once

#include <stdexcept>
#include <string>

namespace opc {

struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  // The same place, `columns` characters further right (for a spot inside a scalar).
  SourceLoc shifted(int columns) const { return {file, line, column ? column + columns : 0}; }
};

// "file:line:column", "file:line" or "file", as much as is known.
std::string to_string(const SourceLoc& loc);

// A contract that cannot be loaded. what() is "file:line:column: message".
class ContractError : public std::runtime_error {
 public:
  ContractError(const SourceLoc& loc, const std::string& message);
  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string message_;
};

}  // namespace opc
