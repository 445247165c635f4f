// Port of vLLM _moe_C::moe_align_block_size (csrc/moe/moe_align_sum_kernels.cu, the
// sglang-derived version with this 6-argument schema, where the caller pre-fills
// sorted_token_ids with the sentinel numel and zeroes expert_ids) and _moe_C::topk_softmax
// (csrc/moe/topk_softmax_kernels.cu: fused warp kernel topkGatingSoftmax for power-of-two
// expert counts up to 512 and 192/320/384/448/576, else moeSoftmax + moeTopK; renormalize
// divides by the selected sum when it is > 0).
//
// moe_align_block_size(topk_ids, E, B, sorted_token_ids, experts_ids, num_tokens_post_pad):
//   check (upstream): round_up(E, 32) < 1024. cnt[e] = #{i : topk_ids[i] == e}, each run
//   padded to a multiple of B: cumsum[0] = 0, cumsum[e+1] = cumsum[e] + ceil(cnt[e]/B)*B;
//   *num_tokens_post_pad = cumsum[E]; experts_ids[j / B] = e for j in [cumsum[e],
//   cumsum[e+1]) step B; token i goes to sorted_token_ids[cumsum[e] + rank]. Nothing else is
//   written: the padding slots inside each run, the tail past cumsum[E] and experts_ids past
//   cumsum[E] / B keep what the caller put there. Two host branches, as upstream:
//   - small batch (numel < 1024 && E <= 64): one block of max(E, 32) threads, thread t
//     handles i = t, t + threads, ...; ranks are deterministic: ordered by (i % threads,
//     i / threads) -- not ascending i. Ids outside [0, E) index shared memory unchecked.
//   - general: ids >= E are skipped; ranks come from atomicAdd, so the order inside a run is
//     unspecified on the GPU; this port writes ascending i (one valid order).
//   (The "numel < num_experts" rule belongs to the Python wrapper: it sizes
//   sorted_token_ids to min(numel * B, numel + E * (B - 1)); the kernel writes the same way.)
//
// topk_softmax(topk_weights, topk_indices, token_expert_indices, gating_output, renormalize):
//   E = gating_output.size(-1), rows = numel / E, k = topk_weights.size(-1); no checks on
//   shapes or k <= E. Softmax per row in float, then k rounds of argmax (ties -> lowest
//   index), the winner's value replaced (-10000 in the fused kernel; skipped in moeTopK).
//   topk_indices in int32/uint32/int64; token_expert_indices[row, j] = j * rows + row.
//   NaN rows (cudagraph padding): the row max ignores NaN (fmaxf) but the sum and every
//   probability become NaN; all comparisons with NaN are false, so the fused kernel returns
//   expert 0 for every k (weights NaN, then -10000) and moeTopK returns expert 0 then the
//   -1.0 seed -- duplicate expert ids. This port emulates both kernels' thread layouts and
//   reduction order (shuffle butterflies; cub warp-tree + per-warp sequential reductions
//   with ArgMax(a, b) = b if b.value > a.value || (== && b.key < a.key) else a), so those
//   NaN results come out as the kernels would produce them.
//   gating_output float32 (fp16/bf16 accepted and widened on load, as newer upstream).
//
// Deliberate reductions: block_size 0, E == 0 for topk_softmax, ids outside [0, E) where the
// kernel would index shared memory with them, and writes outside a tensor's storage raise.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <torch/library.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/port_guard.h"
#include "ops/sym_sized.h"

namespace {

using opc::port::guard_index;
using opc::port::SizeOf;
using opc::port::SymSized;

constexpr int64_t kWarp = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void align_checks(int64_t num_experts, int64_t block_size) {
  const int64_t padded = ceil_div(num_experts, kWarp) * kWarp;
  TORCH_CHECK(padded < 1024, "padded_num_experts must be less than 1024");
  TORCH_CHECK(block_size != 0,
              "opc port: block_size 0; upstream divides by it in the kernel (CEILDIV)");
}

// Follows the upstream kernel's phases in order (count, cumulative sum, fill, scatter), as
// one function, so that it reads against the CUDA source.
void moe_align_block_size_cpu(const at::Tensor& topk_ids, int64_t num_experts, int64_t block_size,
                              at::Tensor& sorted_token_ids, at::Tensor& experts_ids,
                              at::Tensor& num_tokens_post_pad) {
  align_checks(num_experts, block_size);
  AT_DISPATCH_V2(topk_ids.scalar_type(), "moe_align_block_size_kernel", AT_WRAP([&] {
    const scalar_t* ids = topk_ids.data_ptr<scalar_t>();
    int32_t* sorted = sorted_token_ids.data_ptr<int32_t>();
    int32_t* eids = experts_ids.data_ptr<int32_t>();
    int32_t* post_pad = num_tokens_post_pad.data_ptr<int32_t>();
    const int64_t numel = topk_ids.numel();
    const int64_t E = num_experts;
    const bool small_batch = numel < 1024 && E <= 64;
    auto expert_of = [&](int64_t i) { return static_cast<int64_t>(static_cast<int32_t>(ids[i])); };

    std::vector<int64_t> cnt(E, 0);
    for (int64_t i = 0; i < numel; ++i) {
      const int64_t e = expert_of(i);
      if (!small_batch && e >= E) continue;  // general kernel skips foreign ids
      TORCH_CHECK(e >= 0 && e < E, "opc port: topk_ids[", i, "] = ", e, " is outside [0, ", E,
                  "); upstream's ", small_batch ? "small-batch" : "general",
                  " kernel indexes shared memory with it, unchecked");
      ++cnt[e];
    }
    std::vector<int64_t> cumsum(E + 1, 0);
    for (int64_t e = 0; e < E; ++e)
      cumsum[e + 1] = cumsum[e] + ceil_div(cnt[e], block_size) * block_size;
    guard_index(num_tokens_post_pad, 0, "num_tokens_post_pad");
    *post_pad = static_cast<int32_t>(cumsum[E]);
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t j = cumsum[e]; j < cumsum[e + 1]; j += block_size) {
        guard_index(experts_ids, j / block_size, "experts_ids");
        eids[j / block_size] = static_cast<int32_t>(e);
      }
    }
    auto place = [&](int64_t rank, int64_t i) {
      guard_index(sorted_token_ids, rank, "sorted_token_ids");
      sorted[rank] = static_cast<int32_t>(i);
    };
    if (small_batch) {
      // One block of `threads` threads; per-thread counts, prefix-summed over threads.
      const int64_t threads = std::max<int64_t>(E, kWarp);
      std::vector<int64_t> before(threads * E, 0);  // count of expert e in threads < t
      std::vector<int64_t> running(E, 0);
      for (int64_t t = 0; t < threads; ++t) {
        for (int64_t e = 0; e < E; ++e) before[t * E + e] = running[e];
        for (int64_t i = t; i < numel; i += threads) ++running[expert_of(i)];
      }
      for (int64_t t = 0; t < threads; ++t) {
        for (int64_t i = t; i < numel; i += threads) {
          const int64_t e = expert_of(i);
          place(before[t * E + e]++ + cumsum[e], i);
        }
      }
    } else {
      std::vector<int64_t> next(cumsum.begin(), cumsum.end() - 1);
      for (int64_t i = 0; i < numel; ++i) {
        const int64_t e = expert_of(i);
        if (e >= E) continue;
        place(next[e]++, i);
      }
    }
  }), AT_EXPAND(AT_INTEGRAL_TYPES_V2));
}

void moe_align_block_size_meta(const at::Tensor&, int64_t num_experts, int64_t block_size,
                               at::Tensor&, at::Tensor&, at::Tensor&) {
  align_checks(num_experts, block_size);
}

// ---------------------------------------------------------------- topk_softmax

struct KV {
  int64_t key;
  float value;
};
// cub::ArgMax()(a, b)
inline KV arg_max(const KV& a, const KV& b) {
  if (b.value > a.value || (a.value == b.value && b.key < a.key)) return b;
  return a;
}

bool fused_supported(int64_t E) {
  switch (E) {
    case 1: case 2: case 4: case 8: case 16: case 32: case 64: case 128: case 256: case 512:
    case 192: case 320: case 384: case 448: case 576:
      return true;
    default:
      return false;
  }
}

// topkGatingSoftmax for one row; `out`/`idx` receive k values. Long because it follows the
// upstream kernel step by step (vectorised loads, per-thread max, warp reductions), so that
// a reader can hold it against the CUDA source.
void fused_row(const float* vals, int64_t E, int64_t k, bool renormalize, float* out,
               int64_t* idx) {
  const bool pow2 = (E & (E - 1)) == 0;
  const int64_t max_bytes = pow2 ? 16 : 8;  // BYTES_PER_LDG_POWER_OF_2 / _MULTIPLE_64
  const int64_t bytes = std::min<int64_t>(max_bytes, 4 * E);
  const int64_t elts = bytes / 4;                                 // ELTS_PER_LDG
  const int64_t vecs = std::max<int64_t>(1, E / (elts * kWarp));  // VECs_PER_THREAD
  const int64_t vpt = vecs * elts;
  const int64_t tpr = E / vpt;  // THREADS_PER_ROW
  const int64_t cols = elts * tpr;  // COLS_PER_GROUP_LDG
  std::vector<float> chunk(tpr * vpt);
  auto at = [&](int64_t g, int64_t j) -> float& { return chunk[g * vpt + j]; };
  for (int64_t g = 0; g < tpr; ++g)
    for (int64_t l = 0; l < vecs; ++l)
      for (int64_t ii = 0; ii < elts; ++ii) at(g, l * elts + ii) = vals[g * elts + l * cols + ii];
  // Row max: per thread, then butterfly (fmaxf drops NaN).
  std::vector<float> red(tpr), tmp(tpr);
  for (int64_t g = 0; g < tpr; ++g) {
    float m = at(g, 0);
    for (int64_t j = 1; j < vpt; ++j) m = std::fmax(m, at(g, j));
    red[g] = m;
  }
  for (int64_t mask = tpr / 2; mask > 0; mask /= 2) {
    for (int64_t g = 0; g < tpr; ++g) tmp[g] = std::fmax(red[g], red[g ^ mask]);
    red.swap(tmp);
  }
  std::vector<float> sum(tpr);
  for (int64_t g = 0; g < tpr; ++g) {
    float s = 0;
    for (int64_t j = 0; j < vpt; ++j) {
      at(g, j) = std::exp(at(g, j) - red[g]);
      s += at(g, j);
    }
    sum[g] = s;
  }
  for (int64_t mask = tpr / 2; mask > 0; mask /= 2) {
    for (int64_t g = 0; g < tpr; ++g) tmp[g] = sum[g] + sum[g ^ mask];
    sum.swap(tmp);
  }
  for (int64_t g = 0; g < tpr; ++g) {
    const float recip = 1.f / sum[g];
    for (int64_t j = 0; j < vpt; ++j) at(g, j) = at(g, j) * recip;
  }
  float selected = 0.f;
  std::vector<float> mv(tpr), mv2(tpr);
  std::vector<int64_t> ex(tpr), ex2(tpr);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t g = 0; g < tpr; ++g) {
      const int64_t start = g * elts;
      float m = at(g, 0);
      int64_t e = start;
      for (int64_t l = 0; l < vecs; ++l) {
        for (int64_t ii = 0; ii < elts; ++ii) {
          const float v = at(g, l * elts + ii);
          if (v > m) {
            m = v;
            e = start + l * cols + ii;
          }
        }
      }
      mv[g] = m;
      ex[g] = e;
    }
    for (int64_t mask = tpr / 2; mask > 0; mask /= 2) {
      for (int64_t g = 0; g < tpr; ++g) {
        const float om = mv[g ^ mask];
        const int64_t oe = ex[g ^ mask];
        const bool take = om > mv[g] || (om == mv[g] && oe < ex[g]);
        mv2[g] = take ? om : mv[g];
        ex2[g] = take ? oe : ex[g];
      }
      mv.swap(mv2);
      ex.swap(ex2);
    }
    out[kk] = mv[0];
    idx[kk] = ex[0];
    selected += mv[0];
    if (kk + 1 < k) {
      const int64_t e = ex[0];
      const int64_t g = (e / elts) % tpr;
      at(g, (e / cols) * elts + e % elts) = -10000.f;
    }
  }
  if (renormalize) {
    const float denom = selected > 0.f ? selected : 1.f;
    for (int64_t kk = 0; kk < k; ++kk) out[kk] = out[kk] / denom;
  }
}

constexpr int64_t kTpb = 256;  // moeSoftmax / moeTopK threads per block

// cub BlockReduce (warp reductions): per-warp shuffle-down tree, then warps in order.
template <typename T, typename Op>
T block_reduce(std::vector<T> v, Op op) {
  const int64_t warps = kTpb / kWarp;
  std::vector<T> agg(warps, v[0]);
  for (int64_t w = 0; w < warps; ++w) {
    T* lane = v.data() + w * kWarp;
    for (int64_t off = 1; off < kWarp; off *= 2)
      for (int64_t l = 0; l + off < kWarp; l += 2 * off) lane[l] = op(lane[l], lane[l + off]);
    agg[w] = lane[0];
  }
  T r = agg[0];
  for (int64_t w = 1; w < warps; ++w) r = op(r, agg[w]);
  return r;
}

void fallback_row(const float* vals, int64_t E, int64_t k, bool renormalize, float* out,
                  int64_t* idx) {
  std::vector<float> td(kTpb, -FLT_MAX);
  for (int64_t t = 0; t < kTpb; ++t)
    for (int64_t ii = t; ii < E; ii += kTpb) td[t] = std::fmax(vals[ii], td[t]);
  const float mx = block_reduce(td, [](float a, float b) { return a < b ? b : a; });
  std::fill(td.begin(), td.end(), 0.f);
  for (int64_t t = 0; t < kTpb; ++t)
    for (int64_t ii = t; ii < E; ii += kTpb) td[t] += std::exp(vals[ii] - mx);
  const float z = block_reduce(td, [](float a, float b) { return a + b; });
  const float norm = 1.f / z;
  std::vector<float> prob(E);
  for (int64_t ii = 0; ii < E; ++ii) prob[ii] = std::exp(vals[ii] - mx) * norm;
  float selected = 0.f;
  for (int64_t kk = 0; kk < k; ++kk) {
    std::vector<KV> thread(kTpb);
    for (int64_t t = 0; t < kTpb; ++t) {
      KV cur{0, -1.f};
      for (int64_t e = t; e < E; e += kTpb) {
        KV inp{e, prob[e]};
        for (int64_t p = 0; p < kk; ++p)
          if (idx[p] == e) inp = cur;
        cur = arg_max(inp, cur);
      }
      thread[t] = cur;
    }
    const KV r = block_reduce(thread, arg_max);
    out[kk] = r.value;
    idx[kk] = r.key;
    selected += r.value;
  }
  if (renormalize) {
    const float denom = selected > 0.f ? selected : 1.f;
    for (int64_t kk = 0; kk < k; ++kk) out[kk] = out[kk] / denom;
  }
}

template <typename Int>
struct TopkShapeOf {
  Int num_experts, num_tokens, topk;
};
using TopkShape = TopkShapeOf<int64_t>;

// T: at::Tensor for the CPU kernel, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
TopkShapeOf<SizeOf<T>> topk_checks(const T& topk_weights, const T& topk_indices,
                                   const T& gating_output) {
  const auto E = gating_output.size(-1);
  TORCH_CHECK(E != 0,
              "opc port: num_experts 0; upstream computes numel / num_experts on the host "
              "(integer division by zero)");
  const auto it = topk_indices.scalar_type();
  if (it != at::kInt && it != at::kUInt32) TORCH_CHECK(it == at::kLong);
  return {E, gating_output.numel() / E, topk_weights.size(-1)};
}

void topk_softmax_cpu(at::Tensor& topk_weights, at::Tensor& topk_indices,
                      at::Tensor& token_expert_indices, const at::Tensor& gating_output,
                      bool renormalize) {
  const TopkShape s = topk_checks(topk_weights, topk_indices, gating_output);
  float* w = topk_weights.data_ptr<float>();
  int32_t* src_rows = token_expert_indices.data_ptr<int32_t>();
  void* ind = topk_indices.data_ptr();
  const auto it = topk_indices.scalar_type();
  std::vector<float> row(s.num_experts), wk(s.topk);
  std::vector<int64_t> ik(s.topk);
  const bool fused = fused_supported(s.num_experts);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gating_output.scalar_type(),
                                  "topk_softmax", [&] {
    const scalar_t* g = gating_output.data_ptr<scalar_t>();
    for (int64_t r = 0; r < s.num_tokens; ++r) {
      for (int64_t e = 0; e < s.num_experts; ++e)
        row[e] = static_cast<float>(g[r * s.num_experts + e]);
      if (fused) {
        fused_row(row.data(), s.num_experts, s.topk, renormalize, wk.data(), ik.data());
      } else {
        fallback_row(row.data(), s.num_experts, s.topk, renormalize, wk.data(), ik.data());
      }
      for (int64_t kk = 0; kk < s.topk; ++kk) {
        const int64_t o = s.topk * r + kk;
        guard_index(topk_weights, o, "topk_weights");
        guard_index(topk_indices, o, "topk_indices");
        guard_index(token_expert_indices, o, "token_expert_indices");
        w[o] = wk[kk];
        if (it == at::kInt) static_cast<int32_t*>(ind)[o] = static_cast<int32_t>(ik[kk]);
        else if (it == at::kUInt32) static_cast<uint32_t*>(ind)[o] = static_cast<uint32_t>(ik[kk]);
        else static_cast<int64_t*>(ind)[o] = ik[kk];
        src_rows[o] = static_cast<int32_t>(kk * s.num_tokens + r);
      }
    }
  });
}

void topk_softmax_meta(at::Tensor& topk_weights, at::Tensor& topk_indices, at::Tensor&,
                       const at::Tensor& gating_output, bool) {
  topk_checks<SymSized>(topk_weights, topk_indices, gating_output);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_moe_C, m) {
  m.def(
      "moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor! "
      "sorted_token_ids, Tensor! experts_ids, Tensor! num_tokens_post_pad) -> ()");
  m.def(
      "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! token_expert_indices, "
      "Tensor gating_output, bool renormalize) -> ()");
}
TORCH_LIBRARY_IMPL(opc_moe_C, CPU, m) {
  m.impl("moe_align_block_size", &moe_align_block_size_cpu);
  m.impl("topk_softmax", &topk_softmax_cpu);
}
TORCH_LIBRARY_IMPL(opc_moe_C, Meta, m) {
  m.impl("moe_align_block_size", &moe_align_block_size_meta);
  m.impl("topk_softmax", &topk_softmax_meta);
}
