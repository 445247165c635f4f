// Port of vLLM _C::rotary_embedding (csrc/pos_encoding_kernels.cu, the version with this
// schema: optional key, head_stride from query.stride(-2) for [*, heads, head_size] inputs,
// no rope_dim_offset / inverse arguments yet, cache of the query's dtype).
//
//   num_tokens = positions.numel(); checks (as upstream): positions is 1-D or 2-D, query and
//   key agree with it on the token dims, (query.numel()/num_tokens) % head_size == 0, the
//   same for key, num_heads % num_kv_heads == 0. rot_dim = cos_sin_cache.size(1),
//   embed = rot_dim / 2; token stride = stride(positions.dim() - 1) of query (key); head
//   stride = query.stride(-2) when query.dim() == positions.dim() + 2, else head_size (used
//   for key too). For token t, head h, r < embed, with c = cache + positions[t] * rot_dim:
//     neox:  x = base[r],   y = base[embed + r]
//     gpt-j: x = base[2r],  y = base[2r + 1]
//     cos = c[r], sin = c[embed + r]; x' = x*cos - y*sin; y' = y*cos + x*sin
//   computed in scalar_t arithmetic (each product and sum rounded to scalar_t, as this
//   version's kernel does). No rot_dim <= head_size check, no stride(-1) check: positions
//   and the cache are read densely from data_ptr.
//
// Deliberate reductions (raised instead of undefined behaviour):
//   - num_tokens == 0 or head_size == 0: upstream divides (numel / num_tokens, % head_size)
//     on the host (SIGFPE); TORCH_CHECK.
//   - a position outside [0, cos_sin_cache rows): upstream reads the cache out of bounds;
//     TORCH_CHECK. Likewise any query/key access outside its storage.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <optional>

#include "ops/port_guard.h"
#include "ops/sym_sized.h"

namespace {

using opc::port::guard_span;
using opc::port::SizeOf;
using opc::port::SymSized;

template <typename Int>
struct RopeShapeOf {
  Int num_tokens;
  Int num_heads;
  Int num_kv_heads;
  Int rot_dim;
  Int query_stride;
  Int key_stride;
  Int head_stride;
};
using RopeShape = RopeShapeOf<int64_t>;

// T: at::Tensor for the CPU kernel, SymSized for the Meta one (ops/sym_sized.h).
template <typename T>
RopeShapeOf<SizeOf<T>> rope_checks(const T& positions, const T& query, const std::optional<T>& key,
                                   int64_t head_size, const T& cos_sin_cache) {
  using Int = SizeOf<T>;
  const Int num_tokens = positions.numel();
  const int64_t positions_ndim = positions.dim();
  TORCH_CHECK(positions_ndim == 1 || positions_ndim == 2,
              "positions must have shape [num_tokens] or [batch_size, seq_len]");
  if (positions_ndim == 1) {
    TORCH_CHECK(query.size(0) == positions.size(0) &&
                    (!key.has_value() || key->size(0) == positions.size(0)),
                "query, key and positions must have the same number of tokens");
  }
  if (positions_ndim == 2) {
    TORCH_CHECK(query.size(0) == positions.size(0) &&
                    (!key.has_value() || key->size(0) == positions.size(0)) &&
                    query.size(1) == positions.size(1) &&
                    (!key.has_value() || key->size(1) == positions.size(1)),
                "query, key and positions must have the same batch_size and seq_len");
  }
  TORCH_CHECK(num_tokens != 0,
              "opc port: num_tokens 0; upstream computes query.numel() / num_tokens on the "
              "host (integer division by zero)");
  TORCH_CHECK(head_size != 0,
              "opc port: head_size 0; upstream takes hidden_size % head_size on the host "
              "(integer division by zero)");
  const Int query_hidden = query.numel() / num_tokens;
  const Int key_hidden = key.has_value() ? key->numel() / num_tokens : Int(0);
  TORCH_CHECK(query_hidden % head_size == 0);
  TORCH_CHECK(key_hidden % head_size == 0);
  const Int num_heads = query_hidden / head_size;
  const Int num_kv_heads = key.has_value() ? key_hidden / head_size : num_heads;
  TORCH_CHECK(num_kv_heads != 0,
              "opc port: num_kv_heads 0; upstream takes num_heads % num_kv_heads on the host "
              "(integer division by zero)");
  TORCH_CHECK(num_heads % num_kv_heads == 0);
  const Int rot_dim = cos_sin_cache.size(1);
  const int64_t seq_dim = positions_ndim - 1;
  const Int query_stride = query.stride(seq_dim);
  const Int key_stride = key.has_value() ? key->stride(seq_dim) : Int(0);
  const Int head_stride = (query.dim() == positions_ndim + 2) ? query.stride(-2) : Int(head_size);
  return {num_tokens, num_heads, num_kv_heads, rot_dim, query_stride, key_stride, head_stride};
}

template <typename scalar_t>
void rotate_heads(scalar_t* base_ptr, int64_t token_offset, int64_t heads, const RopeShape& s,
                  const scalar_t* cache_row, bool is_neox) {
  const int64_t embed = s.rot_dim / 2;
  const scalar_t* cos_ptr = cache_row;
  const scalar_t* sin_ptr = cache_row + embed;
  for (int64_t h = 0; h < heads; ++h) {
    scalar_t* arr = base_ptr + token_offset + h * s.head_stride;
    for (int64_t r = 0; r < embed; ++r) {
      const int64_t xi = is_neox ? r : 2 * r;
      const int64_t yi = is_neox ? embed + r : 2 * r + 1;
      const scalar_t cos = cos_ptr[r];
      const scalar_t sin = sin_ptr[r];
      const scalar_t x = arr[xi];
      const scalar_t y = arr[yi];
      const scalar_t xc = static_cast<scalar_t>(x * cos);
      const scalar_t ys = static_cast<scalar_t>(y * sin);
      const scalar_t yc = static_cast<scalar_t>(y * cos);
      const scalar_t xs = static_cast<scalar_t>(x * sin);
      arr[xi] = static_cast<scalar_t>(xc - ys);
      arr[yi] = static_cast<scalar_t>(yc + xs);
    }
  }
}

void rotary_embedding_cpu(const at::Tensor& positions, at::Tensor& query,
                          const std::optional<at::Tensor>& key, int64_t head_size,
                          const at::Tensor& cos_sin_cache, bool is_neox) {
  const RopeShape s = rope_checks(positions, query, key, head_size, cos_sin_cache);
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, query.scalar_type(), "rotary_embedding", [&] {
        const int64_t* pos = positions.data_ptr<int64_t>();
        scalar_t* q = query.data_ptr<scalar_t>();
        scalar_t* k = key.has_value() ? key->data_ptr<scalar_t>() : nullptr;
        const scalar_t* cache = cos_sin_cache.data_ptr<scalar_t>();
        const int64_t embed = s.rot_dim / 2;
        const int64_t last = 2 * embed - 1;  // highest offset touched within a head
        guard_span(positions, 0, s.num_tokens - 1, "positions");
        if (embed > 0) {
          guard_span(query, 0, (s.num_tokens - 1) * s.query_stride +
                                   (s.num_heads - 1) * s.head_stride + last, "query");
          if (k != nullptr) {
            guard_span(*key, 0, (s.num_tokens - 1) * s.key_stride +
                                    (s.num_kv_heads - 1) * s.head_stride + last, "key");
          }
        }
        const int64_t cache_elems = cos_sin_cache.numel();
        for (int64_t t = 0; t < s.num_tokens; ++t) {
          const int64_t p = pos[t];
          if (embed > 0) {
            TORCH_CHECK(p >= 0 && (p + 1) * s.rot_dim <= cache_elems, "opc port: position ", p,
                        " of token ", t, " is outside cos_sin_cache (", cos_sin_cache.size(0),
                        " rows); upstream reads the cache out of bounds, unchecked");
          }
          const scalar_t* row = cache + p * s.rot_dim;
          rotate_heads(q, t * s.query_stride, s.num_heads, s, row, is_neox);
          if (k != nullptr) rotate_heads(k, t * s.key_stride, s.num_kv_heads, s, row, is_neox);
        }
      });
}

void rotary_embedding_meta(const at::Tensor& positions, at::Tensor& query,
                           const std::optional<at::Tensor>& key, int64_t head_size,
                           const at::Tensor& cos_sin_cache, bool) {
  rope_checks<SymSized>(positions, query, key, head_size, cos_sin_cache);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(opc_C, m) {
  m.def(
      "rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
      "Tensor cos_sin_cache, bool is_neox) -> ()");
}
TORCH_LIBRARY_IMPL(opc_C, CPU, m) { m.impl("rotary_embedding", &rotary_embedding_cpu); }
TORCH_LIBRARY_IMPL(opc_C, Meta, m) { m.impl("rotary_embedding", &rotary_embedding_meta); }
