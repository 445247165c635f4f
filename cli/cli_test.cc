// The opcontract command line, run as a child process from the repository root: exit
// codes, usage errors, contract errors with file:line:column, and the check, --regressions,
// --json and bench outputs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/cli_run.h"

namespace {

const std::string kChunk = "contracts/vllm/sequence_parallel_chunk_impl.yaml";

// ---------------------------------------------------------------------------------------
// Malformed contracts: exit 2, file:line:column and a specific message

TEST(CliBadContract, BadYaml) {
  const Result r = run("check tests/bad_contracts/bad_yaml.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/bad_yaml.yaml:7:38: bad YAML: illegal flow end");
}

TEST(CliBadContract, UnknownKey) {
  const Result r = run("check tests/bad_contracts/unknown_key.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output,
                  "tests/bad_contracts/unknown_key.yaml:12:5: unknown key 'layuots' in args.x");
  EXPECT_CONTAINS(r.output, "did you mean 'layouts'?");
}

TEST(CliBadContract, BadExpression) {
  const Result r = run("check tests/bad_contracts/bad_expression.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/bad_expression.yaml:7:25: unknown name "
                            "'tp_sise' (known: tp_size)");
}

TEST(CliBadContract, UnknownOpNamesTheClosestRegisteredOne) {
  const Result r = run("check tests/bad_contracts/unknown_op.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/unknown_op.yaml:3:5: op "
                            "'opc_vllm::sequence_paralel_chunk_impl' is not registered");
  EXPECT_CONTAINS(r.output, "(closest registered: opc_vllm::sequence_parallel_chunk_impl");
  EXPECT_CONTAINS(r.output, "--load LIB.so");
  EXPECT_CONTAINS(r.output, "contracts holding: 0/1 (1 error)");
}

TEST(CliBadContract, UnknownOpInBench) {
  const Result r = run("bench tests/bad_contracts/unknown_op.yaml --cases 200");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/unknown_op.yaml:3:5: op "
                            "'opc_vllm::sequence_paralel_chunk_impl' is not registered");
  EXPECT_CONTAINS(r.output, "closest registered: opc_vllm::sequence_parallel_chunk_impl");
}

TEST(CliBadContract, EveryBadContractIsReportedInOneRun) {
  const Result r = run("check tests/bad_contracts/bad_yaml.yaml " + kChunk +
                       " tests/bad_contracts/bad_expression.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/bad_yaml.yaml:7:38:");
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/bad_expression.yaml:7:25:");
  // Nothing is checked while a contract is broken.
  EXPECT_FALSE(contains(r.output, "HOLDS")) << r.output;
}

TEST(CliBadContract, ErrorsGoToStderr) {
  const Result r = run("check tests/bad_contracts/unknown_key.yaml", /*with_stderr=*/false);
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.output, "");
}

TEST(CliBadContract, MissingContractFile) {
  const Result r = run("check tests/bad_contracts/no_such_contract.yaml");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/bad_contracts/no_such_contract.yaml: cannot read the contract file");
}

// ---------------------------------------------------------------------------------------
// Usage errors: exit 2 and the usage text

TEST(CliUsage, UnknownOption) {
  const Result r = run("check " + kChunk + " --bogus");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "opcontract: unknown option '--bogus' for check");
  EXPECT_CONTAINS(r.output, "usage:\n  opcontract check CONTRACT...");
}

TEST(CliUsage, OptionsOfCheckOnlyAreUnknownToBench) {
  const Result r = run("bench " + kChunk + " --json out.json");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "unknown option '--json' for bench");
}

TEST(CliUsage, UnknownCommandAndNoCommand) {
  Result r = run("frobnicate " + kChunk);
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "unknown command 'frobnicate' (commands: check, fuzz, replay, bench, list, draft, report, admit)");
  r = run("");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "opcontract: no command given");
  EXPECT_CONTAINS(r.output, "usage:");
}

TEST(CliUsage, BadNumbers) {
  Result r = run("check " + kChunk + " --cases abc");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--cases needs a number");
  EXPECT_CONTAINS(r.output, "not 'abc'");
  EXPECT_CONTAINS(r.output, "usage:");
  for (const char* bad : {"-5", "12x", "\"\"", "99999999999"}) {
    r = run("check " + kChunk + " --cases " + bad);
    EXPECT_EQ(r.exit, 2) << bad << ": " << r.output;
    EXPECT_CONTAINS(r.output, "--cases needs a number");
  }
  r = run("check " + kChunk + " --cases 0");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--cases needs a number from 1 to");
  r = run("check " + kChunk + " --seed -1");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--seed needs a number");
}

TEST(CliUsage, NoContractGiven) {
  Result r = run("check");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "check needs at least one CONTRACT.yaml");
  r = run("bench --cases 5");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "bench needs at least one CONTRACT.yaml");
}

TEST(CliUsage, OptionWithoutValue) {
  const Result r = run("check " + kChunk + " --seed");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--seed needs a value");
}

TEST(CliUsage, RegressionsWithTarget) {
  const Result r = run("check " + kChunk + " --regressions --target a::b");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--regressions checks the targets the contract lists; drop --target");
}

TEST(CliUsage, Help) {
  const Result r = run("--help");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "usage:");
  EXPECT_CONTAINS(r.output, "exit: 0 holds, 1 findings, 2 usage / contract / load error.");
}

TEST(CliUsage, EveryCommandHasItsOwnHelp) {
  for (const std::string command : {"check", "fuzz", "replay", "bench", "list", "draft", "report"})
    for (const std::string flag : {"--help", "-h"}) {
      const Result r = run(command + " " + flag);
      EXPECT_EQ(r.exit, 0) << command << " " << flag << ": " << r.output;
      EXPECT_CONTAINS(r.output, "opcontract " + command + " ");
      // Its own usage only: another command's line is not in it.
      EXPECT_FALSE(contains(r.output, command == "list" ? "opcontract draft" : "opcontract list"))
          << r.output;
    }
}

TEST(CliUsage, VersionNamesTheLibTorch) {
  const Result r = run("--version");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opcontract 0.");
  EXPECT_CONTAINS(r.output, "built against LibTorch 2.");
}

// An error of the check itself (here: observing a sparse return, which has no storage)
// prints one line saying where it happened; PyTorch's backtrace only with --verbose.
TEST(CliErrors, InternalErrorsAreOneLineWithWhereItHappened) {
  const std::string check = "check tests/contracts/alias.yaml --target opc_test::returns_sparse --load " +
                            shell_quote(OPC_TEST_OPS) + " --cases 5";
  Result r = run(check);
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "opcontract: error: tests/contracts/alias.yaml, target "
                            "opc_test::returns_sparse, in the eager mode, on the case rows=");
  EXPECT_CONTAINS(r.output, "Cannot access storage of SparseTensorImpl");
  EXPECT_CONTAINS(r.output, "--verbose or OPCONTRACT_VERBOSE=1 shows PyTorch's backtrace");
  EXPECT_FALSE(contains(r.output, "frame #")) << r.output;
  EXPECT_FALSE(contains(r.output, "Exception raised from")) << r.output;
  for (const std::string& verbose : {check + " --verbose", "env OPCONTRACT_VERBOSE=1 " + shell_quote(OPC_BINARY) + " " + check}) {
    r = verbose.rfind("env ", 0) == 0 ? run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && " + verbose) : run(verbose);
    EXPECT_EQ(r.exit, 2) << r.output;
    EXPECT_CONTAINS(r.output, "Exception raised from");
  }
}

// ---------------------------------------------------------------------------------------
// --load

TEST(CliLoad, NotASharedLibrary) {
  const Result r = run("check " + kChunk + " --load /etc/passwd --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--load /etc/passwd: cannot load it as a shared library");
}

TEST(CliLoad, TestOpsAreFoundOnlyWhenLoaded) {
  Result r = run("check tests/contracts/alias.yaml --cases 50");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "tests/contracts/alias.yaml:3:5: op 'opc_test::fresh_copy' is not "
                            "registered in this process");
  r = run("check tests/contracts/alias.yaml --cases 50 --load " + shell_quote(OPC_TEST_OPS));
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opc_test::fresh_copy: HOLDS");
}

TEST(CliCheck, AnOverloadIsNamedAsPyTorchPrintsIt) {
  const std::string contract = testing::TempDir() + "/overload.yaml";
  std::ofstream(contract) << R"y(op: opc_test::add_scaled
overload: maybe_inplace
schema: "add_scaled.maybe_inplace(Tensor(a0!) x, Tensor y) -> Tensor"
dims: {rows: {range: [1, 4]}}
args:
  x: {dtype: float32, shape: [rows]}
  y: {dtype: float32, shape: [rows]}
mutates: {x: {writes: all}}
modes: [eager]
skip: {fake: "no Meta kernel", compiled: "eager only", cudagraph: "CPU only"}
)y";
  const Result r = run("check " + contract + " --no-misuse --cases 5 --load " + shell_quote(OPC_TEST_OPS));
  EXPECT_CONTAINS(r.output, "== opc_test::add_scaled.maybe_inplace: ");
}

// ---------------------------------------------------------------------------------------
// check, --regressions, --json, determinism, bench

TEST(CliCheck, BundledContractHolds) {
  const Result r = run("check " + kChunk + " --cases 50");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output,
                  "vllm::sequence_parallel_chunk_impl  ->  opc_vllm::sequence_parallel_chunk_impl: HOLDS");
  EXPECT_CONTAINS(r.output, kChunk + " - 50 cases - seed 20261202");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(branches +no_pad (\d+), pad (\d+))")))
      << r.output;
  EXPECT_GT(std::stoi(m[1]), 0) << r.output;
  EXPECT_GT(std::stoi(m[2]), 0) << r.output;
  EXPECT_EQ(std::stoi(m[1]) + std::stoi(m[2]), 50) << r.output;
  EXPECT_CONTAINS(r.output, "contracts holding: 1/1");
}

TEST(CliCheck, ATargetNoCaseFitsReportsEveryModeNotRun) {
  // silu_and_mul takes other argument types than rms_norm's contract: a schema finding,
  // and every mode not run with the reason, in the text and the JSON alike.
  const std::string json = testing::TempDir() + "/unfit.json";
  const Result r = run("check contracts/vllm/rms_norm.yaml --target opc_C::silu_and_mul --json " + json);
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "   - schema:");
  EXPECT_CONTAINS(r.output, "eager not run: the registered schema's argument or return types differ");
  EXPECT_CONTAINS(r.output, "fake not run: the registered schema's argument or return types differ");
  EXPECT_CONTAINS(r.output, "cudagraph not run: ");
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_CONTAINS(text.str(), "\"compiled\":{\"status\":\"not_run\"");
}

TEST(CliCheck, FindingsExitOne) {
  // The contract against the planted regression (a narrow view of x returned).
  const Result r = run("check " + kChunk +
                       " --target opc_regress::sequence_parallel_chunk_impl_pr44130 --cases 50");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "alias (eager), first in case");
  EXPECT_CONTAINS(r.output, "contracts holding: 0/1");
}

TEST(CliCheck, RegressionsAreCaught) {
  const Result r = run("check " + kChunk + " --regressions --cases 50");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opc_regress::sequence_parallel_chunk_impl_pr44130: CAUGHT by alias, "
                            "compiled, as expected");
  EXPECT_CONTAINS(r.output, "regressions caught as expected: 1/1");
}

TEST(CliCheck, JsonReport) {
  const std::string path = ::testing::TempDir() + "opc_cli_test_" + std::to_string(getpid()) + ".json";
  std::remove(path.c_str());
  const Result r = run("check " + kChunk + " --cases 50 --json " + shell_quote(path));
  EXPECT_EQ(r.exit, 0) << r.output;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no JSON written to " << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  EXPECT_EQ(json.rfind("{\"version\":2", 0), 0u) << json;
  EXPECT_CONTAINS(json, "\"verdict\":\"pass\"");
  EXPECT_CONTAINS(json, "\"op\":\"vllm::sequence_parallel_chunk_impl\"");
  EXPECT_CONTAINS(json, "\"cases\":50");
  // Written atomically: no temporary left behind.
  EXPECT_FALSE(std::ifstream(path + ".tmp")) << path << ".tmp";
  std::remove(path.c_str());
}

// A run's output without its "time:" lines, the one part a seed does not decide.
std::string without_times(const std::string& output) {
  return std::regex_replace(output, std::regex("\n   time: [^\n]*"), "");
}

TEST(CliCheck, SameSeedSameOutput) {
  const std::string args = "check " + kChunk + " --cases 50 --seed 12345";
  const Result a = run(args, false), b = run(args, false);
  EXPECT_EQ(a.exit, 0) << a.output;
  EXPECT_CONTAINS(a.output, "seed 12345");
  EXPECT_EQ(without_times(a.output), without_times(b.output));
  // Findings too: the first failing case, the shrinking and the replay line.
  const std::string reg = "check " + kChunk + " --regressions --cases 50 --seed 777";
  const Result c = run(reg, false), d = run(reg, false);
  EXPECT_EQ(c.exit, 0) << c.output;
  EXPECT_CONTAINS(c.output, "minimal case:");
  EXPECT_CONTAINS(c.output, "--seed 777");
  EXPECT_EQ(without_times(c.output), without_times(d.output));
}

TEST(CliCheck, SaysWhereTheTimeWent) {
  // The planted regression: cases in each mode, then shrinking its findings.
  const std::string json = testing::TempDir() + "/times.json";
  const Result r = run("check " + kChunk + " --target opc_regress::sequence_parallel_chunk_impl_pr44130 "
                       "--cases 50 --json " + json);
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n   time: [0-9.]+ s: setting up [0-9.]+, cases [0-9.]+ )"
                                                     R"(\((fake [0-9.]+, )?eager [0-9.]+, compiled [0-9.]+.*\), )"
                                                     R"((caller's mistakes [0-9.]+, )?shrinking [0-9.]+\n)")))
      << r.output;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(std::regex_search(text.str(), std::regex(R"("seconds":\{"total":[0-9.e-]+,"cases":[0-9.e-]+,)"
                                                       R"(.*"eager":[0-9.e-]+.*"shrinking":[0-9.e-]+\})")))
      << text.str();
}

TEST(CliBench, PrintsRates) {
  const Result r = run("bench " + kChunk + " --cases 200");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "200 generated cases");
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"((^|\n)bare: [0-9]+(\.[0-9]+)? calls/s\n)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"((^|\n)eager: [0-9]+(\.[0-9]+)? cases/s\n)")))
      << r.output;
}

TEST(CliBench, PrintsCasesUntilEachRegressionIsCaught) {
  const Result r = run("bench " + kChunk + " --cases 100");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "regressions (up to 100 cases each, seed 20261202; cases until caught "
                            "with plain / targeted generation):");
  // target, clause (mode), cases until caught plain and targeted, shrunk case's elements,
  // shrink steps.
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(R"(opc_regress::sequence_parallel_chunk_impl_pr44130 +alias \(eager\) +[0-9]+ +[0-9]+ +[0-9]+ el +[0-9]+\n)")))
      << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(R"(branches: every declared branch hit after [0-9]+ case\(s\) plain, [0-9]+ targeted \(up to 100\)\n)")))
      << r.output;
  EXPECT_CONTAINS(r.output, "opc_regress::sequence_parallel_chunk_impl_pr44130: caught as expected");
}

TEST(CliCrash, ACrashingOpIsAFindingAndTheRunGoesOn) {
  // The first contract's targets segfault, abort, trap, exit and hang; the second's run after.
  const Result r = run(std::string("check tests/contracts/crash_isolation.yaml tests/contracts/alias.yaml "
                                   "--regressions --load ") + OPC_TEST_OPS);
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opc_test::segfaults_when_tall: CAUGHT by crash, as expected");
  EXPECT_CONTAINS(r.output, "opc_test::loops_when_tallest: CAUGHT by crash, as expected");
  EXPECT_CONTAINS(r.output, "opc_test::returns_view: CAUGHT by alias, as expected");
  EXPECT_CONTAINS(r.output, "regressions caught as expected: 8/8");
}

TEST(CliCrash, TimeoutAndIsolationFlags) {
  Result r = run("check " + kChunk + " --case-timeout 0");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--case-timeout needs a number of seconds above 0");
  r = run("check " + kChunk + " --no-isolation --case-timeout 2.5 --cases 20");
  EXPECT_EQ(r.exit, 0) << r.output;
}

// ---------------------------------------------------------------------------------------
// Quiet runs: what the op and torch print during a case is captured in the worker

TEST(CliQuiet, WhatTheOpPrintsIsCountedNotShown) {
  const std::string loads = std::string(" --no-python --load ") + OPC_TEST_OPS;
  Result r = run("check tests/contracts/quiet.yaml --cases 20" + loads);
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "noisy:")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\ncaptured [0-9]+ lines that the ops and torch printed "
                                                     "\\(warnings, prints\\)")))
      << r.output;
  r = run("check tests/contracts/quiet.yaml --cases 20 --verbose" + loads);
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "noisy: printf from the op");
  EXPECT_CONTAINS(r.output, "noisy: TORCH_WARN from the op");
  EXPECT_FALSE(contains(r.output, "\ncaptured ")) << "--verbose captures nothing: " << r.output;
}

TEST(CliQuiet, AFindingShowsWhatItsCasePrintedACrashItsLastWords) {
  const std::string json = testing::TempDir() + "/opc_quiet_" + std::to_string(getpid()) + ".json";
  const Result r = run("check tests/contracts/quiet.yaml --regressions --no-python --load " + std::string(OPC_TEST_OPS) +
                       " --json " + shell_quote(json));
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opc_test::aborts_noisily_when_wide: CAUGHT by crash, as expected");
  EXPECT_CONTAINS(r.output, "       | noisy: last words before abort, cols=3\n");
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_CONTAINS(text.str(), R"("output":")");
  EXPECT_CONTAINS(text.str(), "noisy: printf from the op");
  EXPECT_CONTAINS(text.str(), "noisy: last words before abort, cols=3");
  std::remove(json.c_str());
}

// ---------------------------------------------------------------------------------------
// The expected-failures ratchet (--known, --update-known)

TEST(CliKnown, RecordXfailXpassAndRewrite) {
  const std::string known = testing::TempDir() + "/known_findings.json";
  std::remove(known.c_str());
  // The planted op also trusts its caller; the ratchet is followed on its mutation alone.
  const std::string check = std::string("check tests/contracts/mutation.yaml --no-misuse --load ") + OPC_TEST_OPS +
                            " --known " + known;
  // A new finding fails; --update-known records it.
  Result r = run(check + " --target opc_test::doubles_in_place --update-known");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "rewrote " + known + ": 1 known finding(s)");
  std::ifstream in(known);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_CONTAINS(text.str(), R"({"contract":"tests/contracts/mutation.yaml","target":"opc_test::doubles_in_place","clause":"mutation","mode":"eager","reason":"recorded by --update-known: )");
  // Listed: xfail, the check holds.
  r = run(check + " --target opc_test::doubles_in_place");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "HOLDS, with 1 known finding");
  // The entry moved onto an op without the bug: xpass, which fails.
  std::string moved = text.str();
  moved.replace(moved.find("opc_test::doubles_in_place"), 26, "opc_test::doubled");
  std::ofstream(known) << moved;
  r = run(check + " --target opc_test::doubled");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "listed under the known-findings file (" + known + ":2:3: recorded by --update-known");
  EXPECT_CONTAINS(r.output, "if the op was fixed, remove the entry");
  // Rewriting drops it.
  r = run(check + " --target opc_test::doubled --update-known");
  EXPECT_CONTAINS(r.output, "rewrote " + known + ": 0 known finding(s)");
  // A malformed file is an error with its place.
  std::ofstream(known) << "{\"version\": 1, \"known\": [{\"contract\": \"x\"}]}";
  r = run(check + " --target opc_test::doubled");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, known + ":1:26: a known finding needs 'target'");
  EXPECT_EQ(run("check " + kChunk + " --update-known").exit, 2);
}

// ---------------------------------------------------------------------------------------
// list and draft

TEST(CliList, BundledPortsAndTheirContracts) {
  const Result r = run("list");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\nopc_C::rms_norm +(\[fake: Meta kernel\]  )?contracts/vllm/rms_norm\.yaml \(port of _C::rms_norm\))")))
      << r.output;
  EXPECT_CONTAINS(r.output, "contracts/vllm/sequence_parallel_chunk_impl.yaml (regression of "
                            "vllm::sequence_parallel_chunk_impl)");
  EXPECT_CONTAINS(r.output, "(donating overload of vllm_ir::fused_add_rms_norm)");
  EXPECT_FALSE(contains(r.output, "aten::")) << "only the bundled ports without --load";
  // Where each op's fake comes from, when the embedded Python can tell.
  if (contains(run("--version").output, "embedding Python"))
    EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\nopc_C::rms_norm +\[fake: Meta kernel\])"))) << r.output;
}

TEST(CliList, LoadedOpsWithoutAContractAreNamed) {
  const Result r = run(std::string("list --load ") + OPC_TEST_OPS + " --contracts tests/contracts");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(opc_test::doubled +(\[fake: [^\]]*\]  )?tests/contracts/)"))) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(R"(opc_test::ignores_out +(\[fake: [^\]]*\]  )?NO CONTRACT  \(draft one: opcontract draft opc_test::ignores_out\))")))
      << r.output;
  EXPECT_FALSE(contains(r.output, "opc_C::rms_norm")) << "only the loaded library's ops with --load";
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n[0-9]+ op\(s\), [0-9]+ covered by the [0-9]+ contract\(s\) in tests/contracts, [1-9][0-9]* without one\n)")))
      << r.output;
}

TEST(CliList, BadContractDirectory) {
  const Result r = run("list --contracts no/such/dir");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--contracts no/such/dir: not a directory");
}

TEST(CliDraft, SkeletonFromTheRegisteredSchemaLoadsAndRuns) {
  const std::string path = testing::TempDir() + "/draft_rms_norm.yaml";
  std::remove(path.c_str());
  Result r = run("draft opc_C::rms_norm --out " + path);
  ASSERT_EQ(r.exit, 0) << r.output;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  // Tensor! comes back as Tensor!, not as PyTorch's printed "Tensor($0! -> )".
  EXPECT_CONTAINS(text.str(), "schema: \"rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) -> ()\"");
  EXPECT_CONTAINS(text.str(), "  result: {writes: all}");
  EXPECT_CONTAINS(text.str(), "TODO");
  // It loads and runs as it is: the registered schema matches, so no schema finding.
  r = run("check " + path + " --cases 5");
  EXPECT_NE(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "schema       pass");
  // An existing file is never overwritten.
  r = run("draft opc_C::rms_norm --out " + path);
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "exists; draft does not overwrite a contract");
}

TEST(CliDraft, OverloadsDefaultsAndAliasing) {
  const Result r = run("draft opc_vllm_ir::fused_add_rms_norm.maybe_inplace");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "overload: maybe_inplace\n");
  EXPECT_CONTAINS(r.output, "fused_add_rms_norm.maybe_inplace(Tensor(a0!) x, Tensor(a1!) x_residual");
  EXPECT_CONTAINS(r.output, "  # variance_size: left out, the schema's default is passed\n");
  EXPECT_CONTAINS(r.output, "optional: true");
  EXPECT_CONTAINS(r.output, "aliasing:\n  returns: [none, none]\n");
}

TEST(CliDraft, UnknownOpNamesTheClosest) {
  const Result r = run("draft opc_C::rms_nrm");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "op 'opc_C::rms_nrm' is not registered");
  EXPECT_CONTAINS(r.output, "opc_C::rms_norm");
  EXPECT_EQ(run("draft").exit, 2);
  EXPECT_EQ(run("draft rms_norm").exit, 2);
}

}  // namespace
