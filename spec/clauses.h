// The clause ids every finding and report uses (architecture.md, "Clauses").
#pragma once

#include <string>
#include <vector>

namespace opc {

const std::vector<std::string>& clause_ids();
bool is_clause_id(const std::string& id);

}  // namespace opc
