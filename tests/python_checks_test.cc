// The embedded Python's checks, as a user runs them: real torch.compile refuses what
// opcontract's C++ model lets pass, and every report says which variant ran.
#include <gtest/gtest.h>

#include "tests/cli_run.h"
#include "runners/python/bridge.h"

namespace {

const std::string kAnnotated = "check tests/planted_contracts/alias_annotated_return.yaml --load " +
                               shell_quote(OPC_TEST_OPS) + " --cases 20";

bool embeds_python() {
  static const bool yes = contains(run("--version").output, "embedding Python");
  return yes;
}

// PyTorch does not functionalize a custom op whose returns carry alias annotations:
// `(Tensor(a!) x) -> Tensor(a!)` is a compiled finding with PyTorch's own words.
TEST(RealTorchCompile, RefusesAnOpWhoseReturnIsAliasAnnotated) {
  if (!embeds_python()) GTEST_SKIP() << "this opcontract embeds no Python: " << run("--version").output;
  const Result r = run(kAnnotated);
  EXPECT_EQ(r.exit, 1) << r.output;
  EXPECT_CONTAINS(r.output, "- compiled (compiled)");
  EXPECT_CONTAINS(r.output, "torch.compile(backend=\"aot_eager\", fullgraph=True, dynamic=True)");
  EXPECT_CONTAINS(r.output, "Found a custom (non-ATen) operator whose output has alias annotations");
  EXPECT_CONTAINS(r.output, "compiled ran as torch.compile (aot_eager and inductor");
}

// The same op with --no-python: only the C++ model runs, which lets it pass -- and the
// report says that torch.compile itself did not run.
TEST(RealTorchCompile, TheCppModelAloneSaysSo) {
  const Result r = run(kAnnotated + " --no-python");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "compiled ran as opcontract's C++ model of torch.compile only, not "
                            "torch.compile itself (--no-python)");
  EXPECT_CONTAINS(r.output, "fake ran as the op's C++ Meta kernel on concrete sizes, not PyTorch's "
                            "FakeTensorMode (--no-python)");
}

// --import of a module that is not there is a clear error, exit 2.
TEST(RealTorchCompile, ImportingAMissingModuleIsAnError) {
  if (!embeds_python()) GTEST_SKIP() << "this opcontract embeds no Python";
  const Result r = run("list --import opcontract_no_such_module");
  EXPECT_EQ(r.exit, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--import opcontract_no_such_module: ModuleNotFoundError");
}

// A python_state hook may decline a case the program never makes on this machine: it is
// counted with the hook's reason and not judged; the other cases are.
TEST(PythonState, DeclinedCasesAreCountedNotJudged) {
  if (!embeds_python()) GTEST_SKIP() << "this opcontract embeds no Python";
  const Result r = run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && PYTHONPATH=tests/python " +
                             shell_quote(OPC_BINARY) + " check tests/planted_contracts/state_declined.yaml --load " +
                             shell_quote(OPC_TEST_OPS) + " --import opcontract_test_ops --cases 30 --no-misuse");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "case(s) the state hook says the program never makes here: no weight wider than 4 is packed here");
  EXPECT_CONTAINS(r.output, "HOLDS");
  EXPECT_FALSE(contains(r.output, "30 cases")) << r.output;  // the declined ones are not counted as run
}

// A `device: cuda` contract where no GPU runs it: eager, compiled and cudagraph are not run,
// saying why, and the fake mode runs alone on fake CUDA tensors (the op's fake refuses any
// other device, so the contract holding shows they are CUDA's; its planted twin is
// python/fake_cuda/planted).
TEST(FakeCuda, TheFakeModeRunsAloneOnFakeCudaTensorsSayingWhy) {
  if (!embeds_python()) GTEST_SKIP() << "this opcontract embeds no Python";
  const Result r = run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && PYTHONPATH=tests/python " +
                             shell_quote(OPC_BINARY) + " check tests/contracts/python/fake_cuda.yaml --load " +
                             shell_quote(OPC_TEST_OPS) + " --import opcontract_test_ops --cases 30");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "the contract's tensors live on CUDA (device: cuda)");
  EXPECT_CONTAINS(r.output, "the fake mode runs alone, on fake CUDA tensors");
  EXPECT_CONTAINS(r.output, "HOLDS");
}

// list shows the Python-registered ops an import brings, each with where its fake is.
TEST(RealTorchCompile, ListShowsPythonOpsAndTheirFakes) {
  if (!embeds_python()) GTEST_SKIP() << "this opcontract embeds no Python";
  const Result r = run_shell("cd " + shell_quote(OPC_SOURCE_DIR) + " && PYTHONPATH=tests/python " +
                             shell_quote(OPC_BINARY) + " list --import opcontract_test_ops --contracts tests/contracts");
  EXPECT_EQ(r.exit, 0) << r.output;
  EXPECT_CONTAINS(r.output, "opc_py::row_sums");
  EXPECT_CONTAINS(r.output, "[fake: Python fake (");
  EXPECT_CONTAINS(r.output, "opcontract_test_ops.py:");
  EXPECT_CONTAINS(r.output, "tests/contracts/python/python_fake.yaml (contract)");
}

}  // namespace
