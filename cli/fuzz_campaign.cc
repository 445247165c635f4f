#include "cli/fuzz_campaign.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/session.h"
#include "generators/case_file.h"
#include "reports/run_report.h"
#include "support/platform.h"
#include "runners/op_binding.h"
#include "support/atomic_file.h"

namespace opc::cli {
namespace fs = std::filesystem;
namespace {

// contracts/vllm/rms_norm.yaml -> contracts_vllm_rms_norm
std::string corpus_key(const std::string& contract_file) {
  std::string k = fs::path(contract_file).lexically_normal().replace_extension().string();
  std::replace(k.begin(), k.end(), '/', '_');
  return k;
}

std::string shard_suffix(const FuzzOptions& o) {
  return o.check.shards > 1 ? ".shard-" + std::to_string(o.check.shard) + "-of-" + std::to_string(o.check.shards) : "";
}

// The corpus cases for one contract, sorted by file name; a file that does not fit is
// reported and left out (a corpus outlives contract edits).
std::vector<CheckOptions::Replayed> load_corpus(const std::string& dir, const Contract& contract,
                                                std::ostream& out) {
  std::vector<CheckOptions::Replayed> cases;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return cases;
  const fs::path root = fs::canonical(dir, ec);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const fs::path real = fs::canonical(f, ec);
    const auto rel = real.lexically_relative(root);
    if (ec || rel.empty() || *rel.begin() == "..") {
      out << "[opcontract] left out " << f.string() << ": it points outside the corpus\n";
      continue;
    }
    try {
      const CaseFileRecord record = read_case_file(f.string());
      if (fs::path(record.contract).lexically_normal() != fs::path(contract.file).lexically_normal())
        throw std::runtime_error("it is a case of " + record.contract + ", not of " + contract.file);
      cases.push_back({f.string(), parse_case(record, contract)});
    } catch (const std::exception& e) {
      out << "[opcontract] left out " << f.string() << ": " << e.what() << "\n";
    }
  }
  return cases;
}

struct State {
  uint64_t seed = 0;
  std::string target;
  int next_case = 0;
};

// The generated case to go on from, when the state file is of this very campaign.
int resume_point(const std::string& path, const FuzzOptions& o, const std::string& target,
                 std::ostream& out) {
  std::ifstream in(path);
  if (!in) return 0;
  State s;
  std::string key;
  while (in >> key) {
    if (key == "seed") in >> s.seed;
    else if (key == "target") in >> s.target;
    else if (key == "next_case") in >> s.next_case;
  }
  if (s.seed != o.check.seed || s.target != target) {
    out << "[opcontract] " << path << " is of another campaign (seed or target differ): starting over\n";
    return 0;
  }
  if (s.next_case > 0) out << "[opcontract] resuming " << target << " at generated case " << s.next_case + 1 << "\n";
  return std::max(0, s.next_case);
}

void save_state(const std::string& path, const FuzzOptions& o, const std::string& target, int next_case) {
  write_file_atomically(path, "seed " + std::to_string(o.check.seed) + "\ntarget " + target + "\nnext_case " +
                             std::to_string(next_case) + "\n");
}

std::string file_safe(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') ch = '_';
  return s;
}

// One contract of a campaign: where its corpus and state live, and what it has run.
struct ContractRun {
  const std::shared_ptr<const Contract>& contract;
  std::string target;
  std::filesystem::path corpus;  // empty: no corpus
  std::string state;             // the state file
};

ContractRun contract_run(const std::shared_ptr<const Contract>& c, const FuzzOptions& o) {
  const std::string key = corpus_key(c->file);
  return {c, target_name(*c, o.target), o.corpus_dir.empty() ? fs::path() : fs::path(o.corpus_dir) / key,
          (fs::path(o.out_dir) / (key + shard_suffix(o) + ".state")).string()};
}

// The check's options for one contract: the campaign's, its corpus to replay first and
// the case to resume at.
CheckOptions contract_options(const ContractRun& cr, const FuzzOptions& o, std::ostream& out) {
  CheckOptions options = o.check;
  options.cases = o.check.cases > 0 ? o.check.cases : INT_MAX;
  if (o.seconds > 0)
    options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));
  options.known = known_for(o.known, cr.contract->file, cr.target);
  options.replay_first = load_corpus(cr.corpus.string(), *cr.contract, out);
  options.first_case = resume_point(cr.state, o, cr.target, out);
  return options;
}

void announce(const ContractRun& cr, const FuzzOptions& o, const CheckOptions& options, std::ostream& out) {
  out << "[opcontract] fuzzing " << cr.target << " under " << cr.contract->file << ": seed " << o.check.seed
      << ", shard " << o.check.shard << "/" << o.check.shards << ", "
      << (o.check.cases > 0 ? std::to_string(o.check.cases) + " cases" : std::string("no case limit")) << ", "
      << (o.seconds > 0 ? std::to_string(static_cast<int64_t>(o.seconds)) + " s" : std::string("no time limit"))
      << std::endl;
  if (!options.replay_first.empty())
    out << "[opcontract] " << cr.target << ": replaying " << options.replay_first.size() << " corpus case(s) from "
        << cr.corpus.string() << " first\n";
}

// A new finding's minimal case, written into the corpus at once.
void save_finding(const ContractRun& cr, const FuzzOptions& o, const ContractFinding& f, std::ostream& out) {
  if (cr.corpus.empty() || f.cases_tried == 0 || !f.minimal) return;  // replayed: already there
  const std::string mistake = f.mistake.empty() ? "" : "-" + f.mistake.arg + "-" + f.mistake.kind;
  const fs::path file = cr.corpus / file_safe(cr.target + "-" + to_string(f.clause) + "-" +
                                              (f.mode ? to_string(*f.mode) : "") + mistake + ".yaml");
  try {
    fs::create_directories(cr.corpus);
    write_case_file(file.string(),
                    {"", cr.contract->file, cr.target, f.clause, f.mode, f.message, o.check.seed,
                     static_cast<int>(f.cases_tried), {}},
                    *f.minimal, *cr.contract);
    out << "[opcontract] " << cr.target << ": new " << f.clause << " finding saved to " << file.string() << "\n";
  } catch (const std::exception& e) {
    // The finding stays in the results; only its corpus copy is missing.
    out << "[opcontract] " << cr.target << ": could not save the " << f.clause << " finding to " << file.string()
        << ": " << e.what() << "\n";
  }
}

void print_progress(const ContractResult& r, double rate, bool tty) {
  int hit = 0;
  for (const auto& b : r.branches) hit += b.second > 0;
  std::fprintf(stderr, "%s[opcontract] %s: %d cases, %.0f cases/s, branches %d/%zu, %zu finding(s)%s", tty ? "\r" : "",
               r.target.c_str(), static_cast<int>(r.cases), rate, hit, r.branches.size(), r.findings.size(), tty ? "" : "\n");
}

// The campaign's exit code once every contract ran or it stopped.
int campaign_exit(const std::vector<RunEntry>& run, std::ostream& out) {
  bool stopped = false, errors = false, findings = false;
  for (const auto& e : run) {
    stopped |= e.result.stopped;
    errors |= e.result.verdict == Verdict::Error;
    findings |= e.result.verdict == Verdict::Fail;
  }
  if (stopped) {
    out << "stopped early: what was found is kept; the same command resumes\n";
    return 130;
  }
  return errors ? 2 : findings ? 1 : 0;
}

}  // namespace

double parse_duration(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a duration (90, 90s, 15m, 2h)");
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || !(v > 0) || v * scale > 7 * 86400)
    throw std::invalid_argument("'" + text + "' is not a duration of up to a week (90, 90s, 15m, 2h)");
  return v * scale;
}

int run_fuzz_campaign(const std::vector<std::shared_ptr<const Contract>>& contracts,
                      const FuzzOptions& o, std::ostream& out) {
  fs::create_directories(o.out_dir);
  if (!o.corpus_dir.empty()) fs::create_directories(o.corpus_dir);
  const std::string results = (fs::path(o.out_dir) / ("results" + shard_suffix(o) + ".json")).string();
  const bool tty = isatty(STDERR_FILENO);
  std::vector<RunEntry> run;
  for (const auto& c : contracts) {
    const ContractRun cr = contract_run(c, o);
    CheckOptions options = contract_options(cr, o, out);
    announce(cr, o, options, out);
    options.on_finding = [&](const ContractFinding& f) { save_finding(cr, o, f, out); };
    options.progress = [tty](const ContractResult& r, double rate) { print_progress(r, rate, tty); };
    RunEntry e;
    e.contract = c;
    e.replay_base = o.replay_base + " " + c->file + " --target " + cr.target;
    e.case_replay_base = o.case_replay_base;
    // Every few seconds, the state and the results so far: a killed campaign (SIGKILL, an
    // OOM kill, a lost CI runner) resumes within seconds of where it was.
    options.checkpoint = [&](const ContractResult& so_far) {
      try {
        save_state(cr.state, o, cr.target, so_far.next_case);
        std::vector<RunEntry> with_partial = run;
        with_partial.push_back(e);
        with_partial.back().result = so_far;
        settle_entry(with_partial.back());
        write_file_atomically(results, json_report(with_partial, read_platform()));
      } catch (const std::exception& err) {
        // The campaign goes on; its end writes everything again.
        out << "[opcontract] could not save the progress: " << err.what() << "\n";
      }
    };
    e.result = check_contract(*c, cr.target, options);
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (e.result.verdict != Verdict::Error) save_state(cr.state, o, cr.target, e.result.next_case);
    settle_entry(e);
    run.push_back(std::move(e));
    print_text_report(out, {run.back()});
    write_file_atomically(results, json_report(run, read_platform()));  // after each contract: nothing is lost
    if (run.back().result.stopped) break;
  }
  out << "\nresults: " << results << "\n";
  int captured = 0;
  for (const auto& e : run) captured += e.result.captured_lines;
  out << captured_output_line(captured);
  return campaign_exit(run, out);
}

}  // namespace opc::cli
