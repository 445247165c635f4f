// The clause catalogue (spec/catalogue.h) is the one list of clauses: every row has what
// docs/architecture.md's "Adding a clause" asks for (an oracle or the pipeline that judges
// it, a judge line, a planted op caught by exactly it, its docs), and the loader, the plan
// and the reports take their clauses from it. A clause missing any piece fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "check/result.h"
#include "spec/catalogue.h"
#include "spec/contract_loader.h"

namespace opc {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file's text under `folder` with one of these extensions.
std::string texts_under(const fs::path& folder, const std::vector<std::string>& exts) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    if (e.is_regular_file() && std::find(exts.begin(), exts.end(), e.path().extension().string()) != exts.end())
      all += read(e.path()) + "\n";
  return all;
}

// "Alias" for "alias", "Precondition" for "precondition": the enumerator's spelling.
std::string enumerator(std::string_view id) {
  std::string s(id);
  s[0] = static_cast<char>(std::toupper(s[0]));
  return s;
}

const fs::path kRoot(OPC_SOURCE_DIR);

TEST(Catalogue, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> ids;
  for (const ClauseInfo& c : kClauses) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id << " twice";
    ASSERT_EQ(clause_named(c.id), c.clause);
    EXPECT_EQ(to_string(c.clause), std::string(c.id));
  }
  EXPECT_FALSE(clause_named("aliasing").has_value());
  for (Mode m : kAllModes) EXPECT_EQ(mode_named(to_string(m)), m);
}

TEST(Catalogue, EveryClauseHasItsOracleOrPipelineAndAJudgeLine) {
  const std::string judge = read(kRoot / "check/case_judge.cc");
  const std::string pipeline = texts_under(kRoot / "check", {".cc"});
  for (const ClauseInfo& c : kClauses) {
    const std::string name = "Clause::" + enumerator(c.id);
    if (c.judged_by == JudgedBy::Oracle) {
      EXPECT_TRUE(fs::exists(kRoot / "oracles" / (std::string(c.id) + ".cc")))
          << c.id << ": no oracles/" << c.id << ".cc";
      // A clause judged per case has its line in the judge; a static one (schema) is
      // judged once, by the pipeline.
      EXPECT_NE((c.modes.empty() ? pipeline : judge).find(name), std::string::npos)
          << c.id << ": no judge line naming " << name << (c.modes.empty() ? " in check/" : " in check/case_judge.cc");
    } else {
      EXPECT_NE(pipeline.find(name), std::string::npos) << c.id << ": the pipeline (check/) never names " << name;
    }
  }
}

// A planted op in tests/contracts/ whose regression expects the clause; for a clause about
// the contract itself rather than the op (branches), a planted contract of that name.
TEST(Catalogue, EveryClauseHasAPlantedOpCaughtByIt) {
  const std::string planted = texts_under(kRoot / "tests/contracts", {".yaml"});
  for (const ClauseInfo& c : kClauses) {
    const std::regex expect("expect: *\\[[^\\]]*\\b" + std::string(c.id) + "\\b");
    const bool planted_contract = fs::exists(kRoot / "tests/planted_contracts" / (std::string(c.id) + ".yaml"));
    EXPECT_TRUE(std::regex_search(planted, expect) || (c.judged_by == JudgedBy::Pipeline && planted_contract))
        << c.id << ": no planted op in tests/contracts/ lists it in a regression's expect:";
  }
}

TEST(Catalogue, EveryClauseIsDocumented) {
  const std::string docs = read(kRoot / "docs/clauses-and-modes.md");
  for (const ClauseInfo& c : kClauses)
    EXPECT_NE(docs.find("| `" + std::string(c.id) + "` |"), std::string::npos)
        << c.id << ": no row in docs/clauses-and-modes.md";
  for (Mode m : kAllModes)
    EXPECT_NE(docs.find(std::string("| `") + to_string(m) + "` |"), std::string::npos)
        << to_string(m) << ": no row in docs/clauses-and-modes.md";
}

// The loader takes its clause ids from the catalogue: every id is a known_findings clause,
// and a near miss is refused with the closest one.
TEST(Catalogue, TheLoaderTakesItsIdsFromIt) {
  for (const ClauseInfo& c : kClauses) {
    const std::string text = std::string("op: t::op\nschema: \"op(Tensor x) -> Tensor\"\nargs: {x: {dtype: float32, shape: [2]}}\n") +
                             "known_findings:\n  - {clause: " + std::string(c.id) + ", reason: r" +
                             (c.clause == Clause::Misuse ? ", arg: x, kind: size" : "") + "}\n";
    EXPECT_EQ(load_contract_text(text, "t.yaml").known_findings[0].clause, c.clause) << c.id;
  }
  try {
    load_contract_text("op: t::op\nschema: \"op(Tensor x) -> Tensor\"\nargs: {x: {dtype: float32, shape: [2]}}\n"
                       "known_findings:\n  - {clause: aliass, reason: r}\n",
                       "t.yaml");
    ADD_FAILURE() << "an unknown clause was accepted";
  } catch (const ContractError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'alias'?"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opc
