#include "support/names.h"

#include <algorithm>
#include <cctype>

namespace opc {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t max) {
  const std::string needle = lower(name);
  // Qualified op names are long: compare what follows "::" too, so "vllm::rms_nrom"
  // finds "opc_vllm::rms_norm".
  auto base = [](std::string_view s) {
    size_t p = s.rfind("::");
    return p == std::string_view::npos ? s : s.substr(p + 2);
  };
  const std::string needle_base = lower(base(name));
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string cand = lower(c);
    size_t d = std::min(edit_distance(needle, cand), edit_distance(needle_base, lower(base(c))));
    const bool contains = needle_base.size() >= 4 && cand.find(needle_base) != std::string::npos;
    const size_t limit = std::max<size_t>(2, needle_base.size() / 3);
    if (d <= limit || contains) scored.emplace_back(contains ? std::min(d, limit) : d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [d, c] : scored) {
    if (out.size() == max) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace opc
