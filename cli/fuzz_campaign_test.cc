// Campaigns: case files, sharding, the corpus replayed first, resume and Ctrl-C.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "check/check_contract.h"
#include "generators/case_file.h"
#include "spec/contract_loader.h"
#include "tests/cli_run.h"

namespace opc {
namespace {

namespace fs = std::filesystem;

const std::string kChunk = "contracts/vllm/sequence_parallel_chunk_impl.yaml";
const std::string kBuggyChunk = "opc_regress::sequence_parallel_chunk_impl_pr44130";

// The ports and the test ops register themselves when loaded, as with --load.
Contract load(const std::string& rel) {
  for (const char* lib : {OPC_PORTS, OPC_TEST_OPS})
    if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL)) ADD_FAILURE() << dlerror();
  return load_contract(std::string(OPC_SOURCE_DIR) + "/" + rel);
}

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(testing::TempDir()) / name;
  fs::remove_all(d);
  return d.string();
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CaseFile, RoundTripsThroughTheContract) {
  const Contract c = load(kChunk);
  const ContractResult r = check_contract(c, kBuggyChunk, {});
  ASSERT_FALSE(r.findings.empty());
  const ContractFinding& f = r.findings[0];
  const std::string path = fresh_dir("case_file_roundtrip.yaml");
  write_case_file(path,
                  {"", kChunk, kBuggyChunk, f.clause, f.mode, f.message, r.seed, static_cast<int>(f.cases_tried), {}},
                  *f.minimal, c);
  const CaseFileRecord back = read_case_file(path);
  EXPECT_EQ(back.contract, kChunk);
  EXPECT_EQ(back.target, kBuggyChunk);
  EXPECT_EQ(back.clause, f.clause);
  EXPECT_EQ(back.found_at, f.cases_tried);
  const Case again = parse_case(back, c);
  EXPECT_EQ(describe(again, c), describe(*f.minimal, c));
  EXPECT_EQ(again.data_seed, f.minimal->data_seed);
}

// A fault on valid input that a caller's mistake met first: its minimal case is the valid
// call in fenced memory, which the case file keeps and which replays as the same crash.
TEST(CaseFile, AFencedValidCallKeepsItsMemoryAndReplaysTheFault) {
  const Contract c = load("tests/contracts/misuse_attribution.yaml");
  const ContractResult r = check_contract(c, "opc_test::copy_rows_overreading", {});
  ASSERT_EQ(r.findings.size(), 1u) << (r.findings.empty() ? r.error() : r.findings.back().message);
  const ContractFinding& f = r.findings[0];
  EXPECT_EQ(f.clause, Clause::Crash);
  ASSERT_TRUE(f.minimal && f.minimal->fenced && !f.minimal->misuse) << f.message;
  const std::string path = fresh_dir("case_file_fenced.yaml");
  write_case_file(path,
                  {"",
                   "tests/contracts/misuse_attribution.yaml",
                   "opc_test::copy_rows_overreading",
                   f.clause,
                   f.mode,
                   f.message,
                   r.seed,
                   static_cast<int>(f.cases_tried),
                   {}},
                  *f.minimal, c);
  EXPECT_NE(read(path).find(R"("memory":"fenced")"), std::string::npos) << read(path);
  const Case again = parse_case(read_case_file(path), c);
  EXPECT_TRUE(again.fenced);
  EXPECT_NE(describe(again, c).find("| in fenced memory"), std::string::npos);
  CheckOptions replay;
  replay.replay_first = {{path, again}};
  replay.cases = 0;
  const ContractResult back = check_contract(c, "opc_test::copy_rows_overreading", replay);
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].clause, Clause::Crash);
}

// An in-place finding's case names its aliasing, and replays with it.
TEST(CaseFile, AnInPlaceCaseKeepsItsAliasing) {
  const Contract c = load("tests/contracts/inplace.yaml");
  CheckOptions cpp_paths;  // opcontract's own oracles: no Python needed
  cpp_paths.python = false;
  const ContractResult r = check_contract(c, "opc_test::add_first_row_rowwise", cpp_paths);
  ASSERT_EQ(r.findings.size(), 1u);
  const ContractFinding& f = r.findings[0];
  EXPECT_EQ(f.clause, Clause::Alias);
  ASSERT_EQ(f.minimal->inplace, 0);
  const std::string path = fresh_dir("case_file_inplace.yaml");
  write_case_file(path,
                  {"",
                   "tests/contracts/inplace.yaml",
                   "opc_test::add_first_row_rowwise",
                   f.clause,
                   f.mode,
                   f.message,
                   r.seed,
                   static_cast<int>(f.cases_tried),
                   {}},
                  *f.minimal, c);
  EXPECT_NE(read(path).find(R"("inplace":["out","x"])"), std::string::npos) << read(path);
  const Case again = parse_case(read_case_file(path), c);
  EXPECT_EQ(again.inplace, 0);
  EXPECT_EQ(describe(again, c), describe(*f.minimal, c));
  EXPECT_NE(describe(again, c).find("| in place: 'out' is 'x'"), std::string::npos);
}

TEST(CaseFile, ACaseThatDoesNotFitItsContractIsRefused) {
  const Contract c = load(kChunk);
  const std::string path = fresh_dir("case_file_misfit.yaml");
  std::ofstream(path) << R"({"contract": "x.yaml", "target": "a::b", "clause": "alias", "mode": "eager",
 "seed": 1, "found_at": 1, "message": "m",
 "case": {"tp_size": 2, "tp_rank": 0, "seq_len": 4, "hidden": 3,
          "args": {"x": {"dtype": "float32", "shape": [4, 5], "layout": "contiguous"}}, "data_seed": 7}})";
  const CaseFileRecord r = read_case_file(path);
  try {
    parse_case(r, c);
    FAIL() << "a shape the dims do not give was accepted";
  } catch (const ContractError& e) {
    EXPECT_NE(std::string(e.what()).find("'x' has shape [4, 5] where the dims give [4, 3]"), std::string::npos)
        << e.what();
  }
  std::ofstream(path) << "{\"contract\": 3}";
  EXPECT_THROW(read_case_file(path), ContractError);
  EXPECT_TRUE(stays_inside("contracts/vllm/x.yaml"));
  EXPECT_FALSE(stays_inside("../outside.yaml"));
  EXPECT_FALSE(stays_inside("/etc/passwd"));
  EXPECT_FALSE(stays_inside("contracts/../../x.yaml"));
}

// The findings of a run, by clause and mode, with the case each was first seen in and
// its shrunk case.
std::set<std::string> finding_keys(const ContractResult& r, const Contract& c) {
  std::set<std::string> keys;
  for (const auto& f : r.findings)
    keys.insert(to_string(f.clause) + "/" + (f.mode ? to_string(*f.mode) : "") + " @" + std::to_string(f.cases_tried) +
                " " + describe(*f.minimal, c));
  return keys;
}

TEST(Shards, TwoShardsMergedFindWhatOneRunFinds) {
  const Contract c = load("tests/contracts/write.yaml");
  for (const char* target : {"opc_test::copy_into_half", "opc_test::copy_into_temporary"}) {
    CheckOptions whole;
    whole.cases = 60;
    const ContractResult one = check_contract(c, target, whole);
    ContractResult merged;
    for (int shard = 0; shard < 2; ++shard) {
      CheckOptions part = whole;
      part.shard = shard;
      part.shards = 2;
      const ContractResult r = check_contract(c, target, part);
      EXPECT_EQ(r.next_case, 60);
      // Merge as `opcontract report` does: per clause and mode the earliest case wins.
      for (const auto& f : r.findings) {
        auto same = std::find_if(merged.findings.begin(), merged.findings.end(),
                                 [&](const ContractFinding& g) { return g.clause == f.clause && g.mode == f.mode; });
        if (same == merged.findings.end()) merged.findings.push_back(f);
        else if (f.cases_tried < same->cases_tried) *same = f;
      }
    }
    EXPECT_FALSE(one.findings.empty()) << target;
    EXPECT_EQ(finding_keys(merged, c), finding_keys(one, c)) << target;
  }
}

// A report's summary.md from its first table on (the header names the files merged).
std::string summary_body(const std::string& dir) {
  const std::string md = read(fs::path(dir) / "summary.md");
  return md.substr(std::min(md.find("## Ops"), md.size()));
}

TEST(Fuzz, TwoShardsReportedTogetherEqualOneRun) {
  const std::string dir = fresh_dir("fuzz_shards");
  const std::string campaign = "fuzz " + kChunk + " --target " + kBuggyChunk + " --cases 60 --out " + dir;
  ASSERT_EQ(run(campaign + "/one").exit, 1);
  ASSERT_EQ(run(campaign + "/s0 --shard 0/2").exit, 1);
  ASSERT_EQ(run(campaign + "/s1 --shard 1/2").exit, 1);
  Result r = run("report " + dir + "/one/results.json --out " + dir + "/report-one");
  ASSERT_EQ(r.exit, 0) << r.output;
  r = run("report " + dir + "/s0/results.shard-0-of-2.json " + dir + "/s1/results.shard-1-of-2.json --out " + dir +
          "/report-shards");
  ASSERT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(summary_body(dir + "/report-one"), "alias (eager)");
  EXPECT_EQ(summary_body(dir + "/report-shards"), summary_body(dir + "/report-one"));
  EXPECT_EQ(read(fs::path(dir) / "report-shards/junit.xml"), read(fs::path(dir) / "report-one/junit.xml"));
}

TEST(Fuzz, TheCorpusIsReplayedBeforeAnyNewCase) {
  const std::string dir = fresh_dir("fuzz_corpus_first");
  const std::string common =
      "fuzz " + kChunk + " --target " + kBuggyChunk + " --corpus " + dir + "/corpus --out " + dir + "/out --cases 30";
  Result r = run(common);
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output,
                  "new alias finding saved to " + dir + "/corpus/contracts_vllm_sequence_parallel_chunk_impl/");
  const fs::path saved = fs::path(dir) / "corpus/contracts_vllm_sequence_parallel_chunk_impl" /
                         "opc_regress__sequence_parallel_chunk_impl_pr44130-alias-eager.yaml";
  ASSERT_TRUE(fs::exists(saved)) << r.output;

  // A fresh campaign (other output, so no resume) over the same corpus: the saved case is
  // run first and finds the bug before any generated case.
  r = run("fuzz " + kChunk + " --target " + kBuggyChunk + " --corpus " + dir + "/corpus --out " + dir +
          "/out2 --cases 30 --seed 99");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "replaying 2 corpus case(s)");
  EXPECT_CONTAINS(r.output, "alias (eager), replaying the corpus case " + saved.string());
  EXPECT_CONTAINS(r.output, "replay: " + std::string(OPC_BINARY) + " replay " + saved.string());
  const std::string results = read(fs::path(dir) / "out2/results.json");
  EXPECT_CONTAINS(results, "\"cases_tried\":0");
  EXPECT_CONTAINS(results, "\"from_file\":");

  r = run("replay " + saved.string());
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "now:\n   - alias (eager)");
  EXPECT_CONTAINS(r.output, "observation (eager):\n   argument 'x': float32[0, 1]");
  EXPECT_CONTAINS(r.output, "in the storage of 'x'");
}

TEST(Fuzz, CorpusFilesThatDoNotFitOrPointOutsideAreLeftOut) {
  const std::string dir = fresh_dir("fuzz_bad_corpus");
  const fs::path cases = fs::path(dir) / "corpus/contracts_vllm_sequence_parallel_chunk_impl";
  fs::create_directories(cases);
  const fs::path outside = fs::path(dir) / "outside.yaml";
  std::ofstream(outside) << "{}";
  fs::create_symlink(outside, cases / "link.yaml");
  std::ofstream(cases / "garbage.yaml") << "\x01\x02 not a case";
  const Result r = run("fuzz " + kChunk + " --corpus " + dir + "/corpus --out " + dir + "/out --cases 10");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "left out " + (cases / "link.yaml").string() + ": it points outside the corpus");
  EXPECT_CONTAINS(r.output, "left out " + (cases / "garbage.yaml").string() + ": ");
  EXPECT_CONTAINS(r.output, "not UTF-8 text");
}

TEST(Fuzz, ResumesWhereItStopped) {
  const std::string dir = fresh_dir("fuzz_resume");
  const std::string common = "fuzz " + kChunk + " --out " + dir;
  Result r = run(common + " --cases 40");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(read(fs::path(dir) / "contracts_vllm_sequence_parallel_chunk_impl.state"), "next_case 40");
  r = run(common + " --cases 70");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "resuming opc_vllm::sequence_parallel_chunk_impl at generated case 41");
  EXPECT_CONTAINS(r.output, "- 30 cases -");
  // Another seed is another campaign: it starts over.
  r = run(common + " --cases 70 --seed 5");
  EXPECT_CONTAINS(r.output, "is of another campaign (seed or target differ): starting over");
}

TEST(Fuzz, CtrlCStopsCleanlyAndKeepsTheResults) {
  const std::string dir = fresh_dir("fuzz_interrupt");
  fs::create_directories(dir);
  // SIGINT once the campaign has started (its first line), however slow the start is.
  const std::string log = dir + "/log";
  const std::string cmd = "cd " + shell_quote(OPC_SOURCE_DIR) + " && { " + shell_quote(OPC_BINARY) + " fuzz " + kChunk +
                          " --time 120 --out " + dir + " > " + log + " 2>&1 & pid=$!; " + "while ! grep -q 'fuzzing' " +
                          log + "; do sleep 0.1; done; sleep 1; " +
                          "kill -INT $pid; wait $pid; echo \"exit $?\"; cat " + log + "; }";
  const std::string output = run_shell(cmd).output;
  EXPECT_CONTAINS(output, "exit 130");
  EXPECT_CONTAINS(output, "stopped early: what was found is kept; the same command resumes");
  EXPECT_FALSE(contains(output, "- crash (")) << "the interrupted case must not read as a crash";
  EXPECT_TRUE(fs::exists(fs::path(dir) / "results.json"));
  EXPECT_CONTAINS(read(fs::path(dir) / "contracts_vllm_sequence_parallel_chunk_impl.state"), "next_case ");
}

// A campaign killed outright (SIGKILL: an OOM kill, a lost CI runner) loses seconds, not
// the run: its state and results are saved every few seconds, and the same command resumes.
TEST(Fuzz, ASigkilledCampaignResumesWhereItWas) {
  const std::string dir = fresh_dir("fuzz_sigkill");
  fs::create_directories(dir);
  const std::string log = dir + "/log";
  // The C++ paths only: this is about the campaign's state, not the modes' cost.
  const std::string fuzz =
      shell_quote(OPC_BINARY) + " fuzz " + kChunk + " contracts/vllm/rms_norm.yaml --time 60 --no-python --out " + dir;
  // SIGKILL 5 s after the campaign started (its first line), however slow the start is.
  const std::string cmd = "cd " + shell_quote(OPC_SOURCE_DIR) + " && { " + fuzz + " > " + log +
                          " 2>&1 & pid=$!; while ! grep -q 'fuzzing' " + log +
                          "; do sleep 0.1; done; sleep 5; kill -KILL $pid; wait $pid; echo \"exit $?\"; }";
  EXPECT_CONTAINS(run_shell(cmd).output, "exit 137");
  const std::string state = read(fs::path(dir) / "contracts_vllm_sequence_parallel_chunk_impl.state");
  const size_t at = state.find("next_case ");
  ASSERT_NE(at, std::string::npos) << "no state saved before the kill: " << state;
  const int saved = std::stoi(state.substr(at + 10));
  EXPECT_GT(saved, 0);
  EXPECT_CONTAINS(read(fs::path(dir) / "results.json"), "opc_vllm::sequence_parallel_chunk_impl");
  // The same command goes on from there (stopped again at once: only the resume matters).
  const Result r = run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && timeout -s INT 3 " + fuzz);
  EXPECT_CONTAINS(r.output,
                  "resuming opc_vllm::sequence_parallel_chunk_impl at generated case " + std::to_string(saved + 1));
}

TEST(Fuzz, UsageErrors) {
  EXPECT_EQ(run("fuzz " + kChunk + " --out /tmp/x").exit, 2);
  Result r = run("fuzz " + kChunk + " --cases 10 --out /tmp/x --shard 2/2");
  EXPECT_EQ(r.exit, 2);
  EXPECT_CONTAINS(r.output, "--shard's I needs a number from 0 to 1");
  r = run("fuzz " + kChunk + " --time 5x --out /tmp/x");
  EXPECT_EQ(r.exit, 2);
  EXPECT_CONTAINS(r.output, "is not a duration");
  r = run("fuzz " + kChunk + " --cases 5 --out /tmp/x --modes eager,bogus");
  EXPECT_CONTAINS(r.output, "--modes: unknown mode 'bogus'");
  r = run("fuzz " + kChunk + " --cases 5 --out /proc/opcontract-out");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "opcontract: error: ");
  EXPECT_CONTAINS(r.output, "/proc/opcontract-out");
}

TEST(Replay, ACaseNamingAContractOutsideIsRefused) {
  const std::string path = fresh_dir("replay_outside.yaml");
  std::ofstream(path) << R"({"contract": "../../etc/contract.yaml", "target": "a::b", "clause": "alias",
 "mode": "eager", "seed": 1, "found_at": 1, "message": "m", "case": {"args": {}, "data_seed": 7}})";
  const Result r = run("replay " + path);
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "outside the working directory; pass --contract FILE");
}

}  // namespace
}  // namespace opc
