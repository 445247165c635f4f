// Real traffic held to contracts: recordings read back exactly (and refused with their
// line when broken), each call admitted or rejected with its reason, per-op totals, and the
// admit command's output and exit codes.
#include "generators/admission.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "check/traffic.h"
#include "generators/case_gen.h"
#include "generators/layout.h"
#include "generators/recording.h"
#include "generators/traffic_draft.h"
#include "reports/traffic_report.h"
#include "runners/materialize.h"
#include "spec/contract_loader.h"
#include "tests/cli_run.h"

namespace opc {
namespace {

const char* kHeader = R"({"opcontract_recording": 1, "torch": "2.13.0+cpu", "program": "t", "pid": 1, "started": "x"})";

// A recorded tensor's JSON; `extra` adds fields (min/max).
std::string tensor(const std::string& dtype, const std::string& shape, const std::string& strides, int offset,
                   int storage, const std::string& extra = "") {
  return R"({"dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "strides": )" + strides + R"(, "offset": )" +
         std::to_string(offset) + R"(, "storage": )" + std::to_string(storage) +
         R"(, "storage_bytes": 4096, "align": 64, "contiguous": true, "device": "cpu")" + extra + "}";
}

struct Call {
  std::string out = tensor("float32", "[4, 64]", "[64, 1]", 0, 0);
  std::string x = tensor("float32", "[4, 64]", "[64, 1]", 0, 1);
  std::string weight = R"("none": true)";
  std::string ids = tensor("int32", "[4]", "[1]", 0, 2, R"(, "min": 0, "max": 7)");
  std::string eps = R"("value": 1e-06)";
  int calls = 1;
  std::string site = "serve.py:10";
  std::string line() const {
    return R"({"op": "t::norm", "overload": "default", "calls": )" + std::to_string(calls) + R"(, "site": ")" + site +
           R"(", "args": [{"name": "out", "tensor": )" + out + R"(}, {"name": "x", "tensor": )" + x +
           R"(}, {"name": "weight", )" + weight + R"(}, {"name": "ids", "tensor": )" + ids + R"(}, {"name": "eps", )" +
           eps + "}]}";
  }
};

// A norm-like op: rows of `hidden`, an optional weight, int ids below `vocab`, a choice of
// epsilon; out may be x itself (aliasing.inplace).
const char* kContract = R"y(op: t::norm
schema: "norm(Tensor! out, Tensor x, Tensor? weight, Tensor ids, float eps) -> ()"
context:
  vocab: {choose: [8, 16]}
dims:
  rows: {range: [0, 16]}
  hidden: {range: [1, 128]}
args:
  out: {dtype: x, shape: [rows, hidden], layouts: [contiguous, row_strided]}
  x: {dtype: [float32, bfloat16], shape: [rows, hidden], layouts: [contiguous, row_strided]}
  weight: {dtype: x, shape: [hidden], optional: true}
  ids: {dtype: int32, shape: [rows], values: {ints: [0, "vocab - 1"]}}
  eps: {choose: [1.0e-6, 1.0e-5]}
aliasing:
  inplace:
    - {args: [out, x], supported: true}
requires:
  - "hidden % 2 == 0"
mutates:
  out: {writes: all}
modes: [eager]
skip: {fake: "t", compiled: "t", cudagraph: "t"}
)y";

const Contract& contract() {
  static const Contract c = load_contract_text(kContract, "norm.yaml");
  return c;
}

RecordedCall recorded(const Call& call) {
  std::vector<RecordedCall> calls;
  read_recording_text(std::string(kHeader) + "\n" + call.line() + "\n", "r.jsonl", calls);
  EXPECT_EQ(calls.size(), 1u);
  return calls.at(0);
}

// ---------------------------------------------------------------------------------------
// Reading

TEST(Recording, ReadsEveryFieldAndMergesIdenticalSignatures) {
  Call a, b;
  a.calls = 3;
  b.calls = 2;
  b.ids = tensor("int32", "[4]", "[1]", 0, 2, R"(, "min": 2, "max": 9)");
  Call other;
  other.site = "serve.py:99";
  std::vector<RecordedCall> calls;
  read_recording_text(std::string(kHeader) + "\n" + a.line() + "\n" + b.line() + "\n" + other.line() + "\n", "r.jsonl",
                      calls);
  ASSERT_EQ(calls.size(), 2u) << "the same signature from two lines is one call; another site is another";
  const RecordedCall& c = calls[0];
  EXPECT_EQ(c.op, "t::norm");
  EXPECT_EQ(c.calls, 5);
  EXPECT_EQ(c.where, "r.jsonl:2");
  ASSERT_EQ(c.args.size(), 5u);
  EXPECT_EQ(c.args[0].tensor->strides, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(c.args[2].kind, RecordedArg::Kind::None);
  EXPECT_EQ(*c.args[3].tensor->min, 0) << "ranges join";
  EXPECT_EQ(*c.args[3].tensor->max, 9);
  EXPECT_EQ(c.args[4].value, "1e-06");
  EXPECT_FALSE(c.args[4].is_string);
}

TEST(Recording, ABrokenRecordingIsAnErrorNamingItsLine) {
  auto error_of = [](const std::string& text) {
    std::vector<RecordedCall> calls;
    try {
      read_recording_text(text, "r.jsonl", calls);
    } catch (const RecordingError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = std::string(kHeader) + "\n";
  EXPECT_EQ(error_of(Call().line() + "\n").rfind("r.jsonl:1: no header line before it", 0), 0u);
  EXPECT_NE(error_of(head + Call().line().substr(0, 80)).find("r.jsonl:2: not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(head + Call().line().substr(0, 80)).find("truncated last line"), std::string::npos);
  EXPECT_NE(error_of(head + R"({"op": "norm", "calls": 1, "args": []})").find("r.jsonl:2: op must be namespace::name"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"({"op": "t::norm", "args": []})").find(R"(r.jsonl:2: missing "calls")"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"opcontract_recording": 2})").find("recording format 2, but this opcontract reads format 1"),
            std::string::npos);
  EXPECT_NE(error_of("").find("empty: no header line"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Admission

TEST(Admission, ACallInsideTheContractIsAdmittedAsItsCase) {
  Call call;
  call.out = tensor("float32", "[4, 64]", "[80, 1]", 0, 0);  // rows padded: row_strided, slack 16
  const Admission a = admit(recorded(call), contract());
  ASSERT_TRUE(a.admitted) << a.detail;
  const Case& c = *a.as_case;
  EXPECT_EQ(c.values, (std::vector<int64_t>{8, 4, 64}))
      << "vocab tried over its choices, rows and hidden read off shapes";
  const auto& out = std::get<TensorCase>(c.args[0]);
  EXPECT_EQ(out.layout, Layout::RowStrided);
  EXPECT_EQ(geometry_of(out).strides, (std::vector<int64_t>{80, 1})) << "the recorded geometry, exactly";
  EXPECT_TRUE(std::get<TensorCase>(c.args[2]).none);
  EXPECT_EQ(std::get<ScalarValue>(c.args[4]), ScalarValue(1.0e-6));
}

TEST(Admission, EachKindOfMisfitIsRejectedWithItsReason) {
  auto reason = [](const Call& call) {
    const Admission a = admit(recorded(call), contract());
    EXPECT_FALSE(a.admitted);
    return a.pattern + " | " + a.detail;
  };
  Call big;
  big.out = tensor("float32", "[4, 256]", "[256, 1]", 0, 0);
  big.x = tensor("float32", "[4, 256]", "[256, 1]", 0, 1);
  EXPECT_EQ(reason(big), "'hidden' outside its range | 'hidden' is 256, outside its range [1, 128]");
  Call wide;
  wide.out = tensor("float64", "[4, 64]", "[64, 1]", 0, 0);
  wide.x = tensor("float64", "[4, 64]", "[64, 1]", 0, 1);
  EXPECT_EQ(reason(wide),
            "'x' has a dtype the contract does not draw | 'x' is float64; the contract draws float32, bfloat16");
  Call tied;
  tied.out = tensor("bfloat16", "[4, 64]", "[64, 1]", 0, 0);
  EXPECT_EQ(reason(tied), "'out' and 'x' differ in dtype | 'out' is bfloat16, 'x' float32; the contract ties them");
  Call transposed;
  transposed.x = tensor("float32", "[4, 64]", "[1, 4]", 0, 1);
  EXPECT_EQ(reason(transposed),
            "'x' is laid out as no listed layout | 'x' is float32[4, 64] strides [1, 4] offset 0 "
            "(storage 1); the contract draws contiguous, row_strided");
  Call ids;
  ids.ids = tensor("int32", "[4]", "[1]", 0, 2, R"(, "min": 0, "max": 20)");
  EXPECT_EQ(reason(ids),
            "'ids' holds values outside its values: range | 'ids' holds [0, 20], outside its values: "
            "range [0, 7]")
      << "the first assignment tried (vocab 8) gives the reason";
  Call eps;
  eps.eps = R"("value": 0.001)";
  EXPECT_EQ(reason(eps), "'eps' not among its choices | 'eps' is 0.001; the contract's choices: 1e-06, 1e-05");
  Call odd;
  odd.out = tensor("float32", "[4, 63]", "[63, 1]", 0, 0);
  odd.x = tensor("float32", "[4, 63]", "[63, 1]", 0, 1);
  EXPECT_EQ(reason(odd),
            "it breaks requires 'hidden % 2 == 0' | it breaks requires 'hidden % 2 == 0' (the contract "
            "says the op must refuse such a call)");
  Call shared;  // two halves of one buffer, as vLLM's key and value caches are
  shared.out = tensor("float32", "[4, 64]", "[128, 1]", 0, 0);
  shared.x = tensor("float32", "[4, 64]", "[128, 1]", 64, 0);
  EXPECT_EQ(reason(shared),
            "'out' and 'x' share one storage | 'out' and 'x' are views of one storage (offsets 0, 64): "
            "the generators make arguments that share a storage only as views of one of the "
            "contract's buffers (view:) or as aliasing.inplace states");
  Call shape;
  shape.ids = tensor("int32", "[5]", "[1]", 0, 2);
  EXPECT_EQ(reason(shape), "'ids' has a shape the bound dims do not give | 'ids' is [5] where the dims give [4]");
}

// Key and value caches as the halves of one buffer (kv.chunk(2, dim=1)), or separate.
const char* kCacheContract = R"y(op: t::cache_write
schema: "cache_write(Tensor! key_cache, Tensor! value_cache) -> ()"
dims: {blocks: {range: [1, 64]}, block: {range: [1, 32]}, width: {range: [1, 64]}}
buffers:
  kv: {shape: [blocks, "2 * block", width]}
args:
  key_cache: {dtype: [float32], shape: [blocks, block, width], layouts: [contiguous, view],
              view: {of: kv, steps: [{chunk: [2, 1, 0]}]}}
  value_cache: {dtype: key_cache, shape: [blocks, block, width], layouts: [contiguous, view],
                view: {of: kv, steps: [{chunk: [2, 1, 1]}]}}
modes: [eager]
skip: {fake: "t", compiled: "t", cudagraph: "t"}
)y";

Admission admit_caches(const std::string& key, const std::string& value, const Contract& contract) {
  const std::string line = R"({"op": "t::cache_write", "overload": "default", "calls": 1, "site": "t.py:1", "args": [)"
                           R"({"name": "key_cache", "tensor": )" +
                           key + R"(}, {"name": "value_cache", "tensor": )" + value + "}]}";
  std::vector<RecordedCall> calls;
  read_recording_text(std::string(kHeader) + "\n" + line + "\n", "r.jsonl", calls);
  return admit(calls.at(0), contract);
}

TEST(Admission, ViewsOfOneStorageAreTheContractsViewsOfOneBufferAndReplayShared) {
  const Contract contract = load_contract_text(kCacheContract, "cache.yaml");
  // blocks 3, block 4, width 8: each block holds 4 key rows then 4 value rows; the buffer
  // itself starts 1000 elements into a storage holding every layer's cache.
  const Admission views = admit_caches(tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 1000, 5),
                                       tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 1032, 5), contract);
  ASSERT_TRUE(views.admitted) << views.detail;
  const Case& c = *views.as_case;
  for (int arg : {0, 1}) EXPECT_EQ(std::get<TensorCase>(c.args[arg]).layout, Layout::View) << describe(c, contract);
  const CaseFacts facts(c, contract);
  const Materialized m = materialize(c, contract, facts);
  EXPECT_EQ(m.tensors[0].view.storage().unsafeGetStorageImpl(), m.tensors[1].view.storage().unsafeGetStorageImpl())
      << "the replay shares one storage as the call did";
  EXPECT_EQ(m.tensors[1].view.storage_offset() - m.tensors[0].view.storage_offset(), 32);
  EXPECT_EQ(m.tensors[0].view.strides().vec(), (std::vector<int64_t>{64, 8, 1}));

  const Admission apart = admit_caches(tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 1000, 5),
                                       tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 1040, 5), contract);
  EXPECT_FALSE(apart.admitted);
  EXPECT_EQ(apart.pattern, "'key_cache' and 'value_cache' share one storage");
  const Admission separate = admit_caches(tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 0, 5),
                                          tensor("float32", "[3, 4, 8]", "[64, 8, 1]", 32, 6), contract);
  EXPECT_FALSE(separate.admitted);
  EXPECT_EQ(separate.detail,
            "'key_cache' and 'value_cache' are views of buffer 'kv' in the contract, of separate "
            "storages in the call");
  const Admission dense = admit_caches(tensor("float32", "[3, 4, 8]", "[32, 8, 1]", 0, 5),
                                       tensor("float32", "[3, 4, 8]", "[32, 8, 1]", 0, 6), contract);
  ASSERT_TRUE(dense.admitted) << dense.detail;
  EXPECT_EQ(std::get<TensorCase>(dense.as_case->args[0]).layout, Layout::Contiguous);
}

TEST(Admission, TheSameTensorForTwoArgumentsIsTheContractsInPlaceUse) {
  Call call;
  call.x = call.out;  // rms_norm(x, x, ...): one tensor, storage 0, for both
  const Admission a = admit(recorded(call), contract());
  ASSERT_TRUE(a.admitted) << a.detail;
  EXPECT_EQ(a.as_case->inplace, 0);
}

TEST(Admission, AValueNoShapeNamesIsTriedOverItsChoices) {
  Call call;
  call.ids = tensor("int32", "[4]", "[1]", 0, 2, R"(, "min": 0, "max": 15)");
  const Admission a = admit(recorded(call), contract());
  ASSERT_TRUE(a.admitted) << a.detail;
  EXPECT_EQ(a.as_case->values[0], 16) << "ids up to 15 need vocab 16, not 8";
}

// Values no shape names alone are searched, but a prefix of them that already contradicts a
// recorded size is not extended: here 4^6 assignments of the free choices would follow each
// wrong (heads, per_head) pair, more than the search's budget.
TEST(Admission, ASearchDropsAPrefixTheRecordedSizesContradict) {
  const Contract c = load_contract_text(R"y(op: t::norm
schema: "norm(Tensor! out, Tensor x, Tensor? weight, Tensor ids, float eps) -> ()"
context:
  heads: {choose: [1, 2, 3, 4]}
  per_head: {choose: [1, 2, 3, 4]}
  a: {choose: [1, 2, 3, 4]}
  b: {choose: [1, 2, 3, 4]}
  c: {choose: [1, 2, 3, 4]}
  d: {choose: [1, 2, 3, 4]}
  e: {choose: [1, 2, 3, 4]}
  f: {choose: [1, 2, 3, 4]}
dims:
  rows: {range: [0, 16]}
args:
  out: {dtype: x, shape: [rows, heads * per_head]}
  x: {dtype: float32, shape: [rows, heads * per_head]}
  weight: none
  ids: {dtype: int32, shape: [rows], values: {ints: [0, 7]}}
  eps: {choose: [1.0e-6]}
modes: [eager]
skip: {fake: "t", compiled: "t", cudagraph: "t"}
)y",
                                        "norm.yaml");
  Call call;
  call.out = tensor("float32", "[4, 12]", "[12, 1]", 0, 0);
  call.x = tensor("float32", "[4, 12]", "[12, 1]", 0, 1);
  const Admission a = admit(recorded(call), c);
  ASSERT_TRUE(a.admitted) << a.detail;
  EXPECT_EQ(a.as_case->values[0] * a.as_case->values[1], 12);
  call.x = tensor("float32", "[4, 17]", "[17, 1]", 0, 1);
  EXPECT_EQ(admit(recorded(call), c).detail, "'out' is [4, 12] where the dims give [?, 1] (?: a dim not chosen yet)")
      << "no whole assignment was judged: the first contradicted prefix says why";
}

// Every layout the generator lays out is recognised from its strides alone.
RC_GTEST_PROP(Admission, LayoutMatchingInvertsGeometry, ()) {
  const auto layout = *rc::gen::element(Layout::Contiguous, Layout::Transposed, Layout::RowStrided, Layout::Expanded,
                                        Layout::InnerStrided, Layout::Permuted);
  const size_t rank = *rc::gen::inRange<size_t>(1, 4);
  RC_PRE(layout_applies(layout, rank));
  TensorCase t;
  t.layout = layout;
  t.slack = layout == Layout::RowStrided ? *rc::gen::inRange<int64_t>(1, 9) : 0;
  for (size_t i = 0; i < rank; ++i) t.sizes.push_back(*rc::gen::inRange<int64_t>(2, 6));
  const Geometry g = geometry_of(t);
  RecordedTensor r;
  r.sizes = g.sizes;
  r.strides = g.strides;
  const std::optional<Layout> found = layout_matching(r, {layout});
  RC_ASSERT(found.has_value());
  RC_ASSERT(*found == layout);
}

// ---------------------------------------------------------------------------------------
// Per op

TEST(Traffic, PerOpTotalsReasonsAndOpsWithoutAContract) {
  Call ok, bad1, bad2;
  ok.calls = 5;
  bad1.eps = R"("value": 0.5)";
  bad1.calls = 2;
  bad2.eps = R"("value": 0.25)";
  bad2.site = "other.py:3";
  bad2.calls = 4;
  std::vector<RecordedCall> calls;
  read_recording_text(std::string(kHeader) + "\n" + ok.line() + "\n" + bad1.line() + "\n" + bad2.line() + "\n" +
                          R"({"op": "t::mm", "overload": "default", "calls": 9, "site": "", "args": []})" + "\n",
                      "r.jsonl", calls);
  const TrafficResult t =
      hold_to_contracts(calls, {std::make_shared<const Contract>(contract())}, {{"t::mm", "needs a handle"}});
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].op, "t::norm") << "covered ops first";
  EXPECT_EQ(t.ops[0].calls, 11);
  EXPECT_EQ(t.ops[0].admitted, 5);
  EXPECT_EQ(t.ops[0].signatures, 3);
  ASSERT_EQ(t.ops[0].rejections.size(), 1u) << "one pattern, two call sites";
  EXPECT_EQ(t.ops[0].rejections[0].calls, 6);
  EXPECT_EQ(t.ops[0].rejections[0].detail, "'eps' is 0.5; the contract's choices: 1e-06, 1e-05") << "the first seen";
  EXPECT_EQ(t.ops[1].op, "t::mm");
  EXPECT_TRUE(t.ops[1].contracts.empty());
  EXPECT_EQ(t.ops[1].not_covered, "needs a handle");
}

// A sweep's evidence: the calls rejected for one value name the programs that made them,
// and the span of what they had, as the widening that would admit them.
TEST(Traffic, RejectionsNameTheirProgramsAndTheWideningTheyAreEvidenceFor) {
  auto header = [](const std::string& program) {
    return R"({"opcontract_recording": 1, "torch": "2.13.0+cpu", "program": ")" + program +
           R"(", "pid": 1, "started": "x"})";
  };
  Call wide, wider, ids;
  wide.out = tensor("float32", "[4, 200]", "[200, 1]", 0, 0);
  wide.x = tensor("float32", "[4, 200]", "[200, 1]", 0, 1);
  wider.out = tensor("float32", "[4, 300]", "[300, 1]", 0, 0);
  wider.x = tensor("float32", "[4, 300]", "[300, 1]", 0, 1);
  ids.ids = tensor("int32", "[4]", "[1]", 0, 2, R"(, "min": 0, "max": 40)");
  std::vector<RecordedCall> calls;
  read_recording_text(header("sweep 1 llama") + "\n" + wide.line() + "\n" + ids.line() + "\n" +
                          header("sweep 2 gemma2") + "\n" + wider.line() + "\n" + wide.line() + "\n",
                      "sweep.jsonl", calls);
  const TrafficResult t = hold_to_contracts(calls, {std::make_shared<const Contract>(contract())}, {});
  ASSERT_EQ(t.ops.size(), 1u);
  ASSERT_EQ(t.ops[0].rejections.size(), 2u);
  const TrafficRejection& hidden = t.ops[0].rejections[0];
  EXPECT_EQ(hidden.pattern, "'hidden' outside its range");
  EXPECT_EQ(hidden.programs, (std::vector<std::string>{"sweep 1 llama", "sweep 2 gemma2"}))
      << "one signature made by both programs, merged";
  ASSERT_TRUE(hidden.widen.has_value());
  EXPECT_EQ(hidden.widen->lo, 200);
  EXPECT_EQ(hidden.widen->hi, 300);
  EXPECT_EQ(hidden.widen->allowed_hi, 128);
  const TrafficRejection& values = t.ops[0].rejections[1];
  EXPECT_EQ(values.programs, std::vector<std::string>{"sweep 1 llama"});
  ASSERT_TRUE(values.widen.has_value());
  EXPECT_EQ(values.widen->what, "the values of 'ids'");
  EXPECT_EQ(values.widen->hi, 40);
  std::ostringstream text;
  print_traffic(text, t);
  EXPECT_NE(
      text.str().find("widen: 'hidden' was 200 to 300 in these calls: [1, 300] would admit them (now range [1, 128])"),
      std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("made by 2 program(s): sweep 1 llama, sweep 2 gemma2"), std::string::npos) << text.str();
}

TEST(AdmitCli, ReportsPerOpAndRefusesABrokenRecording) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("opc_admit_" + std::to_string(getpid()));
  fs::create_directories(dir / "contracts");
  std::ofstream(dir / "contracts/norm.yaml") << kContract;
  std::ofstream(dir / "contracts/NOT_COVERED") << "t::mm: needs a handle\n";
  Call bad;
  bad.eps = R"("value": 0.5)";
  const std::string uncovered = R"({"op": "t::mm", "overload": "default", "calls": 2, "site": "s.py:1", "args": []})";
  std::ofstream(dir / "r.jsonl") << kHeader << "\n" << Call().line() << "\n" << bad.line() << "\n" << uncovered << "\n";
  std::ofstream(dir / "broken.jsonl") << kHeader << "\n" << Call().line().substr(0, 50);
  const std::string base = "admit --contracts " + (dir / "contracts").string() + " ";
  Result r = run(base + (dir / "r.jsonl").string() + " --json " + (dir / "t.json").string());
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "2 calls");
  EXPECT_CONTAINS(r.output, "1 admitted");
  EXPECT_CONTAINS(r.output, "1 call(s) not admitted: 'eps' not among its choices");
  EXPECT_CONTAINS(r.output,
                  "\nadmitted: 1 of 4 call(s) (25.0%); of the 2 to ops with a contract, 50.0%; without a contract: 1 "
                  "op(s), 2 call(s)\n");
  EXPECT_CONTAINS(r.output, "contracts admitting under 95% of their op's calls: t::norm 1/2\n");
  std::ifstream json(dir / "t.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(text, R"("kind":"traffic")");
  EXPECT_CONTAINS(text, R"("admitted":1)");
  r = run(base + (dir / "broken.jsonl").string());
  EXPECT_EQ(r.exit, 2);
  EXPECT_CONTAINS(r.output, "broken.jsonl:2: not a JSON object");
  r = run("admit");
  EXPECT_EQ(r.exit, 2);
  EXPECT_CONTAINS(r.output, "admit needs at least one RECORDING");
}

TEST(TrafficDraft, ADraftFromCallsLoadsAndAdmitsEveryCallItWasMadeFrom) {
  Call a, b, c;
  b.out = tensor("float32", "[8, 32]", "[40, 1]", 0, 0);  // rows padded by 8
  b.x = tensor("float32", "[8, 32]", "[32, 1]", 0, 1);
  b.ids = tensor("int32", "[8]", "[1]", 0, 2, R"(, "min": 3, "max": 11)");
  b.eps = R"("value": 1e-05)";
  c.weight = R"("tensor": )" + tensor("float32", "[64]", "[1]", 0, 3);
  std::vector<RecordedCall> calls;
  read_recording_text(std::string(kHeader) + "\n" + a.line() + "\n" + b.line() + "\n" + c.line() + "\n", "r.jsonl",
                      calls);
  const std::string text = draft_from_traffic("t::norm", *contract().schema, calls);
  EXPECT_CONTAINS(text, "out_0: {range: [4, 8], favor: [4, 8]}");
  EXPECT_CONTAINS(text, "out: {dtype: [float32], shape: [out_0, out_1], layouts: [contiguous, row_strided]}");
  EXPECT_CONTAINS(text, "x: {dtype: out, shape: [out_0, out_1]");
  EXPECT_CONTAINS(text, "weight: {dtype: out, shape: [out_1], layouts: [contiguous], optional: true}");
  EXPECT_CONTAINS(text, "values: {ints: [0, 11]}");
  EXPECT_CONTAINS(text, "eps: {choose: [1e-06, 1e-05]}");
  const Contract drafted = load_contract_text(text, "draft.yaml");
  for (const RecordedCall& call : calls) {
    const Admission adm = admit(call, drafted);
    EXPECT_TRUE(adm.admitted) << recorded_call_text(call) << ": " << adm.detail << "\n" << text;
  }
}

TEST(TrafficReplay, GenerationGoesOnNearTheRecordedValues) {
  Call call;  // hidden 64, rows 4
  const Admission a = admit(recorded(call), contract());
  ASSERT_TRUE(a.admitted);
  const auto plain = std::make_shared<const Contract>(contract());
  const auto near = std::make_shared<const Contract>(favouring_calls(contract(), {*a.as_case}));
  auto hits = [](const std::shared_ptr<const Contract>& c) {
    const rc::Gen<Case> gen = case_gen(c);
    rc::Random master(5);
    int n = 0;
    for (int i = 0; i < 400; ++i) n += gen(master.split(), i % 101).value().values[2] == 64;
    return n;
  };
  const int before = hits(plain), after = hits(near);
  EXPECT_GE(after, 50) << "hidden 64 favoured: drawn often";
  EXPECT_GT(after, 3 * before) << "before: " << before;
}

TEST(TrafficReplay, ARecordedCallRunsFirstWithItsGeometryExactly) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("opc_replay_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // out's rows padded by 13 elements: a slack the generator does not draw.
  const std::string call =
      R"({"op": "opc_test::copy_into", "overload": "default", "calls": 2, "site": "t.py:1", "args": [)"
      R"({"name": "out", "tensor": )" +
      tensor("float32", "[3, 4]", "[17, 1]", 0, 0) + "}, " + R"({"name": "x", "tensor": )" +
      tensor("float32", "[3, 4]", "[4, 1]", 0, 1) + "}]}";
  const std::string recording = (dir / "r.jsonl").string();
  std::ofstream(recording) << kHeader << "\n" << call << "\n";
  const std::string check = "check tests/contracts/extent.yaml --load " + std::string(OPC_TEST_OPS) +
                            " --no-python --cases 1 --traffic " + recording;
  Result r = run(check + " --target opc_test::copy_into_one_past_end");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "extent (eager), replaying a call recorded in " + recording);
  EXPECT_CONTAINS(r.output, "out: float32[3, 4] row_strided(13)");
  EXPECT_CONTAINS(r.output, "--cases 1 --seed 20261202 --traffic " + recording);
  r = run(check + " --target opc_test::copy_into");
  EXPECT_EQ(r.exit, 0) << r.output;
  r = run("check tests/contracts/extent.yaml --traffic " + (dir / "missing.jsonl").string());
  EXPECT_EQ(r.exit, 2);
  EXPECT_CONTAINS(r.output, "missing.jsonl: cannot read it");
}

// A recorded call whose caches are the halves of one storage replays with them sharing one
// storage again: the planted kernel that walks key_cache as dense rows is caught on it.
TEST(TrafficReplay, ARecordedSharedStorageStaysShared) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("opc_shared_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // blocks 2, block 3, width 4: key rows then value rows in each block of one storage, at
  // offsets 100 and 112 of it (another layer's cache before them).
  const std::string call =
      R"({"op": "opc_test::cache_scale", "overload": "default", "calls": 1, "site": "t.py:1", "args": [)"
      R"({"name": "key_cache", "tensor": )" +
      tensor("float32", "[2, 3, 4]", "[24, 4, 1]", 100, 0) + "}, " + R"({"name": "value_cache", "tensor": )" +
      tensor("float32", "[2, 3, 4]", "[24, 4, 1]", 112, 0) + "}]}";
  const std::string recording = (dir / "r.jsonl").string();
  std::ofstream(recording) << kHeader << "\n" << call << "\n";
  const std::string check = "check tests/contracts/views.yaml --load " + std::string(OPC_TEST_OPS) +
                            " --no-python --cases 1 --traffic " + recording;
  Result r = run(check + " --target opc_test::cache_scale_dense_rows");
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "(eager), replaying a call recorded in " + recording);
  EXPECT_CONTAINS(r.output, "key_cache: float32[2, 3, 4] view of kv (strides [24, 4, 1], offset 0)");
  EXPECT_CONTAINS(r.output, "value_cache: float32[2, 3, 4] view of kv (strides [24, 4, 1], offset 12)");
  r = run(check + " --target opc_test::cache_scale");
  EXPECT_EQ(r.exit, 0) << r.output;
}

}  // namespace
}  // namespace opc
