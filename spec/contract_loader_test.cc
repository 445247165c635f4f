// The contract loader: a valid contract loads into the right in-memory form, and every
// kind of mistake is a ContractError at the exact line and column, with a specific message.
#include "spec/contract_loader.h"

#include <ATen/core/function_schema.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/frontend/schema_type_parser.h>

#include <filesystem>
#include <string>
#include <vector>

namespace opc {
namespace {

const char* kFile = "t.yaml";

// 1-based line and column of the only occurrence of `needle` in `text`; the tests use it
// to name "the place of this token" without counting characters by hand.
SourceLoc where(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  if (at == std::string::npos || text.find(needle, at + 1) != std::string::npos) {
    ADD_FAILURE() << "'" << needle << "' must occur exactly once in:\n" << text;
    return {kFile, -1, -1};
  }
  SourceLoc loc{kFile, 1, 1};
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

// Loading `text` fails at line:column with a message containing `part`.
::testing::AssertionResult fails_at(const std::string& text, int line, int column,
                                    const std::string& part) {
  try {
    load_contract_text(text, kFile);
  } catch (const ContractError& e) {
    const std::string expected_what = std::string(kFile) + ":" + std::to_string(line) + ":" +
                                      std::to_string(column) + ": ";
    if (e.loc().file != kFile || e.loc().line != line || e.loc().column != column)
      return ::testing::AssertionFailure()
             << "error at " << e.loc().line << ":" << e.loc().column << ", expected " << line
             << ":" << column << ": " << e.what();
    if (e.message().find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << e.message() << "' lacks '" << part
                                           << "'";
    if (std::string(e.what()).rfind(expected_what, 0) != 0)
      return ::testing::AssertionFailure() << "what() '" << e.what() << "' does not start with '"
                                           << expected_what << "'";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something else than ContractError: "
                                         << e.what();
  }
  return ::testing::AssertionFailure() << "loaded without error:\n" << text;
}

// The same, at the place of the only occurrence of `token` in the text.
::testing::AssertionResult fails_at_token(const std::string& text, const std::string& token,
                                          const std::string& part) {
  const SourceLoc loc = where(text, token);
  return fails_at(text, loc.line, loc.column, part);
}

// A small valid contract the error tests vary: one tensor, one dim.
const std::string kHead = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims:
  n: {range: [0, 8]}
)y";
const std::string kArgs = R"y(args:
  x: {dtype: float32, shape: [n]}
)y";
const std::string kSmall = kHead + kArgs;

// ---------------------------------------------------------------------------------------
// reference, tolerance, known_findings

TEST(LoaderReference, ReferenceToleranceAndKnownFindingsLoad) {
  const Contract c = load_contract_text(kSmall + R"y(reference: opc_ref::f
tolerance: {float16: {atol: 0.01, rtol: 0.02}}
known_findings:
  - {clause: write, mode: eager, reason: "upstream checks no strides"}
  - {clause: alias, reason: "negative control"}
)y", kFile);
  EXPECT_EQ(c.reference, "opc_ref::f");
  EXPECT_DOUBLE_EQ(c.tolerance_for(c10::ScalarType::Half).atol, 0.01);
  EXPECT_DOUBLE_EQ(c.tolerance_for(c10::ScalarType::Half).rtol, 0.02);
  // Unlisted dtypes get torch.testing's defaults; integers compare exactly.
  EXPECT_DOUBLE_EQ(c.tolerance_for(c10::ScalarType::Float).rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(c.tolerance_for(c10::ScalarType::Int).atol, 0);
  ASSERT_EQ(c.known_findings.size(), 2u);
  EXPECT_EQ(c.known_findings[0].mode, Mode::Eager);
  EXPECT_EQ(c.known_findings[1].mode, std::nullopt);
  EXPECT_EQ(c.known_findings[1].reason, "negative control");
}

TEST(LoaderReference, AKnownFindingsScopeLoads) {
  const Contract c = load_contract_text(kSmall + R"y(known_findings:
  - {clause: crash, reason: "AMX", where: {cpu: amx_tile, library: vllm/_C}}
  - {clause: write, reason: "not on AMX", where: {cpu: [avx512f, "!amx_tile"], library: [vllm/_C_AVX2, vllm/_C_AVX512]}}
  - {clause: alias, reason: "everywhere", sometimes: {cpu: amx_tile}}
)y", kFile);
  ASSERT_EQ(c.known_findings.size(), 3u);
  EXPECT_FALSE(c.known_findings[2].sometimes);
  EXPECT_EQ(c.known_findings[2].sometimes_where.cpu, std::vector<std::string>{"amx_tile"});
  EXPECT_EQ(c.known_findings[0].where.cpu, std::vector<std::string>{"amx_tile"});
  EXPECT_EQ(c.known_findings[0].where.library, std::vector<std::string>{"vllm/_C"});
  EXPECT_EQ(c.known_findings[1].where.cpu, (std::vector<std::string>{"avx512f", "!amx_tile"}));
  EXPECT_EQ(c.known_findings[1].where.library.size(), 2u);
  EXPECT_TRUE(c.known_findings[2].where.everywhere());
}

TEST(LoaderReference, AScopesMistakesAreErrorsAtTheirPlace) {
  const std::string known = kSmall + "known_findings:\n  - {clause: crash, reason: x, where: ";
  EXPECT_TRUE(fails_at_token(known + "{cpu: AMX-tile}}\n", "AMX-tile",
                             "where.cpu names a CPU feature as /proc/cpuinfo's flags spell it"));
  EXPECT_TRUE(fails_at_token(known + "{cpu: [avx2, \"!\"]}}\n", "\"!\"", "not '!'"));
  EXPECT_TRUE(fails_at_token(known + "{library: vllm/_C.abi3.so}}\n", "vllm/_C.abi3.so",
                             "where.library names a shared library by its folder and file name without extensions"));
  EXPECT_TRUE(fails_at_token(known + "{library: []}}\n", "[]", "where.library must name at least one"));
  EXPECT_TRUE(fails_at_token(known + "{cpus: amx_tile}}\n", "cpus", "unknown key 'cpus' in where"));
  EXPECT_TRUE(fails_at_token(known + "{}}\n", "{}", "where needs cpu or library"));
  EXPECT_TRUE(fails_at_token(kSmall + "known_findings:\n  - {clause: crash, reason: x, sometimes: {cpu: \"Amx\"}}\n",
                             "\"Amx\"", "sometimes.cpu names a CPU feature"));
  EXPECT_TRUE(fails_at_token(kSmall + "known_findings:\n  - {clause: crash, reason: x, sometimes: often}\n", "often",
                             "sometimes (true, false, or the machines where"));
}

TEST(LoaderReference, AMisuseEntryNamesItsMistake) {
  const Contract c = load_contract_text(
      kSmall + "known_findings:\n  - {clause: misuse, mode: eager, arg: x, kind: layout, reason: \"strided x read dense\"}\n",
      kFile);
  ASSERT_EQ(c.known_findings.size(), 1u);
  EXPECT_EQ(c.known_findings[0].mistake, (MistakeId{"x", "layout"}));
  const std::string known = kSmall + "known_findings:\n  - ";
  EXPECT_TRUE(fails_at_token(known + "{clause: misuse, reason: x}\n", "{clause",
                             "a misuse entry names the mistake it expects: arg: (an argument) and kind: (size, rank, "
                             "dtype, layout, index or scalar)"));
  EXPECT_TRUE(fails_at_token(known + "{clause: misuse, arg: y, kind: size, reason: x}\n", "y,",
                             "arg: the contract has no argument 'y'"));
  EXPECT_TRUE(fails_at_token(known + "{clause: misuse, arg: x, kind: sizes, reason: x}\n", "sizes",
                             "kind: unknown mistake 'sizes'"));
  EXPECT_TRUE(fails_at_token(known + "{clause: misuse, arg: x, kind: scalar, reason: x}\n", "scalar",
                             "scalar mistakes are made of scalar arguments, and 'x' is a tensor"));
  EXPECT_TRUE(fails_at_token(known + "{clause: crash, arg: x, reason: x}\n", "x,",
                             "arg: and kind: name a misuse finding's mistake; this entry's clause is crash"));
}

TEST(LoaderReference, MistakesAreErrorsAtTheirPlace) {
  EXPECT_TRUE(fails_at_token(kSmall + "reference: twice\n", "twice",
                             "reference must be a qualified op name"));
  EXPECT_TRUE(fails_at_token(kSmall + "tolerance: {float16: {atol: 1, rtol: 1}}\n", "{float16",
                             "tolerance applies to the reference comparison: add reference: too"));
  EXPECT_TRUE(fails_at_token(kSmall + "reference: a::g\ntolerance: {float61: {atol: 1, rtol: 1}}\n",
                             "float61", "tolerance: unknown dtype 'float61'"));
  EXPECT_TRUE(fails_at_token(kSmall + "reference: a::g\ntolerance: {float16: {atol: -1, rtol: 1}}\n",
                             "-1", "tolerance.float16.atol must be >= 0"));
  EXPECT_TRUE(fails_at_token(kSmall + "reference: a::g\ntolerance: {float16: {atol: 1}}\n",
                             "{atol", "missing key 'rtol'"));
  EXPECT_TRUE(fails_at_token(kSmall + "known_findings:\n  - {clause: wirte, reason: x}\n", "wirte",
                             "unknown clause 'wirte'"));
  EXPECT_TRUE(fails_at_token(kSmall + "known_findings:\n  - {clause: write}\n", "{clause",
                             "missing key 'reason'"));
  EXPECT_TRUE(fails_at_token(kSmall + "known_findings:\n  - {clause: write, mode: eagre, reason: x}\n",
                             "eagre", "unknown mode 'eagre'"));
}

// ---------------------------------------------------------------------------------------
// python_state, {state: NAME}, Python references, optional tensors always None

// A contract of an op taking a layer object, as vLLM's attention ops take a LayerName (an
// opaque type the embedded Python registers; here registered by name).
std::string state_contract(const std::string& extra, const std::string& layer = "{state: layer}") {
  static const bool registered = (torch::jit::registerOpaqueType("test_hooks.Layer"), true);
  (void)registered;
  return "op: a::attn\nschema: \"attn(Tensor x, Tensor? scale, test_hooks.Layer layer) -> Tensor\"\n" + extra +
         "dims:\n  n: {range: [0, 8]}\nargs:\n  x: {dtype: float32, shape: [n]}\n  scale: none\n  layer: " +
         layer + "\nmodes: [fake, eager, compiled]\nskip: {cudagraph: \"CPU state\"}\n";
}

TEST(LoaderPythonState, HookStateArgumentsAndPythonReferenceLoad) {
  const Contract c = load_contract_text(
      state_contract("python_state: hooks:attention\nreference: hooks:attention_reference\n"), kFile);
  EXPECT_EQ(c.python_state, "hooks:attention");
  EXPECT_EQ(c.arg("layer")->from_state, "layer");
  EXPECT_TRUE(c.arg("scale")->always_none);
  EXPECT_TRUE(c.reference_is_python());
  EXPECT_FALSE(load_contract_text(kSmall + "reference: a::g\n", kFile).reference_is_python());
}

TEST(LoaderPythonState, MistakesAreErrorsAtTheirPlace) {
  EXPECT_TRUE(fails_at_token(state_contract("", "{state: layer}"), "{state",
                             "takes an object the python_state hook returns, and this contract names no python_state"));
  EXPECT_TRUE(fails_at_token(state_contract("python_state: hooks:a\n", "\"name\""), "\"name\"",
                             "an object the contract's python_state hook builds: write {state: NAME}"));
  EXPECT_TRUE(fails_at_token(state_contract("python_state: hooks.attention\n"), "hooks.attention",
                             "python_state must name a Python function as module:function"));
  EXPECT_TRUE(fails_at_token(state_contract("python_state: hooks:a\n", "{state: layer, extra: 1}"), "extra",
                             "unknown key 'extra'"));
  EXPECT_TRUE(fails_at_token(kSmall + "reference: hooks:a:b\n", "hooks:a:b",
                             "or a Python function as module:function"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: none\n", "none",
                             "none is for an optional tensor (Tensor?), and the schema says Tensor"));
  const std::string with_cudagraph = state_contract("python_state: hooks:a\n");
  const std::string modes = "modes: [fake, eager, compiled]\nskip: {cudagraph: \"CPU state\"}\n";
  EXPECT_TRUE(fails_at_token(with_cudagraph.substr(0, with_cudagraph.find(modes)), "hooks:a",
                             "the cudagraph mode does not call it: skip that mode"));
}

// A tensor the hook makes (a packed weight) is not drawn: no shape, no dtype, no tensor facts.
TEST(LoaderPythonState, ATensorTheHookMakesIsNotDrawn) {
  const std::string head = "op: a::mm\nschema: \"mm(Tensor(a0!) out, Tensor x, Tensor packed) -> ()\"\n";
  const std::string rest = "dims:\n  n: {range: [0, 8]}\nargs:\n  out: {dtype: float32, shape: [n]}\n"
                           "  x: {dtype: float32, shape: [n]}\n  packed: {state: packed}\n"
                           "modes: [fake, eager, compiled]\nskip: {cudagraph: \"CPU state\"}\n";
  const Contract c = load_contract_text(head + "python_state: hooks:pack\n" + rest, kFile);
  EXPECT_FALSE(c.arg("packed")->is_tensor);
  EXPECT_EQ(c.arg("packed")->from_state, "packed");
  EXPECT_TRUE(c.arg("x")->is_tensor);
  EXPECT_TRUE(fails_at_token(head + rest, "{state", "this contract names no python_state"));
  EXPECT_TRUE(fails_at_token(head + "python_state: hooks:pack\n" + rest + "branches:\n  b: \"packed.dim() == 2\"\n",
                             "packed.dim", "packed"));
}

TEST(LoaderValid, OptionalScalarTakesItsElementTypesValues) {
  const Contract c = load_contract_text(R"y(op: a::f
schema: "f(Tensor x, float? scale=None, str? fmt=None) -> Tensor"
dims:
  n: {range: [0, 8]}
args:
  x: {dtype: float32, shape: [n]}
  scale: {choose: [0.125, 1.0]}
  fmt: ue8m0
)y", kFile);
  EXPECT_EQ(c.arg("scale")->choices[1], ScalarValue(1.0));
  EXPECT_EQ(c.arg("fmt")->choices[0], ScalarValue(std::string("ue8m0")));
}

TEST(LoaderModes, SkippingEagerLeavesTheFakeModeAlone) {
  const std::string fake_only = kSmall + "modes: [fake]\nskip: {eager: \"Triton only\", compiled: \"x\", cudagraph: \"x\"}\n";
  EXPECT_EQ(load_contract_text(fake_only, kFile).skip.count(Mode::Eager), 1u);
  EXPECT_TRUE(fails_at_token(kSmall + "modes: [fake, compiled]\nskip: {eager: \"Triton only\", cudagraph: \"x\"}\n",
                             "[fake, compiled]", "only the fake mode can be judged"));
}

TEST(LoaderDevice, TheContractsAndAnArgumentsDeviceLoad) {
  const Contract cpu = load_contract_text(kSmall, kFile);
  EXPECT_EQ(cpu.device, "cpu");
  const std::string two = R"y(op: a::f
schema: "f(Tensor x, Tensor map) -> ()"
device: cuda
args:
  x: {dtype: float32, shape: [4]}
  map: {dtype: int64, shape: [4], device: cpu}
)y";
  const Contract c = load_contract_text(two, kFile);
  EXPECT_EQ(c.device, "cuda");
  EXPECT_EQ(c.device_of(c.args[0]), "cuda");
  EXPECT_EQ(c.device_of(c.args[1]), "cpu");
}

TEST(LoaderDevice, AnUnknownDeviceIsAnErrorAtItsPlace) {
  EXPECT_TRUE(fails_at_token(kSmall + "device: gpu\n", "gpu", "'gpu' is not a device opcontract makes tensors on (cpu, cuda)"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], device: mps}\n", "mps",
                             "args.x.device: 'mps' is not a device"));
}

// ---------------------------------------------------------------------------------------
// cudagraph:

TEST(LoaderCudagraph, DefaultsToVllmCaptureSizesWithoutABatchDim) {
  const Contract c = load_contract_text(kSmall, kFile);
  EXPECT_EQ(c.cudagraph.batch_slot, -1);
  EXPECT_EQ(c.cudagraph.capture_sizes, vllm_capture_sizes());
  EXPECT_EQ(c.cudagraph.capture_sizes.front(), 1);
  EXPECT_EQ(c.cudagraph.capture_sizes.back(), 512);
  EXPECT_TRUE(c.cudagraph.shared_pool);
}

TEST(LoaderCudagraph, BatchDimFindsEachTensorsBatchAxis) {
  const Contract c = load_contract_text(R"y(op: a::f
schema: "f(Tensor x, Tensor w) -> Tensor"
dims: {h: {range: [1, 4]}, n: {range: [0, 8]}}
args:
  x: {dtype: float32, shape: [h, n]}
  w: {dtype: float32, shape: [h]}
returns:
  - {shape: [n, h], dtype: x}
cudagraph: {batch_dim: n, capture_sizes: [1, 4, 16], shared_pool: false}
)y", kFile);
  EXPECT_EQ(c.cudagraph.batch_slot, 1);
  EXPECT_EQ(c.cudagraph.arg_axis, (std::vector<int>{1, -1}));
  EXPECT_EQ(c.cudagraph.return_axis, (std::vector<int>{0}));
  EXPECT_EQ(c.cudagraph.capture_sizes, (std::vector<int64_t>{1, 4, 16}));
  EXPECT_FALSE(c.cudagraph.shared_pool);
}

TEST(LoaderCudagraph, MistakesAreErrorsAtTheirPlace) {
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {batch_dim: m}\n", "m}",
                             "cudagraph.batch_dim: 'm' is not a dim (dims: n); did you mean 'n'?"));
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {batch_dim: n, capture_sizes: [4, 2]}\n", "2]",
                             "cudagraph.capture_sizes must be strictly ascending"));
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {batch_dim: n, capture_sizes: [0]}\n", "0]",
                             "cudagraph.capture_sizes must be positive"));
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {capture_sizes: [8]}\n", "[8]",
                             "cudagraph.capture_sizes needs a batch_dim"));
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {batch_dim: n, shared_pool: maybe}\n", "maybe",
                             "cudagraph.shared_pool must be true or false"));
  EXPECT_TRUE(fails_at_token(kSmall + "cudagraph: {batchdim: n}\n", "batchdim",
                             "batch_dim"));
  EXPECT_TRUE(fails_at_token(R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims: {n: {range: [0, 8]}, h: {range: [1, 4]}}
args:
  x: {dtype: float32, shape: [h]}
cudagraph: {batch_dim: n}
)y", "n}\n", "no argument has 'n' as a size"));
}

// ---------------------------------------------------------------------------------------
// Valid contracts

// Every feature the loader fills in, in one contract. dims come before context in the
// file, but values are context first; x is described before out, but args follow the
// schema; `flag` has a schema default and is left out.
const std::string kFull = R"y(# a comment line
op: opc_test::copy_prefix
port: opc_port::copy_prefix
upstream: somewhere.py
schema: "copy_prefix(Tensor! out, Tensor x, Tensor? bias, int groups, bool fast, float eps, int flag=1) -> ()"
dims:
  num_tokens: {range: [0, 12], favor: [0, "k * tp_size"]}
  padded: {range: [num_tokens, num_tokens + 4]}
  hidden: 8
context:
  tp_size: {choose: [1, 2, 4]}
args:
  x: {dtype: out, shape: [num_tokens, hidden], values: {ints: [-3, 3]}}
  out:
    dtype: [float32, bfloat16]
    shape: [padded, hidden]
    layouts: [contiguous, row_strided, narrow, transposed]
    values: {uniform: [0, 1]}
  bias: {dtype: float16, shape: [hidden], optional: true}
  groups: {choose: [1, 2]}
  fast: true
  eps: 0.5
constraints: ["padded >= num_tokens"]
requires: ["x.size(0) == num_tokens"]
mutates:
  out: {writes: "[:num_tokens]", rest: untouched, sentinel: true}
branches:
  padded: "padded > num_tokens"
  exact: "padded == num_tokens"
regressions:
  - target: opc_test::copy_prefix_zeroes_padding
    expect: [write, extent]
    upstream: "PR 1"
  - {target: opc_test::copy_into_half, expect: [write]}
)y";

TEST(LoaderValid, ValuesAreContextThenDimsInFileOrder) {
  const Contract c = load_contract_text(kFull, kFile);
  EXPECT_EQ(c.file, kFile);
  EXPECT_EQ(c.op, "opc_test::copy_prefix");
  EXPECT_EQ(c.op_loc.line, 2);
  EXPECT_EQ(c.op_loc.column, 5);
  EXPECT_EQ(c.port, "opc_port::copy_prefix");
  EXPECT_EQ(c.upstream, "somewhere.py");
  ASSERT_TRUE(c.schema);
  EXPECT_EQ(c.schema->name(), "copy_prefix");

  ASSERT_EQ(c.values.size(), 4u);
  const std::vector<std::string> names = {"tp_size", "num_tokens", "padded", "hidden"};
  EXPECT_EQ(c.scope.values, names);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.values[i].name, names[i]);
    EXPECT_EQ(c.values[i].slot, i) << names[i];
    EXPECT_EQ(c.values[i].is_context, i == 0) << names[i];
  }
  // tp_size: choose; num_tokens: range + favor; padded: range over an earlier dim;
  // hidden: a bare scalar is a single choice.
  EXPECT_FALSE(c.values[0].range);
  EXPECT_EQ(c.values[0].choices.size(), 3u);
  ASSERT_TRUE(c.values[1].range);
  EXPECT_EQ(c.values[1].range->second.text(), "12");
  ASSERT_EQ(c.values[1].favor.size(), 2u);
  EXPECT_EQ(c.values[1].favor[1].text(), "k * tp_size");
  ASSERT_TRUE(c.values[2].range);
  EXPECT_EQ(c.values[2].range->second.text(), "num_tokens + 4");
  EXPECT_EQ(c.values[2].range->second.value_slots(), std::vector<int>{1});
  EXPECT_EQ(c.values[3].choices.size(), 1u);
  EXPECT_EQ(c.values[3].choices[0].eval({}), 8);
  EXPECT_EQ(c.values[1].loc.line, 7);
  EXPECT_EQ(c.values[1].loc.column, 3);
}

TEST(LoaderValid, ArgsFollowTheSchema) {
  const Contract c = load_contract_text(kFull, kFile);
  ASSERT_EQ(c.args.size(), 7u);
  const std::vector<std::string> names = {"out", "x", "bias", "groups", "fast", "eps", "flag"};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(c.args[i].name, names[i]);
    EXPECT_EQ(c.args[i].index, static_cast<int>(i));
  }
  const ArgSpec& out = c.args[0];
  EXPECT_TRUE(out.is_tensor);
  EXPECT_TRUE(out.mutable_);
  EXPECT_FALSE(out.optional);
  EXPECT_EQ(out.dtypes, (std::vector<c10::ScalarType>{c10::ScalarType::Float,
                                                        c10::ScalarType::BFloat16}));
  EXPECT_EQ(out.dtype_from, -1);
  ASSERT_EQ(out.shape.size(), 2u);
  EXPECT_EQ(out.shape[0].text(), "padded");
  EXPECT_EQ(out.layouts, (std::vector<Layout>{Layout::Contiguous, Layout::RowStrided,
                                               Layout::Narrow, Layout::Transposed}));
  EXPECT_EQ(out.values.kind, ValueDist::Kind::Uniform);
  EXPECT_EQ(out.loc.line, 15);  // a block mapping: where its first key is

  const ArgSpec& x = c.args[1];
  EXPECT_TRUE(x.is_tensor);
  EXPECT_FALSE(x.mutable_);
  EXPECT_TRUE(x.dtypes.empty());
  EXPECT_EQ(x.dtype_from, 0);
  EXPECT_EQ(x.layouts, std::vector<Layout>{Layout::Contiguous});  // the default
  EXPECT_EQ(x.values.kind, ValueDist::Kind::Ints);
  EXPECT_EQ(x.values.lo.eval({}), -3);
  EXPECT_EQ(x.values.hi.eval({}), 3);
  EXPECT_EQ(x.loc.line, 13);
  EXPECT_EQ(x.loc.column, 6);

  const ArgSpec& bias = c.args[2];
  EXPECT_TRUE(bias.is_tensor);
  EXPECT_TRUE(bias.optional);
  EXPECT_EQ(bias.values.kind, ValueDist::Kind::Normal);

  EXPECT_FALSE(c.args[3].is_tensor);
  EXPECT_EQ(c.args[3].choices, (std::vector<ScalarValue>{int64_t{1}, int64_t{2}}));
  EXPECT_EQ(c.args[4].choices, std::vector<ScalarValue>{true});
  EXPECT_EQ(c.args[5].choices, std::vector<ScalarValue>{0.5});
  // Left out: the schema's default is passed (std::monostate).
  EXPECT_EQ(c.args[6].choices, std::vector<ScalarValue>{ScalarValue{}});

  EXPECT_EQ(c.scope.tensors, (std::vector<std::string>{"out", "x", "bias"}));
  EXPECT_EQ(c.tensor_of_scope, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c.arg("x"), &c.args[1]);
  EXPECT_EQ(c.arg("nope"), nullptr);
}

TEST(LoaderValid, ExpressionsBranchesMutatesRegressions) {
  const Contract c = load_contract_text(kFull, kFile);
  ASSERT_EQ(c.constraints.size(), 1u);
  EXPECT_EQ(c.constraints[0].name, "padded >= num_tokens");
  ASSERT_EQ(c.requires_.size(), 1u);
  EXPECT_TRUE(c.requires_[0].expr.uses_tensors());

  ASSERT_EQ(c.branches.size(), 2u);
  EXPECT_EQ(c.branches[0].name, "padded");
  EXPECT_EQ(c.branches[1].name, "exact");
  EXPECT_EQ(c.branches[1].loc.line, 29);
  EXPECT_EQ(c.branches[1].loc.column, 3);
  const int64_t vals[] = {2, 3, 5, 8};  // tp_size, num_tokens, padded, hidden
  EXPECT_EQ(c.branches[0].expr.eval({vals, nullptr}), 1);
  EXPECT_EQ(c.branches[1].expr.eval({vals, nullptr}), 0);

  ASSERT_EQ(c.mutates.size(), 1u);
  const MutateSpec& m = c.mutates[0];
  EXPECT_EQ(m.arg, 0);
  EXPECT_EQ(c.mutate_spec(0), &m);
  EXPECT_EQ(c.mutate_spec(1), nullptr);
  EXPECT_FALSE(m.writes.all);
  EXPECT_EQ(m.writes.text, "[:num_tokens]");
  ASSERT_EQ(m.writes.dims.size(), 1u);
  EXPECT_FALSE(m.writes.dims[0].start);
  ASSERT_TRUE(m.writes.dims[0].stop);
  EXPECT_EQ(m.writes.dims[0].stop->text(), "num_tokens");
  EXPECT_EQ(m.writes.dims[0].stop->eval({vals, nullptr}), 3);
  EXPECT_TRUE(m.rest_untouched);
  EXPECT_TRUE(m.sentinel);

  // A schema with no returns has no return specs.
  EXPECT_TRUE(c.returns.empty());

  // modes: absent means all four, nothing skipped.
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::Fake, Mode::Eager, Mode::Compiled, Mode::Cudagraph}));
  EXPECT_TRUE(c.skip.empty());

  ASSERT_EQ(c.regressions.size(), 2u);
  EXPECT_EQ(c.regressions[0].target, "opc_test::copy_prefix_zeroes_padding");
  EXPECT_EQ(c.regressions[0].expect, (std::vector<Clause>{Clause::Write, Clause::Extent}));
  EXPECT_EQ(c.regressions[0].upstream, "PR 1");
  EXPECT_EQ(c.regressions[0].loc.line, 31);
  EXPECT_EQ(c.regressions[0].loc.column, 13);
  EXPECT_EQ(c.regressions[1].target, "opc_test::copy_into_half");
  EXPECT_TRUE(c.regressions[1].upstream.empty());
}

TEST(LoaderValid, RegionWithStartAndSeveralDims) {
  const Contract c = load_contract_text(R"y(op: a::f
schema: "f(Tensor! out) -> ()"
dims: {n: {range: [1, 4]}, m: {range: [1, 4]}}
args:
  out: {dtype: float32, shape: [n, m]}
mutates:
  out: {writes: "[1:n, min(m, 2):]", rest: any}
)y", kFile);
  ASSERT_EQ(c.mutates.size(), 1u);
  const Region& r = c.mutates[0].writes;
  EXPECT_FALSE(r.all);
  ASSERT_EQ(r.dims.size(), 2u);
  ASSERT_TRUE(r.dims[0].start && r.dims[0].stop);
  EXPECT_EQ(r.dims[0].start->text(), "1");
  EXPECT_EQ(r.dims[0].stop->text(), "n");
  ASSERT_TRUE(r.dims[1].start);
  EXPECT_EQ(r.dims[1].start->text(), "min(m, 2)");
  EXPECT_FALSE(r.dims[1].stop);
  EXPECT_FALSE(c.mutates[0].rest_untouched);
  EXPECT_FALSE(c.mutates[0].sentinel);
}

TEST(LoaderValid, BundledSequenceParallelChunkContract) {
  const std::string path =
      std::string(OPC_SOURCE_DIR) + "/contracts/vllm/sequence_parallel_chunk_impl.yaml";
  const Contract c = load_contract(path);
  EXPECT_EQ(c.file, path);
  EXPECT_EQ(c.op, "vllm::sequence_parallel_chunk_impl");
  EXPECT_EQ(c.port, "opc_vllm::sequence_parallel_chunk_impl");
  EXPECT_EQ(c.scope.values,
            (std::vector<std::string>{"tp_size", "tp_rank", "seq_len", "hidden"}));
  EXPECT_TRUE(c.values[0].is_context && c.values[1].is_context);
  EXPECT_FALSE(c.values[2].is_context || c.values[3].is_context);
  ASSERT_EQ(c.args.size(), 1u);
  EXPECT_EQ(c.args[0].layouts.size(), 4u);
  ASSERT_EQ(c.branches.size(), 2u);
  EXPECT_EQ(c.branches[0].name, "no_pad");
  EXPECT_EQ(c.branches[1].name, "pad");
  ASSERT_EQ(c.returns.size(), 1u);
  EXPECT_EQ(c.returns[0].aliases, -1);
  EXPECT_EQ(c.returns[0].dtype_from, 0);
  ASSERT_EQ(c.returns[0].shape.size(), 2u);
  EXPECT_EQ(c.returns[0].shape[0].text(), "ceil_div(seq_len, tp_size)");
  EXPECT_EQ(c.modes.size(), 4u);
  ASSERT_EQ(c.regressions.size(), 1u);
  EXPECT_EQ(c.regressions[0].expect, (std::vector<Clause>{Clause::Alias, Clause::Compiled}));
}

TEST(LoaderValid, EveryShippedContractLoads) {
  int loaded = 0;
  for (const char* dir : {"/contracts/vllm", "/contracts/vllm-cuda", "/tests/contracts"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(OPC_SOURCE_DIR) + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      EXPECT_NO_THROW(load_contract(entry.path().string())) << entry.path();
      ++loaded;
    }
  }
  EXPECT_GE(loaded, 8);
}

TEST(LoaderValid, ModesWithSkipAndAliasAnnotation) {
  const Contract c = load_contract_text(R"y(op: a::f
schema: "f(Tensor(a) x) -> Tensor(a)"
dims: {n: {range: [0, 8]}}
args:
  x: {dtype: float32, shape: [n]}
aliasing:
  returns: [x]
returns:
  - {shape: [n], dtype: float32}
modes: [eager, fake]
skip: {compiled: "not yet", cudagraph: "no GPU"}
)y", kFile);
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::Eager, Mode::Fake}));
  ASSERT_EQ(c.skip.size(), 2u);
  EXPECT_EQ(c.skip.at(Mode::Compiled), "not yet");
  EXPECT_EQ(c.skip.at(Mode::Cudagraph), "no GPU");
  ASSERT_EQ(c.returns.size(), 1u);
  EXPECT_EQ(c.returns[0].aliases, 0);
  EXPECT_EQ(c.returns[0].dtypes, std::vector<c10::ScalarType>{c10::ScalarType::Float});
  EXPECT_EQ(c.returns[0].loc.line, 9);
}

// ---------------------------------------------------------------------------------------
// Bad YAML, empty documents, unreadable files

TEST(LoaderYaml, UnclosedFlowSequence) {
  // yaml-cpp notices the unclosed '[' where the next line's mapping value starts.
  const std::string text = "op: a::f\nschema: [f(Tensor x) -> Tensor\nargs: {}\n";
  EXPECT_TRUE(fails_at(text, 3, 5, "bad YAML: end of sequence flow not found"));
  try {
    load_contract_text(text, kFile);
  } catch (const ContractError& e) {
    EXPECT_EQ(e.message().rfind("bad YAML", 0), 0u) << e.message();
  }
}

TEST(LoaderYaml, MismatchedFlowEndOnItsLine) {
  const std::string text = kHead + "args:\n  x: {dtype: float32, shape: [n}\n";
  EXPECT_TRUE(fails_at(text, 6, 32, "bad YAML: illegal flow end"));
}

TEST(LoaderYaml, TabIndentation) {
  EXPECT_TRUE(fails_at(kHead + "args:\n\tx: {dtype: float32, shape: [n]}\n", 6, 3, "bad YAML"));
}

TEST(LoaderEmpty, EmptyDocuments) {
  for (const char* text : {"", "\n\n", "# only a comment\n", "---\n", "~\n"}) {
    try {
      load_contract_text(text, kFile);
      ADD_FAILURE() << "loaded: '" << text << "'";
    } catch (const ContractError& e) {
      EXPECT_EQ(e.message(), "the contract is empty") << "'" << text << "'";
      EXPECT_EQ(e.loc().line, 0);
      EXPECT_EQ(std::string(e.what()), "t.yaml: the contract is empty");
    }
  }
}

TEST(LoaderEmpty, TopLevelMustBeAMapping) {
  EXPECT_TRUE(fails_at("- op: a::f\n", 1, 1, "the contract must be a mapping"));
  EXPECT_TRUE(fails_at("just a string\n", 1, 1, "the contract must be a mapping"));
}

TEST(LoaderFile, MissingFile) {
  try {
    load_contract("/nonexistent/dir/c.yaml");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().file, "/nonexistent/dir/c.yaml");
    EXPECT_EQ(e.loc().line, 0);
    EXPECT_NE(e.message().find("cannot read the contract file"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------
// Unknown, missing, duplicate and refused keys

TEST(LoaderUnknownKey, TopLevel) {
  const std::string text = kSmall + "shapes: [1]\n";
  EXPECT_TRUE(fails_at(text, 7, 1, "unknown key 'shapes' in the contract (known: op,"));
  EXPECT_TRUE(fails_at_token(text, "shapes", "shapes"));
}

TEST(LoaderUnknownKey, MisspeltOptionalSectionIsReportedBeforeWhatItBreaks) {
  // Without dims, `n` in x's shape is unknown; the cause is the misspelt section.
  const std::string text = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dim:
  n: {range: [0, 8]}
)y" + kArgs;
  EXPECT_TRUE(fails_at(text, 3, 1, "unknown key 'dim' in the contract"));
  EXPECT_TRUE(fails_at(text, 3, 1, "did you mean 'dims'?"));
}

TEST(LoaderUnknownKey, MisspeltRequiredKeyInArgs) {
  const std::string text = kHead + "args:\n  x: {dtype: float32, shpe: [n]}\n";
  EXPECT_TRUE(fails_at(text, 6, 23, "unknown key 'shpe' in args.x; did you mean 'shape'?"));
}

TEST(LoaderUnknownKey, MisspeltOptionalKeyInArgsBlockStyle) {
  const std::string text = kHead + R"y(args:
  x:
    dtype: float32
    shape: [n]
    layuots: [narrow]
)y";
  EXPECT_TRUE(fails_at(text, 9, 5, "unknown key 'layuots' in args.x (known: dtype, shape, "
                                   "forms, layouts, view, values, device, optional); did you mean 'layouts'?"));
}

TEST(LoaderUnknownKey, InDims) {
  const std::string text = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims:
  n: {range: [0, 8], favour: [0]}
)y" + kArgs;
  EXPECT_TRUE(fails_at(text, 4, 22, "unknown key 'favour' in dims.n"));
  EXPECT_TRUE(fails_at(text, 4, 22, "did you mean 'favor'?"));
}

TEST(LoaderUnknownKey, InMutatesReturnsAliasingRegressions) {
  const std::string mut = R"y(op: a::f
schema: "f(Tensor! x) -> ()"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
mutates:
  x: {writes: all, sentinal: true}
)y";
  EXPECT_TRUE(fails_at_token(mut, "sentinal", "unknown key 'sentinal' in mutates.x"));
  EXPECT_TRUE(fails_at_token(mut, "sentinal", "did you mean 'sentinel'?"));

  EXPECT_TRUE(fails_at_token(kSmall + "returns:\n  - {shape: [n], dtype: x, layout: [narrow]}\n",
                             "layout", "unknown key 'layout' in returns[0]"));
  EXPECT_TRUE(fails_at_token(kSmall + "aliasing: {return: [none]}\n", "return:",
                             "unknown key 'return' in aliasing"));
  EXPECT_TRUE(fails_at_token(
      kSmall + "regressions:\n  - target: a::g\n    expect: [alias]\n    upstrem: x\n",
      "upstrem", "unknown key 'upstrem' in a regression"));
  EXPECT_TRUE(fails_at_token(kSmall + "regressions:\n  - {targt: a::g, expect: [alias]}\n",
                             "targt", "did you mean 'target'?"));
}

TEST(LoaderUnknownKey, MissingRequiredKeys) {
  EXPECT_TRUE(fails_at("schema: \"f(Tensor x) -> Tensor\"\n" + kArgs, 1, 1,
                       "missing key 'op' in the contract"));
  EXPECT_TRUE(fails_at("op: a::f\n" + kArgs, 1, 1, "missing key 'schema' in the contract"));
  EXPECT_TRUE(fails_at(kHead, 1, 1, "missing key 'args' in the contract"));
  EXPECT_TRUE(fails_at(kHead + "args:\n  x: {shape: [n]}\n", 6, 6,
                       "missing key 'dtype' in args.x"));
}

TEST(LoaderUnknownKey, DuplicateKeys) {
  const std::string text = kSmall + "modes: [eager]\nmodes: [eager, fake, compiled, cudagraph]\n";
  EXPECT_TRUE(fails_at(text, 8, 1, "key 'modes' appears twice in the contract"));
  EXPECT_TRUE(fails_at(R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims: {n: 1, n: 2}
)y" + kArgs, 3, 14, "key 'n' appears twice in dims"));
  // The same name in context and dims.
  EXPECT_TRUE(fails_at(R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
context: {n: 1}
dims: {n: 2}
)y" + kArgs, 4, 8, "'n' is declared twice"));
}

TEST(LoaderUnknownKey, AliasingInputsPointsAtInplace) {
  EXPECT_TRUE(fails_at_token(kSmall + "aliasing: {inputs: [x]}\n", "[x]}",
                             "aliasing.inputs: in-place use of arguments is stated as aliasing.inplace"));
}

// ---------------------------------------------------------------------------------------
// aliasing.inplace

const std::string kOut = R"y(op: a::f
schema: "f(Tensor! out, Tensor x, Tensor w, int n) -> ()"
dims:
  m: {range: [1, 8]}
args:
  out: {dtype: float32, shape: [m]}
  x: {dtype: float32, shape: [m]}
  w: {dtype: float32, shape: [m]}
  n: 3
)y";

TEST(LoaderInplace, EntriesLoad) {
  const Contract c = load_contract_text(kOut + R"y(aliasing:
  inplace:
    - {args: [out, x], supported: true}
    - {args: [w, x], supported: false}
)y", "t.yaml");
  ASSERT_EQ(c.inplace.size(), 2u);
  EXPECT_EQ(c.inplace[0].into, 0);
  EXPECT_EQ(c.inplace[0].from, 1);
  EXPECT_TRUE(c.inplace[0].supported);
  EXPECT_FALSE(c.inplace[1].supported);
  EXPECT_EQ(c.inplace_text(1), "'w' is 'x'");
}

TEST(LoaderInplace, MistakesAreErrorsAtTheirPlace) {
  auto with = [](const std::string& entry) { return kOut + "aliasing:\n  inplace:\n    - " + entry + "\n"; };
  EXPECT_TRUE(fails_at_token(with("{args: [out, y], supported: true}"), "y]",
                             "aliasing.inplace[0].args: no argument named 'y'"));
  EXPECT_TRUE(fails_at_token(with("{args: [out, n], supported: true}"), "n]",
                             "aliasing.inplace[0].args: 'n' is not a tensor argument"));
  EXPECT_TRUE(fails_at_token(with("{args: [out, out], supported: true}"), "[out, out]",
                             "aliasing.inplace[0].args names 'out' twice"));
  EXPECT_TRUE(fails_at_token(with("{args: [out], supported: true}"), "[out]",
                             "aliasing.inplace[0].args must be [the argument handed the tensor"));
  EXPECT_TRUE(fails_at_token(with("{args: [w, x], supported: true}"), "w, x",
                             "aliasing.inplace[0]: a supported in-place use writes 'w', which the "
                             "schema does not mark mutable"));
  EXPECT_TRUE(fails_at_token(with("{args: [out, x], supported: maybe}"), "maybe",
                             "aliasing.inplace[0].supported must be true or false"));
  EXPECT_TRUE(fails_at_token(with("{args: [out, x]}"), "{args",
                             "missing key 'supported' in aliasing.inplace[0]"));
  EXPECT_TRUE(fails_at_token(with("{args: [out, x], supported: true, how: same}"), "how",
                             "unknown key 'how' in aliasing.inplace[0]"));
}

// ---------------------------------------------------------------------------------------
// donates

const std::string kFunctional = R"y(op: a::f
schema: "f(Tensor x, Tensor y, Tensor! out, int n) -> Tensor"
dims:
  m: {range: [1, 8]}
args:
  x: {dtype: float32, shape: [m]}
  y: {dtype: float32, shape: [m]}
  out: {dtype: float32, shape: [m]}
  n: 3
)y";

TEST(LoaderDonates, OverloadAndArgsLoad) {
  const Contract c = load_contract_text(kFunctional + "donates: {overload: maybe_inplace, args: [y, x]}\n", "t.yaml");
  ASSERT_TRUE(c.donates.has_value());
  EXPECT_EQ(c.donates->overload, "maybe_inplace");
  EXPECT_EQ(c.donates->args, (std::vector<int>{1, 0}));
  EXPECT_TRUE(c.donates->donated(0));
  EXPECT_FALSE(c.donates->donated(2));
  EXPECT_EQ(c.donates->loc.line, 10);
}

TEST(LoaderDonates, BadEntriesNameTheirPlace) {
  const std::string d = kFunctional + "donates: ";
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: [z]}\n", "z]",
                             "donates.args"));
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: [n]}\n", "n]",
                             "'n' is not a tensor"));
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: [out]}\n", "out]",
                             "'out' is mutable in this schema"));
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: [x, x]}\n", "x]",
                             "'x' is listed twice"));
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: []}\n", "[]",
                             "at least one donated tensor"));
  EXPECT_TRUE(fails_at_token(d + "{overload: '', args: [x]}\n", "''",
                             "names the donating overload"));
  EXPECT_TRUE(fails_at_token(d + "{args: [x]}\n", "{args", "overload"));
  EXPECT_TRUE(fails_at_token(d + "{overload: maybe_inplace, args: [x], inplace: true}\n",
                             "inplace: true", "unknown key 'inplace' in donates"));
}

// ---------------------------------------------------------------------------------------
// Wrong types

TEST(LoaderTypes, ScalarsListsMappings) {
  EXPECT_TRUE(fails_at("op: a::f\nschema: [a]\nargs: {}\n", 2, 9, "schema must be a scalar"));
  EXPECT_TRUE(fails_at("op: {a: b}\n", 1, 5, "op must be a scalar"));
  EXPECT_TRUE(fails_at(kHead + "args:\n  x: {dtype: float32, shape: 3}\n", 6, 30,
                       "args.x.shape must be a list"));
  EXPECT_TRUE(fails_at(kSmall + "modes: fake\n", 7, 8, "modes must be a list"));
  EXPECT_TRUE(fails_at(kSmall + "constraints: \"n > 0\"\n", 7, 14, "constraints must be a list"));
  EXPECT_TRUE(fails_at(kSmall + "regressions: {target: a::g}\n", 7, 14,
                       "regressions must be a list"));
  EXPECT_TRUE(fails_at(kHead + "args: [x]\n", 5, 7, "args must be a mapping"));
  EXPECT_TRUE(fails_at("op: a::f\nschema: \"f(Tensor x) -> Tensor\"\ndims:\n  n: [0, 8]\n" + kArgs,
                       4, 6, "dims.n must be a mapping"));
  EXPECT_TRUE(fails_at(kHead + "args:\n  x: float32\n", 6, 6, "args.x must be a mapping"));
}

TEST(LoaderTypes, BadValues) {
  EXPECT_TRUE(fails_at("op: f\n", 1, 5, "op must be a qualified name like 'vllm::rms_norm', not 'f'"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float33, shape: [n]}\n", "float33",
                             "args.x.dtype: 'float33' is neither a dtype"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: [float32, float33], shape: [n]}\n",
                             "float33", "args.x.dtype: unknown dtype 'float33' (known: float32,"));
  EXPECT_TRUE(fails_at(kHead + "args:\n  x: {dtype: x, shape: [n]}\n", 6, 6,
                       "args.x.dtype cannot copy itself"));
  EXPECT_TRUE(fails_at_token(
      kHead + "args:\n  x: {dtype: float32, shape: [n], layouts: [contiguous, strided]}\n",
      "strided", "args.x: unknown layout 'strided' (known: contiguous, narrow, transposed, "
                 "row_strided, misaligned, expanded, inner_strided, permuted, view)"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], optional: true}\n",
                             "true", "the schema says this argument is a plain Tensor"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], optional: yes}\n",
                             "yes", "args.x.optional must be true or false, not 'yes'"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], values: gauss}\n",
                             "gauss", "args.x.values: 'gauss' is not a distribution"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], values: {ints: [1]}}\n",
                             "[1]", "args.x.values bounds must be [lo, hi]"));
  EXPECT_TRUE(fails_at_token(kSmall + "dims2: 1\n", "dims2", "did you mean 'dims'?"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [n], values: {offsets: n}}\n",
                             "n}}", "args.x.values: offsets need an integer dtype, not float32"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: int32, shape: [n, 2], values: {offsets: n}}\n",
                             "n}}", "args.x.values: offsets are a 1-D tensor's"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: int32, shape: [n], values: {offsets: m}}\n",
                             "m}}", "unknown name 'm'"));
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: int32, shape: [n], values: {offsets: n, ints: [0, 1]}}\n",
                             "{offsets", "args.x.values needs exactly one of uniform, ints, offsets"));
}

TEST(LoaderTypes, ScalarArguments) {
  const std::string head = R"y(op: a::f
schema: "f(Tensor x, int g, bool b, str s, int[] l) -> Tensor"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
)y";
  EXPECT_TRUE(fails_at_token(head + "  g: {choose: [1, two]}\n  b: true\n  s: a\n  l: 1\n", "two",
                             "args.g: 'two' is not a valid int"));
  EXPECT_TRUE(fails_at_token(head + "  g: 1\n  b: maybe\n  s: a\n  l: 1\n", "maybe",
                             "args.b: 'maybe' is neither true or false nor an expression over the "
                             "dims: unknown name 'maybe'"));
  // An int or bool may follow the dims; the expression's mistakes point into it.
  EXPECT_TRUE(fails_at_token(head + "  g: \"n * q\"\n  b: true\n  s: a\n  l: 1\n", "q\"",
                             "args.g: 'n * q' is neither an int nor an expression over the dims: "
                             "unknown name 'q'"));
  EXPECT_TRUE(fails_at_token(head + "  g: n > 1\n  b: true\n  s: a\n  l: 1\n", "n > 1",
                             "args.g: 'n > 1' is neither an int nor an expression over the dims"));
  EXPECT_TRUE(fails_at_token(head + "  g: 1\n  b: x.dim() == 1\n  s: a\n  l: 1\n", "x.dim",
                             "args.b: 'x.dim() == 1' is neither true or false nor an expression over the dims"));
  EXPECT_TRUE(fails_at_token(head + "  g: {choose: [n, 2]}\n  b: true\n  s: a\n  l: 1\n", "n, 2",
                             "args.g: 'n' is not a valid int"));
  EXPECT_TRUE(fails_at_token(head + "  g: {choose: []}\n  b: true\n  s: a\n  l: 1\n", "[]}",
                             "args.g.choose must not be empty"));
  EXPECT_TRUE(fails_at_token(head + "  g: [1, 2]\n  b: true\n  s: a\n  l: 1\n", "[1, 2]",
                             "args.g must be a value or {choose: [...]}"));
  EXPECT_TRUE(fails_at_token(head + "  g: 1\n  b: true\n  s: a\n  l: 7\n", "7",
                             "args.l: arguments of type int[] are not supported yet"));
}

TEST(LoaderTypes, ValueSpecs) {
  auto with_dims = [](const std::string& dims) {
    return "op: a::f\nschema: \"f(Tensor x) -> Tensor\"\ndims:\n" + dims + kArgs;
  };
  EXPECT_TRUE(fails_at_token(with_dims("  n: {range: [0, 8], choose: [1]}\n"), "{range",
                             "dims.n: give either range or choose, not both"));
  EXPECT_TRUE(fails_at_token(with_dims("  n: {range: [0, 8, 9]}\n"), "[0, 8, 9]",
                             "dims.n.range must be [lo, hi]"));
  EXPECT_TRUE(fails_at_token(with_dims("  n: {choose: []}\n"), "[]",
                             "dims.n.choose must not be empty"));
  EXPECT_TRUE(fails_at_token(with_dims("  n: {favor: [1]}\n"), "{favor",
                             "dims.n needs range: [lo, hi] or choose: [...]"));
  EXPECT_TRUE(fails_at_token(with_dims("  k: {range: [0, 8]}\n  n: 1\n"), "k:",
                             "'k' is reserved"));
}

// ---------------------------------------------------------------------------------------
// Expressions: the column points at the offending token inside the scalar

const std::string kCtx = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
context:
  tp_size: {choose: [1, 2]}
dims:
)y";
const std::string kSeqArgs = "args:\n  x: {dtype: float32, shape: [seq_len]}\n";

TEST(LoaderExpr, InDoubleQuotedScalar) {
  const std::string text = kCtx + "  seq_len: {range: [0, \"tp_sise * 2\"]}\n" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 6, 25, "unknown name 'tp_sise' (known: tp_size)"));
  EXPECT_TRUE(fails_at_token(text, "tp_sise", "unknown name 'tp_sise'"));
}

TEST(LoaderExpr, InSingleQuotedScalar) {
  const std::string text = kCtx + "  seq_len: {range: [0, '2 * tp_sise']}\n" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 6, 29, "unknown name 'tp_sise' (known: tp_size)"));
}

TEST(LoaderExpr, InUnquotedScalar) {
  const std::string text = kCtx + "  seq_len: {range: [0, tp_size * 2 + tp_sise]}\n" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 6, 38, "unknown name 'tp_sise' (known: tp_size)"));
}

TEST(LoaderExpr, InBlockSequenceOfFavor) {
  const std::string text = kCtx + R"y(  seq_len:
    range: [0, 8]
    favor:
      - k * tp_size
      - "k * tp_sise + 1"
)y" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 10, 14, "unknown name 'tp_sise' (known: tp_size, k)"));
}

TEST(LoaderExpr, KOnlyInFavor) {
  const std::string text = kCtx + "  seq_len: {range: [0, k]}\n" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 6, 24, "unknown name 'k' (known: tp_size)"));
}

TEST(LoaderExpr, LaterDimIsUnknown) {
  const std::string text = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims:
  seq_len: {range: [0, hidden]}
  hidden: {range: [1, 8]}
)y" + kSeqArgs;
  EXPECT_TRUE(fails_at(text, 4, 24, "unknown name 'hidden' (no names are in scope)"));
  // A context value cannot see a dim either: context is loaded first.
  EXPECT_TRUE(fails_at(R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims:
  seq_len: {range: [0, 8]}
context:
  tp_size: {choose: [1, seq_len]}
)y" + kSeqArgs, 6, 25, "unknown name 'seq_len' (no names are in scope)"));
}

TEST(LoaderExpr, InShapesBranchesConstraintsRequires) {
  EXPECT_TRUE(fails_at(kHead + "args:\n  x: {dtype: float32, shape: [n, \"m + 1\"]}\n", 6, 35,
                       "unknown name 'm' (known: n)"));
  // Shapes see dims only, not tensor metadata.
  EXPECT_TRUE(fails_at_token(kHead + "args:\n  x: {dtype: float32, shape: [x.size(0)]}\n",
                             "x.size", "unknown tensor 'x'"));
  EXPECT_TRUE(fails_at_token(kSmall + "branches:\n  big: \"n >= 4 and nn\"\n", "nn\"",
                             "unknown name 'nn' (known: n)"));
  EXPECT_TRUE(fails_at_token(kSmall + "branches:\n  big: n + 1\n", "n + 1",
                             "expected a boolean expression, got an integer one"));
  EXPECT_TRUE(fails_at_token(kSmall + "constraints: [\"n > 0\", \"n = 1\"]\n", "= 1",
                             "unexpected character '=' (use '==' to compare)"));
  EXPECT_TRUE(fails_at_token(kSmall + "requires: [\"x.size(0) == n and y.dim() > 0\"]\n", "y.dim",
                             "unknown tensor 'y'"));
  EXPECT_TRUE(fails_at_token(kSmall + "requires: [x > 0]\n", "x > 0", "'x' is a tensor"));
}

TEST(LoaderExpr, InWritesRegion) {
  const std::string head = R"y(op: a::f
schema: "f(Tensor! x) -> ()"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
mutates:
)y";
  EXPECT_TRUE(fails_at(head + "  x: {writes: \"[:nn]\"}\n", 7, 18, "unknown name 'nn' (known: n)"));
  EXPECT_TRUE(fails_at(head + "  x: {writes: \"[1:n, :n + nn]\"}\n", 7, 27,
                       "unknown name 'nn' (known: n)"));
  EXPECT_TRUE(fails_at(head + "  x: {writes: [\":n\"]}\n", 7, 15, "writes must be a scalar"));
  EXPECT_TRUE(fails_at(head + "  x: {writes: \"[n]\"}\n", 7, 17,
                       "each dim of writes must be a slice 'start:stop'"));
  EXPECT_TRUE(fails_at(head + "  x: {writes: \":n\"}\n", 7, 16,
                       "writes must be 'all' or an index like \"[:num_tokens]\""));
  EXPECT_TRUE(fails_at_token(head + "  x: {writes: all, rest: some}\n", "some",
                             "mutates.x.rest must be 'untouched' or 'any'"));
}

// ---------------------------------------------------------------------------------------
// The schema and the arguments

TEST(LoaderSchema, ParserRejectsPointsAtTheToken) {
  const std::string text = "op: a::f\nschema: \"f(Tensor x) -> Tensr\"\nargs: {}\n";
  EXPECT_TRUE(fails_at(text, 2, 25, "PyTorch's schema parser rejects this schema: unknown type"));
  const std::string unquoted = "op: a::f\nschema: f(Tensor x -> Tensor\nargs: {}\n";
  EXPECT_TRUE(fails_at(unquoted, 2, 20,
                       "PyTorch's schema parser rejects this schema: expected ) but found 'arrow'"));
  // No caret diagram at the end of the text: the schema's start.
  const std::string eof = "op: a::f\nschema: \"f(Tensor x) -> Tensor(a\"\nargs: {}\n";
  EXPECT_TRUE(fails_at(eof, 2, 10, "PyTorch's schema parser rejects this schema: expected )"));
}

TEST(LoaderArgs, NotInSchemaSuggestsTheCloseOne) {
  const std::string text = R"y(op: a::f
schema: "f(Tensor x, int groups) -> Tensor"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
  grups: 2
)y";
  EXPECT_TRUE(fails_at(text, 6, 3, "args.grups: the schema has no argument 'grups' (it has: x, "
                                   "groups); did you mean 'groups'?"));
}

TEST(LoaderArgs, SchemaArgumentNotDescribed) {
  const std::string text = R"y(op: a::f
schema: "f(Tensor x, Tensor y, int g=2) -> Tensor"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
)y";
  EXPECT_TRUE(fails_at(text, 5, 3, "args: schema argument 'y' (Tensor) is not described"));
  // A scalar without a default must be described too.
  EXPECT_TRUE(fails_at(R"y(op: a::f
schema: "f(Tensor x, int g) -> Tensor"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
)y", 5, 3, "args: schema argument 'g' (int) is not described"));
}

TEST(LoaderArgs, ArgumentNamedLikeADim) {
  EXPECT_TRUE(fails_at(R"y(op: a::f
schema: "f(Tensor n) -> Tensor"
dims: {n: 3}
args:
  n: {dtype: float32, shape: [3]}
)y", 5, 3, "argument 'n' has the same name as a dim or context value"));
}

TEST(LoaderArgs, OptionalMustMatchTheSchema) {
  EXPECT_TRUE(fails_at_token(R"y(op: a::f
schema: "f(Tensor? x) -> Tensor"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n], optional: false}
)y", "false", "the schema says this argument is Tensor? (optional)"));
}

TEST(LoaderMutates, NonMutableArgument) {
  const std::string text = R"y(op: a::f
schema: "f(Tensor out, Tensor x) -> ()"
dims: {n: 3}
args:
  out: {dtype: float32, shape: [n]}
  x: {dtype: float32, shape: [n]}
mutates:
  out: {writes: all}
)y";
  EXPECT_TRUE(fails_at(text, 8, 3,
                       "mutates.out: the schema does not mark this argument mutable (Tensor! or "
                       "Tensor(a!))"));
}

TEST(LoaderMutates, UnknownArgument) {
  EXPECT_TRUE(fails_at_token(kSmall + "mutates:\n  y: {writes: all}\n", "y:",
                             "mutates: no argument named 'y' (arguments: x)"));
}

TEST(LoaderAliasing, ReturnsDisagreeWithTheSchema) {
  const std::string aliased = R"y(op: a::f
schema: "f(Tensor(a) x) -> Tensor(a)"
dims: {n: 3}
args:
  x: {dtype: float32, shape: [n]}
aliasing:
  returns: [none]
)y";
  EXPECT_TRUE(fails_at(aliased, 7, 13,
                       "aliasing.returns[0] is 'none' but the schema gives this return an alias "
                       "of 'x'"));
  EXPECT_TRUE(fails_at(kSmall + "aliasing:\n  returns: [x]\n", 8, 13,
                       "aliasing.returns[0] is 'x' but the schema gives this return no alias "
                       "annotation"));
  EXPECT_TRUE(fails_at(kSmall + "aliasing:\n  returns: [none, none]\n", 8, 12,
                       "aliasing.returns has 2 entries but the schema has 1 returns"));
  EXPECT_TRUE(fails_at_token(kSmall + "aliasing:\n  returns: [y]\n", "y]",
                             "aliasing.returns: no argument named 'y' (arguments: x)"));
  EXPECT_TRUE(fails_at_token(kSmall + "returns: []\n", "[]",
                             "returns has 0 entries but the schema has 1"));
}

TEST(LoaderModes, LeftOutWithoutSkip) {
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager]\n", 7, 8,
                       "mode 'fake' is left out of modes without a reason: add it under skip: "
                       "{fake: \"why\"}"));
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager, fake, compiled]\nskip: {}\n", 7, 8,
                       "mode 'cudagraph' is left out of modes without a reason"));
}

TEST(LoaderModes, BadModesAndSkips) {
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager, fakee]\n", 7, 16,
                       "unknown mode 'fakee' (modes: fake, eager, compiled, cudagraph)"));
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager, eager]\n", 7, 16, "mode 'eager' is listed twice"));
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager, fake, compiled]\nskip: {cudagraph: x, fake: y}\n",
                       8, 22, "skip: mode 'fake' is also listed in modes"));
  EXPECT_TRUE(fails_at(kSmall + "modes: [eager, fake, compiled]\nskip: {cuda: x}\n", 8, 8,
                       "skip: unknown mode 'cuda'"));
  // Without modes: every mode runs, so a skip contradicts it.
  EXPECT_TRUE(fails_at(kSmall + "skip: {cudagraph: \"no GPU\"}\n", 7, 8,
                       "skip: mode 'cudagraph' is skipped, but without modes: every mode runs"));
}

TEST(LoaderRegressions, UnknownClauseSuggestsTheCloseOne) {
  const std::string text = kSmall + "regressions:\n  - target: a::g\n    expect: [alais]\n";
  EXPECT_TRUE(fails_at(text, 9, 14, "unknown clause 'alais' (clauses: schema, alias,"));
  EXPECT_TRUE(fails_at(text, 9, 14, "did you mean 'alias'?"));
}

TEST(LoaderRegressions, BadTargetsAndExpects) {
  EXPECT_TRUE(fails_at_token(kSmall + "regressions:\n  - {target: g, expect: [alias]}\n", "g,",
                             "target must be a qualified op name"));
  EXPECT_TRUE(fails_at_token(kSmall + "regressions:\n  - {target: a::g, expect: []}\n", "[]",
                             "expect must name at least one clause"));
  EXPECT_TRUE(fails_at_token(kSmall + "regressions:\n  - {target: a::g}\n", "{target",
                             "missing key 'expect' in a regression"));
}

}  // namespace
}  // namespace opc

namespace opc {
namespace {

TEST(LoaderTypes, DtypeCopiesMustNotGoRoundInACircle) {
  try {
    load_contract_text(R"Y(
op: t::op
schema: "op(Tensor a, Tensor b) -> ()"
args:
  a: {dtype: b, shape: [2]}
  b: {dtype: a, shape: [2]}
)Y", "t.yaml");
    FAIL() << "a dtype cycle loaded";
  } catch (const ContractError& e) {
    EXPECT_EQ(e.loc().line, 6);
    EXPECT_NE(e.message().find("go round in a circle back to 'b'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opc

namespace opc {
namespace {

TEST(ContractLoaderMisuse, SkipNeedsAReason) {
  EXPECT_EQ(load_contract_text(kSmall + "misuse: {skip: \"the op is a test double\"}\n", kFile).misuse_skip,
            "the op is a test double");
  EXPECT_TRUE(load_contract_text(kSmall, kFile).misuse_skip.empty()) << "misuse search is on by default";
  EXPECT_TRUE(fails_at_token(kSmall + "misuse: {skip: \"\"}\n", "\"\"}", "misuse.skip needs the reason"));
  EXPECT_TRUE(fails_at_token(kSmall + "misuse: {skp: x}\n", "skp", "did you mean 'skip'?"));
  EXPECT_TRUE(fails_at_token(kSmall + "misuse: off\n", "off", "misuse must be a mapping"));
}

TEST(ContractLoaderForms, OtherShapesOfTheSameData) {
  const std::string head = R"y(op: a::f
schema: "f(Tensor x) -> Tensor"
dims:
  n: {range: [0, 8]}
  h: {range: [1, 4]}
args:
)y";
  const Contract c = load_contract_text(head + "  x: {dtype: float32, shape: [n, h * 2], forms: [[n, h, 2], [n * h * 2]]}\n", kFile);
  ASSERT_EQ(c.args[0].forms.size(), 2u);
  EXPECT_EQ(c.args[0].forms[0].size(), 3u);
  EXPECT_TRUE(load_contract_text(kSmall, kFile).args[0].forms.empty());
  EXPECT_TRUE(fails_at_token(head + "  x: {dtype: float32, shape: [n], forms: [[]]}\n", "[]]",
                             "a form is a shape, [dim, ...], not empty"));
  EXPECT_TRUE(fails_at_token(head + "  x: {dtype: float32, shape: [n], forms: [n]}\n", "n]}", "args.x.forms"));
  EXPECT_TRUE(fails_at_token(head + "  x: {dtype: float32, shape: [n], forms: [[m]]}\n", "m]", "m"));
}

// buffers: and view: load into their steps, and every mistake in them is named at its place.
TEST(ContractLoader, BuffersAndViewsLoadAndTheirMistakesAreNamed) {
  const std::string head = R"y(op: a::f
schema: "f(Tensor q, Tensor k) -> ()"
dims:
  n: {range: [1, 8]}
buffers:
  qkv: {shape: [n, 6]}
)y";
  const Contract c = load_contract_text(head + R"y(args:
  q: {dtype: float32, shape: [n, 2], layouts: [contiguous, view], view: {of: qkv, steps: [{narrow: [1, 0, 2]}]}}
  k: {dtype: q, shape: [2, n], view: {of: qkv, steps: [{narrow: [1, 2, 2]}, {transpose: [0, 1]}]}}
)y", kFile);
  ASSERT_EQ(c.buffers.size(), 1u);
  EXPECT_EQ(c.buffers[0].name, "qkv");
  EXPECT_EQ(c.args[0].layouts, (std::vector<Layout>{Layout::Contiguous, Layout::View}));
  EXPECT_EQ(c.args[1].layouts, (std::vector<Layout>{Layout::View})) << "view: alone means always a view";
  ASSERT_TRUE(c.args[1].view);
  ASSERT_EQ(c.args[1].view->steps.size(), 2u);
  EXPECT_EQ(c.args[1].view->steps[1].kind, ViewStep::Kind::Transpose);

  const std::string k = "  k: {dtype: q, shape: [n, 2]}\n";
  std::string t = head + "args:\n  q: {dtype: float32, shape: [n, 2], view: {of: kvq, steps: []}}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "kvq", "args.q.view.of: no buffer 'kvq'"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], layouts: [contiguous], view: {of: qkv, steps: []}}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "[contiguous]", "list `view` among them"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], layouts: [view]}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "[view]", "`view` needs view: {of: BUFFER"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], view: {of: qkv, steps: [{slice: [1, 0, 2]}]}}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "slice", "unknown step 'slice' (known: select, narrow, chunk, view, transpose)"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], view: {of: qkv, steps: [{narrow: [1, 0]}]}}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "[1, 0]", "narrow takes [dim, start, length]"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], view: {of: qkv, steps: [{select: [0, m]}]}}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "m]", "unknown name 'm'"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2]}\n" + k;
  EXPECT_TRUE(fails_at_token(t, "qkv:", "buffers.qkv is the view of no argument"));
  t = head + "args:\n  q: {dtype: float32, shape: [n, 2], view: {of: qkv, steps: []}}\n" +
      "  k: {dtype: float32, shape: [n, 2], view: {of: qkv, steps: []}}\n";
  EXPECT_TRUE(fails_at(t, 9, 44, "'k' and 'q' are views of buffer 'qkv' and so share its dtype: give 'k' dtype: q"));
}

}  // namespace
}  // namespace opc
