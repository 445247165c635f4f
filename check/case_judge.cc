#include "check/case_judge.h"

#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <optional>

#include "check/check_error.h"
#include "generators/case_gen.h"
#include "generators/misuse.h"
#include "oracles/storage_diff.h"
#include "runners/compiled_runner.h"
#include "runners/cudagraph_runner.h"
#include "runners/eager_runner.h"
#include "runners/fake_runner.h"
#include "runners/materialize.h"
#include "runners/python/bridge.h"
#include "runners/torch_compile_runner.h"
#include "support/error_text.h"

namespace opc {
namespace {

// One case through its modes, in order, collecting what each mode's oracles find.
class CaseJudge {
 public:
  CaseJudge(const CaseOps& ops, const Contract& contract, const Case& c, const CaseFacts& facts)
      : ops_(ops), op_(ops.op), contract_(contract), c_(c), facts_(facts) {}

  std::vector<Finding> judge(const std::vector<Mode>& modes, std::vector<bool>* written) {
    eager_runs_ = asks(modes, Mode::Eager);
    if (!eager_runs_) {
      if (asks(modes, Mode::Fake) && broken_requires(facts_, contract_).empty()) judge_fake_alone();
      return std::move(found_);
    }
    enter(Mode::Eager);
    if (c_.misuse) {
      judge_misuse();
      return std::move(found_);
    }
    if (c_.fenced) {
      run_fenced();
      return std::move(found_);
    }
    if (const std::vector<int> broken = broken_requires(facts_, contract_); !broken.empty()) {
      judge_precondition(broken);
      return std::move(found_);
    }
    const Observation eager = run_eager(op_, contract_, c_, fresh());
    note_written(eager, written);
    judge_eager(eager);
    if (judges(Mode::Eager, Clause::Padding) && has_padding_rows()) judge_padding_in_eager();
    if (judges(Mode::Eager, Clause::Determinism)) judge_determinism(eager);  // and Clause::Reads
    if (asks(modes, Mode::Fake)) judge_fake(eager);
    if (asks(modes, Mode::Compiled)) judge_compiled(eager);
    if (asks(modes, Mode::Cudagraph)) judge_cudagraph();
    return std::move(found_);
  }

  // The mode running now, for an error's message.
  Mode current() const { return current_; }

 private:
  static bool asks(const std::vector<Mode>& modes, Mode m) {
    return std::find(modes.begin(), modes.end(), m) != modes.end();
  }

  // Whether mode m judges the clause for this contract (spec/contract.h): the one rule the
  // check's plan records as judged.
  bool judges(Mode m, Clause c) const { return opc::judges(contract_, m, c, eager_runs_); }

  void enter(Mode m) {
    current_ = m;
    if (ops_.on_mode) ops_.on_mode(m);
  }

  void add(std::vector<Finding> found, Mode mode) {
    for (Finding& f : found) {
      f.mode = mode;
      found_.push_back(std::move(f));
    }
  }

  // Whether no input of the case holds a NaN or an infinity on purpose (its values drawn
  // finite; `non_finite` edge values are not).
  bool finite_inputs() const {
    for (const auto& a : c_.args)
      if (const auto* t = std::get_if<TensorCase>(&a); t && !t->none && t->form == ValueForm::NonFinite) return false;
    return true;
  }

  // Fresh tensors for another run of the same case: the case's values are drawn once,
  // each run gets a copy of them.
  Materialized fresh() {
    if (!drawn_) drawn_ = materialize(c_, contract_, facts_);
    return copy_of(*drawn_);
  }

  static void note_written(const Observation& eager, std::vector<bool>* written) {
    if (!written) return;
    for (const ArgObservation& a : eager.tensors)
      if (!(*written)[a.arg] && any_change(a)) (*written)[a.arg] = true;
  }

  // A case that breaks a requires: the op must refuse it; nothing else is judged.
  void judge_precondition(const std::vector<int>& broken) {
    const Observation eager = rerun_eager(op_, contract_, c_, fresh());
    if (judges(Mode::Eager, Clause::Precondition)) add(check_precondition({contract_, broken, eager}), Mode::Eager);
  }

  // The op handed a caller's mistake, in fenced memory; where the misuse keeps shapes
  // (layout, dtype), the valid call on the same values gives the results it should.
  void judge_misuse() {
    const std::optional<Case> handed_case = apply_misuse(c_, contract_);
    if (!handed_case) return;  // a smaller case the misuse does not apply to
    const CaseFacts handed_facts(*handed_case, contract_);
    Materialized handed_tensors = materialize(*handed_case, contract_, handed_facts, Placement::Fenced);
    std::optional<Observation> valid;
    if (c_.misuse.kind == MisuseKind::Layout || c_.misuse.kind == MisuseKind::Dtype)
      valid = valid_call_on(handed_tensors);
    Observation handed;
    try {
      handed = run_eager(op_, contract_, *handed_case, std::move(handed_tensors));
    } catch (const python::StateHookError&) {
      return;  // a mistake the contract's state hook cannot stage (it builds state from the arguments)
    }
    const std::string what = misuse_text(c_, contract_);
    if (judges(Mode::Eager, Clause::Misuse))
      add(check_misuse({contract_, op_.annotations, what, handed_facts, handed, valid ? &*valid : nullptr,
                        c_.misuse.kind == MisuseKind::Dtype}),
          Mode::Eager);
  }

  // The valid call in fenced memory: only whether it faults is asked of it (the worker's
  // death, judged_death); what it computes is the valid cases' to judge.
  void run_fenced() {
    try {
      run_eager(op_, contract_, c_, materialize(c_, contract_, facts_, Placement::Fenced));
    } catch (const python::StateHookError&) {
      // a call the contract's state hook cannot stage: nothing ran
    }
  }

  // The plain valid call (generators/misuse.h) on the values `handed` holds, before the op
  // touches them; nullopt when they cannot be made the same or the valid call gives two
  // answers. Only the misused argument's
  // values differ (the others are drawn alike); they are copied where no element would be
  // written twice, and across a dtype towards the valid one, so that both calls see the
  // same numbers.
  std::optional<Observation> valid_call_on(Materialized& handed) {
    const Case valid_case = plain_valid_call(c_, contract_);
    const CaseFacts valid_facts(valid_case, contract_);
    Materialized m = materialize(valid_case, contract_, valid_facts);
    const auto index_of = [&](const Materialized& x) {
      for (size_t i = 0; i < x.tensors.size(); ++i)
        if (x.tensors[i].arg == c_.misuse.arg) return i;
      return x.tensors.size();
    };
    const size_t v = index_of(m), h = index_of(handed);
    if (v == m.tensors.size() || h == handed.tensors.size()) return std::nullopt;
    at::Tensor& valid_view = m.tensors[v].view;
    at::Tensor& handed_view = handed.tensors[h].view;
    const bool into_valid = c_.misuse.kind == MisuseKind::Dtype || overlaps_itself(handed_view);
    at::Tensor& into = into_valid ? valid_view : handed_view;
    if (overlaps_itself(into)) return std::nullopt;
    into.copy_(into_valid ? handed_view : valid_view);
    Materialized again = copy_of(m);
    Observation valid = run_eager(op_, contract_, valid_case, std::move(m));
    // An op whose valid call is not reproducible has no one result a mistake's can be
    // held to; the determinism clause reports that on the valid cases.
    const Observation repeat = rerun_eager(op_, contract_, valid_case, std::move(again));
    if (!check_determinism({contract_, op_.annotations, valid, repeat}).empty()) return std::nullopt;
    return valid;
  }

  static bool overlaps_itself(const at::Tensor& t) { return at::has_internal_overlap(t) == at::MemOverlap::Yes; }

  void judge_eager(const Observation& eager) {
    if (eager.threw) {
      add({{Clause::Crash,
            "the op threw on a case that meets the contract's constraints and requires: " + eager.error}},
          Mode::Eager);
      return;
    }
    const OracleInput in{contract_, op_.annotations, facts_, eager};
    if (judges(Mode::Eager, Clause::Alias)) add(check_alias(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Mutation)) add(check_mutation(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Write)) add(check_write(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Extent)) add(check_extent(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Finite) && finite_inputs()) add(check_finite(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Donation)) add(check_functional_overload(in), Mode::Eager);
    if (judges(Mode::Eager, Clause::Reference) && ops_.reference) {
      const Observation ref = rerun_eager(*ops_.reference, contract_, c_, fresh());
      add(check_reference({contract_, op_.annotations, eager, ref}), Mode::Eager);
    }
    if (judges(Mode::Eager, Clause::Forms)) judge_forms(eager);
    if (c_.inplace >= 0) {
      const Observation in_place = run_in_place(op_, contract_, c_, fresh());
      add(check_inplace({contract_, op_.annotations, contract_.inplace[c_.inplace], eager, in_place}), Mode::Eager);
    }
  }

  // Whether a tensor the contract's `padding:` lists has padding rows in this case: when
  // none has, the two padded runs would be the same call twice, nothing padding could find.
  bool has_padding_rows() const {
    const PaddingSpec& p = *contract_.padding;
    const int64_t real = p.real.eval(facts_.input());
    for (int arg : p.args) {
      const std::vector<int64_t>& sizes = facts_.geometry(arg).sizes;
      if (p.dim < static_cast<int64_t>(sizes.size()) && sizes[p.dim] > real) return true;
    }
    return false;
  }

  void judge_padding_in_eager() {
    auto padded_run = [&](int variant) {
      Materialized m = fresh();
      fill_padding(m, contract_, facts_.input(), variant);
      return rerun_eager(op_, contract_, c_, std::move(m));
    };
    const Observation nan_padded = padded_run(0), finite_padded = padded_run(1);
    add(check_padding({contract_, op_.annotations, facts_, nan_padded, finite_padded}), Mode::Eager);
  }

  // The case again with each tensor argument in each other form its contract lists.
  void judge_forms(const Observation& eager) {
    for (const ArgSpec& a : contract_.args) {
      const auto* t = a.is_tensor ? std::get_if<TensorCase>(&c_.args[a.index]) : nullptr;
      if (!t || t->none) continue;
      for (size_t k = 0; k < a.forms.size(); ++k) {
        const std::vector<int64_t> sizes = form_sizes(a, k, *t);
        const std::optional<Observation> formed = run_in_form(op_, contract_, c_, fresh(), a.index, sizes);
        if (!formed) continue;  // this layout has no view in that form
        const std::string form = "'" + a.name + "' as " + shape_text(sizes) + " (forms[" + std::to_string(k) +
                                 "]) instead of " + shape_text(t->sizes);
        add(check_forms({contract_, op_.annotations, form, eager, *formed}), Mode::Eager);
      }
    }
  }

  // Form k of argument a on this case; a contract error when it does not hold the shape's elements.
  std::vector<int64_t> form_sizes(const ArgSpec& a, size_t k, const TensorCase& t) const {
    std::vector<int64_t> sizes;
    int64_t n = 1, want = 1;
    for (const Expr& e : a.forms[k]) n *= sizes.emplace_back(e.eval(facts_.input()));
    for (int64_t d : t.sizes) want *= d;
    if (n != want)
      throw ContractError(a.loc, "args." + a.name + ".forms[" + std::to_string(k) + "]: " + shape_text(sizes) +
                                     " holds " + std::to_string(n) + " elements where its shape " +
                                     shape_text(t.sizes) + " holds " + std::to_string(want) +
                                     "; a form is the same elements in other sizes");
    return sizes;
  }

  // One rerun serves determinism and reads: its arguments' surroundings hold poison. The
  // same bytes settle both; different ones are told apart by a run with the usual fill (the
  // same bytes as the first: the poison was read), then pinned on an argument and a side.
  void judge_determinism(const Observation& eager) {
    const bool reads = judges(Mode::Eager, Clause::Reads);
    Materialized m = fresh();
    if (reads) poison_surroundings(m, Surroundings::All);
    const Observation again = rerun_eager(op_, contract_, c_, std::move(m));
    std::vector<Finding> differ = check_determinism({contract_, op_.annotations, eager, again});
    if (differ.empty() || !reads) return add(std::move(differ), Mode::Eager);
    const Observation plain = rerun_eager(op_, contract_, c_, fresh());
    if (std::vector<Finding> nondet = check_determinism({contract_, op_.annotations, eager, plain}); !nondet.empty())
      return add(std::move(nondet), Mode::Eager);
    const Materialized drawn = fresh();
    for (const TensorArg& t : drawn.tensors)
      for (Surroundings where : {Surroundings::PastEnds, Surroundings::Gaps}) {
        Materialized one = fresh();
        poison_surroundings(one, where, t.arg);
        const Observation poisoned = rerun_eager(op_, contract_, c_, std::move(one));
        std::vector<Finding> found = check_reads({contract_, op_.annotations, eager, poisoned, t.arg, where});
        if (!found.empty()) return add(std::move(found), Mode::Eager);
      }
    add(check_reads({contract_, op_.annotations, eager, again, -1, Surroundings::All}), Mode::Eager);
  }

  void judge_fake(const Observation& eager) {
    enter(Mode::Fake);
    if (!judges(Mode::Fake, Clause::Fake)) return;
    if (!ops_.real_pytorch) {
      add(check_fake({contract_, facts_, eager, run_fake_meta(op_, contract_, c_, facts_)}), Mode::Fake);
      return;
    }
    const Observation fake = run_fake_pytorch(op_, contract_, c_, facts_, false);
    std::vector<Finding> found = check_fake({contract_, facts_, eager, fake});
    // vLLM compiles with a dynamic token dimension: a fake that is right on concrete
    // sizes may still fail on symbolic ones.
    if (found.empty()) {
      const Observation symbolic = run_fake_pytorch(op_, contract_, c_, facts_, true);
      found = check_fake({contract_, facts_, eager, symbolic});
      for (Finding& f : found)
        f.message =
            "with symbolic sizes (a ShapeEnv, as torch.compile(dynamic=True) traces it; "
            "static sizes pass): " +
            f.message;
    }
    add(std::move(found), Mode::Fake);
  }

  // An op that cannot run here (the contract skips eager): its fake against the contract's
  // returns: and the schema's aliasing, on static sizes, then symbolic ones.
  void judge_fake_alone() {
    enter(Mode::Fake);
    auto judged = [&](const Observation& fake) {
      std::vector<Finding> found = check_fake_alone({contract_, facts_, fake});
      if (!fake.threw && judges(Mode::Fake, Clause::Alias))
        for (Finding& f : check_alias({contract_, op_.annotations, facts_, fake})) {
          f.message = "the fake predicts it: " + f.message;
          found.push_back(std::move(f));
        }
      return found;
    };
    if (!ops_.real_pytorch) {
      add(judged(run_fake_meta(op_, contract_, c_, facts_)), Mode::Fake);
      return;
    }
    std::vector<Finding> found = judged(run_fake_pytorch(op_, contract_, c_, facts_, false));
    if (found.empty()) {
      found = judged(run_fake_pytorch(op_, contract_, c_, facts_, true));
      for (Finding& f : found) f.message = "with symbolic sizes (static sizes pass): " + f.message;
    }
    add(std::move(found), Mode::Fake);
  }

  void judge_compiled(const Observation& eager) {
    enter(Mode::Compiled);
    if (!judges(Mode::Compiled, Clause::Compiled)) return;
    if (ops_.real_pytorch) judge_torch_compile(eager);
    const CompiledObservation compiled = run_compiled(op_, contract_, c_, facts_);
    std::vector<Finding> modelled = check_compiled({contract_, op_.annotations, eager, compiled});
    for (Finding& f : modelled) f.message = "opcontract's C++ model of torch.compile: " + f.message;
    add(std::move(modelled), Mode::Compiled);
    // vLLM's reinplacing pass swaps in the donating overload where the donated inputs die.
    if (judges(Mode::Compiled, Clause::Donation) && ops_.donating && !eager.threw) {
      const Observation donated = run_eager(*ops_.donating, contract_, c_, fresh());
      add(check_donating_overload({contract_, ops_.donating->annotations, eager, donated}), Mode::Compiled);
    }
    if (judges(Mode::Compiled, Clause::Padding) && has_padding_rows()) {
      const CompiledObservation nan_padded = run_compiled(op_, contract_, c_, facts_, 0);
      const CompiledObservation finite_padded = run_compiled(op_, contract_, c_, facts_, 1);
      add(check_padding({contract_, op_.annotations, facts_, nan_padded.obs, finite_padded.obs}), Mode::Compiled);
    }
  }

  void judge_torch_compile(const Observation& eager) {
    for (const char* backend : kTorchCompileBackends) {
      if (ops_.off_the_clock) ops_.off_the_clock(true);
      const TorchCompileRun run = run_torch_compile(op_, contract_, c_, facts_, backend);
      if (ops_.off_the_clock) ops_.off_the_clock(false);
      if (!run.skipped) add(check_torch_compile({contract_, op_.annotations, backend, eager, run.obs}), Mode::Compiled);
    }
  }

  void judge_cudagraph() {
    enter(Mode::Cudagraph);
    if (judges(Mode::Cudagraph, Clause::Cudagraph))
      add(check_cudagraph(run_cudagraph(op_, contract_, c_)), Mode::Cudagraph);
  }

  const CaseOps& ops_;
  const OpBinding& op_;
  const Contract& contract_;
  const Case& c_;
  const CaseFacts& facts_;
  Mode current_ = Mode::Eager;
  std::vector<Finding> found_;
  std::optional<Materialized> drawn_;  // the case's tensors as drawn, never handed to the op
  bool eager_runs_ = true;
};

}  // namespace

Finding judged_death(const Finding& crash, bool hung, const Case& c, const Contract& contract) {
  if (c.fenced && hung)
    return {Clause::Crash,
            crash.message +
                ", on a call that meets the contract: a caller's mistake made of this call hung first, "
                "and the call without it hangs too",
            crash.mode};
  if (c.fenced)
    return {Clause::Crash,
            crash.message +
                ", on a call that meets the contract, in fenced memory (the page after each tensor's end "
                "unmapped, as a caller's mistake runs): the op reads or writes past a tensor's end on valid input. "
                "A caller's mistake made of this call faulted first; the call without it faults too",
            crash.mode};
  if (!c.misuse) return crash;
  return {Clause::Misuse,
          "the op did not refuse a caller's mistake (" + misuse_text(c, contract) + "): " + crash.message +
              ". A read or write past a tensor's end faults in the fenced memory misuse cases run in.",
          crash.mode};
}

std::vector<Finding> case_findings(const CaseOps& ops, const Contract& contract, const Case& c, const CaseFacts& facts,
                                   const std::vector<Mode>& modes, std::vector<bool>* written) {
  CaseJudge judge(ops, contract, c, facts);
  try {
    return judge.judge(modes, written);
  } catch (const CheckError&) {
    throw;
  } catch (const python::CaseDeclined&) {
    throw;  // not a call the program makes here: the case loop counts it, nothing is judged
  } catch (...) {
    // Not the op's doing (its throws are observed): an error of the check itself, said
    // with where it happened so that it can be reproduced.
    bool named = false;
    const std::string why = in_flight_text(named);
    throw CheckError(contract.file + ", target " + ops.op.name + ", in the " + to_string(judge.current()) +
                     " mode, on the case " + describe(c, contract) + ": " + why +
                     (verbose_errors() ? "" : kVerboseHint));
  }
}

}  // namespace opc
