#include "reports/known_file.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "spec/text_guard.h"
#include "spec/yaml_loc.h"
#include "reports/run_report.h"
#include "support/atomic_file.h"
#include "support/json_writer.h"

namespace opc {
namespace {

std::string text(const std::string& file, const YAML::Node& entry, const std::string& key, bool required) {
  const YAML::Node n = entry[key];
  if (!n) {
    if (required) throw ContractError(yaml_loc(file, entry), "a known finding needs '" + key + "'");
    return "";
  }
  if (!n.IsScalar()) throw ContractError(yaml_loc(file, n), key + " must be a string");
  return n.Scalar();
}

}  // namespace

std::vector<KnownEntry> load_known_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const std::string body = read_contract_file(path);
  YAML::Node root;
  try {
    check_contract_text(body, path);
    root = YAML::Load(body);
  } catch (const YAML::Exception& e) {
    throw ContractError({path, e.mark.line + 1, e.mark.column + 1}, "not a known-findings file: " + e.msg);
  }
  if (!root.IsMap() || !root["version"] || root["version"].Scalar() != "1" || !root["known"] ||
      !root["known"].IsSequence())
    throw ContractError({path, 1, 1}, "not a known-findings file: expected {\"version\": 1, \"known\": [...]}");
  std::vector<KnownEntry> out;
  for (const auto& e : root["known"]) {
    if (!e.IsMap()) throw ContractError(yaml_loc(path, e), "a known finding must be an object");
    KnownEntry k;
    k.contract = text(path, e, "contract", true);
    k.target = text(path, e, "target", true);
    k.finding.loc = yaml_loc(path, e);
    const std::string clause = text(path, e, "clause", true);
    const std::optional<Clause> c = clause_named(clause);
    if (!c) throw ContractError(yaml_loc(path, e["clause"]), "unknown clause '" + clause + "' (" + clause_list() + ")");
    k.finding.clause = *c;
    if (const std::string mode = text(path, e, "mode", false); !mode.empty()) {
      k.finding.mode = mode_named(mode);
      if (!k.finding.mode) throw ContractError(yaml_loc(path, e["mode"]), "unknown mode '" + mode + "'");
    }
    k.finding.mistake = {text(path, e, "arg", false), text(path, e, "kind", false)};
    if ((k.finding.clause == Clause::Misuse) != !k.finding.mistake.empty() ||
        k.finding.mistake.arg.empty() != k.finding.mistake.kind.empty())
      throw ContractError(yaml_loc(path, e), "a misuse entry names its mistake (arg and kind), and only a misuse entry does");
    k.finding.reason = text(path, e, "reason", true);
    if (k.finding.reason.empty()) throw ContractError(yaml_loc(path, e), "a known finding needs its reason");
    out.push_back(std::move(k));
  }
  return out;
}

void write_known_file(const std::string& path, const std::vector<KnownEntry>& entries) {
  // One entry a line, so that a change to the file reads as a change to the list.
  std::string s = "{\"version\": 1, \"known\": [\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const KnownEntry& k = entries[i];
    JsonWriter w;
    w.begin_object();
    w.key("contract").value(k.contract);
    w.key("target").value(k.target);
    w.key("clause").value(to_string_view(k.finding.clause));
    if (k.finding.mode) w.key("mode").value(to_string(*k.finding.mode));
    if (!k.finding.mistake.empty()) w.key("arg").value(k.finding.mistake.arg).key("kind").value(k.finding.mistake.kind);
    w.key("reason").value(k.finding.reason);
    w.end_object();
    s += "  " + w.str() + (i + 1 < entries.size() ? ",\n" : "\n");
  }
  write_file_atomically(path, s + "]}\n");
}

std::vector<KnownEntry> updated_known(const std::vector<KnownEntry>& old, const std::vector<RunEntry>& run) {
  const auto norm = [](const std::string& p) { return std::filesystem::path(p).lexically_normal(); };
  auto checked = [&](const KnownEntry& k) {
    for (const RunEntry& e : run)
      if (e.contract && e.result.verdict != Verdict::Error && norm(e.contract->file) == norm(k.contract) &&
          e.result.target == k.target)
        return true;
    return false;
  };
  std::vector<KnownEntry> out;
  for (const KnownEntry& k : old)
    if (!checked(k)) out.push_back(k);
  for (const RunEntry& e : run) {
    if (!e.contract || e.result.verdict == Verdict::Error) continue;
    const std::vector<KnownFinding> listed = known_for(old, e.contract->file, e.result.target);
    for (const ContractFinding& f : e.result.findings) {
      const KnownFinding* prior = nullptr;
      for (const KnownFinding& k : listed)
        if (lists(k, f)) prior = &k;
      if (prior && !f.has_case() && f.known.empty()) continue;  // listed, no longer found: dropped
      // Known to the contract itself (its known_findings), not to this file.
      if (!f.known.empty() && !(prior && prior->reason == f.known)) continue;
      KnownEntry k;
      k.contract = e.contract->file;
      k.target = e.result.target;
      k.finding.clause = f.clause;
      k.finding.mode = f.mode;
      k.finding.mistake = f.mistake;
      k.finding.reason = prior ? prior->reason
                               : "recorded by --update-known: " + f.message.substr(0, 160) +
                                     (f.message.size() > 160 ? "..." : "");
      out.push_back(std::move(k));
    }
  }
  return out;
}

std::vector<KnownFinding> known_for(const std::vector<KnownEntry>& entries, const std::string& contract,
                                    const std::string& target) {
  std::vector<KnownFinding> out;
  const auto norm = [](const std::string& p) { return std::filesystem::path(p).lexically_normal(); };
  for (const KnownEntry& k : entries)
    if (norm(k.contract) == norm(contract) && k.target == target) out.push_back(k.finding);
  return out;
}

}  // namespace opc
