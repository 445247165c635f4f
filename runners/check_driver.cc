#include "runners/check_driver.h"

#include <rapidcheck/GenerationFailure.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>

#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/shrink.h"
#include "generators/targeting.h"
#include "runners/case_worker.h"
#include "runners/compiled_runner.h"
#include "runners/cudagraph_runner.h"
#include "runners/eager_runner.h"
#include "runners/error_text.h"
#include "runners/fake_runner.h"
#include "runners/oracles/oracles.h"
#include "runners/oracles/storage_diff.h"
#include "runners/python_bridge.h"
#include "runners/torch_compile_runner.h"

namespace opc {
namespace {

// The exception in flight, in words; `contract_named` says whether they name the contract
// file already (a ContractError's file:line:column, a CheckError's context).
std::string in_flight_text(bool& contract_named) {
  contract_named = false;
  try {
    throw;
  } catch (const CheckError& e) {
    contract_named = true;
    return e.what();
  } catch (const ContractError& e) {
    contract_named = true;
    return e.what();
  } catch (const rc::GenerationFailure& e) {
    return std::string("no case meets the constraints and requires (") + e.what() +
           "); loosen them or widen the dims";
  } catch (const EvalError& e) {
    return std::string("a contract expression failed: ") + e.what();
  } catch (const std::exception& e) {
    return error_text(e);
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::vector<Finding> case_findings_unguarded(const CaseOps& ops, const Contract& contract,
                                             const Case& c, const CaseFacts& facts,
                                             const std::vector<Mode>& modes,
                                             std::vector<bool>* written, Mode& current) {
  const OpBinding& op = ops.op;
  auto entering = [&](Mode m) {
    current = m;
    if (ops.on_mode) ops.on_mode(m);
  };
  entering(Mode::Eager);
  if (const std::vector<int> broken = broken_requires(facts, contract); !broken.empty()) {
    const Observation eager = rerun_eager(op, contract, c, materialize(c, contract, facts));
    std::vector<Finding> out = check_precondition({contract, broken, eager});
    for (Finding& f : out) f.mode = to_string(Mode::Eager);
    return out;
  }
  Observation eager = run_eager(op, contract, c, materialize(c, contract, facts));
  if (written)
    for (const ArgObservation& a : eager.tensors)
      if (!(*written)[a.arg] && !changed_elements(a).empty()) (*written)[a.arg] = true;
  std::vector<Finding> out;
  auto add = [&](std::vector<Finding> found, Mode mode) {
    for (Finding& f : found) {
      f.mode = to_string(mode);
      out.push_back(std::move(f));
    }
  };
  if (eager.threw) {
    add({{"crash", "the op threw on a case that meets the contract's constraints and requires: " +
                       eager.error}},
        Mode::Eager);
  } else {
    const OracleInput in{contract, op.annotations, facts, eager};
    for (auto check : {check_alias, check_mutation, check_write, check_extent}) add(check(in), Mode::Eager);
    if (contract.donates) add(check_functional_overload(in), Mode::Eager);
    if (ops.reference) {
      const Observation ref = rerun_eager(*ops.reference, contract, c, materialize(c, contract, facts));
      add(check_reference({contract, op.annotations, eager, ref}), Mode::Eager);
    }
    if (c.inplace >= 0) {
      const Observation in_place = run_in_place(op, contract, c, materialize(c, contract, facts));
      add(check_inplace({contract, op.annotations, contract.inplace[c.inplace], eager, in_place}), Mode::Eager);
    }
  }
  if (contract.padding) {
    auto padded_run = [&](int variant) {
      Materialized m = materialize(c, contract, facts);
      fill_padding(m, contract, facts.input(), variant);
      return rerun_eager(op, contract, c, std::move(m));
    };
    const Observation nan_padded = padded_run(0), finite_padded = padded_run(1);
    add(check_padding({contract, op.annotations, facts, nan_padded, finite_padded}), Mode::Eager);
  }
  if (contract.deterministic) {
    const Observation again = rerun_eager(op, contract, c, materialize(c, contract, facts));
    add(check_determinism({contract, op.annotations, eager, again}), Mode::Eager);
  }
  if (std::find(modes.begin(), modes.end(), Mode::Fake) != modes.end()) {
    entering(Mode::Fake);
    if (ops.real_pytorch) {
      const Observation fake = run_fake_pytorch(op, contract, c, facts, false);
      std::vector<Finding> found = check_fake({contract, facts, eager, fake});
      // vLLM compiles with a dynamic token dimension: a fake that is right on concrete
      // sizes may still fail on symbolic ones.
      if (found.empty()) {
        const Observation symbolic = run_fake_pytorch(op, contract, c, facts, true);
        found = check_fake({contract, facts, eager, symbolic});
        for (Finding& f : found)
          f.message = "with symbolic sizes (a ShapeEnv, as torch.compile(dynamic=True) traces it; "
                      "static sizes pass): " + f.message;
      }
      add(std::move(found), Mode::Fake);
    } else {
      add(check_fake({contract, facts, eager, run_fake_meta(op, contract, c, facts)}), Mode::Fake);
    }
  }
  if (std::find(modes.begin(), modes.end(), Mode::Compiled) != modes.end()) {
    entering(Mode::Compiled);
    if (ops.real_pytorch)
      for (const char* backend : kTorchCompileBackends) {
        if (ops.on_compile) ops.on_compile(true);
        const TorchCompileRun run = run_torch_compile(op, contract, c, facts, backend);
        if (ops.on_compile) ops.on_compile(false);
        if (!run.skipped) add(check_torch_compile({contract, op.annotations, backend, eager, run.obs}), Mode::Compiled);
      }
    const CompiledObservation compiled = run_compiled(op, contract, c, facts);
    std::vector<Finding> modelled = check_compiled({contract, op.annotations, eager, compiled});
    for (Finding& f : modelled) f.message = "opcontract's C++ model of torch.compile: " + f.message;
    add(std::move(modelled), Mode::Compiled);
    // vLLM's reinplacing pass swaps in the donating overload where the donated inputs die.
    if (ops.donating && !eager.threw) {
      const Observation donated = run_eager(*ops.donating, contract, c, materialize(c, contract, facts));
      add(check_donating_overload({contract, ops.donating->annotations, eager, donated}),
          Mode::Compiled);
    }
    if (contract.padding) {
      const CompiledObservation nan_padded = run_compiled(op, contract, c, facts, 0);
      const CompiledObservation finite_padded = run_compiled(op, contract, c, facts, 1);
      add(check_padding({contract, op.annotations, facts, nan_padded.obs, finite_padded.obs}),
          Mode::Compiled);
    }
  }
  if (std::find(modes.begin(), modes.end(), Mode::Cudagraph) != modes.end()) {
    entering(Mode::Cudagraph);
    add(check_cudagraph(run_cudagraph(op, contract, c)), Mode::Cudagraph);
  }
  return out;
}

}  // namespace

std::vector<Finding> case_findings(const CaseOps& ops, const Contract& contract, const Case& c,
                                   const CaseFacts& facts, const std::vector<Mode>& modes,
                                   std::vector<bool>* written) {
  Mode current = Mode::Eager;
  try {
    return case_findings_unguarded(ops, contract, c, facts, modes, written, current);
  } catch (const CheckError&) {
    throw;
  } catch (...) {
    // Not the op's doing (its throws are observed): an error of the check itself, said
    // with where it happened so that it can be reproduced.
    bool named = false;
    const std::string why = in_flight_text(named);
    throw CheckError(contract.file + ", target " + ops.op.name + ", in the " + to_string(current) +
                     " mode, on the case " + describe(c, contract) + ": " + why +
                     (verbose_errors() ? "" : kVerboseHint));
  }
}

namespace {

// Cases are built from the contract's schema: they fit the registered op only when the
// argument and return types agree (annotations may differ; the schema clause says so).
std::string unfit_reason(const c10::FunctionSchema& want, const c10::FunctionSchema& got) {
  auto types = [](const std::vector<c10::Argument>& v) {
    std::vector<std::string> t;
    for (const auto& a : v) t.push_back(a.type()->str());
    return t;
  };
  if (types(want.arguments()) != types(got.arguments()) || types(want.returns()) != types(got.returns()))
    return "the registered schema's argument or return types differ from the contract's, so "
           "no case fits it (see the schema finding)";
  return "";
}

const Finding* find_same(const std::vector<Finding>& fs, const Finding& like) {
  for (const Finding& f : fs)
    if (f.clause == like.clause && f.mode == like.mode) return &f;
  return nullptr;
}

// Shrinks a failing case while the same clause keeps failing in the same mode, so one
// bug does not slide into another on the way down.
ContractFinding shrink(CaseWorker& worker, rc::Shrinkable<Case> failing, const Finding& first,
                       int budget) {
  ContractFinding f;
  f.clause = first.clause;
  f.mode = first.mode;
  f.message = first.message;
  auto r = shrink_while(std::move(failing), [&](const Case& c) {
    const std::vector<Finding> fs = worker.run(c).findings;
    const Finding* same = find_same(fs, first);
    if (same) f.message = same->message;
    return same != nullptr;
  }, budget);
  f.minimal = r.minimal.value();
  f.shrink_steps = r.steps;
  f.has_case = true;
  return f;
}

// Marks the findings listed as known; a listed one that did not occur becomes a finding
// of its own, so a fixed op makes its contract (or the ratchet file) drop the entry.
void apply_known_findings(const std::vector<KnownFinding>& known, const std::string& where,
                          ContractResult& r) {
  for (const KnownFinding& k : known) {
    bool occurred = false;
    for (ContractFinding& f : r.findings)
      if (f.clause == k.clause && (k.mode.empty() || f.mode == k.mode) && f.known.empty()) {
        f.known = k.reason;
        occurred = true;
      }
    if (!occurred && !k.sometimes)
      r.findings.push_back({k.clause, k.mode,
                            "listed under " + where + " (" + to_string(k.loc) + ": " + k.reason +
                                ") but not found in " + std::to_string(r.cases) +
                                " cases: if the op was fixed, remove the entry"});
  }
}

}  // namespace

std::vector<std::string> found_clauses(const ContractResult& r) {
  std::set<std::string> s;
  for (const auto& f : r.findings) s.insert(f.clause);
  return {s.begin(), s.end()};
}

CaseOps case_ops(const BoundOps& bound, const Contract& contract, const CheckOptions& options,
                 std::map<Mode, std::string>& ran_as) {
  CaseOps ops = bound.ops();
  auto wanted = [&](Mode m) {
    return !contract.skip.count(m) &&
           (options.modes.empty() || std::find(options.modes.begin(), options.modes.end(), m) != options.modes.end());
  };
  std::string no_pytorch = "--no-python";
  if (options.python && (wanted(Mode::Fake) || wanted(Mode::Compiled))) {
    try {
      python::start();  // before the worker forks, so that the worker has it too
      if (wanted(Mode::Compiled)) python::warm_up_compile();
      ops.real_pytorch = true;
    } catch (const std::exception& e) {
      no_pytorch = e.what();
    }
  }
  ran_as[Mode::Fake] = ops.real_pytorch
                           ? "PyTorch's FakeTensorMode (its Python fakes and Meta kernels), static and "
                             "symbolic sizes"
                           : "the op's C++ Meta kernel on concrete sizes, not PyTorch's FakeTensorMode (" +
                                 no_pytorch + ")";
  ran_as[Mode::Compiled] = ops.real_pytorch
                               ? "torch.compile (aot_eager and inductor, fullgraph, dynamic; up to " +
                                     std::to_string(kTorchCompileGraphBudget) +
                                     " graphs per backend, cases needing more ran in the model only) and "
                                     "opcontract's C++ model of it"
                               : "opcontract's C++ model of torch.compile only, not torch.compile itself (" +
                                     no_pytorch + ")";
  return ops;
}

BoundOps bind_ops(const Contract& contract, const std::string& target) {
  const SourceLoc& where = target == contract.port ? contract.port_loc : contract.op_loc;
  BoundOps b{bind_op(target, target == contract.op ? contract.overload : "", where), {}, {}};
  if (!contract.reference.empty()) {
    b.reference = bind_op(contract.reference, "", contract.reference_loc);
    if (auto why = unfit_reason(*contract.schema, b.reference->handle.schema()); !why.empty())
      throw ContractError(contract.reference_loc, "the reference " + contract.reference +
                                                      " does not take the contract's schema: " +
                                                      b.reference->handle.schema().name() + " is '" +
                                                      toString(b.reference->handle.schema()) + "'");
  }
  if (contract.donates && !contract.skip.count(Mode::Compiled)) {
    b.donating = bind_op(target, contract.donates->overload, contract.donates->loc);
    if (auto why = unfit_reason(*contract.schema, b.donating->handle.schema()); !why.empty())
      throw ContractError(contract.donates->loc,
                          "the donating overload " + b.donating->name + " does not take the "
                          "contract's argument and return types: it is '" +
                          toString(b.donating->handle.schema()) + "'");
  }
  return b;
}

std::string check_error_text(const Contract& contract) {
  bool named = false;
  const std::string text = in_flight_text(named);
  return named ? text : contract.file + ": " + text;
}

namespace {

// What a check of `target` under `contract` is a check of, in words (ContractResult::checked).
std::string checked_text(const Contract& contract, const std::string& target) {
  if (target == contract.port) return "opcontract's port of " + contract.op;
  for (const Regression& g : contract.regressions)
    if (g.target == target) return "a historical variant of " + contract.op + " (opcontract's port)";
  if (target != contract.op) return "";
  if (contract.written_for.empty()) return "";
  const std::string dist = contract.written_for.substr(0, contract.written_for.find(' '));
  const std::string want = contract.written_for.substr(dist.size() + 1);
  std::string found;
  try {
    found = python::installed_version(dist);
  } catch (const std::exception&) {
    return contract.written_for + ", as the contract says (the installed version is unknown "
                                  "without the embedded Python)";
  }
  if (found.empty()) return dist + " (not installed here; the contract is written for " + want + ")";
  return dist + " " + found + (found == want ? "" : " (the contract is written for " + want + ")");
}

}  // namespace

ContractResult check_contract(const Contract& contract, const std::string& target,
                              const CheckOptions& options) {
  ContractResult r;
  r.file = contract.file;
  r.op = contract.op;
  r.target = target;
  r.checked = checked_text(contract, target);
  r.seed = options.seed;
  // Every mode has a result, whatever ends the check: the ones that run are set after.
  for (Mode m : kAllModes) {
    const auto skip = contract.skip.find(m);
    r.modes[m] = {"not_run", 0,
                  skip != contract.skip.end() ? std::string(kSkippedByContract) + ": " + skip->second
                                              : "the check ended (see its error) before this mode ran"};
  }
  try {
    const BoundOps bound = bind_ops(contract, target);
    const OpBinding& op = bound.op;
    if (auto f = check_schema(contract, op.handle.schema()))
      r.findings.push_back({f->clause, "", f->message});
    if (bound.donating)
      if (auto f = check_donating_schema(contract, bound.donating->annotations))
        r.findings.push_back({f->clause, to_string(Mode::Compiled), f->message});
    std::map<Mode, std::string> ran_as;
    const CaseOps ops = case_ops(bound, contract, options, ran_as);
    auto contract_ptr = std::make_shared<const Contract>(contract);
    CaseWorker worker(ops, *contract_ptr, isolation_for(contract, options));
    std::map<Mode, std::string> not_run;
    const std::vector<Mode> run_modes = modes_to_run(contract, options.modes, op, worker, not_run);
    for (const auto& [m, why] : not_run) r.modes[m] = {"not_run", 0, why};
    const std::string unfit = unfit_reason(*contract.schema, op.handle.schema());
    // Every mode runs on the eager mode's cases: without them, none runs.
    const std::string no_cases = !unfit.empty() ? unfit
                                 : contract.skip.count(Mode::Eager)
                                     ? "the eager mode, whose cases every mode runs, is skipped by the contract"
                                     : "";
    if (!no_cases.empty())
      for (Mode m : run_modes)
        if (!contract.skip.count(m)) r.modes[m] = {"not_run", 0, no_cases};
    if (unfit.empty() && !contract.skip.count(Mode::Eager)) {
      const rc::Gen<Case> gen = case_gen(contract_ptr);
      // One case in ten breaks a requires on purpose, once a first valid case has run.
      std::optional<rc::Gen<Case>> violating;
      if (!contract.requires_.empty()) violating = violating_case_gen(contract_ptr);
      int violating_made = 0;
      rc::Random master(options.seed);
      Coverage coverage(contract);
      std::set<std::string> seen;  // clause/mode pairs already found and shrunk
      worker.set_modes(run_modes);
      std::vector<bool> written(contract.args.size(), false);
      for (const auto& b : contract.branches) r.branches.emplace_back(b.name, 0);
      // Each in-place use the contract lists is a branch of its own: it must be reached.
      const size_t first_inplace = r.branches.size();
      for (const InplaceSpec& s : contract.inplace)
        r.branches.emplace_back("in_place(" + contract.args[s.into].name + "=" + contract.args[s.from].name + ")", 0);
      // Runs one case and keeps each new kind of finding: shrunk when the case came from
      // the generator (`shrinkable`), as it is when it was replayed.
      auto run_case = [&](const Case& c, bool breaks, const rc::Shrinkable<Case>* shrinkable,
                          int found_at, const std::string& from_file) {
        ++r.cases;
        if (!breaks) {
          const CaseFacts facts(c, contract);
          for (size_t b = 0; b < contract.branches.size(); ++b)
            r.branches[b].second += contract.branches[b].expr.eval(facts.input()) != 0;
          if (c.inplace >= 0) ++r.branches[first_inplace + c.inplace].second;
        }
        const CaseOutcome outcome = worker.run(c);
        for (int w : outcome.written) written[w] = true;
        for (const Finding& f : outcome.findings) {
          if (!seen.insert(f.clause + "/" + f.mode).second) continue;
          ContractFinding cf;
          if (shrinkable && !outcome.hung) {
            cf = shrink(worker, *shrinkable, f, options.max_shrink_runs);
          } else {
            // A hang is not shrunk: every smaller try would wait out the time limit too.
            cf = {f.clause, f.mode,
                  f.message + (shrinkable ? " (not shrunk: each try costs the time limit)" : ""),
                  true, c};
          }
          cf.cases_tried = found_at;
          cf.from_file = from_file;
          r.findings.push_back(cf);
          if (options.on_finding) options.on_finding(cf);
        }
      };
      auto stopping = [&] {
        return (options.stop && options.stop->load()) ||
               (options.deadline && std::chrono::steady_clock::now() >= *options.deadline);
      };
      for (const auto& [file, c] : options.replay_first) {
        if (stopping()) break;
        ++r.replayed;
        run_case(c, !broken_requires(CaseFacts(c, contract), contract).empty(), nullptr, 0, file);
      }
      // Each mode that ran passes unless it found something.
      auto settle_modes = [&](ContractResult& result) {
        for (Mode m : run_modes) {
          bool failed = false;
          for (const auto& f : result.findings) failed |= f.mode == to_string(m);
          const auto how = ran_as.find(m);
          result.modes[m] = {failed ? "fail" : "pass", result.cases, "",
                             how == ran_as.end() ? "" : how->second};
        }
      };
      const auto start = std::chrono::steady_clock::now();
      auto last_report = start, last_checkpoint = start;
      int ran = 0;
      int i = 0;
      for (; i < options.cases && !stopping(); ++i) {
        if (options.progress && ran % 64 == 63) {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_report >= std::chrono::seconds(1)) {
            last_report = now;
            options.progress(r, ran / std::chrono::duration<double>(now - start).count());
          }
        }
        // Every case is drawn, run or not, so that case i is the same in every shard
        // and after a resume.
        bool breaks = violating && i % 10 == 9;
        auto draw_valid = [&] {
          return options.targeted ? targeted_draw(gen, master.split(), i % 101, coverage)
                                  : gen(master.split(), i % 101);
        };
        rc::Shrinkable<Case> s = breaks ? (*violating)(master.split(), i % 101) : draw_valid();
        Case c;
        try {
          c = s.value();
        } catch (const rc::GenerationFailure&) {
          if (!breaks) throw;
          // This draw found no case breaking a requires: a valid case takes its place.
          breaks = false;
          s = draw_valid();
          c = s.value();
        }
        if (!breaks) coverage.add(c);
        if (i < options.first_case || i % options.shards != options.shard) continue;
        violating_made += breaks;
        ++ran;
        run_case(c, breaks, &s, i + 1, "");
        if (options.checkpoint) {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_checkpoint >= std::chrono::duration<double>(options.checkpoint_every_s)) {
            last_checkpoint = now;
            ContractResult so_far = r;
            so_far.next_case = i + 1;
            so_far.stopped = true;
            settle_modes(so_far);
            so_far.verdict = so_far.findings.empty() ? "pass" : "fail";
            options.checkpoint(so_far);
          }
        }
      }
      r.next_case = i;
      r.stopped = options.stop && options.stop->load();
      settle_modes(r);
      for (const ArgSpec& a : contract.args)
        if (a.is_tensor && op.annotations.mutable_arg[a.index] && !written[a.index])
          r.warnings.push_back("argument '" + a.name + "' is declared mutable but was never "
                               "written in " + std::to_string(r.cases) +
                               " cases: an over-declared mutation costs the compiler clones");
      if (violating && violating_made == 0 && r.cases >= 10)
        r.warnings.push_back("no generated case broke any requires:, so the precondition clause "
                             "was not checked: let dims or layouts reach inputs that break them");
      // A run stopped early (Ctrl-C, bench once it caught what it looks for) is not
      // judged on coverage.
      for (size_t b = 0; b < contract.branches.size() && !r.stopped; ++b) {
        if (r.branches[b].second == 0)
          r.findings.push_back({"branches", "", "branch '" + contract.branches[b].name + "' (" +
                                                    contract.branches[b].expr.text() +
                                                    ") was never hit in " + std::to_string(r.cases) +
                                                    " cases: widen the dims or add a favor: value"});
      }
      for (size_t k = 0; k < contract.inplace.size() && !r.stopped; ++k)
        if (r.branches[first_inplace + k].second == 0)
          r.findings.push_back({"branches", "", "the in-place use " + contract.inplace_text(static_cast<int>(k)) +
                                                    " (aliasing.inplace) was never made in " + std::to_string(r.cases) +
                                                    " cases: the two never had the same dtype, shape and a layout "
                                                    "the constraints allow"});
    }
    if (target == contract.op || target == contract.port)
      apply_known_findings(contract.known_findings, "known_findings", r);
    apply_known_findings(options.known, "the known-findings file", r);
    r.verdict = std::all_of(r.findings.begin(), r.findings.end(),
                            [](const ContractFinding& f) { return !f.known.empty(); })
                    ? "pass"
                    : "fail";
  } catch (...) {
    r.verdict = "error";
    r.error = check_error_text(contract);
  }
  return r;
}

}  // namespace opc
