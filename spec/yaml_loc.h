// Where a YAML node sits in its file, as the SourceLoc that errors name: line and column
// 1-based, 0:0 when yaml-cpp has no mark for the node. Used by every reader of YAML files
// (contracts, case files, known-findings files), so their errors point the same way.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "spec/source_loc.h"

namespace opc {

inline SourceLoc yaml_loc(const std::string& file, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.line < 0 ? SourceLoc{file, 0, 0} : SourceLoc{file, m.line + 1, m.column + 1};
}

}  // namespace opc
