// The case generator: cases meet the contract, favoured values come often, runs are
// reproducible by seed, and failures shrink to the simplest case.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "spec/contract_loader.h"
#include "generators/case_gen.h"
#include "generators/dim_gen.h"
#include "generators/layout.h"
#include "generators/shrink.h"
#include "runners/materialize.h"

namespace opc {
namespace {

std::shared_ptr<const Contract> spc_contract() {
  static auto c = std::make_shared<const Contract>(
      load_contract(std::string(OPC_SOURCE_DIR) + "/contracts/vllm/sequence_parallel_chunk_impl.yaml"));
  return c;
}

int64_t value(const Case& c, const Contract& contract, const std::string& name) {
  for (const auto& v : contract.values)
    if (v.name == name) return c.values[v.slot];
  ADD_FAILURE() << "no value " << name;
  return 0;
}

std::vector<Case> generate(const std::shared_ptr<const Contract>& c, int n, uint64_t seed) {
  const rc::Gen<Case> gen = case_gen(c);
  rc::Random master(seed);
  std::vector<Case> out;
  for (int i = 0; i < n; ++i) out.push_back(gen(master.split(), i % 101).value());
  return out;
}

RC_GTEST_PROP(CaseGen, CasesMeetTheContract, ()) {
  const auto contract = spc_contract();
  const Case c = *case_gen(contract);
  const int64_t tp = value(c, *contract, "tp_size"), rank = value(c, *contract, "tp_rank");
  const int64_t seq = value(c, *contract, "seq_len"), hidden = value(c, *contract, "hidden");
  RC_ASSERT(tp == 1 || tp == 2 || tp == 3 || tp == 4 || tp == 8);
  RC_ASSERT(rank >= 0 && rank < tp);
  RC_ASSERT(seq >= 0 && seq <= 512);
  RC_ASSERT(hidden >= 1 && hidden <= 64);
  const TensorCase& x = std::get<TensorCase>(c.args[0]);
  RC_ASSERT(x.sizes == (std::vector<int64_t>{seq, hidden}));
  RC_ASSERT(x.dtype == c10::ScalarType::Float || x.dtype == c10::ScalarType::Half ||
            x.dtype == c10::ScalarType::BFloat16);
}

TEST(CaseGen, FavouredValuesComeOften) {
  const auto contract = spc_contract();
  int divisible = 0, one_past = 0, zero = 0, nontrivial_tp = 0;
  const std::vector<Case> cases = generate(contract, 1000, 7);
  for (const Case& c : cases) {
    const int64_t tp = value(c, *contract, "tp_size"), seq = value(c, *contract, "seq_len");
    if (tp == 1) continue;
    ++nontrivial_tp;
    divisible += seq % tp == 0;
    one_past += seq % tp == 1;
    zero += seq == 0;
  }
  // Uniform picks would give 1/tp divisible and 1/tp one past; favor: doubles both.
  EXPECT_GT(divisible, nontrivial_tp * 35 / 100) << divisible << " of " << nontrivial_tp;
  EXPECT_GT(one_past, nontrivial_tp * 25 / 100) << one_past << " of " << nontrivial_tp;
  EXPECT_GT(zero, 0);
}

TEST(CaseGen, SameSeedSameCases) {
  const auto contract = spc_contract();
  const std::vector<Case> a = generate(contract, 200, 42), b = generate(contract, 200, 42),
                          other = generate(contract, 200, 43);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(describe(a[i], *contract), describe(b[i], *contract));
    EXPECT_EQ(a[i].data_seed, b[i].data_seed);
    differ += describe(a[i], *contract) != describe(other[i], *contract);
  }
  EXPECT_GT(differ, 100);
}

// A failure that needs seq_len divisible by tp_size and at least 10 shrinks to the
// simplest such case: tp_size 1, seq_len 10, hidden 1, the first dtype and layout.
TEST(CaseGen, ShrinksToTheSimplestFailingCase) {
  const auto contract = spc_contract();
  auto fails = [&](const Case& c) {
    const int64_t tp = value(c, *contract, "tp_size"), seq = value(c, *contract, "seq_len");
    return seq % tp == 0 && seq >= 10;
  };
  const rc::Gen<Case> gen = case_gen(contract);
  rc::Random master(11);
  int checked = 0;
  for (int i = 0; i < 300 && checked < 5; ++i) {
    rc::Shrinkable<Case> s = gen(master.split(), 100);
    if (!fails(s.value())) continue;
    ++checked;
    const Case m = shrink_while(s, fails, 5000).minimal.value();
    EXPECT_EQ(describe(m, *contract),
              "tp_size=1 tp_rank=0 seq_len=10 hidden=1 | x: float32[10, 1] contiguous");
  }
  EXPECT_EQ(checked, 5);
}

TEST(CaseGen, RequiresFilterTheLayouts) {
  auto contract = std::make_shared<const Contract>(load_contract_text(R"Y(
op: t::op
schema: "op(Tensor x) -> Tensor"
dims: {n: {range: [0, 8]}, m: {range: [2, 8]}}
args:
  x: {dtype: [float32], shape: [n, m], layouts: [contiguous, transposed, row_strided, narrow]}
requires: ["x.stride(-1) == 1"]
)Y", "t.yaml"));
  int narrow = 0;
  for (const Case& c : generate(contract, 300, 3)) {
    const TensorCase& x = std::get<TensorCase>(c.args[0]);
    // A transposed [1, m] still has stride(-1) == 1; any larger one must be filtered out.
    EXPECT_EQ(geometry_of(x).strides.back(), 1) << describe(c, *contract);
    EXPECT_FALSE(x.layout == Layout::Transposed && x.sizes[0] > 1) << describe(c, *contract);
    narrow += x.layout == Layout::Narrow;
  }
  EXPECT_GT(narrow, 0);
}

// A budget bounds what drawn cases cost together, not each value: every value of the
// range still comes, large ones only beside small others; a case outside it stays valid.
TEST(CaseGen, ABudgetKeepsLargeValuesApartWithoutNarrowingTheRange) {
  auto contract = std::make_shared<const Contract>(load_contract_text(R"Y(
op: t::op
schema: "op(Tensor x) -> Tensor"
dims: {n: {range: [1, 4096]}, m: {range: [1, 4096]}}
args:
  x: {dtype: [float32], shape: [n, m]}
budget: ["n * m <= 8192"]
)Y", "t.yaml"));
  int64_t largest_n = 0, largest_m = 0;
  for (const Case& c : generate(contract, 400, 5)) {
    const int64_t n = value(c, *contract, "n"), m = value(c, *contract, "m");
    EXPECT_LE(n * m, 8192) << describe(c, *contract);
    largest_n = std::max(largest_n, n);
    largest_m = std::max(largest_m, m);
  }
  EXPECT_EQ(largest_n, 4096) << "the range's top is still drawn";
  EXPECT_EQ(largest_m, 4096);
  Case big = generate(contract, 1, 5)[0];
  big = with_value(big, *contract, contract->values[0].slot, 4096);
  big = with_value(big, *contract, contract->values[1].slot, 4096);
  EXPECT_TRUE(case_is_valid(big, *contract)) << "a real call outside the budget is a valid case";
}

// A scalar argument computed from the dims follows them, in generation and in shrinking.
TEST(CaseGen, ScalarsFollowTheirDims) {
  const auto contract = std::make_shared<const Contract>(
      load_contract(std::string(OPC_SOURCE_DIR) + "/contracts/vllm/rotary_embedding.yaml"));
  const ArgSpec& head_size = *contract->arg("head_size");
  const ArgSpec& is_neox = *contract->arg("is_neox");
  std::set<int64_t> sizes;
  for (const Case& c : generate(contract, 300, 5)) {
    const int64_t hs = value(c, *contract, "hs");
    sizes.insert(hs);
    EXPECT_EQ(std::get<int64_t>(std::get<ScalarValue>(c.args[head_size.index])), hs);
    EXPECT_EQ(std::get<TensorCase>(c.args[contract->arg("query")->index]).sizes.back(), hs);
    EXPECT_EQ(std::get<bool>(std::get<ScalarValue>(c.args[is_neox.index])), value(c, *contract, "neox") == 1);
  }
  EXPECT_EQ(sizes, (std::set<int64_t>{16, 64, 80, 96, 128, 256}));
  // Shrunk towards the first choice, the argument goes along.
  auto big = [&](const Case& c) { return value(c, *contract, "hs") >= 64; };
  const rc::Gen<Case> gen = case_gen(contract);
  rc::Random master(3);
  for (int i = 0; i < 100; ++i) {
    rc::Shrinkable<Case> s = gen(master.split(), 100);
    if (!big(s.value())) continue;
    const Case m = shrink_while(s, big, 2000).minimal.value();
    EXPECT_EQ(value(m, *contract, "hs"), 64);
    EXPECT_EQ(std::get<int64_t>(std::get<ScalarValue>(m.args[head_size.index])), 64);
    EXPECT_EQ(case_misfit(m, *contract), "");
    break;
  }
}

RC_GTEST_PROP(DimGen, StaysInRangeAndShrinksToLo, (int lo_raw, unsigned span_raw)) {
  const int64_t lo = lo_raw % 1000, hi = lo + span_raw % 1000;
  const int64_t step = 1 + span_raw % 7;
  const rc::Gen<int64_t> gen = dim_gen(lo, hi, {[step](int64_t k) { return std::optional<int64_t>(k * step); },
                                                [](int64_t k) { return std::optional<int64_t>(k * k); }});
  const rc::Shrinkable<int64_t> s = gen(rc::Random(static_cast<uint64_t>(lo_raw) * 31 + span_raw), 100);
  RC_ASSERT(s.value() >= lo && s.value() <= hi);
  const int64_t minimal = shrink_while(s, [](int64_t) { return true; }, 10000).minimal.value();
  RC_ASSERT(minimal == lo);
}

TEST(Layout, GeometryOfEachLayout) {
  TensorCase t;
  t.sizes = {3, 4};
  t.layout = Layout::Narrow;
  t.slack = 2;
  Geometry g = geometry_of(t);
  EXPECT_EQ(g.offset, 8);
  EXPECT_EQ(g.storage_elems, 28);
  EXPECT_TRUE(g.contiguous);
  t.layout = Layout::Transposed;
  g = geometry_of(t);
  EXPECT_EQ(g.strides, (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(g.contiguous);
  t.layout = Layout::RowStrided;
  t.slack = 3;
  g = geometry_of(t);
  EXPECT_EQ(g.strides, (std::vector<int64_t>{7, 1}));
  EXPECT_FALSE(g.contiguous);
  t.layout = Layout::Misaligned;
  t.slack = 3;
  g = geometry_of(t);
  EXPECT_EQ(g.offset, 3);
  EXPECT_EQ(g.storage_elems, 15);
  EXPECT_TRUE(g.contiguous);
  t.layout = Layout::Expanded;
  g = geometry_of(t);
  EXPECT_EQ(g.strides, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g.storage_elems, 4);
  EXPECT_FALSE(g.contiguous);
  t.layout = Layout::InnerStrided;
  g = geometry_of(t);
  EXPECT_EQ(g.strides, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(g.storage_elems, 24);
  EXPECT_FALSE(layout_applies(Layout::Permuted, 2));
  t.sizes = {2, 3, 4};
  t.layout = Layout::Permuted;
  g = geometry_of(t);
  EXPECT_EQ(g.strides, (std::vector<int64_t>{4, 8, 1}));
  EXPECT_FALSE(g.contiguous);
  t.sizes = {5};  // one dim: transposed changes nothing
  t.layout = Layout::Transposed;
  EXPECT_FALSE(layout_applies(Layout::Transposed, 1));
  EXPECT_EQ(geometry_of(t).strides, (std::vector<int64_t>{1}));
}

// values: {offsets: total}: 0, non-decreasing, ending at the total, in every shape that
// breaks kernels (empty, one-token and all-in-one requests), narrow views included.
TEST(Materialize, OffsetsAreCumulativeWithTheirEdgeCases) {
  auto contract = std::make_shared<const Contract>(load_contract_text(R"Y(
op: t::op
schema: "op(Tensor cu) -> ()"
dims: {reqs: {range: [0, 6]}, tokens: {range: [0, 20]}}
args:
  cu: {dtype: [int32, int64], shape: ["reqs + 1"], layouts: [contiguous, narrow], values: {offsets: tokens}}
)Y", "t.yaml"));
  int empty_inside = 0, one_token = 0, all_in_one = 0;
  for (const Case& c : generate(contract, 400, 9)) {
    const CaseFacts facts(c, *contract);
    const at::Tensor cu = materialize(c, *contract, facts).tensors[0].view.to(at::kLong);
    const int64_t tokens = value(c, *contract, "tokens");
    ASSERT_EQ(cu[0].item<int64_t>(), 0) << describe(c, *contract);
    if (cu.numel() == 1) continue;
    ASSERT_EQ(cu[-1].item<int64_t>(), tokens) << describe(c, *contract);
    const at::Tensor sizes = cu.slice(0, 1) - cu.slice(0, 0, -1);
    ASSERT_TRUE((sizes >= 0).all().item<bool>()) << cu;
    empty_inside += tokens > 0 && (sizes == 0).any().item<bool>();
    one_token += cu.numel() > 2 && (sizes == 1).any().item<bool>();
    all_in_one += cu.numel() > 2 && tokens > 1 && (sizes == tokens).any().item<bool>();
  }
  EXPECT_GT(empty_inside, 40);
  EXPECT_GT(one_token, 40);
  EXPECT_GT(all_in_one, 20);
}

// Each layout's view is the geometry the generator computed, and the facts expressions
// read (storage offset, alignment, dtype) are the real tensor's.
TEST(Materialize, EveryLayoutAndItsFactsAreTheRealTensors) {
  auto contract = std::make_shared<const Contract>(load_contract_text(R"Y(
op: t::op
schema: "op(Tensor x) -> ()"
dims: {a: {range: [0, 4]}, b: {range: [1, 5]}, c: {range: [1, 7]}}
args:
  x: {dtype: [float32, bfloat16, int8, float64], shape: [a, b, c],
      layouts: [contiguous, narrow, transposed, row_strided, misaligned, expanded, inner_strided, permuted]}
)Y", "t.yaml"));
  std::set<Layout> seen;
  std::set<int64_t> alignments;
  for (const Case& c : generate(contract, 400, 13)) {
    const CaseFacts facts(c, *contract);
    const Materialized m = materialize(c, *contract, facts);
    const at::Tensor& x = m.tensors[0].view;
    const Geometry& g = facts.geometry(0);
    const TensorFacts& f = facts.input().tensors[0];
    seen.insert(std::get<TensorCase>(c.args[0]).layout);
    EXPECT_EQ(x.strides().vec(), g.strides) << describe(c, *contract);
    EXPECT_EQ(x.is_contiguous(), g.contiguous) << describe(c, *contract);
    EXPECT_EQ(x.storage_offset(), f.storage_offset);
    EXPECT_EQ(f.element_size, x.element_size());
    EXPECT_EQ(f.dtype, static_cast<int64_t>(x.scalar_type()));
    if (x.numel() == 0) continue;  // no data pointer to speak of
    const auto address = reinterpret_cast<uintptr_t>(x.data_ptr());
    EXPECT_EQ(address % f.alignment, 0u) << describe(c, *contract);
    if (f.alignment < kStorageAlignment) {
      EXPECT_NE(address % (2 * f.alignment), 0u) << describe(c, *contract);
    }
    alignments.insert(f.alignment);
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_TRUE(alignments.count(1) && alignments.count(64)) << "misaligned and aligned pointers both occur";
}

TEST(Materialize, ViewsSitInsideGuardedStorage) {
  auto contract = std::make_shared<const Contract>(load_contract_text(R"Y(
op: t::op
schema: "op(Tensor! out, Tensor x) -> ()"
dims: {n: {range: [1, 8]}}
args:
  out: {dtype: [float32], shape: [n, 4], layouts: [row_strided]}
  x: {dtype: out, shape: [n, 4], layouts: [narrow]}
mutates:
  out: {writes: all, sentinel: true}
)Y", "t.yaml"));
  for (const Case& c : generate(contract, 20, 5)) {
    const CaseFacts facts(c, *contract);
    Materialized m = materialize(c, *contract, facts);
    ASSERT_EQ(m.tensors.size(), 2u);
    for (const TensorArg& t : m.tensors) {
      const Geometry& g = facts.geometry(t.arg);
      EXPECT_EQ(t.view.sizes().vec(), g.sizes);
      EXPECT_EQ(t.view.strides().vec(), g.strides);
      EXPECT_EQ(t.view.storage_offset(), kGuardElems + g.offset);
      const auto* bytes = static_cast<const uint8_t*>(t.storage.data_ptr());
      for (int64_t i = 0; i < kGuardElems * 4; ++i) ASSERT_EQ(bytes[i], kGuardByte);
    }
    // Every element of the sentinel output holds the sentinel; x holds finite values unless
    // its edge values are the non-finite ones.
    const at::Tensor out = m.tensors[0].view.contiguous();
    const std::vector<uint8_t> sentinel = sentinel_bytes(c10::ScalarType::Float);
    for (int64_t i = 0; i < out.numel(); ++i)
      ASSERT_EQ(std::memcmp(out.data_ptr<float>() + i, sentinel.data(), 4), 0);
    const bool non_finite = std::get<TensorCase>(c.args[1]).form == ValueForm::NonFinite;
    EXPECT_EQ(m.tensors[1].view.isfinite().all().item<bool>(), !non_finite) << describe(c, *contract);
  }
}

}  // namespace
}  // namespace opc
