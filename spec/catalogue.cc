#include "spec/catalogue.h"

#include <string>

namespace opc {
namespace {

constexpr const char* kModeNames[] = {"fake", "eager", "compiled", "cudagraph"};
static_assert(std::size(kModeNames) == std::size(kAllModes));

// The table is indexed by the enum: each row must sit at its clause's place.
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < std::size(kClauses); ++i)
    if (static_cast<size_t>(kClauses[i].clause) != i) return false;
  return true;
}
static_assert(rows_in_enum_order());

}  // namespace

const char* to_string(Mode mode) { return kModeNames[static_cast<size_t>(mode)]; }

std::optional<Mode> mode_named(std::string_view name) {
  for (Mode m : kAllModes)
    if (name == to_string(m)) return m;
  return std::nullopt;
}

std::string mode_note(const std::optional<Mode>& m) { return m ? std::string(" (") + to_string(*m) + ")" : ""; }

std::string to_string(Clause c) { return std::string(to_string_view(c)); }

std::optional<Clause> clause_named(std::string_view id) {
  for (const ClauseInfo& c : kClauses)
    if (c.id == id) return c.clause;
  return std::nullopt;
}

std::string clause_list() {
  std::string s;
  for (const ClauseInfo& c : kClauses) s += (s.empty() ? "" : ", ") + std::string(c.id);
  return s;
}

}  // namespace opc
