// check_contract end to end on the bundled contract and on the planted test ops: the
// right clause catches each planted bug within 100 cases, shrunk; clean twins pass.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <set>

#include "check/bind_ops.h"
#include "check/case_worker.h"
#include "check/check_contract.h"
#include "check/known_findings.h"
#include "generators/case_gen.h"
#include "generators/misuse.h"
#include "runners/compiled_runner.h"
#include "runners/cudagraph_runner.h"
#include "spec/contract_loader.h"
#include "spec/text_guard.h"

namespace opc {
namespace {

Contract load(const std::string& rel) { return load_contract(std::string(OPC_SOURCE_DIR) + "/" + rel); }

int64_t value(const Case& c, const Contract& contract, const std::string& name) {
  for (const auto& v : contract.values)
    if (v.name == name) return c.values[v.slot];
  return -1;
}

// The C++ paths alone: these tests are about opcontract's own oracles and driver (the real
// PyTorch's checks have theirs: tests/contracts/python, tests/python_checks_test.cc).
CheckOptions cpp_paths() {
  CheckOptions o;
  o.python = false;
  return o;
}

// A planted regression judged as `check --regressions` judges it: without the misuse
// search, which has planted ops of its own (tests/contracts/misuse_*.yaml).
CheckOptions as_regression(const std::vector<Clause>& expect = {}) {
  CheckOptions o = cpp_paths();
  o.misuse = regression_makes_mistakes(expect);
  return o;
}

class CheckDriver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* lib : {OPC_PORTS, OPC_TEST_OPS})
      ASSERT_NE(dlopen(lib, RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  }
};

TEST_F(CheckDriver, FixedPortHoldsWithBothBranchesHit) {
  const Contract c = load("contracts/vllm/sequence_parallel_chunk_impl.yaml");
  const ContractResult r = check_contract(c, "opc_vllm::sequence_parallel_chunk_impl", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass) << (r.findings.empty() ? r.error() : r.findings[0].message);
  EXPECT_EQ(r.cases, 100);
  ASSERT_EQ(r.branches.size(), 2u);
  for (const auto& [name, hits] : r.branches) EXPECT_GT(hits, 10) << name;
  EXPECT_EQ(r.modes.at(Mode::Eager).status, ModeStatus::Pass);
  // The fixed port has CUDA kernels: captured and replayed where a GPU is, else not run.
  if (cudagraph_unavailable().empty()) {
    EXPECT_EQ(r.modes.at(Mode::Cudagraph).status, ModeStatus::Pass);
  } else {
    EXPECT_EQ(r.modes.at(Mode::Cudagraph).status, ModeStatus::NotRun);
    EXPECT_FALSE(r.modes.at(Mode::Cudagraph).reason.empty());
  }
}

TEST_F(CheckDriver, AsShippedPortIsCaughtByAliasAndTheGuardOnADivisibleLength) {
  const Contract c = load("contracts/vllm/sequence_parallel_chunk_impl.yaml");
  for (uint64_t seed : std::vector<uint64_t>{1, 2, 3, kDefaultSeed}) {
    CheckOptions opt = cpp_paths();
    opt.seed = seed;
    const ContractResult r = check_contract(c, "opc_regress::sequence_parallel_chunk_impl_pr44130", opt);
    ASSERT_EQ(found_clauses(r), (std::vector<Clause>{Clause::Alias, Clause::Compiled})) << "seed " << seed;
    const ContractFinding& f = r.findings[0];
    EXPECT_LE(f.cases_tried, 100);
    ASSERT_TRUE(f.has_case());
    EXPECT_EQ(value(*f.minimal, c, "seq_len") % value(*f.minimal, c, "tp_size"), 0);
    EXPECT_EQ(value(*f.minimal, c, "hidden"), 1);
    EXPECT_NE(f.message.find("shares storage with argument 'x'"), std::string::npos) << f.message;
    const ContractFinding& guard = r.findings[1];
    EXPECT_EQ(guard.mode, Mode::Compiled);
    EXPECT_NE(guard.message.find(aliasing_guard_message("opc_regress.sequence_parallel_chunk_impl_pr44130.default")),
              std::string::npos)
        << guard.message;
    EXPECT_EQ(value(*guard.minimal, c, "seq_len") % value(*guard.minimal, c, "tp_size"), 0);
  }
}

// Targeted generation goes after a declared branch that plain generation rarely draws: a
// bug behind three conditions at once (tests/contracts/conjunction.yaml) is caught within
// 1,000 cases for every one of 10 seeds. (bench prints the cases each way.)
TEST_F(CheckDriver, TargetingCatchesABugBehindAThreeWayConjunction) {
  const Contract c = load("tests/contracts/conjunction.yaml");
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    CheckOptions o = cpp_paths();
    o.seed = seed;
    o.cases = 1000;
    std::atomic<bool> found{false};
    o.stop = &found;
    o.on_finding = [&](const ContractFinding&) { found = true; };
    const ContractResult r = check_contract(c, "opc_test::add_rows_vec4_overrun", o);
    ASSERT_EQ(r.findings.size(), 1u) << "seed " << seed;
    EXPECT_EQ(r.findings[0].clause, Clause::Extent) << "seed " << seed;
    EXPECT_LE(r.findings[0].cases_tried, 1000) << "seed " << seed;
  }
}

TEST_F(CheckDriver, SameSeedSameFindings) {
  const Contract c = load("tests/contracts/write.yaml");
  CheckOptions opt = cpp_paths();
  opt.seed = 99;
  const ContractResult a = check_contract(c, "opc_test::copy_into_half", opt);
  const ContractResult b = check_contract(c, "opc_test::copy_into_half", opt);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].message, b.findings[i].message);
    EXPECT_EQ(a.findings[i].cases_tried, b.findings[i].cases_tried);
    EXPECT_EQ(describe(*a.findings[i].minimal, c), describe(*b.findings[i].minimal, c));
  }
}

TEST_F(CheckDriver, OverDeclaredMutationIsAWarningNotAFinding) {
  const Contract c = load_contract_text(R"Y(
op: opc_test::copy_into
schema: "copy_into(Tensor! out, Tensor x) -> ()"
dims: {n: {range: [1, 8]}}
args:
  out: {dtype: [float32], shape: [n, 2]}
  x: {dtype: out, shape: [n, 2]}
modes: [eager]
skip: {fake: "eager only", compiled: "eager only", cudagraph: "eager only"}
)Y",
                                        "overdeclared.yaml");
  const ContractResult ignored = check_contract(c, "opc_test::ignores_out", cpp_paths());
  EXPECT_EQ(ignored.verdict, Verdict::Pass);
  ASSERT_EQ(ignored.warnings.size(), 1u);
  EXPECT_NE(ignored.warnings[0].find("'out' is declared mutable but was never written"), std::string::npos);
  const ContractResult written = check_contract(c, "opc_test::copy_into", cpp_paths());
  EXPECT_EQ(written.verdict, Verdict::Pass);
  EXPECT_TRUE(written.warnings.empty());
}

// The branches clause's planted contract: a branch no case can reach is a finding of the
// run, with the branch and its expression named; the reachable one is counted.
TEST_F(CheckDriver, ABranchNoCaseReachesIsAFinding) {
  const Contract c = load("tests/planted_contracts/branches.yaml");
  const ContractResult r = check_contract(c, "opc_test::doubled", as_regression());
  EXPECT_EQ(found_clauses(r), std::vector<Clause>{Clause::Branches});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].mode, std::nullopt);
  EXPECT_NE(r.findings[0].message.find("branch 'beyond_the_range' (rows > 16) was never hit"), std::string::npos)
      << r.findings[0].message;
  EXPECT_GT(r.branches[0].second, 0) << "rows == 0 is reached";
}

TEST_F(CheckDriver, PaddingIsCheckedInEagerAndCompiledModes) {
  const Contract c = load("tests/contracts/padding.yaml");
  const ContractResult r = check_contract(c, "opc_test::scale_by_amax", cpp_paths());
  std::set<Mode> modes;
  for (const auto& f : r.findings)
    if (f.clause == Clause::Padding) modes.insert(*f.mode);
  EXPECT_EQ(modes, (std::set<Mode>{Mode::Eager, Mode::Compiled}));
}

struct Planted {
  const char* contract;
  const char* target;
  std::vector<Clause> clauses;
  const char* message;  // a phrase the first finding's message must contain
};

// gtest lists a parameter by how it prints: the target, not 48 bytes of hex.
void PrintTo(const Planted& p, std::ostream* os) { *os << p.target; }

class PlantedViolation : public CheckDriver, public ::testing::WithParamInterface<Planted> {};

TEST_P(PlantedViolation, IsCaughtByExactlyItsClause) {
  const Planted& p = GetParam();
  const Contract c = load(p.contract);
  const ContractResult r = check_contract(c, p.target, as_regression(p.clauses));
  ASSERT_NE(r.verdict, Verdict::Error) << r.error();
  std::vector<Clause> want = p.clauses;
  std::sort(want.begin(), want.end());  // found_clauses lists them in catalogue order
  EXPECT_EQ(found_clauses(r), want);
  bool phrase = false;
  for (const auto& f : r.findings) phrase |= f.message.find(p.message) != std::string::npos;
  EXPECT_TRUE(phrase) << "no finding says \"" << p.message << "\"";
  for (const auto& f : r.findings)
    if (f.has_case()) {
      EXPECT_LE(f.cases_tried, 100) << f.clause;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Oracles, PlantedViolation,
    ::testing::Values(
        Planted{"tests/contracts/alias.yaml", "opc_test::returns_input", {Clause::Alias}, "itself"},
        Planted{"tests/contracts/alias.yaml", "opc_test::returns_view", {Clause::Alias}, "same StorageImpl"},
        Planted{"tests/contracts/alias.yaml",
                "opc_test::returns_from_blob",
                {Clause::Alias},
                "through a different StorageImpl"},
        Planted{"tests/contracts/alias_between_returns.yaml",
                "opc_test::two_of_one_buffer",
                {Clause::Alias},
                "returns 0 and 1 share one StorageImpl"},
        Planted{"tests/contracts/mutation.yaml",
                "opc_test::doubles_in_place",
                {Clause::Mutation},
                "is not mutable in the schema"},
        Planted{"tests/contracts/mutation.yaml", "opc_test::resizes_input", {Clause::Mutation}, "sizes"},
        Planted{"tests/contracts/write.yaml", "opc_test::copy_into_half", {Clause::Write}, "sentinel"},
        Planted{"tests/contracts/write.yaml", "opc_test::copy_into_temporary", {Clause::Write}, "phantom tensor"},
        Planted{"tests/contracts/write.yaml",
                "opc_test::copy_into_unannotated",
                {Clause::Mutation, Clause::Schema},
                "contract 'Tensor(a!) out', registered 'Tensor out'"},
        Planted{"tests/contracts/write_region.yaml",
                "opc_test::copy_prefix_zeroes_padding",
                {Clause::Write},
                "outside its declared region [:num_tokens]"},
        Planted{"tests/contracts/extent.yaml",
                "opc_test::copy_into_one_past_end",
                {Clause::Extent},
                "outside the view of 'out'"},
        Planted{"tests/contracts/fake.yaml",
                "opc_test::clone_like_meta_contiguous",
                {Clause::Fake},
                "strides: eager [1, 2], meta [2, 1]"},
        Planted{"tests/contracts/fake.yaml",
                "opc_test::clone_like_meta_aliasing",
                {Clause::Fake},
                "aliases: eager nothing, meta 'x'"},
        Planted{"tests/contracts/fake.yaml", "opc_test::fresh_copy", {Clause::Fake}, "no Meta (fake) kernel"},
        Planted{"tests/contracts/fake.yaml",
                "opc_test::clone_but_last_row",
                {Clause::Fake},
                "breaks the contract's returns:"},
        Planted{"tests/contracts/compiled_returns.yaml",
                "opc_test::returns_view",
                {Clause::Alias, Clause::Compiled},
                "(with implementation in ?\?\?): The output of this custom operator (1) must not"},
        Planted{"tests/contracts/compiled_returns.yaml",
                "opc_test::returns_from_blob",
                {Clause::Alias, Clause::Compiled},
                "changed when the op's non-mutable inputs were overwritten"},
        Planted{"tests/contracts/compiled_mutating.yaml",
                "opc_test::depends_on_out_offset",
                {Clause::Compiled},
                "after copy-back differs from eager"},
        Planted{"tests/contracts/determinism.yaml",
                "opc_test::counts_calls",
                {Clause::Determinism},
                "differs between two runs of the same case"},
        Planted{"tests/contracts/reads.yaml",
                "opc_test::row_sums_one_past",
                {Clause::Reads},
                "held NaN instead of other garbage: the op reads outside the views"},
        Planted{"tests/contracts/padding.yaml",
                "opc_test::scale_by_amax",
                {Clause::Padding},
                "depend on the padding rows' contents"},
        Planted{
            "tests/contracts/crash.yaml", "opc_test::throws_when_empty", {Clause::Crash}, "empty input not supported"},
        Planted{"tests/contracts/crash.yaml",
                "opc_test::throws_an_int_when_empty",
                {Clause::Crash},
                "an exception that is not a std::exception"},
        Planted{"tests/contracts/donation.yaml",
                "opc_test::add_scaled_writes_input",
                {Clause::Donation},
                "the functional overload wrote its input 'x'"},
        Planted{"tests/contracts/donation.yaml",
                "opc_test::add_scaled_inplace_differs",
                {Clause::Donation},
                "'s return 0 differs from the functional op's"},
        Planted{
            "tests/contracts/donation.yaml", "opc_test::add_scaled_inplace_writes_y", {Clause::Donation}, "wrote 'y'"},
        Planted{"tests/contracts/donation.yaml",
                "opc_test::add_scaled_inplace_unmarked",
                {Clause::Donation},
                "does not mark donated 'x' mutable"},
        Planted{"tests/contracts/crash_isolation.yaml",
                "opc_test::segfaults_when_tall",
                {Clause::Crash},
                "in the eager mode, the op killed the process with signal 11 (SIGSEGV"},
        Planted{
            "tests/contracts/crash_isolation.yaml", "opc_test::aborts_when_wide", {Clause::Crash}, "signal 6 (SIGABRT"},
        Planted{
            "tests/contracts/crash_isolation.yaml", "opc_test::traps_when_tall", {Clause::Crash}, "signal 4 (SIGILL"},
        Planted{"tests/contracts/crash_isolation.yaml",
                "opc_test::exits_when_wide",
                {Clause::Crash},
                "the op ended the process with exit status 3"},
        Planted{"tests/contracts/crash_isolation.yaml",
                "opc_test::loops_when_tallest",
                {Clause::Crash},
                "did not finish within the time limit of 0.3 s per case"},
        Planted{
            "tests/contracts/forms.yaml", "opc_test::center_heads_last_dim", {Clause::Forms}, "(forms[0]) instead of"},
        Planted{"tests/contracts/misuse_attribution.yaml",
                "opc_test::copy_rows_overreading",
                {Clause::Crash},
                "the op reads or writes past a tensor's end on valid input"}),
    [](const ::testing::TestParamInfo<Planted>& info) {
      std::string c = info.param.contract;
      const std::string t = info.param.target;
      c = c.substr(c.rfind('/') + 1);
      return c.substr(0, c.find('.')) + "_" + t.substr(t.rfind(':') + 1);
    });

class CleanTwin : public CheckDriver, public ::testing::WithParamInterface<const char*> {};

TEST_P(CleanTwin, HoldsItsContract) {
  const Contract c = load(GetParam());
  const ContractResult r = check_contract(c, c.op, cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass) << (r.findings.empty() ? r.error() : r.findings[0].message);
  EXPECT_EQ(r.cases, 100);
}

INSTANTIATE_TEST_SUITE_P(Oracles, CleanTwin,
                         ::testing::Values("tests/contracts/alias.yaml", "tests/contracts/alias_between_returns.yaml",
                                           "tests/contracts/mutation.yaml", "tests/contracts/write.yaml",
                                           "tests/contracts/write_region.yaml", "tests/contracts/extent.yaml",
                                           "tests/contracts/crash.yaml", "tests/contracts/donation.yaml",
                                           "tests/contracts/crash_isolation.yaml", "tests/contracts/fake.yaml",
                                           "tests/contracts/compiled_returns.yaml",
                                           "tests/contracts/compiled_mutating.yaml", "tests/contracts/determinism.yaml",
                                           "tests/contracts/reads.yaml", "tests/contracts/padding.yaml",
                                           "tests/contracts/forms.yaml", "tests/contracts/misuse_attribution.yaml"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string f = info.param;
                           f = f.substr(f.rfind('/') + 1);
                           return f.substr(0, f.find('.'));
                         });

}  // namespace
}  // namespace opc

namespace opc {
namespace {

// A contract for copy_into_half that lists its write finding as known.
Contract known_write_contract(const std::string& op) {
  return load_contract_text(R"y(op: )y" + op + R"y(
schema: "copy_into_half(Tensor! out, Tensor x) -> ()"
dims: {rows: {range: [2, 8]}}
args:
  out: {dtype: float32, shape: [rows]}
  x: {dtype: float32, shape: [rows]}
mutates:
  out: {writes: all, sentinel: true}
modes: [eager]
skip: {fake: "eager only", compiled: "eager only", cudagraph: "eager only"}
known_findings:
  - {clause: write, mode: eager, reason: "writes only the first half, like upstream"}
)y",
                            "known.yaml");
}

TEST_F(CheckDriver, AKnownFindingIsReportedAndDoesNotFail) {
  const ContractResult r =
      check_contract(known_write_contract("opc_test::copy_into_half"), "opc_test::copy_into_half", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].clause, Clause::Write);
  EXPECT_EQ(r.findings[0].known, "writes only the first half, like upstream");
}

TEST_F(CheckDriver, AKnownFindingThatNoLongerOccursFails) {
  // copy_into writes all of out: the listed finding is gone, and the contract must say so.
  const ContractResult r =
      check_contract(known_write_contract("opc_test::copy_into"), "opc_test::copy_into", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Fail);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings[0].known.empty());
  EXPECT_NE(r.findings[0].message.find("listed under known_findings (known.yaml:12:5"), std::string::npos)
      << r.findings[0].message;
  EXPECT_NE(r.findings[0].message.find("if the op was fixed, remove the entry"), std::string::npos);
}

// known_write_contract with its entry scoped by `where` (a flow mapping's text).
Contract scoped_write_contract(const std::string& op, const std::string& where) {
  Contract c = known_write_contract(op);
  c.known_findings[0].where.cpu = {where};
  return c;
}

// No CPU has this feature, so a scope needing it leaves every machine out.
const char* kNoCpuHasIt = "opc_no_such_cpu_feature";

TEST_F(CheckDriver, AKnownFindingScopedToThisMachineIsKnown) {
  const ContractResult r =
      check_contract(scoped_write_contract("opc_test::copy_into_half", std::string("!") + kNoCpuHasIt),
                     "opc_test::copy_into_half", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].known, "writes only the first half, like upstream");
  EXPECT_TRUE(r.not_applicable.empty());
}

TEST_F(CheckDriver, AKnownFindingScopedToOtherMachinesIsNotApplicableWhereItDoesNotOccur) {
  // copy_into writes all of out: on a machine the entry leaves out, its absence is no fix.
  const ContractResult r =
      check_contract(scoped_write_contract("opc_test::copy_into", kNoCpuHasIt), "opc_test::copy_into", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass);
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.not_applicable.size(), 1u);
  EXPECT_EQ(r.not_applicable[0].clause, Clause::Write);
  EXPECT_EQ(r.not_applicable[0].why, std::string("needs the CPU feature ") + kNoCpuHasIt + ", which this CPU lacks");
}

TEST_F(CheckDriver, AKnownFindingOfAModeThatDidNotRunIsNotApplicable) {
  // A CUDA contract's eager entry on a machine without a GPU: neither found nor missed.
  Contract c = known_write_contract("opc_test::copy_into");
  c.known_findings[0].mode = Mode::Compiled;
  const ContractResult r = check_contract(c, "opc_test::copy_into", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Pass);
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.not_applicable.size(), 1u);
  EXPECT_EQ(r.not_applicable[0].why, "the compiled mode did not run here (skipped by the contract: eager only)");
}

TEST_F(CheckDriver, AFindingScopedToOtherMachinesIsNewWhereItOccurs) {
  // The defect shows here although the entry says it needs another CPU: a new finding.
  const ContractResult r = check_contract(scoped_write_contract("opc_test::copy_into_half", kNoCpuHasIt),
                                          "opc_test::copy_into_half", cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Fail);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(r.findings[0].known.empty());
  EXPECT_NE(r.findings[0].message.find("(known_findings lists write for other machines only: needs the CPU feature"),
            std::string::npos)
      << r.findings[0].message;
  EXPECT_EQ(r.not_applicable.size(), 1u);
}

TEST_F(CheckDriver, AKnownFindingMayBeAbsentOnlyWhereItsSometimesScopeApplies) {
  // copy_into has no write finding: absent is fine where `sometimes` names this machine...
  Contract here = known_write_contract("opc_test::copy_into");
  here.known_findings[0].sometimes_where.cpu = {std::string("!") + kNoCpuHasIt};
  EXPECT_EQ(check_contract(here, "opc_test::copy_into", cpp_paths()).verdict, Verdict::Pass);
  // ... and a missed fix anywhere else.
  Contract elsewhere = known_write_contract("opc_test::copy_into");
  elsewhere.known_findings[0].sometimes_where.cpu = {kNoCpuHasIt};
  EXPECT_EQ(check_contract(elsewhere, "opc_test::copy_into", cpp_paths()).verdict, Verdict::Fail);
}

TEST(KnownScope, WhyALibraryScopeMissesNamesWhatWasLoadedInstead) {
  Platform p;
  p.cpu_flags = {"amx_tile", "avx2"};
  p.libraries = {"/v/site-packages/vllm/_C_AVX2.abi3.so", "/v/site-packages/torch/_C.so"};
  KnownScope amx_build{{"amx_tile"}, {"vllm/_C"}};
  EXPECT_EQ(scope_miss(amx_build, p),
            "applies where vllm/_C is loaded, and this process loaded vllm/_C_AVX2.abi3.so instead");
  p.libraries.push_back("/v/site-packages/vllm/_C.abi3.so");
  EXPECT_EQ(scope_miss(amx_build, p), "");
  EXPECT_EQ(scope_miss({{"!amx_tile"}, {}}, p), "applies to CPUs without amx_tile, and this one has it");
  EXPECT_EQ(scope_miss({{}, {"mylib/ops"}}, p),
            "applies where mylib/ops is loaded, and this process loaded none of them");
}

TEST_F(CheckDriver, IsolatedAndInProcessRunsAgree) {
  // The worker changes where cases run, not what they find.
  const Contract c = load("tests/contracts/mutation.yaml");
  CheckOptions inline_run;
  inline_run.isolate = false;
  inline_run.python = false;
  for (const char* target : {"opc_test::doubled", "opc_test::doubles_in_place"}) {
    const ContractResult a = check_contract(c, target, cpp_paths());
    const ContractResult b = check_contract(c, target, inline_run);
    EXPECT_EQ(a.verdict, b.verdict) << target;
    ASSERT_EQ(a.findings.size(), b.findings.size()) << target;
    for (size_t i = 0; i < a.findings.size(); ++i) {
      EXPECT_EQ(a.findings[i].message, b.findings[i].message);
      EXPECT_EQ(describe(*a.findings[i].minimal, c), describe(*b.findings[i].minimal, c));
      EXPECT_EQ(a.findings[i].cases_tried, b.findings[i].cases_tried);
    }
  }
}

TEST_F(CheckDriver, AFormOfOtherElementsIsAnErrorWithItsPlace) {
  const Contract c = load_contract_text(R"Y(
op: opc_test::center_heads
schema: "center_heads(Tensor x, int head_size) -> Tensor"
dims:
  tokens: {range: [1, 6]}
  heads: {range: [2, 4]}
args:
  x: {dtype: [float32], shape: [tokens, heads * 2], forms: [[tokens, heads]]}
  head_size: 2
modes: [eager]
skip: {fake: "eager only", compiled: "eager only", cudagraph: "eager only"}
)Y",
                                        "forms_mismatch.yaml");
  const ContractResult r = check_contract(c, c.op, cpp_paths());
  EXPECT_EQ(r.verdict, Verdict::Error);
  EXPECT_NE(r.error().find("forms_mismatch.yaml:8:6: args.x.forms[0]: "), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("a form is the same elements in other sizes"), std::string::npos) << r.error();
}

TEST_F(CheckDriver, AUserTimeoutBeatsTheContractsTimeLimit) {
  const Contract c = load("tests/contracts/crash_isolation.yaml");
  CheckOptions options = as_regression();
  options.set_user_timeout(0.1);
  const ContractResult r = check_contract(c, "opc_test::loops_when_tallest", options);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(r.findings[0].message.find("time limit of 0.1 s per case"), std::string::npos) << r.findings[0].message;
}

// A crash handler like the one tvm_ffi installs (vLLM loads it): it prints, then the
// process dies of the signal all the same.
constexpr char kLastWords[] = "last words from a library's crash handler\n";
void last_words_handler(int sig) {
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kLastWords, sizeof kLastWords - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

TEST_F(CheckDriver, ACrashsMinimalCaseShowsWhatTheLibrariesCrashHandlersPrinted) {
  struct sigaction mine {
  }, old{};
  mine.sa_handler = last_words_handler;
  sigaction(SIGSEGV, &mine, &old);
  const Contract c = load("tests/contracts/crash_isolation.yaml");
  const ContractResult r = check_contract(c, "opc_test::segfaults_when_tall", as_regression());
  ASSERT_EQ(r.findings.size(), 1u);
  const ContractFinding& f = r.findings[0];
  EXPECT_EQ(f.clause, Clause::Crash);
  EXPECT_GT(f.shrink_steps, 0);
  EXPECT_NE(f.output.find(kLastWords), std::string::npos) << f.output;
  // The cases themselves (and shrinking's) run without the handler, which tvm_ffi makes cost
  // about a second a crash; the minimal case runs once more with it.
  const BoundOps bound = bind_ops(c, "opc_test::segfaults_when_tall");
  CheckOptions options = as_regression();
  const CaseOps ops = case_ops(bound, c, options);
  CaseWorker worker(ops, c, isolation_for(c, options));
  const CaseOutcome plain = worker.run(*f.minimal);
  const CaseOutcome handled = worker.crash_handlers_twin()->run(*f.minimal);
  sigaction(SIGSEGV, &old, nullptr);
  EXPECT_TRUE(plain.worker_died && handled.worker_died);
  EXPECT_EQ(plain.output.find(kLastWords), std::string::npos) << plain.output;
  EXPECT_NE(handled.output.find(kLastWords), std::string::npos) << handled.output;
}

TEST_F(CheckDriver, AKnownCrashIsNotRunAgainForTheCrashHandlersOutput) {
  struct sigaction mine {
  }, old{};
  mine.sa_handler = last_words_handler;
  sigaction(SIGSEGV, &mine, &old);
  const Contract c = load("tests/contracts/crash_isolation.yaml");
  CheckOptions options = as_regression();
  KnownFinding known;
  known.clause = Clause::Crash;
  known.reason = "planted: a crash already triaged";
  options.known = {known};
  const ContractResult r = check_contract(c, "opc_test::segfaults_when_tall", options);
  sigaction(SIGSEGV, &old, nullptr);
  ASSERT_EQ(r.findings.size(), 1u);
  const ContractFinding& f = r.findings[0];
  EXPECT_EQ(f.known, known.reason);
  EXPECT_GT(f.shrink_steps, 0);
  // The handlers' run (tvm_ffi's backtrace: a second and more with vLLM) is for new crashes.
  EXPECT_EQ(f.output.find(kLastWords), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("a known finding: its minimal case was not run again"), std::string::npos) << f.output;
}

// The first case of the contract with rows, and its dtype mistake (x as another dtype).
Case with_dtype_mistake(const std::shared_ptr<const Contract>& contract) {
  for (int seed = 1;; ++seed) {
    Case c = case_gen(contract)(rc::Random(seed), 10).value();
    if (std::get<TensorCase>(c.args[0]).sizes[0] == 0) continue;
    for (const Misuse& m : misuse_variants(c, *contract))
      if (m.kind == MisuseKind::Dtype) {
        c.misuse = m;
        return c;
      }
  }
}

TEST_F(CheckDriver, AMistakeTheOpRefusedKeepsItsWorkerOneItMishandledDoesNot) {
  // A fork costs ~25 ms with vLLM loaded: a refused mistake leaves the worker as it was; one
  // the op accepted and got wrong may leave its heap corrupt, and the next case gets a fresh one.
  const auto contract = std::make_shared<const Contract>(load("tests/contracts/misuse_dtype_layout.yaml"));
  const Case c = with_dtype_mistake(contract);
  const CheckOptions options = as_regression();
  for (const char* target : {"opc_test::row_sums_checked", "opc_test::row_sums_trusting"}) {
    const BoundOps bound = bind_ops(*contract, target);
    const CaseOps ops = case_ops(bound, *contract, options);
    const CaseWorker worker(ops, *contract, isolation_for(*contract, options));
    const std::unique_ptr<CaseWorker> mistakes = worker.mistakes_twin();
    const bool refused = std::string(target) == "opc_test::row_sums_checked";
    for (int i = 0; i < 3; ++i) {
      const CaseOutcome out = mistakes->run(c);
      EXPECT_EQ(out.findings.empty(), refused) << target;
      EXPECT_FALSE(out.worker_died) << target;
    }
    EXPECT_EQ(mistakes->forked(), refused ? 1 : 3) << target;
  }
}

// The misuse findings of a check, by mistake ("w size").
std::map<std::string, const ContractFinding*> mistakes_found(const ContractResult& r) {
  std::map<std::string, const ContractFinding*> out;
  for (const ContractFinding& f : r.findings) {
    EXPECT_EQ(f.clause, Clause::Misuse) << f.message;
    EXPECT_TRUE(out.emplace(f.mistake.text(), &f).second) << "one finding per mistake: " << f.mistake.text();
  }
  return out;
}

TEST_F(CheckDriver, EachAcceptedMistakeIsAFindingOfItsOwn) {
  // scale_rows_trusting trusts both of w's ties to x: its length and its dtype.
  const Contract c = load("tests/contracts/misuse_tie.yaml");
  CheckOptions o = cpp_paths();
  o.cases = 200;
  const ContractResult r = check_contract(c, "opc_test::scale_rows_trusting", o);
  const auto found = mistakes_found(r);
  ASSERT_TRUE(found.count("w size") && found.count("w dtype")) << r.findings.size();
  for (const auto& [mistake, f] : found) {
    EXPECT_TRUE(f->has_case()) << mistake;
    EXPECT_EQ(f->minimal->misuse.arg, f->mistake.arg == "x" ? 0 : 1) << mistake;
  }
  EXPECT_NE(found.at("w size")->message.find("tied to x's dim 1 (cols)"), std::string::npos)
      << found.at("w size")->message;
  EXPECT_NE(found.at("w dtype")->message.find("its dtype tied to x's"), std::string::npos)
      << found.at("w dtype")->message;
  EXPECT_GE(r.mistakes_tried.size(), 6u) << "x and w: size, rank, dtype, layout each";
  EXPECT_GE(r.misuse_pairs_possible, static_cast<int>(r.mistakes_tried.size()));
  // Its twin checks both ties, and refuses every mistake.
  const ContractResult twin = check_contract(c, "opc_test::scale_rows_checked", o);
  EXPECT_TRUE(twin.findings.empty()) << twin.findings.front().message;
  EXPECT_GT(twin.misuse_cases, 0);
}

TEST_F(CheckDriver, AScalarUntiedFromTheDimsIsCaughtAndItsCheckedTwinPasses) {
  const Contract c = load("tests/contracts/misuse_scalar.yaml");
  const ContractResult r = check_contract(c, "opc_test::copy_width_trusting", cpp_paths());
  const auto found = mistakes_found(r);
  ASSERT_TRUE(found.count("width scalar")) << r.findings.size();
  EXPECT_NE(found.at("width scalar")->message.find("(tied to the dims: cols)"), std::string::npos);
  const ContractResult twin = check_contract(c, "opc_test::copy_width_checked", cpp_paths());
  EXPECT_TRUE(twin.findings.empty()) << twin.findings.front().message;
}

TEST_F(CheckDriver, KnownMistakesAreListedOneByOne) {
  // One mistake listed: the other accepted one is new; a listed one the run tried and never
  // saw accepted is a warning (the search samples one variant at a time), not a miss.
  // Known findings are the contract's op's own: the trusting op is made the contract's.
  std::string text = read_contract_file(OPC_SOURCE_DIR "/tests/contracts/misuse_tie.yaml");
  for (size_t at; (at = text.find("scale_rows_checked")) != std::string::npos;)
    text.replace(at, 18, "scale_rows_trusting");
  text +=
      "known_findings:\n"
      "  - {clause: misuse, mode: eager, arg: w, kind: size, reason: \"trusts w's length\"}\n"
      "  - {clause: misuse, mode: eager, arg: x, kind: layout, reason: \"never accepted\"}\n";
  const Contract c = load_contract_text(text, "misuse_tie.yaml");
  CheckOptions o = cpp_paths();
  o.cases = 200;
  const ContractResult r = check_contract(c, "opc_test::scale_rows_trusting", o);
  EXPECT_EQ(r.verdict, Verdict::Fail);
  const auto found = mistakes_found(r);
  ASSERT_TRUE(found.count("w size") && found.count("w dtype"));
  EXPECT_FALSE(found.count("x layout"));
  EXPECT_EQ(found.at("w size")->known, "trusts w's length");
  EXPECT_TRUE(found.at("w dtype")->known.empty());
  const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("lists misuse x layout") != std::string::npos &&
           w.find("the op refused each time") != std::string::npos;
  });
  EXPECT_TRUE(warned);
}

TEST_F(CheckDriver, SaysWhereItsTimeWent) {
  const Contract c = load("contracts/vllm/sequence_parallel_chunk_impl.yaml");
  const ContractResult r = check_contract(c, "opc_regress::sequence_parallel_chunk_impl_pr44130", as_regression());
  ASSERT_FALSE(r.findings.empty());
  const TimeSpent& t = r.seconds;
  EXPECT_GT(t.cases, 0);
  EXPECT_GT(t.shrinking, 0);
  EXPECT_GE(t.total, t.cases + t.shrinking + t.misuse);
  ASSERT_TRUE(t.modes.count(Mode::Eager));
  double in_modes = 0;
  for (const auto& [m, s] : t.modes) in_modes += s;
  EXPECT_GT(t.modes.at(Mode::Eager), 0);
  EXPECT_LE(in_modes, t.cases);  // inside the worker, of the cases' time
}

}  // namespace
}  // namespace opc
