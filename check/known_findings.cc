#include "check/known_findings.h"

#include <algorithm>
#include <optional>

#include "support/names.h"

namespace opc {
namespace {

// The mapped libraries in the folder a scope's library names ("vllm/_C" -> .../vllm/*),
// by their last two path components: what was loaded instead.
std::vector<std::string> loaded_beside(const std::string& name, const Platform& platform) {
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string folder = "/" + name.substr(0, slash) + "/";
  std::vector<std::string> out;
  for (const std::string& path : platform.libraries) {
    const size_t at = path.rfind('/');
    if (at + 1 < folder.size() || path.compare(at + 1 - folder.size(), folder.size(), folder) != 0) continue;
    out.push_back(name.substr(0, slash) + path.substr(at));
  }
  return out;
}

// `sometimes`, everywhere or on the machines its scope names.
bool may_be_absent(const KnownFinding& k, const Platform& platform) {
  return k.sometimes || (!k.sometimes_where.everywhere() && scope_miss(k.sometimes_where, platform).empty());
}

bool matches(const KnownFinding& k, const ContractFinding& f) { return lists(k, f) && f.known.empty(); }

// Why the mode `k` names did not run in this check ("" when it ran, or `k` names none): a
// GPU mode on a machine without one, a mode the contract skips.
std::string mode_not_run(const KnownFinding& k, const ContractResult& r) {
  const auto it = k.mode ? r.modes.find(*k.mode) : r.modes.end();
  if (it == r.modes.end() || it->second.status != ModeStatus::NotRun) return "";
  return std::string("the ") + to_string(*k.mode) + " mode did not run here (" + it->second.reason + ")";
}

// A new finding that an entry scoped to other machines would have matched: its message
// says so, so that a reader can widen the scope if the defect is the same.
void note_scoped_elsewhere(ContractResult& r) {
  for (ContractFinding& f : r.findings) {
    if (!f.known.empty()) continue;
    const auto scoped = std::find_if(r.not_applicable.begin(), r.not_applicable.end(), [&](const NotApplicable& n) {
      return f.clause == n.clause && (!n.mode || f.mode == n.mode);
    });
    if (scoped != r.not_applicable.end())
      f.message += "\n(known_findings lists " + to_string(scoped->clause) + " for other machines only: " + scoped->why + ")";
  }
}

// Whether the run could have found `k`: a listed mistake only when its argument/kind pair
// was tried (the misuse search's budget may not reach every pair).
bool looked_for(const KnownFinding& k, const ContractResult& r) {
  return k.mistake.empty() ||
         std::find(r.mistakes_tried.begin(), r.mistakes_tried.end(), k.mistake) != r.mistakes_tried.end();
}

}  // namespace

std::string scope_miss(const KnownScope& scope, const Platform& platform) {
  for (const std::string& flag : scope.cpu) {
    if (flag[0] == '!' && has_cpu_feature(platform, flag.substr(1)))
      return "applies to CPUs without " + flag.substr(1) + ", and this one has it";
    if (flag[0] != '!' && !has_cpu_feature(platform, flag))
      return "needs the CPU feature " + flag + ", which this CPU lacks";
  }
  if (scope.library.empty() ||
      std::any_of(scope.library.begin(), scope.library.end(),
                  [&](const std::string& l) { return has_library(platform, l); }))
    return "";
  std::vector<std::string> instead;
  for (const std::string& l : scope.library)
    for (const std::string& b : loaded_beside(l, platform))
      if (std::find(instead.begin(), instead.end(), b) == instead.end()) instead.push_back(b);
  return "applies where " + join(scope.library, " or ") + " is loaded, and this process loaded " +
         (instead.empty() ? "none of them" : join(instead) + " instead");
}

bool known_here(const std::vector<KnownFinding>& known, const Platform& platform, const ContractFinding& f) {
  return std::any_of(known.begin(), known.end(),
                     [&](const KnownFinding& k) { return lists(k, f) && scope_miss(k.where, platform).empty(); });
}

std::string scope_text(const KnownScope& scope) {
  std::vector<std::string> parts;
  for (const std::string& flag : scope.cpu) parts.push_back(flag[0] == '!' ? "no " + flag.substr(1) : flag);
  if (!scope.library.empty()) parts.push_back(join(scope.library, " or "));
  return join(parts);
}

void apply_known_findings(const std::vector<KnownFinding>& known, const std::string& list_name,
                          const Platform& platform, ContractResult& r) {
  std::vector<const KnownFinding*> missed;
  for (const KnownFinding& k : known) {
    r.known_listed.push_back({k.clause, k.mode, scope_text(k.where),
                              k.sometimes ? "yes" : scope_text(k.sometimes_where)});
    std::string miss = scope_miss(k.where, platform);
    if (miss.empty()) miss = mode_not_run(k, r);
    if (!miss.empty()) {
      r.not_applicable.push_back({k.clause, k.mode, k.reason, std::move(miss)});
      continue;
    }
    bool occurred = false;
    for (ContractFinding& f : r.findings)
      if (matches(k, f)) {
        f.known = k.reason;
        occurred = true;
      }
    // The misuse search tries one variant of an argument/kind pair at a time (one dim one
    // smaller, another dim doubled, ...): a listed mistake it did not see accepted may be
    // one whose other variants the op still accepts, so its absence is said, not failed.
    if (!occurred && !k.mistake.empty())
      r.warnings.push_back("known_findings lists misuse " + k.mistake.text() + " (" + to_string(k.loc) + "), " +
                           (looked_for(k, r) ? "which the run tried and the op refused each time: if the op "
                                               "now checks it, remove the entry"
                                             : "a mistake no case tried: more --cases reach more argument/kind pairs"));
    else if (!occurred && !may_be_absent(k, platform)) missed.push_back(&k);
  }
  note_scoped_elsewhere(r);
  for (const KnownFinding* k : missed) {
    ContractFinding f{k->clause, k->mode,
                      "listed under " + list_name + " (" + to_string(k->loc) + ": " + k->reason +
                          ") but not found in " + std::to_string(r.cases) + " cases: if the op was fixed, remove the entry"};
    f.mistake = k->mistake;
    r.findings.push_back(std::move(f));
  }
}

}  // namespace opc
