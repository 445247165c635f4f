// Names and lists of them in messages: "did you mean" for a misspelt name, joined lists,
// lists that keep first-seen order.
//
//   closest_names("shapes", {"shape", "dtype"}, 3)  -> {"shape"}
//   join({"a", "b"})                                 -> "a, b"
#pragma once

#include <algorithm>
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

// Appends `item` unless `into` holds it already: lists that keep first-seen order.
template <class T>
void add_unique(std::vector<T>& into, const T& item) {
  if (std::find(into.begin(), into.end(), item) == into.end()) into.push_back(item);
}

}  // namespace opc
