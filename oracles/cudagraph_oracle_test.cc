// The cudagraph oracle on hand-made observations, so that its judgement is tested on
// every machine; the runner that fills them needs a GPU (tests/contracts/cudagraph.yaml).
#include <gtest/gtest.h>

#include "oracles/oracles.h"
#include "runners/cudagraph_runner.h"

namespace opc {
namespace {

CudagraphObservation one_replay(at::Tensor eager, at::Tensor replayed) {
  CudagraphObservation obs;
  obs.real_rows = 3;
  GraphReplay r;
  r.capture_size = 4;
  r.outputs.push_back({"return 0", std::move(eager), std::move(replayed)});
  obs.replays.push_back(std::move(r));
  return obs;
}

TEST(CudagraphOracle, PassesAReplayEqualToEager) {
  const at::Tensor t = at::arange(6, at::kFloat).reshape({3, 2});
  EXPECT_TRUE(check_cudagraph(one_replay(t, t.clone())).empty());
}

TEST(CudagraphOracle, CatchesAReplayThatDiffersOnTheRealRows) {
  const at::Tensor t = at::arange(6, at::kFloat).reshape({3, 2});
  at::Tensor bad = t.clone();
  bad[1][1] = std::numeric_limits<float>::quiet_NaN();
  const auto f = check_cudagraph(one_replay(t, bad));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].clause, Clause::Cudagraph);
  EXPECT_NE(f[0].message.find("return 0 differs from eager on the real rows, first at element 3 "
                              "(row-major): eager 3.000000, replay nan"), std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("captured at batch size 4 (3 real rows, rows 3..4 garbage)"),
            std::string::npos) << f[0].message;
}

TEST(CudagraphOracle, NaNEqualToNaNIsNoDifference) {
  const at::Tensor t = at::full({2}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(check_cudagraph(one_replay(t, t.clone())).empty());
}

TEST(CudagraphOracle, ReportsACaptureErrorWithItsText) {
  CudagraphObservation obs;
  GraphReplay r;
  r.capture_size = 8;
  r.error = "capture at batch size 8 failed: CUDA error: operation not permitted when stream is capturing";
  obs.replays.push_back(r);
  const auto f = check_cudagraph(obs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].clause, Clause::Cudagraph);
  EXPECT_NE(f[0].message.find("operation not permitted when stream is capturing"), std::string::npos);
}

TEST(CudagraphOracle, CatchesAReplayWritingAReadOnlyInput) {
  const at::Tensor t = at::ones({2});
  CudagraphObservation obs = one_replay(t, t.clone());
  obs.replays[0].inputs_written.push_back("x");
  const auto f = check_cudagraph(obs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("wrote its input 'x'"), std::string::npos) << f[0].message;
}

TEST(CudagraphOracle, CatchesAReturnOfTheWrongSize) {
  const auto f = check_cudagraph(one_replay(at::ones({3, 2}), at::ones({4, 2})));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("has sizes [4, 2] but eager on the real rows gives [3, 2]"),
            std::string::npos) << f[0].message;
}

TEST(CudagraphOracle, AnOpThatCannotRunOnTheGpuIsACrash) {
  CudagraphObservation obs;
  obs.eager_error = "Could not run 'opc_test::f' with arguments from the 'CUDA' backend";
  const auto f = check_cudagraph(obs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].clause, Clause::Crash);
}

TEST(CudagraphOracle, UnavailabilitySaysWhy) {
  // On a CPU-only build or a machine without a GPU the mode says why it cannot run.
  const std::string why = cudagraph_unavailable();
  if (why.empty()) GTEST_SKIP() << "this build and machine can run CUDA graphs";
  EXPECT_TRUE(why.find("CPU-only LibTorch") != std::string::npos ||
              why.find("no CUDA device") != std::string::npos) << why;
}

}  // namespace
}  // namespace opc
