// "Did you mean" for names: the candidates closest to a misspelt name.
//
//   closest_names("shapes", {"shape", "dtype"}, 3)  -> {"shape"}
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opc {

// Up to `max` candidates within a small edit distance of `name` (or sharing it as a
// substring), best first. Empty when nothing is close.
std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t max);

// "a, b, c"
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace opc
