// The machine a check runs on, as far as an op's behaviour can depend on it: the CPU and
// its instruction-set features, the shared libraries loaded in this process (which of an
// op library's builds was picked), and the settings that change how kernels run (threads,
// NUMA, OMP_* and VLLM_CPU_* variables). Known findings state their scope against it
// (contracts' `where:`), and every report says what it judged on.
//
//   Platform p = read_platform();            // once the op libraries are loaded
//   has_cpu_feature(p, "amx_tile")           // from /proc/cpuinfo's flags
//   has_library(p, "vllm/_C_AVX2")           // .../site-packages/vllm/_C_AVX2.abi3.so is mapped
//   isa_summary(p)                           // "avx2 avx512f avx512_bf16 (no amx_tile)"
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace opc {

struct Platform {
  std::string arch;                     // uname's machine: x86_64, aarch64
  std::string cpu;                      // /proc/cpuinfo's model name
  std::vector<std::string> cpu_flags;   // /proc/cpuinfo's flags (or Features), sorted
  std::vector<std::string> libraries;   // paths of the shared objects mapped in this process
  int cores = 0;                        // online CPUs this process may run on
  int threads = 0;                      // intra-op threads the ops ran with; set by the caller (0: not said)
  int numa_nodes = 0;                   // 0 when the kernel does not say
  // Environment variables that change how CPU kernels run, as set here (name, value):
  // OMP_*, KMP_*, MKL_*, VLLM_CPU_*, TORCH_* and friends; unset ones are left out.
  std::vector<std::pair<std::string, std::string>> settings;
};

// Reads the platform from /proc and the environment. Never throws: what cannot be read
// stays empty (a CPU without /proc/cpuinfo has no flags, so no feature scope matches).
Platform read_platform();

bool has_cpu_feature(const Platform& p, const std::string& flag);

// Whether a mapped library's path, without its extensions (everything from the first dot
// of the file name on), ends with `name` at a path component: "vllm/_C" matches
// ".../vllm/_C.abi3.so" but neither ".../vllm/_C_AVX2.abi3.so" nor ".../torch/_C.so".
bool has_library(const Platform& p, const std::string& name);

// The instruction-set features that pick between op builds on this architecture, those
// present first, then those absent: "avx2 avx512f avx512_bf16 (no amx_tile, amx_bf16)".
std::string isa_summary(const Platform& p);
// The same features, split: present and absent.
std::pair<std::vector<std::string>, std::vector<std::string>> isa_features(const Platform& p);

}  // namespace opc
