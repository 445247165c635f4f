// Views of a contract's buffers (buffers:, view:): the steps give the geometry PyTorch's
// own methods give, the views of one buffer share one storage when materialised (and in a
// copy of a run), a step that does not apply is the contract's error at that step, and a
// mistaken view becomes a tensor of its own.
#include "generators/view_carve.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstring>
#include <memory>

#include "spec/contract_loader.h"
#include "generators/case_file.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/misuse.h"
#include "runners/materialize.h"

namespace opc {
namespace {

// Every kind of step: q and k slices of one fused qkv row (k split into heads and
// transposed), kc and vc selected and chunked out of one cache for every layer.
const char* kViews = R"Y(op: t::op
schema: "op(Tensor q, Tensor k, Tensor kc, Tensor vc) -> ()"
dims: {n: {range: [0, 5]}, h: {range: [1, 4]}, d: {range: [1, 6]}, l: {range: [1, 3]}}
buffers:
  qkv: {shape: [n, "3 * h * d"]}
  kv: {shape: [l, n, 2, h, d]}
args:
  q: {dtype: [float32, bfloat16], shape: [n, "h * d"], layouts: [contiguous, view],
      view: {of: qkv, steps: [{narrow: [1, 0, "h * d"]}]}}
  k: {dtype: q, shape: [h, n, d],
      view: {of: qkv, steps: [{narrow: [-1, "h * d", "h * d"]}, {view: [n, h, d]}, {transpose: [0, 1]}]}}
  kc: {dtype: [float16], shape: [n, h, d],
       view: {of: kv, steps: [{select: [0, "l - 1"]}, {select: [1, 0]}]}}
  vc: {dtype: kc, shape: [n, h, d],
       view: {of: kv, steps: [{select: [0, -1]}, {chunk: [2, 1, 1]}, {view: [n, h, d]}]}}
)Y";

std::shared_ptr<const Contract> views_contract() {
  static const auto c = std::make_shared<const Contract>(load_contract_text(kViews, "views.yaml"));
  return c;
}

std::vector<Case> generate(const std::shared_ptr<const Contract>& c, int n, uint64_t seed) {
  const rc::Gen<Case> gen = case_gen(c);
  rc::Random master(seed);
  std::vector<Case> out;
  for (int i = 0; i < n; ++i) out.push_back(gen(master.split(), i % 101).value());
  return out;
}

// The same views made by PyTorch from real buffers, in schema order.
std::vector<at::Tensor> pytorch_views(const Case& c, const Contract& contract) {
  auto v = [&](const char* name) { return c.values[std::find(contract.scope.values.begin(), contract.scope.values.end(), name) - contract.scope.values.begin()]; };
  const int64_t n = v("n"), h = v("h"), d = v("d"), l = v("l");
  const at::Tensor qkv = at::empty({n, 3 * h * d});
  const at::Tensor kv = at::empty({l, n, 2, h, d});
  return {qkv.narrow(1, 0, h * d), qkv.narrow(-1, h * d, h * d).view({n, h, d}).transpose(0, 1),
          kv.select(0, l - 1).select(1, 0), kv.select(0, -1).chunk(2, 1)[1].view({n, h, d})};
}

TEST(ViewCarve, StepsGiveTheGeometryPyTorchsMethodsGive) {
  const auto contract = views_contract();
  int shared = 0;
  for (const Case& c : generate(contract, 200, 7)) {
    const std::vector<at::Tensor> want = pytorch_views(c, *contract);
    const CaseFacts facts(c, *contract);
    for (int arg = 0; arg < 4; ++arg) {
      const auto& t = std::get<TensorCase>(c.args[arg]);
      if (t.layout != Layout::View) continue;
      const Geometry& g = facts.geometry(arg);
      EXPECT_EQ(g.sizes, want[arg].sizes().vec()) << describe(c, *contract);
      EXPECT_EQ(g.strides, want[arg].strides().vec()) << describe(c, *contract);
      EXPECT_EQ(g.offset, want[arg].storage_offset()) << describe(c, *contract);
      EXPECT_EQ(g.contiguous, want[arg].is_contiguous()) << describe(c, *contract);
      EXPECT_EQ(g.storage_elems, static_cast<int64_t>(want[arg].storage().nbytes() / want[arg].element_size()));
    }
    shared += std::get<TensorCase>(c.args[0]).layout == Layout::View;
  }
  EXPECT_GT(shared, 40) << "q is drawn as a view about half of the time";
}

TEST(ViewCarve, ViewsOfOneBufferShareOneStorageAndACopyKeepsThem) {
  const auto contract = views_contract();
  int seen = 0;
  for (const Case& c : generate(contract, 60, 11)) {
    if (std::get<TensorCase>(c.args[0]).layout != Layout::View) continue;
    ++seen;
    const CaseFacts facts(c, *contract);
    const Materialized m = materialize(c, *contract, facts);
    ASSERT_EQ(m.tensors.size(), 4u);
    for (const Materialized& run : {m, copy_of(m)}) {
      const auto storage = [&](int i) { return run.tensors[i].view.storage().unsafeGetStorageImpl(); };
      EXPECT_EQ(storage(0), storage(1)) << "q and k: one qkv buffer";
      EXPECT_EQ(storage(2), storage(3)) << "kc and vc: one kv buffer";
      EXPECT_NE(storage(0), storage(2));
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(run.tensors[i].view.storage_offset(), kGuardElems + facts.geometry(i).offset);
    }
    const Materialized copy = copy_of(m);
    for (int i = 0; i < 4; ++i)  // bytes, not values: edge values hold NaNs
      EXPECT_EQ(std::memcmp(copy.tensors[i].storage.data_ptr(), m.tensors[i].storage.data_ptr(), m.tensors[i].storage.nbytes()), 0);
  }
  EXPECT_GT(seen, 10);
}

// PyTorch's own .view() is the judge of when strides allow a view without a copy.
TEST(ViewCarve, ACaseFileOfViewsReplaysTheSameCase) {
  const auto contract = views_contract();
  for (const Case& c : generate(contract, 20, 5)) {
    CaseFileRecord r;
    r.contract = "views.yaml";
    r.target = "t::op";
    const std::string path = ::testing::TempDir() + "/views_case.json";
    write_case_file(path, r, c, *contract);
    const Case back = parse_case(read_case_file(path), *contract);
    EXPECT_EQ(describe(back, *contract), describe(c, *contract));
    for (int arg = 0; arg < 4; ++arg)
      EXPECT_EQ(std::get<TensorCase>(back.args[arg]).carved, std::get<TensorCase>(c.args[arg]).carved);
  }
}

TEST(ViewCarve, AViewIsAllowedExactlyWhenPyTorchAllowsIt) {
  const std::vector<std::vector<int64_t>> shapes = {{6}, {2, 3}, {3, 2}, {1, 6}, {6, 1}, {2, 1, 3}, {3, 1, 2}, {1, 2, 3}};
  int allowed = 0, refused = 0;
  for (const auto& from : shapes)
    for (bool transposed : {false, true}) {
      at::Tensor base = at::empty(from);
      if (transposed && base.dim() >= 2) base = base.transpose(0, base.dim() - 1);
      for (const auto& to : shapes) {
        const auto mine = view_strides(base.sizes().vec(), base.strides().vec(), to);
        try {
          const at::Tensor theirs = base.view(to);
          ASSERT_TRUE(mine.has_value()) << base.sizes() << base.strides() << " -> " << at::IntArrayRef(to);
          EXPECT_EQ(*mine, theirs.strides().vec()) << base.sizes() << base.strides() << " -> " << at::IntArrayRef(to);
          ++allowed;
        } catch (const c10::Error&) {
          EXPECT_FALSE(mine.has_value()) << base.sizes() << base.strides() << " -> " << at::IntArrayRef(to);
          ++refused;
        }
      }
    }
  EXPECT_GT(allowed, 50);
  EXPECT_GT(refused, 10);
}

TEST(ViewCarve, AStepThatDoesNotApplyIsTheContractsErrorAtThatStep) {
  const Contract c = load_contract_text(R"Y(op: t::op
schema: "op(Tensor x) -> ()"
dims: {n: {range: [1, 4]}}
buffers:
  b: {shape: [n, 8]}
args:
  x: {dtype: [float32], shape: [n, 4],
      view: {of: b, steps: [{narrow: [1, 6, 4]}]}}
)Y", "t.yaml");
  std::vector<int64_t> sizes;
  try {
    carve(c.args[0], c, {2}, sizes);
    ADD_FAILURE() << "a narrow past the end was carved";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().line, 8);
    EXPECT_NE(e.message().find("args.x.view: narrow(1, 6, 4) of a tensor of sizes [2, 8]: the slice runs outside dim 1"),
              std::string::npos)
        << e.message();
  }
  const Contract wrong = load_contract_text(R"Y(op: t::op
schema: "op(Tensor x) -> ()"
dims: {n: {range: [1, 4]}}
buffers:
  b: {shape: [n, 8]}
args:
  x: {dtype: [float32], shape: [n, 4],
      view: {of: b, steps: [{narrow: [1, 0, 3]}]}}
)Y", "t.yaml");
  Case k;
  k.values = {2};
  TensorCase t;
  t.sizes = {2, 4};
  t.layout = Layout::View;
  k.args = {t};
  try {
    carve_views(k, wrong);
    ADD_FAILURE() << "steps ending in other sizes than the shape were accepted";
  } catch (const ContractError& e) {
    EXPECT_NE(e.message().find("the steps give sizes [2, 3] where its shape is [2, 4]"), std::string::npos) << e.message();
  }
}

TEST(ViewCarve, AViewMistakenInSizeOrDtypeBecomesATensorOfItsOwn) {
  const auto contract = views_contract();
  int mistaken = 0;
  for (const Case& c : generate(contract, 40, 3)) {
    for (const MisuseKind kind : {MisuseKind::Size, MisuseKind::Dtype}) {
      Case k = c;  // kc, always a view of kv: one row short, or float64
      k.misuse = {kind, 2, 0, kind == MisuseKind::Dtype ? static_cast<int64_t>(c10::ScalarType::Double) : 0};
      const std::optional<Case> handed = apply_misuse(k, *contract);
      if (!handed) continue;
      ++mistaken;
      EXPECT_NE(std::get<TensorCase>(handed->args[2]).layout, Layout::View) << describe(*handed, *contract);
      EXPECT_EQ(std::get<TensorCase>(handed->args[3]).layout, Layout::View) << "vc stays a view of kv";
      const CaseFacts facts(*handed, *contract);
      const Materialized m = materialize(*handed, *contract, facts, Placement::Fenced);
      EXPECT_NE(m.tensors[2].view.storage().unsafeGetStorageImpl(), m.tensors[3].view.storage().unsafeGetStorageImpl());
    }
  }
  EXPECT_GT(mistaken, 30);
}

}  // namespace
}  // namespace opc
