#include "check/case_loop.h"

#include <rapidcheck/Shrinkable.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check/case_draws.h"
#include "check/shrink_finding.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/misuse.h"
#include "spec/contract.h"
#include "support/names.h"
#include "support/output_capture.h"

namespace opc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Caller's mistakes are judged by running the op, in eager mode.
bool runs_eager(const ModePlan& plan) {
  return std::find(plan.run.begin(), plan.run.end(), Mode::Eager) != plan.run.end();
}

class CaseLoop {
 public:
  CaseLoop(std::shared_ptr<const Contract> contract, const OpBinding& op, const CheckOptions& options,
           const ModePlan& plan, CaseWorker& worker, const KnownHere& known, ContractResult& r)
      : contract_ptr_(std::move(contract)),
        contract_(*contract_ptr_),
        op_(op),
        options_(options),
        plan_(plan),
        worker_(worker),
        known_(known),
        r_(r),
        draws_(contract_ptr_, options.seed, options.targeted, options.misuse && runs_eager(plan)),
        written_(contract_.args.size(), false) {}

  void run() {
    worker_.set_modes(plan_.run);
    list_branches();
    replay_corpus();
    const int next_case = run_generated();
    finish(next_case);
  }

 private:
  // Declared branches, then each in-place use the contract lists: a branch of its own,
  // which must be reached too.
  void list_branches() {
    for (const auto& b : contract_.branches) r_.branches.emplace_back(b.name, 0);
    first_inplace_ = r_.branches.size();
    for (const InplaceSpec& s : contract_.inplace)
      r_.branches.emplace_back("in_place(" + contract_.args[s.into].name + "=" + contract_.args[s.from].name + ")", 0);
  }

  bool stopping() const {
    return (options_.stop && options_.stop->load()) || (options_.deadline && Clock::now() >= *options_.deadline);
  }

  void replay_corpus() {
    for (const auto& [file, c] : options_.replay_first) {
      if (stopping()) break;
      ++r_.replayed;
      run_case(c, !broken_requires(CaseFacts(c, contract_), contract_).empty(), nullptr, 0, file);
    }
  }

  // Returns the generated case a resumed run goes on from.
  int run_generated() {
    start_ = last_report_ = last_checkpoint_ = Clock::now();
    int i = 0;
    for (; i < options_.cases && !stopping(); ++i) {
      report_progress();
      // Every case is drawn, run or not, so that case i is the same in every shard and
      // after a resume.
      const CaseDraws::Draw d = draws_.next(i);
      if (i < options_.first_case || i % options_.shards != options_.shard) continue;
      violating_made_ += d.breaks_requires;
      ++ran_;
      run_case(d.c, d.breaks_requires, &d.shrinkable, i + 1, "");
      if (d.misuse) run_misuse(d, i + 1);
      checkpoint(i + 1);
    }
    return i;
  }

  // The draw's caller's mistake, a case of its own: not counted in the valid cases or the
  // branches, shrunk as its valid case shrinks.
  // They run in a worker of their own, forked anew after each that found something: an
  // accepted mistake may leave the heap corrupt, and no case after it must crash for it.
  void run_misuse(const CaseDraws::Draw& d, int found_at) {
    Case c = d.c;
    c.misuse = *d.misuse;
    const rc::Shrinkable<Case> shrinkable = misused(d.shrinkable, *d.misuse);
    CaseWorker& worker = misuse_worker();
    const auto began = Clock::now();
    const CaseOutcome outcome = worker.run(c);
    r_.seconds.misuse += seconds_since(began);
    if (declined(outcome)) return;
    ++r_.misuse_cases;
    add_unique(r_.mistakes_tried, MistakeId{contract_.args[c.misuse.arg].name, to_string(c.misuse.kind)});
    keep_new_findings(worker, outcome, c, &shrinkable, found_at, "");
  }

  // Runs one case and keeps each new kind of finding: shrunk when the case came from the
  // generator (`shrinkable`), as it is when it was replayed.
  void run_case(const Case& c, bool breaks, const rc::Shrinkable<Case>* shrinkable, int found_at,
                const std::string& from_file) {
    const bool fenced = c.misuse || c.fenced;  // a corpus case may be a mistake, or its valid call fenced
    CaseWorker& worker = fenced ? misuse_worker() : worker_;
    const auto began = Clock::now();
    const CaseOutcome outcome = worker.run(c);
    (fenced ? r_.seconds.misuse : r_.seconds.cases) += seconds_since(began);
    if (declined(outcome)) return;
    ++r_.cases;
    if (!breaks && !fenced) count_branches(c);
    if (!fenced)
      for (const auto& [m, s] : outcome.mode_seconds) r_.seconds.modes[m] += s;
    for (int w : outcome.written) written_[w] = true;
    keep_new_findings(worker, outcome, c, shrinkable, found_at, from_file);
  }

  // A case the contract's python_state hook declined (not a call the program makes here) is
  // counted by its reason and judged no further.
  bool declined(const CaseOutcome& outcome) {
    if (outcome.declined.empty()) return false;
    ++r_.declined[outcome.declined];
    return true;
  }

  CaseWorker& misuse_worker() {
    if (!misuse_worker_) misuse_worker_ = worker_.mistakes_twin();
    return *misuse_worker_;
  }

  // Keeps each new kind of finding of a case `worker` ran, shrunk with that worker.
  void keep_new_findings(CaseWorker& worker, const CaseOutcome& outcome, const Case& c,
                         const rc::Shrinkable<Case>* shrinkable, int found_at, const std::string& from_file) {
    r_.captured_lines += count_lines(outcome.output);
    for (const Finding& f : outcome.findings) {
      const MistakeId mistake = mistake_of(f, c);
      if (!seen_.insert(to_string(f.clause) + "/" + to_string(f.mode) + "/" + mistake.text()).second) continue;
      // Each accepted mistake is a finding of its own; once found, the search tries others.
      if (!mistake.empty()) draws_.retire(c.misuse.arg, c.misuse.kind);
      const auto began = Clock::now();
      ShrunkFinding s = shrinkable && !outcome.hung ? shrink(worker, *shrinkable, f, outcome)
                                                    : unshrunk(f, c, outcome, shrinkable != nullptr);
      ContractFinding& cf = s.finding;
      cf.mistake = mistake;
      // A mistake's fault its valid call has too is the valid call's (CaseWorker::run).
      if (cf.clause == Clause::Crash && cf.minimal && cf.minimal->misuse)
        cf.minimal = fenced_valid_call(*cf.minimal, contract_);
      if (s.died) cf.output = crash_output(worker, cf);
      r_.seconds.shrinking += seconds_since(began);
      cf.cases_tried = found_at;
      cf.from_file = from_file;
      if (cf.minimal) cf.case_json = case_json(*cf.minimal, contract_);
      r_.findings.push_back(cf);
      if (options_.on_finding) options_.on_finding(cf);
    }
  }

  // A misuse finding's mistake: its argument and kind, which shrinking keeps.
  MistakeId mistake_of(const Finding& f, const Case& c) const {
    if (f.clause != Clause::Misuse || !c.misuse) return {};
    return {contract_.args[c.misuse.arg].name, to_string(c.misuse.kind)};
  }

  // Shrinks a finding running only the modes it needs: eager, which every mode's oracles
  // compare with, and its own (a finding of the fake mode need not wait for two compiles).
  ShrunkFinding shrink(CaseWorker& worker, const rc::Shrinkable<Case>& shrinkable, const Finding& f,
                       const CaseOutcome& outcome) {
    const std::vector<Mode> all = worker.modes();
    std::vector<Mode> needed;
    for (Mode m : all)
      if (m == Mode::Eager || m == f.mode) needed.push_back(m);
    worker.set_modes(needed);
    ShrunkFinding s = shrink_finding(worker, shrinkable, outcome, f, options_.max_shrink_runs);
    worker.set_modes(all);
    return s;
  }

  // What a crash's minimal case printed: for a new finding (or any, with --verbose) its run
  // in a worker that keeps the libraries' crash handlers; a known one keeps its own run's.
  std::string crash_output(const CaseWorker& worker, const ContractFinding& cf) const {
    if (options_.capture_output && known_(cf))
      return cf.output + (cf.output.empty() || cf.output.back() == '\n' ? "" : "\n") +
             "(a known finding: its minimal case was not run again with the libraries' crash handlers; "
             "--verbose does it and prints what they print)\n";
    return last_words(worker, cf);
  }

  // The output of a crash's minimal case in a worker that keeps the libraries' crash
  // handlers (the cases ran without them: tvm_ffi's symbolised backtrace costs about a
  // second a crash); the case's own when that run does not crash the same way.
  static std::string last_words(const CaseWorker& worker, const ContractFinding& cf) {
    const CaseOutcome again = worker.crash_handlers_twin()->run(*cf.minimal);
    for (const Finding& g : again.findings)
      if (again.worker_died && g.clause == cf.clause && g.mode == cf.mode) return again.output;
    return cf.output;
  }

  // A replayed case's finding, or a hang's: a hang is not shrunk, since every smaller try
  // would wait out the time limit too.
  static ShrunkFinding unshrunk(const Finding& f, const Case& c, const CaseOutcome& outcome, bool generated) {
    ContractFinding cf{f.clause, f.mode, f.message + (generated ? " (not shrunk: each try costs the time limit)" : "")};
    cf.minimal = c;
    cf.output = outcome.output;
    return {std::move(cf), outcome.worker_died && !outcome.hung};
  }

  void count_branches(const Case& c) {
    const CaseFacts facts(c, contract_);
    for (size_t b = 0; b < contract_.branches.size(); ++b)
      r_.branches[b].second += contract_.branches[b].expr.eval(facts.input()) != 0;
    if (c.inplace >= 0) ++r_.branches[first_inplace_ + c.inplace].second;
  }

  // About once a second, looked at every 64 cases.
  void report_progress() {
    if (!options_.progress || ran_ % 64 != 63) return;
    const auto now = Clock::now();
    if (now - last_report_ < std::chrono::seconds(1)) return;
    last_report_ = now;
    options_.progress(r_, ran_ / std::chrono::duration<double>(now - start_).count());
  }

  void checkpoint(int next_case) {
    if (!options_.checkpoint) return;
    const auto now = Clock::now();
    if (now - last_checkpoint_ < std::chrono::duration<double>(options_.checkpoint_every_s)) return;
    last_checkpoint_ = now;
    ContractResult so_far = r_;
    so_far.next_case = next_case;
    so_far.stopped = true;
    settle_modes(so_far);
    so_far.verdict = so_far.findings.empty() ? Verdict::Pass : Verdict::Fail;
    options_.checkpoint(so_far);
  }

  // Each mode that ran passes unless it found something; none ran when the state hook
  // declined every case. The clauses each judged are the plan's, less the caller's
  // mistakes where none was made.
  void settle_modes(ContractResult& result) const {
    for (Mode m : plan_.run) {
      ModeResult& mr = result.modes[m];
      mr.judged = plan_.judged.at(m);
      if (result.misuse_cases == 0) std::erase(mr.judged, Clause::Misuse);
      if (result.cases == 0 && !result.declined.empty()) {
        mr.status = ModeStatus::NotRun;
        mr.reason = "the state hook declined every case: " + result.declined.begin()->first;
        continue;
      }
      // A caller's mistake accepted is the misuse clause's, not the mode's conformance.
      const bool failed = std::any_of(result.findings.begin(), result.findings.end(), [&](const ContractFinding& f) {
        return f.mode == m && f.clause != Clause::Misuse;
      });
      mr.status = failed ? ModeStatus::Fail : ModeStatus::Pass;
      mr.cases = result.cases;
      mr.reason.clear();
      const auto how = plan_.ran_as.find(m);
      mr.ran_as = how == plan_.ran_as.end() ? "" : how->second;
    }
  }

  void finish(int next_case) {
    r_.next_case = next_case;
    r_.misuse_pairs_possible = draws_.mistake_pairs();
    if (!options_.misuse) r_.misuse_not_run = "left out by --no-misuse";
    else if (!runs_eager(plan_)) r_.misuse_not_run = "the eager mode does not run";
    else if (!contract_.misuse_skip.empty()) r_.misuse_not_run = "skipped by the contract: " + contract_.misuse_skip;
    else if (r_.misuse_cases == 0) r_.misuse_not_run = "no case allowed a caller's mistake";
    r_.stopped = options_.stop && options_.stop->load();
    settle_modes(r_);
    add_warnings();
    // A run stopped early (Ctrl-C, bench once it caught what it looks for) is not judged
    // on coverage, nor is one whose every case the state hook declined (nothing ran).
    if (!r_.stopped && (r_.cases > 0 || r_.declined.empty())) add_coverage_findings();
  }

  void add_warnings() {
    const bool eager_ran = std::find(plan_.run.begin(), plan_.run.end(), Mode::Eager) != plan_.run.end();
    for (const ArgSpec& a : contract_.args)
      if (eager_ran && a.is_tensor && !a.always_none && op_.annotations.mutable_arg[a.index] && !written_[a.index])
        r_.warnings.push_back("argument '" + a.name + "' is declared mutable but was never written in " +
                              std::to_string(r_.cases) + " cases: an over-declared mutation costs the compiler clones");
    if (draws_.breaks_some() && violating_made_ == 0 && r_.cases >= 10)
      r_.warnings.push_back(
          "no generated case broke any requires:, so the precondition clause "
          "was not checked: let dims or layouts reach inputs that break them");
  }

  void add_coverage_findings() {
    const std::string in_cases = " in " + std::to_string(r_.cases) + " cases";
    for (size_t b = 0; b < contract_.branches.size(); ++b)
      if (r_.branches[b].second == 0)
        r_.findings.push_back({Clause::Branches, std::nullopt,
                               "branch '" + contract_.branches[b].name + "' (" + contract_.branches[b].expr.text() +
                                   ") was never hit" + in_cases + ": widen the dims or add a favor: value"});
    for (size_t k = 0; k < contract_.inplace.size(); ++k)
      if (r_.branches[first_inplace_ + k].second == 0)
        r_.findings.push_back({Clause::Branches, std::nullopt,
                               "the in-place use " + contract_.inplace_text(static_cast<int>(k)) +
                                   " (aliasing.inplace) was never made" + in_cases +
                                   ": the two never had the same dtype, shape and a layout "
                                   "the constraints allow"});
  }

  const std::shared_ptr<const Contract> contract_ptr_;
  const Contract& contract_;
  const OpBinding& op_;
  const CheckOptions& options_;
  const ModePlan& plan_;
  CaseWorker& worker_;
  const KnownHere& known_;
  std::unique_ptr<CaseWorker> misuse_worker_;  // eager only, forked anew after a finding
  ContractResult& r_;
  CaseDraws draws_;
  std::vector<bool> written_;         // per argument: some case's eager run wrote it
  std::set<std::string> seen_;        // clause/mode/mistake already found and shrunk
  size_t first_inplace_ = 0;          // r_.branches index of the first in-place use
  int violating_made_ = 0, ran_ = 0;  // generated cases run: breaking a requires, all
  Clock::time_point start_, last_report_, last_checkpoint_;
};

}  // namespace

void run_cases(std::shared_ptr<const Contract> contract, const OpBinding& op, const CheckOptions& options,
               const ModePlan& plan, CaseWorker& worker, const KnownHere& known, ContractResult& r) {
  CaseLoop(std::move(contract), op, options, plan, worker, known, r).run();
}

}  // namespace opc
