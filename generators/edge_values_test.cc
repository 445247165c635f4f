// Edge values (generators/edge_values.h): which forms a tensor may get, what each puts in
// the tensor, how often they come, and that cases carry them in words and in case files.
#include <gtest/gtest.h>
#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>

#include <cstdio>
#include <map>

#include "spec/contract_loader.h"
#include "generators/case_file.h"
#include "generators/case_gen.h"
#include "generators/edge_values.h"
#include "generators/layout.h"
#include "runners/materialize.h"

namespace opc {
namespace {

const char* kContract = R"Y(
op: t::f
schema: "f(Tensor x, Tensor idx, Tensor y) -> Tensor"
dims:
  rows: {range: [3, 6]}
  cols: {range: [3, 6]}
args:
  x: {dtype: [float32, float16, bfloat16], shape: [rows, cols]}
  idx: {dtype: [int32], shape: [rows], values: {ints: [2, 9]}}
  y: {dtype: [float32], shape: [rows, cols], values: finite}
)Y";

std::shared_ptr<const Contract> contract() {
  static auto c = std::make_shared<const Contract>(load_contract_text(kContract, "f.yaml"));
  return c;
}

TEST(EdgeValues, FormsFollowTheDtypeAndTheValues) {
  const Contract& c = *contract();
  EXPECT_EQ(edge_forms(c.args[0], c10::ScalarType::Half).size(), 6u);
  EXPECT_EQ(edge_forms(c.args[1], c10::ScalarType::Int),
            (std::vector<ValueForm>{ValueForm::Low, ValueForm::High, ValueForm::Repeated}));
  const auto finite = edge_forms(c.args[2], c10::ScalarType::Float);
  EXPECT_EQ(std::count(finite.begin(), finite.end(), ValueForm::NonFinite), 0) << "values: finite";
}

TEST(EdgeValues, AUniformTensorMayPromiseFiniteValues) {
  const auto with_values = [](const std::string& values) {
    return "op: t::g\nschema: \"g(Tensor s) -> Tensor\"\nargs:\n  s: {dtype: [float32], shape: [1], values: " +
           values + "}\n";
  };
  const Contract c = load_contract_text(with_values("{uniform: [1, 4], finite: true}"), "g.yaml");
  const auto forms = edge_forms(c.args[0], c10::ScalarType::Float);
  EXPECT_EQ(std::count(forms.begin(), forms.end(), ValueForm::NonFinite), 0);
  EXPECT_EQ(forms.size(), 5u) << "the other edge values stay";
  try {
    load_contract_text(with_values("{ints: [1, 4], finite: true}"), "g.yaml");
    FAIL() << "finite on ints loaded";
  } catch (const ContractError& e) {
    EXPECT_EQ(to_string(e.loc()), "g.yaml:4:68");
    EXPECT_NE(e.message().find("args.s.values.finite goes with uniform"), std::string::npos) << e.message();
  }
}

// Materialises one case with `form` on x (or idx) and returns that tensor.
at::Tensor with_form(int arg, ValueForm form, c10::ScalarType dtype = c10::ScalarType::Float) {
  Case k = case_gen(contract())(rc::Random(3), 10).value();
  auto& t = std::get<TensorCase>(k.args[arg]);
  t.form = form;
  if (arg == 0) t.dtype = dtype;
  const CaseFacts facts(k, *contract());
  return materialize(k, *contract(), facts).tensors[arg].view.to(at::kDouble);
}

TEST(EdgeValues, EachFormPutsWhatItSays) {
  const at::Tensor zero = with_form(0, ValueForm::ZeroRows);
  EXPECT_TRUE(zero[0].eq(0).all().item<bool>() && zero[2].eq(0).all().item<bool>());
  EXPECT_FALSE(zero[1].eq(0).all().item<bool>()) << "every other row";
  const at::Tensor constant = with_form(0, ValueForm::ConstantRows);
  EXPECT_TRUE(constant.eq(constant.select(1, 0).unsqueeze(1)).all().item<bool>());
  EXPECT_GE(with_form(0, ValueForm::Huge, c10::ScalarType::Half).abs().max().item<double>(), 60000);
  const at::Tensor tied = with_form(0, ValueForm::TiedMax);
  for (int64_t r = 0; r < tied.size(0); ++r) EXPECT_GE(tied[r].eq(tied[r].max()).sum().item<int64_t>(), 2);
  const at::Tensor sub = with_form(0, ValueForm::Denormals);
  EXPECT_GT(sub.flatten()[0].item<double>(), 0);
  EXPECT_LT(sub.flatten()[0].item<double>(), 1.2e-38) << "below float32's smallest normal";
  const at::Tensor nonfinite = with_form(0, ValueForm::NonFinite);
  EXPECT_TRUE(std::isnan(nonfinite.flatten()[0].item<double>()));
  EXPECT_EQ(nonfinite.isinf().sum().item<int64_t>(), 2) << "+inf and -inf";
  EXPECT_TRUE(with_form(1, ValueForm::Low).eq(2).all().item<bool>());
  EXPECT_TRUE(with_form(1, ValueForm::High).eq(9).all().item<bool>());
  const at::Tensor repeated = with_form(1, ValueForm::Repeated);
  EXPECT_TRUE(repeated.eq(repeated[0]).all().item<bool>());
}

TEST(EdgeValues, OneTensorInThreeGetsAForm) {
  const rc::Gen<Case> gen = case_gen(contract());
  rc::Random master(11);
  std::map<ValueForm, int> seen;
  int with_form = 0, tensors = 0;
  for (int i = 0; i < 600; ++i) {
    const Case k = gen(master.split(), i % 101).value();
    for (const auto& a : k.args)
      if (const auto* t = std::get_if<TensorCase>(&a)) {
        ++tensors;
        with_form += t->form != ValueForm::Drawn;
        ++seen[t->form];
      }
  }
  EXPECT_NEAR(static_cast<double>(with_form) / tensors, 1.0 / 3, 0.05);
  EXPECT_EQ(seen.size(), 10u) << "every form comes up";
}

TEST(EdgeValues, CasesSayTheirFormAndCaseFilesKeepIt) {
  Case k = case_gen(contract())(rc::Random(3), 10).value();
  std::get<TensorCase>(k.args[0]).form = ValueForm::TiedMax;
  std::get<TensorCase>(k.args[2]).form = ValueForm::Drawn;
  EXPECT_NE(describe(k, *contract()).find("contiguous tied_max"), std::string::npos) << describe(k, *contract());
  const std::string path = testing::TempDir() + "/opc_edge_case.yaml";
  write_case_file(path, {"", "f.yaml", "t::f", Clause::Finite, Mode::Eager, "m", 1, 1, {}}, k, *contract());
  const Case back = parse_case(read_case_file(path), *contract());
  EXPECT_EQ(std::get<TensorCase>(back.args[0]).form, ValueForm::TiedMax);
  std::get<TensorCase>(k.args[2]).form = ValueForm::NonFinite;  // y says values: finite
  write_case_file(path, {"", "f.yaml", "t::f", Clause::Finite, Mode::Eager, "m", 1, 1, {}}, k, *contract());
  EXPECT_THROW(parse_case(read_case_file(path), *contract()), ContractError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace opc
