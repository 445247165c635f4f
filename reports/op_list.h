// `opcontract list`: which registered ops a set of contracts covers, and in what role.
//
//   int lacking = print_op_list(std::cout, ops, contracts, "contracts");
//
// An op is covered when some contract names it as its `op` (or `port`), as a regression
// target, as a reference or as the donating overload; the rest are listed with the
// command that drafts their contract.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "spec/contract.h"

namespace opc {

// Prints one line per op in `ops` ("ns::name" or "ns::name.overload"), sorted, with where
// its fake comes from when `fakes` knows, and for an op no contract covers the reason
// `not_covered` gives (a contracts folder's NOT_COVERED), else NO CONTRACT; returns how
// many no contract covers. `schemas` (op -> schema text): printed on an indented line under each op.
int print_op_list(std::ostream& out, const std::vector<std::string>& ops,
                  const std::vector<std::shared_ptr<const Contract>>& contracts,
                  const std::string& where, const std::map<std::string, std::string>& fakes = {},
                  const std::map<std::string, std::string>& not_covered = {},
                  const std::map<std::string, std::string>& schemas = {});

}  // namespace opc
