// misuse: a caller's mistake (generators/misuse.h) must be refused with a clean error, or
// run inside the memory it was handed with the results a valid call gives. What the op
// did, in its fenced memory, is held to that; a crash or hang on it is judged by
// check/case_judge.cc (misuse_crash) from the worker's death.
#include <cctype>

#include "oracles/compare.h"
#include "oracles/oracles.h"

namespace opc {
namespace {

// Tolerance for results that crossed a dtype: what a bfloat16 round trip loses.
constexpr Tolerance kLoose{1e-2, 1e-2};

// An oracle's message as the rest of a misuse sentence: "the op wrote ..." -> "wrote ...".
std::string continued(std::string s) {
  if (s.rfind("the op ", 0) == 0) return s.substr(7);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// What the op did to memory it was not handed, or to arguments it may not write.
std::string memory_breach(const MisuseInput& in) {
  const OracleInput oi{in.contract, in.registered, in.facts, in.handed};
  for (auto check : {check_extent, check_mutation})
    if (const std::vector<Finding> found = check(oi); !found.empty()) return continued(found.front().message);
  return "";
}

// `got` against `want`: loosely, `want` first in got's dtype, when the values crossed a
// dtype (an int32 `out` holds the valid float results truncated).
std::string differ(const MisuseInput& in, const at::Tensor& got, const at::Tensor& want) {
  if (!in.loose) return beyond_tolerance(got, want, in.contract.tolerance_for(want.scalar_type()), "valid call");
  return beyond_tolerance(got, want.to(got.scalar_type()), kLoose, "valid call");
}

// How the results differ from the valid call on the same values, or "".
std::string results_differ(const MisuseInput& in) {
  const Observation& got = *in.valid_call;
  for (size_t r = 0; r < in.handed.returns.size() && r < got.returns.size(); ++r) {
    const ReturnObservation& a = in.handed.returns[r];
    if (!a.is_tensor || !a.value.defined() || !got.returns[r].value.defined()) continue;
    if (std::string d = differ(in, a.value, got.returns[r].value); !d.empty())
      return "return " + std::to_string(r) + " differs from the valid call's: " + d;
  }
  for (size_t i = 0; i < in.handed.tensors.size() && i < got.tensors.size(); ++i) {
    const int arg = in.handed.tensors[i].arg;
    if (!in.registered.mutable_arg[arg]) continue;
    if (std::string d = differ(in, in.handed.tensors[i].view, got.tensors[i].view); !d.empty())
      return "argument '" + in.contract.args[arg].name + "' differs from the valid call's: " + d;
  }
  return "";
}

}  // namespace

std::vector<Finding> check_misuse(const MisuseInput& in) {
  if (in.handed.threw) return {};  // refused: what a caller's mistake should get
  const std::string accepted = "the op accepted a caller's mistake without raising (" + in.what + ") and";
  if (const std::string breach = memory_breach(in); !breach.empty())
    return {{Clause::Misuse, accepted + " " + breach}};
  if (in.valid_call && !in.valid_call->threw)
    if (const std::string differ = results_differ(in); !differ.empty())
      return {{Clause::Misuse, accepted + " returned garbage silently: " + differ +
                             ". Refuse it (TORCH_CHECK) or handle it (e.g. .contiguous() on entry)."}};
  return {};
}

}  // namespace opc
