#include "support/platform.h"

#include <dirent.h>
#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace opc {
namespace {

// The first "key : value" line of /proc/cpuinfo whose key is one of `keys`.
std::string cpuinfo_field(const std::vector<std::string>& keys) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    const size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> mapped_libraries() {
  std::ifstream in("/proc/self/maps");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find(".so") == std::string::npos) continue;
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
  }
  return out;
}

int numa_node_count() {
  DIR* dir = opendir("/sys/devices/system/node");
  if (!dir) return 0;
  int nodes = 0;
  while (const dirent* e = readdir(dir))
    if (std::strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') ++nodes;
  closedir(dir);
  return nodes;
}

int usable_cores() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

// Variables that change how CPU kernels run: threads and their binding, the allocator and
// OpenMP runtime preloaded, oneDNN's ISA cap, vLLM's CPU knobs.
bool is_setting(const std::string& name) {
  static const char* const kPrefixes[] = {"OMP_",   "KMP_",   "GOMP_",      "MKL_",     "DNNL_",
                                          "ONEDNN_", "OPENBLAS_", "VLLM_CPU_", "ATEN_CPU_"};
  if (name == "LD_PRELOAD") return true;
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](const char* p) { return name.rfind(p, 0) == 0; });
}

std::vector<std::pair<std::string, std::string>> kernel_settings() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || !is_setting(entry.substr(0, eq))) continue;
    out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The file name without its extensions: "_C.abi3.so" -> "_C".
std::string stem_path(const std::string& path) {
  const size_t name = path.rfind('/') + 1;
  const size_t dot = path.find('.', name);
  return dot == std::string::npos ? path : path.substr(0, dot);
}

// Features that pick between builds of an op library, per architecture, in the order a
// reader expects them (older first).
const std::vector<std::string>& isa_of_interest(const std::string& arch) {
  static const std::vector<std::string> x86 = {"avx2",        "avx512f",  "avx512_vnni", "avx512_bf16",
                                               "avx512_fp16", "amx_tile", "amx_bf16",    "amx_int8",
                                               "amx_fp16"};
  static const std::vector<std::string> arm = {"asimd", "asimdhp", "bf16", "i8mm", "sve", "sve2"};
  static const std::vector<std::string> none;
  if (arch == "x86_64" || arch == "i686") return x86;
  if (arch == "aarch64") return arm;
  return none;
}

}  // namespace

Platform read_platform() {
  Platform p;
  if (utsname u{}; uname(&u) == 0) p.arch = u.machine;
  p.cpu = cpuinfo_field({"model name", "cpu model", "cpu"});
  p.cpu_flags = words(cpuinfo_field({"flags", "Features"}));
  p.libraries = mapped_libraries();
  p.cores = usable_cores();
  p.numa_nodes = numa_node_count();
  p.settings = kernel_settings();
  return p;
}

bool has_cpu_feature(const Platform& p, const std::string& flag) {
  return std::binary_search(p.cpu_flags.begin(), p.cpu_flags.end(), flag);
}

bool has_library(const Platform& p, const std::string& name) {
  return std::any_of(p.libraries.begin(), p.libraries.end(), [&](const std::string& path) {
    const std::string stem = stem_path(path);
    return stem.size() >= name.size() && stem.compare(stem.size() - name.size(), name.size(), name) == 0 &&
           (stem.size() == name.size() || stem[stem.size() - name.size() - 1] == '/');
  });
}

std::pair<std::vector<std::string>, std::vector<std::string>> isa_features(const Platform& p) {
  std::pair<std::vector<std::string>, std::vector<std::string>> split;
  for (const std::string& f : isa_of_interest(p.arch))
    (has_cpu_feature(p, f) ? split.first : split.second).push_back(f);
  return split;
}

std::string isa_summary(const Platform& p) {
  const auto [present, absent] = isa_features(p);
  std::string out;
  for (const std::string& f : present) out += (out.empty() ? "" : " ") + f;
  if (present.empty() && absent.empty()) return "(no features known for " + (p.arch.empty() ? "this CPU" : p.arch) + ")";
  if (!absent.empty()) {
    out += (out.empty() ? "(no " : " (no ");
    for (size_t i = 0; i < absent.size(); ++i) out += (i ? ", " : "") + absent[i];
    out += ")";
  }
  return out;
}

}  // namespace opc
