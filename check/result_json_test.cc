// The results JSON (check/result_json.h): what the writer writes the reader reads back,
// field for field, and the reader refuses what docs/format.md's "Results" does not allow.
#include "check/result_json.h"

#include <gtest/gtest.h>

namespace opc {
namespace {

// A result with every field the model has set to something other than its default.
ContractResult full_result() {
  ContractResult r = empty_result("contracts/vllm/x.yaml", "vllm::x", "opc_regress::x_bug");
  r.checked = "a historical variant of vllm::x (opcontract's port)";
  r.verdict = Verdict::Error;
  r.errors = {"first error", "second error"};
  r.regression = RegressionResult{{Clause::Alias, Clause::Compiled}, "vLLM PR 1", false, "cudagraph not run: no GPU"};
  r.seed = 18446744073709551615ull;
  r.cases = 123;
  r.replayed = 4;
  r.misuse_cases = 17;
  r.mistakes_tried = {{"x", "size"}, {"positions", "index"}};
  r.misuse_pairs_possible = 9;
  r.misuse_not_run = "not this time";
  r.declined = {{"an AMX path", 3}};
  r.modes[Mode::Eager] = {ModeStatus::Fail, 123, "", "", {Clause::Alias, Clause::Write, Clause::Misuse}};
  r.modes[Mode::Compiled] = {ModeStatus::Pass, 120, "", "torch.compile", {Clause::Compiled}};
  r.modes[Mode::Cudagraph] = {ModeStatus::NotRun, 0, "no GPU", "", {Clause::Crash, Clause::Cudagraph}};
  r.branches = {{"no_pad", 70}, {"pad", 53}};
  r.warnings = {"argument 'out' is declared mutable but was never written"};
  r.captured_lines = 12;
  r.seconds.total = 4.25;
  r.seconds.cases = 3.5;
  r.seconds.modes = {{Mode::Eager, 1.25}, {Mode::Compiled, 2.0}};
  r.seconds.misuse = 0.5;
  r.seconds.shrinking = 0.125;
  ContractFinding alias{Clause::Alias, Mode::Eager, "return 0 shares storage with 'x'\nsecond line"};
  alias.case_json = R"({"tp_size":1,"args":{"x":{"dtype":"float32","shape":[0,1]}},"data_seed":16248708091195328088})";
  alias.cases_tried = 2;
  alias.shrink_steps = 5;
  alias.known = "upstream's";
  alias.output = "printed\n";
  alias.target = r.target;
  alias.seed = r.seed;
  alias.replay = "opcontract check x.yaml --seed 1 --cases 2";
  ContractFinding misuse{Clause::Misuse, Mode::Eager, "accepted", {"x", "size"}};
  misuse.from_file = "corpus/x.yaml";
  misuse.target = r.target;
  misuse.replay = "opcontract replay corpus/x.yaml";
  ContractFinding schema{Clause::Schema, std::nullopt, "differs"};
  schema.target = r.target;
  schema.replay = "r";
  r.findings = {alias, misuse, schema};
  r.not_applicable = {{Clause::Crash, Mode::Eager, "SIGILL", "needs the CPU feature amx_tile"}};
  r.known_listed = {{Clause::Extent, std::nullopt, "amx_tile, vllm/_C", "yes"}};
  return r;
}

Platform a_platform() {
  Platform p;
  p.arch = "x86_64";
  p.cpu = "AMD EPYC";
  p.cpu_flags = {"avx2"};
  p.cores = 2;
  p.numa_nodes = 1;
  p.settings = {{"OMP_NUM_THREADS", "2"}};
  return p;
}

TEST(ResultJson, EveryFieldRoundTrips) {
  const std::string text = results_json({full_result(), empty_result("c.yaml", "t::op", "t::op")}, a_platform());
  const ResultsFile back = read_results_json(text, "r.json");
  ASSERT_EQ(back.results.size(), 2u);
  EXPECT_EQ(results_json(back.results, a_platform()), text) << "written again, the same bytes";
  const ContractResult& r = back.results[0];
  EXPECT_EQ(r.verdict, Verdict::Error);
  EXPECT_EQ(r.errors, (std::vector<std::string>{"first error", "second error"}));
  EXPECT_EQ(r.regression->expect, (std::vector<Clause>{Clause::Alias, Clause::Compiled}));
  EXPECT_EQ(r.seed, 18446744073709551615ull);
  EXPECT_EQ(r.mistakes_tried.size(), 2u);
  EXPECT_EQ(r.modes.at(Mode::Cudagraph).status, ModeStatus::NotRun);
  EXPECT_EQ(r.modes.at(Mode::Eager).judged, (std::vector<Clause>{Clause::Alias, Clause::Write, Clause::Misuse}));
  EXPECT_EQ(r.findings[0].case_json, full_result().findings[0].case_json) << "the minimal case, byte for byte";
  EXPECT_EQ(r.findings[1].mistake.kind, "size");
  EXPECT_EQ(r.findings[2].mode, std::nullopt);
  EXPECT_EQ(r.seconds.modes.at(Mode::Compiled), 2.0);
  EXPECT_EQ(r.known_listed[0].mode, std::nullopt);
  EXPECT_EQ(back.platform, "x86_64, AMD EPYC; avx2 (no avx512f, avx512_vnni, avx512_bf16, avx512_fp16, amx_tile, "
                           "amx_bf16, amx_int8, amx_fp16); 2 cores; OMP_NUM_THREADS=2");
}

void expect_refused(const std::string& text, const std::string& message) {
  try {
    read_results_json(text, "r.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const ResultsError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(ResultJson, TheReaderRefusesWhatTheSchemaDoesNot) {
  std::string good = results_json({full_result()}, a_platform());
  expect_refused(R"({"version":1,"contracts":[]})", "r.json: version 1, but this opcontract reads version 2");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  expect_refused(replaced(R"("clause":"alias")", R"("clause":"aliasing")"),
                 "contracts[0].findings[0].clause: 'aliasing' is no clause (schema, alias,");
  expect_refused(replaced(R"("mode":"eager","message")", R"("mode":"","message")"),
                 "contracts[0].findings[0].mode: '' is no mode");
  expect_refused(replaced(R"("verdict":"error")", R"("verdict":"maybe")"),
                 "contracts[0].verdict: 'maybe' is none of pass, fail, error");
  expect_refused(replaced(R"("target":"opc_regress::x_bug","seed")", R"("seed")"),
                 "contracts[0].findings[0]: no 'target'");
}

}  // namespace
}  // namespace opc
