#include "ops/sim_context.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace opc::sim {
namespace {

// A handful of entries at most: a vector beats a hash map here.
std::vector<std::pair<std::string, int64_t>>& values() {
  static std::vector<std::pair<std::string, int64_t>> v;
  return v;
}

}  // namespace

void set_int(std::string_view name, int64_t value) {
  for (auto& [n, v] : values())
    if (n == name) {
      v = value;
      return;
    }
  values().emplace_back(std::string(name), value);
}

int64_t get_int(std::string_view name) {
  for (const auto& [n, v] : values())
    if (n == name) return v;
  throw std::runtime_error("simulated context value '" + std::string(name) +
                           "' is not set: the contract must declare it under context:");
}

void clear() { values().clear(); }

}  // namespace opc::sim

extern "C" void opc_sim_set_int(const char* name, int64_t value) { opc::sim::set_int(name, value); }
