// Misuse variants (generators/misuse.h): each breaks one relation of a valid case, says so
// in words, travels in case files, and runs in fenced memory where a read past a tensor's
// end faults.
#include <gtest/gtest.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "spec/contract_loader.h"
#include "generators/case_file.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/misuse.h"
#include "runners/materialize.h"
#include "tests/cli_run.h"

namespace opc {
namespace {

const char* kGather = R"Y(
op: t::gather
schema: "gather(Tensor table, Tensor idx, Tensor(a!) out) -> ()"
dims:
  rows: {range: [1, 4]}
  cols: {range: [1, 4]}
  n: {range: [1, 4]}
args:
  table: {dtype: [float32], shape: [rows, cols], layouts: [contiguous, row_strided]}
  idx: {dtype: [int64], shape: [n], values: {ints: [0, rows - 1]}}
  out: {dtype: table, shape: [n, cols]}
mutates:
  out: {writes: all}
)Y";

Case first_case(const std::shared_ptr<const Contract>& c) {
  return case_gen(c)(rc::Random(7), 10).value();
}

TEST(Misuse, EachVariantBreaksOneRelationOfThePlainCall) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kGather, "gather.yaml"));
  const Case valid = first_case(contract);
  const std::vector<Misuse> all = misuse_variants(valid, *contract);
  std::set<MisuseKind> kinds;
  for (const Misuse& m : all) {
    kinds.insert(m.kind);
    Case c = valid;
    c.misuse = m;
    const std::optional<Case> handed = apply_misuse(c, *contract);
    ASSERT_TRUE(handed) << misuse_text(c, *contract);
    const Case plain = plain_valid_call(c, *contract);
    for (size_t a = 0; a < plain.args.size(); ++a) {
      const auto* p = std::get_if<TensorCase>(&plain.args[a]);
      const auto* h = std::get_if<TensorCase>(&handed->args[a]);
      if (!p || static_cast<int>(a) == m.arg) continue;
      EXPECT_TRUE(p->sizes == h->sizes && p->dtype == h->dtype && p->layout == h->layout)
          << "only the misused argument changes: " << misuse_text(c, *contract);
    }
    EXPECT_FALSE(misuse_text(c, *contract).empty());
  }
  EXPECT_EQ(kinds, (std::set<MisuseKind>{MisuseKind::Size, MisuseKind::Rank, MisuseKind::Dtype, MisuseKind::Layout,
                                         MisuseKind::Index}));
}

TEST(Misuse, TheMistakeInWords) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kGather, "gather.yaml"));
  Case c = first_case(contract);
  const auto& table = std::get<TensorCase>(c.args[0]);
  c.misuse = {MisuseKind::Size, 0, 0, static_cast<int64_t>(SizeChange::Double)};
  EXPECT_EQ(misuse_text(c, *contract), "table: size of dim 0 doubled (" + shape_text(table.sizes) + " -> " +
                                           shape_text({2 * table.sizes[0], table.sizes[1]}) + ")");
  c.misuse = {MisuseKind::Layout, 0, -1, static_cast<int64_t>(Layout::Transposed)};
  EXPECT_EQ(misuse_text(c, *contract),
            "table: transposed, a layout the contract does not list (it lists contiguous, row_strided)");
  const int64_t rows = std::get<TensorCase>(c.args[0]).sizes[0];
  c.misuse = {MisuseKind::Index, 1, -1, rows};
  EXPECT_EQ(misuse_text(c, *contract),
            "idx: one element " + std::to_string(rows) + ", outside [0, " + std::to_string(rows - 1) + "]");
  c.misuse = {MisuseKind::Dtype, 2, -1, static_cast<int64_t>(c10::ScalarType::Half)};
  EXPECT_EQ(misuse_text(c, *contract), "out: float16 instead of float32 (its dtype tied to table's)");
  c.misuse = {MisuseKind::Dtype, 0, -1, static_cast<int64_t>(c10::ScalarType::Half)};
  EXPECT_EQ(misuse_text(c, *contract), "table: float16 instead of float32 (out's dtype tied to it)");
  const std::vector<int64_t> out = std::get<TensorCase>(c.args[2]).sizes;
  c.misuse = {MisuseKind::Size, 2, 1, static_cast<int64_t>(SizeChange::PlusOne)};
  EXPECT_EQ(misuse_text(c, *contract), "out: size of dim 1 one larger (" + shape_text(out) + " -> " +
                                           shape_text({out[0], out[1] + 1}) + "; tied to table's dim 1 (cols))");
}

// A scalar the contract ties to the dims, and one with listed values.
const char* kScalars = R"Y(
op: t::widths
schema: "widths(Tensor x, int width, str how) -> Tensor"
dims:
  rows: {range: [1, 4]}
  cols: {range: [2, 4]}
args:
  x: {dtype: [float32], shape: [rows, cols]}
  width: cols
  how: {choose: [sum, max]}
)Y";

TEST(Misuse, ScalarsAreHandedValuesTheContractDoesNotGiveThem) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kScalars, "widths.yaml"));
  const Case valid = first_case(contract);
  const int64_t cols = std::get<int64_t>(std::get<ScalarValue>(valid.args[1]));
  std::set<int64_t> widths;
  int hows = 0;
  for (const Misuse& m : misuse_variants(valid, *contract)) {
    if (m.kind != MisuseKind::Scalar) continue;
    Case c = valid;
    c.misuse = m;
    const std::optional<Case> handed = apply_misuse(c, *contract);
    ASSERT_TRUE(handed);
    const ScalarValue& v = std::get<ScalarValue>(handed->args[m.arg]);
    if (m.arg == 1) {
      widths.insert(std::get<int64_t>(v));
      EXPECT_EQ(misuse_text(c, *contract), "width: " + std::to_string(std::get<int64_t>(v)) + " instead of " +
                                               std::to_string(cols) + " (tied to the dims: cols)");
    } else {
      ++hows;
      EXPECT_EQ(std::get<std::string>(v), kUnlistedString);
      EXPECT_NE(misuse_text(c, *contract).find("(not among its values: \"sum\", \"max\")"), std::string::npos)
          << misuse_text(c, *contract);
    }
  }
  EXPECT_EQ(widths, (std::set<int64_t>{cols - 1, cols + 1, 2 * cols, 0}));
  EXPECT_EQ(hows, 1);
}

TEST(Misuse, CaseFilesCarryAScalarMistake) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kScalars, "widths.yaml"));
  Case c = first_case(contract);
  c.misuse = {MisuseKind::Scalar, 1, -1, 0};
  const std::string path = testing::TempDir() + "/opc_misuse_scalar.yaml";
  write_case_file(path, {"", "widths.yaml", "t::widths", Clause::Misuse, Mode::Eager, "m", 7, 1, {}}, c, *contract);
  const Case back = parse_case(read_case_file(path), *contract);
  EXPECT_EQ(back.misuse, c.misuse);
  EXPECT_EQ(misuse_text(back, *contract), misuse_text(c, *contract));
  std::remove(path.c_str());
}

TEST(Misuse, CaseFilesCarryTheMistake) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kGather, "gather.yaml"));
  Case c = first_case(contract);
  c.misuse = {MisuseKind::Size, 2, 1, static_cast<int64_t>(SizeChange::MinusOne)};
  if (std::get<TensorCase>(c.args[2]).sizes[1] == 0) c.misuse.value = static_cast<int64_t>(SizeChange::PlusOne);
  const std::string path = testing::TempDir() + "/opc_misuse_case.yaml";
  write_case_file(path, {"", "gather.yaml", "t::gather", Clause::Misuse, Mode::Eager, "m", 7, 1, {}}, c, *contract);
  const Case back = parse_case(read_case_file(path), *contract);
  EXPECT_EQ(back.misuse, c.misuse);
  EXPECT_EQ(describe(back, *contract), describe(c, *contract));
  std::remove(path.c_str());
}

TEST(Misuse, CaseFilesWithABadMistakeAreRefusedWithWhere) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kGather, "gather.yaml"));
  Case c = first_case(contract);
  c.misuse = {MisuseKind::Layout, 0, -1, static_cast<int64_t>(Layout::Transposed)};
  const std::string path = testing::TempDir() + "/opc_misuse_bad.yaml";
  write_case_file(path, {"", "gather.yaml", "t::gather", Clause::Misuse, Mode::Eager, "m", 7, 1, {}}, c, *contract);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"transposed\""), 12, "\"sideways\"");
  try {
    parse_case(read_case_text(text, path), *contract);
    ADD_FAILURE() << "accepted an unknown layout";
  } catch (const ContractError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown layout 'sideways'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path + ":2:"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// One element read past the end of a fenced tensor's storage faults.
TEST(MisuseDeathTest, AReadPastAFencedTensorsEndFaults) {
  const auto contract = std::make_shared<const Contract>(load_contract_text(kGather, "gather.yaml"));
  const Case c = first_case(contract);
  const CaseFacts facts(c, *contract);
  const Materialized m = materialize(c, *contract, facts, Placement::Fenced);
  const at::Tensor& s = m.tensors[0].storage;
  const auto* end = static_cast<const volatile uint8_t*>(s.data_ptr()) + s.numel() * s.element_size();
  EXPECT_EQ(end[-1], kGuardByte) << "the storage ends in guard bytes";
  EXPECT_DEATH((void)end[0], "");
}

// Through the command line: a case file whose index is one past the table's end, replayed.
// The gather that trusts its index reads the row after the table: the fence stops it.
TEST(MisuseCli, AnIndexPastTheEndIsACrashInFencedMemory) {
  const std::string path = testing::TempDir() + "/opc_misuse_gather.yaml";
  {
    std::ofstream out(path);
    out << R"(# opcontract case
{"contract": "tests/contracts/misuse_index.yaml", "target": "opc_test::gather_trusting", "clause": "misuse",
 "mode": "eager", "seed": 1, "found_at": 1, "message": "planted",
 "case": {"rows": 1, "cols": 32, "n": 1,
          "args": {"table": {"dtype": "float32", "shape": [1, 32], "layout": "contiguous"},
                   "idx": {"dtype": "int64", "shape": [1], "layout": "contiguous"}},
          "misuse": {"kind": "index", "arg": "idx", "value": 1}, "data_seed": 5}}
)";
  }
  const Result r = run("replay " + shell_quote(path) + " --no-python --load " + std::string(OPC_TEST_OPS));
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "misuse (eager): the op did not refuse a caller's mistake (idx: one element 1, outside [0, 0])");
  EXPECT_CONTAINS(r.output, "SIGSEGV");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace opc
