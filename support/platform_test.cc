// The platform a check judges on (support/platform.h): read from this machine, and the
// rules a known finding's scope (`where:`) is matched by.
#include "support/platform.h"

#include <gtest/gtest.h>

#include <unistd.h>

namespace opc {
namespace {

Platform avx512_machine() {
  Platform p;
  p.arch = "x86_64";
  p.cpu_flags = {"avx", "avx2", "avx512_bf16", "avx512f", "fma"};
  p.libraries = {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/venv/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so",
                 "/venv/site-packages/vllm/_C_AVX512.abi3.so"};
  return p;
}

TEST(Platform, ReadFromThisMachine) {
  const Platform p = read_platform();
  EXPECT_FALSE(p.arch.empty());
  EXPECT_GE(p.cores, 1);
  EXPECT_LE(p.cores, sysconf(_SC_NPROCESSORS_CONF));
  // This test binary links libc and LibTorch: both are mapped.
  EXPECT_TRUE(has_library(p, "libc")) << "mapped: " << p.libraries.size() << " libraries";
  EXPECT_TRUE(has_library(p, "libtorch_cpu"));
  EXPECT_FALSE(has_library(p, "no_such_library_here"));
  EXPECT_TRUE(std::is_sorted(p.cpu_flags.begin(), p.cpu_flags.end()));
  if (p.arch == "x86_64") EXPECT_TRUE(has_cpu_feature(p, "sse2")) << "every x86-64 CPU has SSE2";
}

TEST(Platform, ALibraryMatchesByFolderAndNameWithoutExtensions) {
  const Platform p = avx512_machine();
  EXPECT_TRUE(has_library(p, "vllm/_C_AVX512"));
  EXPECT_TRUE(has_library(p, "_C_AVX512"));
  EXPECT_FALSE(has_library(p, "vllm/_C")) << "torch/_C and vllm/_C_AVX512 are not vllm/_C";
  EXPECT_FALSE(has_library(p, "m/_C_AVX512")) << "a folder matches whole";
  EXPECT_FALSE(has_library(p, "vllm/_C_AVX2"));
  EXPECT_TRUE(has_library(p, "torch/_C"));
}

TEST(Platform, FeaturesPresentThenAbsent) {
  const Platform p = avx512_machine();
  EXPECT_TRUE(has_cpu_feature(p, "avx512_bf16"));
  EXPECT_FALSE(has_cpu_feature(p, "amx_tile"));
  EXPECT_EQ(isa_summary(p),
            "avx2 avx512f avx512_bf16 (no avx512_vnni, avx512_fp16, amx_tile, amx_bf16, amx_int8, amx_fp16)");
  Platform unknown;
  unknown.arch = "riscv64";
  EXPECT_EQ(isa_summary(unknown), "(no features known for riscv64)");
}

}  // namespace
}  // namespace opc
