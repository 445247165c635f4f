// The CPU ports of vLLM custom ops (ops/*.cc): each numeric port agrees with its plain-ATen
// opc_ref twin where upstream is well defined, reproduces upstream's checks (and quirks:
// dense row indexing, NaN handling), and the cache / moe_align ops write exactly the slots
// they should and nothing else. The ports library is dlopen'ed; ops are called boxed.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/sim_context.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace {

class Ports : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(dlopen(OPC_PORTS, RTLD_NOW | RTLD_GLOBAL), nullptr) << dlerror();
  }
};

void call(const std::string& name, std::vector<c10::IValue> stack) {
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  at::AutoDispatchBelowAutograd guard;
  op.callBoxed(stack);
}

std::string port(const char* ns, const char* op) { return std::string(ns) + "::" + op; }

void expect_close(const at::Tensor& got, const at::Tensor& want, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const at::Tensor g = got.to(at::kFloat), w = want.to(at::kFloat);
  const bool ok = at::allclose(g, w, rtol, atol, /*equal_nan=*/true);
  EXPECT_TRUE(ok) << what << ": max |diff| = "
                  << (g.numel() ? (g - w).abs().nan_to_num(0).max().item<double>() : 0.0);
}

struct Tol {
  double atol, rtol;
};
Tol tol_for(at::ScalarType t) {
  if (t == at::kFloat) return {1e-5, 1e-5};
  if (t == at::kHalf) return {1e-2, 1e-2};
  return {4e-2, 4e-2};  // bf16: the ports round intermediates, the references do not
}

const std::vector<at::ScalarType> kFloatTypes = {at::kFloat, at::kHalf, at::kBFloat16};

at::Tensor randn(at::IntArrayRef sizes, at::ScalarType t) {
  return at::randn(sizes, at::TensorOptions().dtype(at::kFloat)).to(t);
}

// ------------------------------------------------------------------------- rms_norm

TEST_F(Ports, RmsNormMatchesReferenceIncludingStridedRowsAndInPlace) {
  at::manual_seed(1);
  for (const auto t : kFloatTypes) {
    const Tol tol = tol_for(t);
    for (const auto& shape : std::vector<std::vector<int64_t>>{{0, 16}, {3, 7}, {5, 64}, {2, 3, 8}}) {
      const at::Tensor in = randn(shape, t);
      const at::Tensor w = (1 + 0.1 * randn({shape.back()}, at::kFloat)).to(t);
      at::Tensor got = at::full(shape, 7.0, in.options()), want = at::empty_like(in);
      call("opc_C::rms_norm", {got, in, w, 1e-6});
      call("opc_ref::rms_norm", {want, in, w, 1e-6});
      expect_close(got, want, tol.atol, tol.rtol, "rms_norm " + std::string(c10::toString(t)));
    }
    // Strided rows (stride(-2) = 69 > hidden): allowed upstream.
    const at::Tensor big = randn({4, 69}, t);
    const at::Tensor in = big.narrow(1, 0, 64);
    const at::Tensor w = randn({64}, t);
    at::Tensor got = at::empty({4, 64}, in.options()), want = at::empty({4, 64}, in.options());
    call("opc_C::rms_norm", {got, in, w, 1e-5});
    call("opc_ref::rms_norm", {want, in, w, 1e-5});
    expect_close(got, want, tol.atol, tol.rtol, "rms_norm strided rows");
    // In place: result aliasing input.
    at::Tensor x = randn({3, 32}, t);
    const at::Tensor x0 = x.clone();
    call("opc_C::rms_norm", {x, x, w.narrow(0, 0, 32), 1e-5});
    call("opc_ref::rms_norm", {want = at::empty_like(x0), x0, w.narrow(0, 0, 32), 1e-5});
    expect_close(x, want, tol.atol, tol.rtol, "rms_norm in place");
  }
}

TEST_F(Ports, RmsNormMakesUpstreamChecksOnly) {
  const at::Tensor in = at::randn({4, 8});
  const at::Tensor w = at::ones({8});
  at::Tensor out = at::empty({4, 8});
  // result must be contiguous, input.stride(-1) == 1, weight contiguous.
  EXPECT_THROW(call("opc_C::rms_norm", {at::empty({8, 4}).t(), in, w, 1e-6}), c10::Error);
  EXPECT_THROW(call("opc_C::rms_norm", {out, at::randn({8, 4}).t(), w, 1e-6}), c10::Error);
  EXPECT_THROW(call("opc_C::rms_norm", {out, in, at::ones({16}).slice(0, 0, 16, 2), 1e-6}),
               c10::Error);
  // Not checked upstream: a result of another shape with enough elements is accepted.
  at::Tensor flat = at::empty({32});
  EXPECT_NO_THROW(call("opc_C::rms_norm", {flat, in, w, 1e-6}));
  at::Tensor want = at::empty({4, 8});
  call("opc_ref::rms_norm", {want, in, w, 1e-6});
  expect_close(flat.view({4, 8}), want, 1e-5, 1e-5, "rms_norm into a flat result");
  // Meta: the checks run without data.
  const auto meta = at::TensorOptions().device(at::kMeta);
  EXPECT_NO_THROW(call("opc_C::rms_norm", {at::empty({4, 8}, meta), at::empty({4, 8}, meta),
                                           at::empty({8}, meta), 1e-6}));
  EXPECT_THROW(call("opc_C::rms_norm", {at::empty({8, 4}, meta).t(), at::empty({4, 8}, meta),
                                        at::empty({8}, meta), 1e-6}),
               c10::Error);
}

// --------------------------------------------------------------- fused_add_rms_norm

void check_fused_add(const at::Tensor& input, const at::Tensor& residual, const at::Tensor& w,
                     const std::string& what) {
  at::Tensor in_p = input, res_p = residual;
  const at::Tensor in0 = input.clone(), res0 = residual.clone();
  at::Tensor in_r = in0.clone(), res_r = res0.clone();
  call("opc_C::fused_add_rms_norm", {in_p, res_p, w, 1e-6});
  call("opc_ref::fused_add_rms_norm", {in_r, res_r, w, 1e-6});
  const Tol tol = tol_for(input.scalar_type());
  expect_close(res_p, res_r, tol.atol, tol.rtol, what + " residual");
  expect_close(in_p, in_r, tol.atol, tol.rtol, what + " input");
}

TEST_F(Ports, FusedAddRmsNormBothBranchesMatchReference) {
  at::manual_seed(2);
  for (const auto t : kFloatTypes) {
    const at::Tensor w = (1 + 0.1 * randn({64}, at::kFloat)).to(t);
    // Vectorised branch (fp16/bf16): fresh allocations are 16-byte aligned, 64 % 8 == 0.
    check_fused_add(randn({5, 64}, t), randn({5, 64}, t), w, "aligned");
    // Scalar branch: hidden % 8 != 0.
    check_fused_add(randn({3, 60}, t), randn({3, 60}, t), w.narrow(0, 0, 60).clone(), "hidden 60");
    // Scalar branch: input data pointer off by one element (2 bytes for fp16/bf16).
    const at::Tensor buf = randn({4, 72}, t);
    check_fused_add(buf.narrow(1, 1, 64), randn({4, 64}, t), w, "misaligned strided rows");
    // Strided rows, aligned: stride(-2) = 72 is a multiple of 8, so vectorised for fp16/bf16.
    check_fused_add(randn({4, 72}, t).narrow(1, 0, 64), randn({4, 64}, t), w, "strided rows");
    // input and residual in one storage (disjoint halves); num_tokens 0.
    const at::Tensor both = randn({2 * 3 * 64}, t);
    check_fused_add(both.narrow(0, 0, 192).view({3, 64}), both.narrow(0, 192, 192).view({3, 64}),
                    w, "shared storage");
    check_fused_add(randn({0, 64}, t), randn({0, 64}, t), w, "num_tokens 0");
  }
}

TEST_F(Ports, FusedAddRmsNormVectorisedAndScalarBranchesAgree) {
  at::manual_seed(3);
  const at::Tensor w = randn({64}, at::kHalf);
  const at::Tensor x = randn({6, 64}, at::kHalf), r = randn({6, 64}, at::kHalf);
  // Same values, one aligned copy (vectorised) and one shifted by an element (scalar).
  at::Tensor xa = x.clone(), ra = r.clone();
  at::Tensor buf = at::empty({6 * 64 + 1}, x.options());
  at::Tensor xs = buf.narrow(0, 1, 6 * 64).view({6, 64});
  xs.copy_(x);
  at::Tensor rs = r.clone();
  call("opc_C::fused_add_rms_norm", {xa, ra, w, 1e-6});
  call("opc_C::fused_add_rms_norm", {xs, rs, w, 1e-6});
  EXPECT_TRUE(at::equal(ra, rs));  // the add is element-wise in both
  expect_close(xa, xs, 2e-3, 2e-3, "vec8 vs scalar");
}

TEST_F(Ports, FusedAddRmsNormChecksResidualAndWeightOnly) {
  const at::Tensor w = at::ones({8});
  at::Tensor in = at::randn({4, 8});
  EXPECT_THROW(call("opc_C::fused_add_rms_norm", {in, at::randn({8, 4}).t(), w, 1e-6}), c10::Error);
  EXPECT_THROW(call("opc_C::fused_add_rms_norm",
                    {in, at::randn({4, 8}), at::ones({16}).slice(0, 0, 16, 2), 1e-6}),
               c10::Error);
  // input.stride(-1) is not checked upstream: a transposed input is read as if dense.
  at::Tensor in_t = at::randn({8, 4}).t();
  at::Tensor res = at::randn({4, 8});
  EXPECT_NO_THROW(call("opc_C::fused_add_rms_norm", {in_t, res, w, 1e-6}));
}

// ----------------------------------------------------------------- act_and_mul

TEST_F(Ports, SiluAndGeluAndMulMatchReference) {
  at::manual_seed(4);
  for (const char* op : {"silu_and_mul", "gelu_and_mul"}) {
    for (const auto t : kFloatTypes) {
      const Tol tol = tol_for(t);
      for (const auto& shape : std::vector<std::vector<int64_t>>{{3, 14}, {2, 3, 10}, {1, 2}}) {
        const at::Tensor in = randn(shape, t);
        std::vector<int64_t> out_shape = shape;
        out_shape.back() /= 2;
        at::Tensor got = at::empty(out_shape, in.options()), want = at::empty_like(got);
        call(port("opc_C", op), {got, in});
        call(port("opc_ref", op), {want, in});
        expect_close(got, want, tol.atol, tol.rtol, std::string(op) + " " + c10::toString(t));
      }
      // num_tokens 0 returns early without touching anything.
      at::Tensor empty_out = at::empty({0, 4}, at::TensorOptions().dtype(t));
      EXPECT_NO_THROW(call(port("opc_C", op), {empty_out, at::empty({0, 8}, empty_out.options())}));
    }
  }
}

TEST_F(Ports, SiluAndMulIndexesDenseRowsIgnoringStrides) {
  at::manual_seed(5);
  const int64_t T = 4, d = 5;
  // Strided rows: upstream reads input[t*2d + i] from data_ptr, not row t of the view.
  const at::Tensor big = at::randn({T, 2 * d + 6});
  const at::Tensor in = big.narrow(1, 0, 2 * d);
  at::Tensor got = at::empty({T, d}), as_view = at::empty({T, d}), as_dense = at::empty({T, d});
  call("opc_C::silu_and_mul", {got, in});
  call("opc_ref::silu_and_mul", {as_view, in});
  call("opc_ref::silu_and_mul", {as_dense, big.reshape({-1}).narrow(0, 0, T * 2 * d).view({T, 2 * d})});
  expect_close(got, as_dense, 1e-6, 1e-6, "strided input read densely");
  EXPECT_FALSE(at::allclose(got, as_view)) << "the strided view's rows should not be what is read";
  // Odd last dim 2d+1: d = floor, rows still indexed as token*2d.
  const at::Tensor odd = at::randn({T, 2 * d + 1});
  call("opc_C::silu_and_mul", {got, odd});
  call("opc_ref::silu_and_mul", {as_dense, odd.reshape({-1}).narrow(0, 0, T * 2 * d).view({T, 2 * d})});
  expect_close(got, as_dense, 1e-6, 1e-6, "odd last dim");
  EXPECT_THROW(call("opc_C::silu_and_mul", {got, at::empty({T, 0})}), c10::Error);
}

// ------------------------------------------------------------------ rotary_embedding

TEST_F(Ports, RotaryEmbeddingMatchesReference) {
  at::manual_seed(6);
  const int64_t T = 5, H = 4, KV = 2, hs = 16, max_pos = 32;
  for (const auto t : {at::kFloat, at::kHalf}) {
    const Tol tol = tol_for(t);
    for (const bool neox : {true, false}) {
      for (const int64_t rot : {int64_t{16}, int64_t{8}}) {
        const at::Tensor cache = randn({max_pos, rot}, t);
        const at::Tensor pos = at::randint(0, max_pos, {T}, at::kLong);
        const std::string what = std::string(c10::toString(t)) + (neox ? " neox" : " gptj") +
                                 " rot " + std::to_string(rot);
        // Flat [T, H*hs] query and key.
        at::Tensor q = randn({T, H * hs}, t), k = randn({T, KV * hs}, t);
        at::Tensor qr = q.clone(), kr = k.clone();
        call("opc_C::rotary_embedding", {pos, q, k, hs, cache, neox});
        call("opc_ref::rotary_embedding", {pos, qr, kr, hs, cache, neox});
        expect_close(q, qr, tol.atol, tol.rtol, what + " flat q");
        expect_close(k, kr, tol.atol, tol.rtol, what + " flat k");
        // [T, H, hs] query, key None.
        at::Tensor q3 = randn({T, H, hs}, t), q3r = q3.clone();
        call("opc_C::rotary_embedding", {pos, q3, c10::IValue(), hs, cache, neox});
        call("opc_ref::rotary_embedding", {pos, q3r, c10::IValue(), hs, cache, neox});
        expect_close(q3, q3r, tol.atol, tol.rtol, what + " 3-D q, no key");
        // query and key as slices of one qkv buffer (row stride (H + 2KV) * hs).
        at::Tensor qkv = randn({T, (H + 2 * KV) * hs}, t), qkv_r = qkv.clone();
        at::Tensor qs = qkv.narrow(1, 0, H * hs), ks = qkv.narrow(1, H * hs, KV * hs);
        at::Tensor qsr = qkv_r.narrow(1, 0, H * hs), ksr = qkv_r.narrow(1, H * hs, KV * hs);
        call("opc_C::rotary_embedding", {pos, qs, ks, hs, cache, neox});
        call("opc_ref::rotary_embedding", {pos, qsr, ksr, hs, cache, neox});
        expect_close(qkv, qkv_r, tol.atol, tol.rtol, what + " qkv slices (v untouched)");
      }
    }
  }
  // 2-D positions [B, S] with [B, S, H*hs] query.
  const at::Tensor cache = at::randn({max_pos, hs});
  const at::Tensor pos2 = at::randint(0, max_pos, {2, 3}, at::kLong);
  at::Tensor q = at::randn({2, 3, H * hs}), qr = q.clone();
  call("opc_C::rotary_embedding", {pos2, q, c10::IValue(), hs, cache, true});
  call("opc_ref::rotary_embedding", {pos2, qr, c10::IValue(), hs, cache, true});
  expect_close(q, qr, 1e-5, 1e-5, "2-D positions");
}

TEST_F(Ports, RotaryEmbeddingChecks) {
  const at::Tensor cache = at::randn({8, 16});
  at::Tensor q = at::randn({3, 32});
  // Token counts must agree; hidden % head_size; positions beyond the cache raise (upstream
  // would read out of bounds); num_tokens 0 raises (upstream divides by it).
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::zeros({4}, at::kLong), q, c10::IValue(), 16, cache, true}), c10::Error);
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::zeros({3}, at::kLong), q, c10::IValue(), 12, cache, true}), c10::Error);
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::full({3}, 8, at::kLong), q, c10::IValue(), 16, cache, true}), c10::Error);
  at::Tensor q0 = at::randn({0, 32});
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::zeros({0}, at::kLong), q0, c10::IValue(), 16, cache, true}), c10::Error);
  // Cache must have the query's dtype (data_ptr<scalar_t>), positions int64.
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::zeros({3}, at::kLong), q, c10::IValue(), 16, cache.to(at::kHalf), true}), c10::Error);
  EXPECT_THROW(call("opc_C::rotary_embedding", {at::zeros({3}, at::kInt), q, c10::IValue(), 16, cache, true}), c10::Error);
}

// ---------------------------------------------------------------------- caches

TEST_F(Ports, ReshapeAndCacheFlashWritesOnlyValidSlots) {
  at::manual_seed(7);
  const int64_t blocks = 3, bs = 4, H = 2, hs = 8;
  for (const bool hnd : {false, true}) {
    // key_cache and value_cache as two views of one tensor; HND via a permuted allocation.
    at::Tensor kv = hnd ? at::full({blocks, 2, H, bs, hs}, -7.0).permute({0, 1, 3, 2, 4})
                        : at::full({blocks, 2, bs, H, hs}, -7.0);
    at::Tensor kc = kv.select(1, 0), vc = kv.select(1, 1);
    ASSERT_EQ(kc.stride(2) != hs, hnd);
    const at::Tensor key = at::randn({5, H, hs}), value = at::randn({5, H, hs});
    // Key is longer than slot_mapping (cudagraph padding): token 4 is never read.
    const at::Tensor slots = at::tensor(std::vector<int64_t>{5, -1, 0, 11});
    call("opc_C_cache_ops::reshape_and_cache_flash",
         {key, value, kc, vc, slots, std::string("auto"), at::ones({1}), at::ones({1})});
    std::vector<bool> written(blocks * bs, false);
    const std::vector<std::pair<int64_t, int64_t>> valid = {{0, 5}, {2, 0}, {3, 11}};
    for (const auto& [tok, slot] : valid) {
      EXPECT_TRUE(at::equal(kc[slot / bs][slot % bs], key[tok])) << "key tok " << tok;
      EXPECT_TRUE(at::equal(vc[slot / bs][slot % bs], value[tok])) << "value tok " << tok;
      written[slot] = true;
    }
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t o = 0; o < bs; ++o)
        if (!written[b * bs + o]) {
          EXPECT_TRUE((kc[b][o] == -7).all().item<bool>()) << "key slot " << b * bs + o;
          EXPECT_TRUE((vc[b][o] == -7).all().item<bool>()) << "value slot " << b * bs + o;
        }
  }
}

TEST_F(Ports, ReshapeAndCacheFlashChecksAndDtypes) {
  at::Tensor kc = at::zeros({2, 4, 2, 8}), vc = at::zeros({2, 4, 2, 8});
  const at::Tensor key = at::randn({2, 2, 8}), slots = at::tensor(std::vector<int64_t>{0, 1});
  const at::Tensor one = at::ones({1});
  EXPECT_THROW(call("opc_C_cache_ops::reshape_and_cache_flash", {key, key, kc, vc, slots, std::string("fp8"), one, one}), c10::Error);
  try {
    call("opc_C_cache_ops::reshape_and_cache_flash", {key, key, kc, vc, slots, std::string("bogus"), one, one});
    ADD_FAILURE() << "an unknown kv_cache_dtype must fail";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Unsupported data type of kv cache"), std::string::npos);
  }
  // The one upstream check: equal block strides.
  at::Tensor vc_bad = at::zeros({2, 5, 2, 8}).narrow(1, 0, 4);
  EXPECT_THROW(call("opc_C_cache_ops::reshape_and_cache_flash", {key, key, kc, vc_bad, slots, std::string("auto"), one, one}), c10::Error);
  // A slot past the cache raises instead of writing out of bounds.
  EXPECT_THROW(call("opc_C_cache_ops::reshape_and_cache_flash", {key, key, kc, vc, at::tensor(std::vector<int64_t>{0, 8}), std::string("auto"), one, one}), c10::Error);
  // "auto" copies bits: bf16 key into a bf16 cache round-trips exactly.
  at::Tensor kb = at::zeros({2, 4, 2, 8}, at::kBFloat16), vb = at::zeros_like(kb);
  const at::Tensor keyb = key.to(at::kBFloat16);
  call("opc_C_cache_ops::reshape_and_cache_flash", {keyb, keyb, kb, vb, slots, std::string("auto"), one, one});
  EXPECT_TRUE(at::equal(kb[0][1], keyb[1]));
}

TEST_F(Ports, ConcatAndCacheMlaWritesConcatenationFromStridedViews) {
  at::manual_seed(8);
  const int64_t blocks = 2, bs = 4, rank = 8, pe = 4;
  at::Tensor cache = at::full({blocks, bs, rank + pe}, 3.5);
  const at::Tensor kv_big = at::randn({3, rank + 2}), pe_big = at::randn({3, pe + 3});
  const at::Tensor kv_c = kv_big.narrow(1, 0, rank), k_pe = pe_big.narrow(1, 2, pe);
  const at::Tensor slots = at::tensor(std::vector<int64_t>{3, -1, 6});
  call("opc_C_cache_ops::concat_and_cache_mla", {kv_c, k_pe, cache, slots, std::string("auto"), at::ones({1})});
  const at::Tensor flat = cache.view({blocks * bs, rank + pe});
  EXPECT_TRUE(at::equal(flat[3], at::cat({kv_c[0], k_pe[0]})));
  EXPECT_TRUE(at::equal(flat[6], at::cat({kv_c[2], k_pe[2]})));
  for (int64_t s = 0; s < blocks * bs; ++s)
    if (s != 3 && s != 6) {
      EXPECT_TRUE((flat[s] == 3.5).all().item<bool>()) << "slot " << s;
    }
  EXPECT_THROW(call("opc_C_cache_ops::concat_and_cache_mla", {kv_c, k_pe, at::zeros({2, 4, 11}), slots, std::string("auto"), at::ones({1})}), c10::Error);
  EXPECT_THROW(call("opc_C_cache_ops::concat_and_cache_mla", {kv_c, k_pe, cache, slots, std::string("fp8_ds_mla"), at::ones({1})}), c10::Error);
}

// ---------------------------------------------------------------------- fp8 quant

at::Tensor fp8_bits(const at::Tensor& t) { return t.view(at::kByte); }

TEST_F(Ports, StaticFp8QuantMatchesReferenceAndLeavesPaddingRows) {
  at::manual_seed(9);
  for (const auto t : kFloatTypes) {
    const at::Tensor in = randn({4, 33}, t);
    const at::Tensor scale = at::full({1}, 0.01f);
    at::Tensor got = at::empty({6, 33}, at::kFloat8_e4m3fn);
    fp8_bits(got).fill_(0x11);
    at::Tensor want = got.clone();
    call("opc_C::static_scaled_fp8_quant", {got, in, scale});
    call("opc_ref::static_scaled_fp8_quant", {want, in, scale});
    // Reciprocal-multiply vs divide may differ by one fp8 step at a rounding tie.
    expect_close(got.narrow(0, 0, 4), want.narrow(0, 0, 4), 2e-3, 0.13, "static fp8");
    EXPECT_TRUE((fp8_bits(got.narrow(0, 4, 2)) == 0x11).all().item<bool>()) << "padding rows";
    EXPECT_TRUE((got.to(at::kFloat).abs() <= 448).all().item<bool>());
  }
  // NaN input: fmin/fmax drop NaN, so it quantises to +448 (the reference would give NaN).
  at::Tensor got = at::empty({1, 4}, at::kFloat8_e4m3fn);
  call("opc_C::static_scaled_fp8_quant", {got, at::tensor({NAN, 1.f, -1e9f, 1e9f}).view({1, 4}), at::ones({1})});
  EXPECT_EQ(got.to(at::kFloat)[0][0].item<float>(), 448.f);
  EXPECT_EQ(got.to(at::kFloat)[0][2].item<float>(), -448.f);
  EXPECT_EQ(got.to(at::kFloat)[0][3].item<float>(), 448.f);
  // Contiguity checks; num_tokens 0 is a no-op.
  EXPECT_THROW(call("opc_C::static_scaled_fp8_quant", {got, at::randn({4, 2}).t(), at::ones({1})}), c10::Error);
  at::Tensor none = at::empty({0, 8}, at::kFloat8_e4m3fn);
  EXPECT_NO_THROW(call("opc_C::static_scaled_fp8_quant", {none, at::empty({0, 8}), at::ones({1})}));
  EXPECT_THROW(call("opc_C::static_scaled_fp8_quant", {at::empty({1, 4}), at::randn({1, 4}), at::ones({1})}), c10::Error);
}

TEST_F(Ports, DynamicFp8QuantIsAReadModifyWriteMaxIntoScale) {
  at::manual_seed(10);
  const at::Tensor in = at::randn({5, 17}) * 3;
  const float amax = in.abs().max().item<float>();
  struct Case {
    float init, expect_scale;
  };
  for (const Case c : {Case{0.f, amax / 448.f}, Case{10.f, 10.f}, Case{-1.f, amax / 448.f}}) {
    at::Tensor scale = at::full({1}, c.init), scale_r = scale.clone();
    at::Tensor got = at::empty({5, 17}, at::kFloat8_e4m3fn), want = got.clone();
    call("opc_C::dynamic_scaled_fp8_quant", {got, in, scale});
    call("opc_ref::dynamic_scaled_fp8_quant", {want, in, scale_r});
    EXPECT_FLOAT_EQ(scale.item<float>(), c.expect_scale) << "initial " << c.init;
    EXPECT_FLOAT_EQ(scale.item<float>(), scale_r.item<float>());
    expect_close(got, want, 2e-3, 0.13, "dynamic fp8, initial scale " + std::to_string(c.init));
  }
  // NaN inputs do not reach the scale (fmaxf) and quantise to 448.
  at::Tensor scale = at::zeros({1});
  at::Tensor got = at::empty({1, 3}, at::kFloat8_e4m3fn);
  call("opc_C::dynamic_scaled_fp8_quant", {got, at::tensor({NAN, 2.f, -4.f}).view({1, 3}), scale});
  EXPECT_FLOAT_EQ(scale.item<float>(), 4.f / 448.f);
  EXPECT_EQ(got.to(at::kFloat)[0][0].item<float>(), 448.f);
  EXPECT_EQ(got.to(at::kFloat)[0][2].item<float>(), -448.f);
  // num_tokens 0: nothing launched, the scale is left alone.
  at::Tensor s0 = at::full({1}, 0.25f);
  at::Tensor none = at::empty({0, 8}, at::kFloat8_e4m3fn);
  call("opc_C::dynamic_scaled_fp8_quant", {none, at::empty({0, 8}), s0});
  EXPECT_EQ(s0.item<float>(), 0.25f);
}

// ------------------------------------------------------------------ moe_align_block_size

struct Aligned {
  at::Tensor sorted, experts, post_pad;
};
Aligned align(const at::Tensor& ids, int64_t E, int64_t B, int32_t expert_fill = -5) {
  const int64_t numel = ids.numel();
  int64_t len = numel + E * (B - 1);
  if (numel < E) len = std::min(numel * B, len);  // the Python wrapper's sizing
  Aligned a{at::full({len}, numel, at::kInt), at::full({(len + B - 1) / B}, expert_fill, at::kInt),
            at::full({1}, -1, at::kInt)};
  call("opc_moe_C::moe_align_block_size", {ids, E, B, a.sorted, a.experts, a.post_pad});
  return a;
}

TEST_F(Ports, MoeAlignBlockSizeSmallBatchExample) {
  // vLLM's docstring example, with 5 experts (0 unused).
  const at::Tensor ids = at::tensor(std::vector<int32_t>{2, 3, 4, 1, 2, 4, 1, 3, 4, 1, 2, 3}).view({4, 3});
  const Aligned a = align(ids, 5, 4);
  EXPECT_EQ(a.post_pad.item<int32_t>(), 16);
  const std::vector<int32_t> want = {3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12};
  EXPECT_TRUE(at::equal(a.sorted.narrow(0, 0, 16), at::tensor(want)));
  EXPECT_TRUE((a.sorted.narrow(0, 16, a.sorted.numel() - 16) == 12).all().item<bool>())
      << "sentinel tail left as the caller filled it";
  EXPECT_TRUE(at::equal(a.experts.narrow(0, 0, 4), at::tensor(std::vector<int32_t>{1, 2, 3, 4})));
  EXPECT_TRUE((a.experts.narrow(0, 4, a.experts.numel() - 4) == -5).all().item<bool>())
      << "experts_ids past the used blocks are not written";
}

TEST_F(Ports, MoeAlignBlockSizeSmallBatchOrderFollowsThreads) {
  // 40 ids, all expert 0, 32 threads: thread t handles i = t, t + 32.
  const at::Tensor ids = at::zeros({40}, at::kLong);
  const Aligned a = align(ids, 2, 8);
  EXPECT_EQ(a.post_pad.item<int32_t>(), 40);
  std::vector<int32_t> want;
  for (int32_t t = 0; t < 32; ++t) {
    want.push_back(t);
    if (t + 32 < 40) want.push_back(t + 32);
  }
  EXPECT_TRUE(at::equal(a.sorted.narrow(0, 0, 40), at::tensor(want)));
  // Fewer ids than experts: the wrapper sizes the buffer numel * B, and every run fits.
  const Aligned b = align(at::tensor(std::vector<int32_t>{5, 1, 5}), 8, 16);
  EXPECT_EQ(b.sorted.numel(), 48);
  EXPECT_EQ(b.post_pad.item<int32_t>(), 32);
  EXPECT_TRUE(at::equal(b.sorted.narrow(0, 0, 2), at::tensor(std::vector<int32_t>{1, 3})));
  EXPECT_TRUE(at::equal(b.sorted.narrow(0, 16, 3), at::tensor(std::vector<int32_t>{0, 2, 3})));
  EXPECT_TRUE(at::equal(b.experts.narrow(0, 0, 2), at::tensor(std::vector<int32_t>{1, 5})));
}

TEST_F(Ports, MoeAlignBlockSizeGeneralPathGroupsAndPads) {
  at::manual_seed(11);
  const int64_t E = 70, B = 16;
  const at::Tensor ids = at::randint(0, E + 5, {1100}, at::kInt);  // ids >= E are skipped
  const Aligned a = align(ids, E, B);
  const int64_t numel = ids.numel();
  int64_t pos = 0;
  const auto idv = ids.accessor<int32_t, 1>();
  const auto sv = a.sorted.accessor<int32_t, 1>();
  const auto ev = a.experts.accessor<int32_t, 1>();
  for (int64_t e = 0; e < E; ++e) {
    std::vector<int32_t> mine;
    for (int64_t i = 0; i < numel; ++i)
      if (idv[i] == e) mine.push_back(static_cast<int32_t>(i));
    const int64_t run = (static_cast<int64_t>(mine.size()) + B - 1) / B * B;
    for (int64_t j = 0; j < run; ++j)
      ASSERT_EQ(sv[pos + j], j < static_cast<int64_t>(mine.size()) ? mine[j] : numel)
          << "expert " << e << " slot " << j;
    for (int64_t j = 0; j < run; j += B) ASSERT_EQ(ev[(pos + j) / B], e);
    pos += run;
  }
  EXPECT_EQ(a.post_pad.item<int32_t>(), pos);
  EXPECT_TRUE((a.sorted.narrow(0, pos, a.sorted.numel() - pos) == numel).all().item<bool>());
  // round_up(E, 32) must stay below 1024.
  EXPECT_THROW(align(at::zeros({4}, at::kInt), 1000, 16), c10::Error);
}

// ----------------------------------------------------------------------- topk_softmax

TEST_F(Ports, TopkSoftmaxMatchesReferenceOnFusedAndFallbackPaths) {
  at::manual_seed(12);
  // 8, 64, 192: fused warp kernel; 6, 300: moeSoftmax + moeTopK.
  for (const int64_t E : {int64_t{8}, int64_t{64}, int64_t{192}, int64_t{6}, int64_t{300}}) {
    for (const bool renorm : {false, true}) {
      for (const auto it : {at::kInt, at::kLong}) {
        const int64_t T = 7, k = 3;
        const at::Tensor gating = at::randn({T, E}) * 2;
        at::Tensor w = at::empty({T, k}), i = at::empty({T, k}, it), src = at::empty({T, k}, at::kInt);
        at::Tensor wr = w.clone(), ir = i.clone(), srcr = src.clone();
        call("opc_moe_C::topk_softmax", {w, i, src, gating, renorm});
        call("opc_ref::topk_softmax", {wr, ir, srcr, gating, renorm});
        const std::string what = "E " + std::to_string(E) + (renorm ? " renorm" : "");
        expect_close(w, wr, 1e-6, 1e-5, what);
        EXPECT_TRUE(at::equal(i, ir)) << what;
        EXPECT_TRUE(at::equal(src, srcr)) << what;
      }
    }
  }
  // fp16 gating is widened on load; num_tokens 0 is a no-op.
  const at::Tensor g16 = at::randn({3, 16}).to(at::kHalf);
  at::Tensor w = at::empty({3, 2}), i = at::empty({3, 2}, at::kInt), s = at::empty({3, 2}, at::kInt);
  at::Tensor wr = w.clone(), ir = i.clone(), sr = s.clone();
  call("opc_moe_C::topk_softmax", {w, i, s, g16, true});
  call("opc_ref::topk_softmax", {wr, ir, sr, g16, true});
  expect_close(w, wr, 1e-6, 1e-5, "fp16 gating");
  at::Tensor w0 = at::empty({0, 2}), i0 = at::empty({0, 2}, at::kInt), s0 = at::empty({0, 2}, at::kInt);
  EXPECT_NO_THROW(call("opc_moe_C::topk_softmax", {w0, i0, s0, at::empty({0, 16}), false}));
}

TEST_F(Ports, TopkSoftmaxNanRowsGiveDuplicateExpertZero) {
  // Fused kernel (8 experts): expert 0 every round, weights NaN then -10000.
  // moeTopK (6 experts): expert 0 every round, weights NaN then the -1 seed.
  for (const auto& [E, second] : std::vector<std::pair<int64_t, float>>{{8, -10000.f}, {6, -1.f}}) {
    for (const bool renorm : {false, true}) {
      at::Tensor gating = at::randn({2, E});
      gating[1].fill_(NAN);
      at::Tensor w = at::empty({2, 3}), i = at::empty({2, 3}, at::kInt), s = at::empty({2, 3}, at::kInt);
      call("opc_moe_C::topk_softmax", {w, i, s, gating, renorm});
      EXPECT_TRUE(at::equal(i[1], at::zeros({3}, at::kInt))) << "E " << E << ": " << i[1];
      EXPECT_TRUE(std::isnan(w[1][0].item<float>()));
      EXPECT_EQ(w[1][1].item<float>(), second) << "E " << E;
      EXPECT_EQ(w[1][2].item<float>(), second) << "E " << E;
      // The healthy row is unaffected: distinct experts, weights summing to <= 1.
      EXPECT_EQ(std::get<0>(at::_unique(i[0])).numel(), 3);
      if (renorm) {
        EXPECT_NEAR(w[0].sum().item<float>(), 1.f, 1e-5);
      }
    }
  }
}

// ------------------------------------------------------ ports of vLLM's Python custom ops

std::vector<c10::IValue> call_ret(const std::string& name, const std::string& overload,
                                  std::vector<c10::IValue> stack) {
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str());
  at::AutoDispatchBelowAutograd guard;
  op.callBoxed(stack);
  return stack;
}

bool arg_is_write(const std::string& name, const std::string& overload, size_t i) {
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str());
  const auto* info = op.schema().arguments().at(i).alias_info();
  return info != nullptr && info->isWrite();
}

// Causal single-sequence attention of the first n rows, [n, H, Dv] float32.
at::Tensor attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               int64_t n) {
  const int64_t H = q.size(1), Hkv = k.size(1), D = q.size(2);
  const at::Tensor qf = q.narrow(0, 0, n).to(at::kFloat).transpose(0, 1);  // [H, n, D]
  const at::Tensor kf = k.narrow(0, 0, n).to(at::kFloat).repeat_interleave(H / Hkv, 1).transpose(0, 1);
  const at::Tensor vf = v.narrow(0, 0, n).to(at::kFloat).repeat_interleave(H / Hkv, 1).transpose(0, 1);
  at::Tensor s = at::matmul(qf, kf.transpose(1, 2)) / std::sqrt(static_cast<double>(D));
  const at::Tensor mask = at::ones({n, n}, at::kBool).triu(1);
  s = s.masked_fill(mask, -INFINITY);
  return at::matmul(at::softmax(s, -1), vf).transpose(0, 1).contiguous();  // [n, H, Dv]
}

struct AttnCase {
  at::Tensor q, k, v;
};
AttnCase attn_case(int64_t T, int64_t H, int64_t Hkv, int64_t D, at::ScalarType t = at::kFloat) {
  return {randn({T, H, D}, t), randn({T, Hkv, D}, t), randn({T, Hkv, D}, t)};
}

at::Tensor run_attention(const std::string& op, const AttnCase& c, int64_t n, int64_t out_rows,
                         const c10::IValue& scale = c10::IValue()) {
  opc::sim::set_int("num_actual_tokens", n);
  at::Tensor out = at::full({out_rows, c.q.size(1), c.v.size(2)}, 7.0, c.q.options());
  call(op, {c.q, c.k, c.v, out, std::string("model.layers.0.self_attn.attn"), scale});
  return out;
}

TEST_F(Ports, UnifiedAttentionWritesTheRealRowsOnly) {
  at::manual_seed(21);
  EXPECT_TRUE(arg_is_write("opc_vllm::unified_attention_with_output", "", 3));
  for (const auto t : kFloatTypes) {
    const Tol tol = tol_for(t);
    const AttnCase c = attn_case(7, 4, 2, 8, t);  // GQA: 2 query heads per kv head
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{4}, int64_t{7}}) {
      const at::Tensor out = run_attention("opc_vllm::unified_attention_with_output", c, n, 7);
      expect_close(out.narrow(0, 0, n), attention_reference(c.q, c.k, c.v, n), tol.atol, tol.rtol,
                   "attention n " + std::to_string(n));
      EXPECT_TRUE((out.narrow(0, n, 7 - n) == 7).all().item<bool>()) << "padding rows written";
    }
  }
  // Strided views (rows of a wider qkv buffer) are honoured.
  const at::Tensor qkv = at::randn({5, 3, 2, 8});
  const AttnCase s{qkv.select(1, 0), qkv.select(1, 1), qkv.select(1, 2)};
  const at::Tensor out = run_attention("opc_vllm::unified_attention_with_output", s, 5, 5);
  expect_close(out, attention_reference(s.q, s.k, s.v, 5), 1e-5, 1e-5, "strided qkv");
  // num_actual_tokens beyond the tensors is refused.
  EXPECT_THROW(run_attention("opc_vllm::unified_attention_with_output", s, 6, 5), c10::Error);
}

TEST_F(Ports, UnifiedAttentionStaticFp8OutputQuant) {
  at::manual_seed(22);
  const AttnCase c = attn_case(6, 2, 2, 16);
  const float scale = 0.01f;
  const at::Tensor out =
      run_attention("opc_vllm::unified_attention_with_output", c, 4, 6, at::tensor({scale}));
  const at::Tensor real = out.narrow(0, 0, 4);
  // Every value is an fp8 e4m3 value times the scale: quantising again changes nothing...
  const at::Tensor again = (real * (1.0f / scale)).to(at::kFloat8_e4m3fn).to(at::kFloat) * scale;
  EXPECT_TRUE(at::equal(real, again));
  // ... close to the attention result (e4m3: 3 mantissa bits), padding untouched.
  expect_close(real, attention_reference(c.q, c.k, c.v, 4), 1e-3, 0.07, "fp8 output");
  EXPECT_FALSE(at::equal(real, attention_reference(c.q, c.k, c.v, 4)));
  EXPECT_TRUE((out.narrow(0, 4, 2) == 7).all().item<bool>());
}

TEST_F(Ports, UnifiedAttentionFixedIgnoresPaddingContents) {
  at::manual_seed(23);
  AttnCase c = attn_case(8, 2, 2, 8);
  const at::Tensor base = run_attention("opc_vllm::unified_attention_with_output", c, 5, 8);
  c.q.narrow(0, 5, 3).fill_(NAN);
  c.k.narrow(0, 5, 3).fill_(1e4);
  c.v.narrow(0, 5, 3).fill_(NAN);
  const at::Tensor garbage = run_attention("opc_vllm::unified_attention_with_output", c, 5, 8);
  EXPECT_TRUE(at::equal(base, garbage));
}

TEST_F(Ports, UnifiedAttentionPhantomNeverWritesOutput) {
  at::manual_seed(24);
  const AttnCase c = attn_case(6, 2, 1, 8);
  for (const c10::IValue& scale : {c10::IValue(), c10::IValue(at::tensor({0.05f}))}) {
    const at::Tensor out =
        run_attention("opc_regress::unified_attention_with_output_phantom", c, 4, 6, scale);
    EXPECT_TRUE((out == 7).all().item<bool>());
  }
}

TEST_F(Ports, UnifiedAttentionNanPaddingLeaksIntoRealRows) {
  at::manual_seed(25);
  const std::string bug = "opc_regress::unified_attention_with_output_nan_padding";
  AttnCase c = attn_case(8, 2, 2, 8);
  const int64_t n = 5;
  // Padding query rows NaN: the padding outputs are NaN, the per-tensor amax is NaN, and so
  // is every real row after the quant.
  c.q.narrow(0, n, 3).fill_(NAN);
  const at::Tensor with_nan = run_attention(bug, c, n, 8);
  EXPECT_TRUE(at::isnan(with_nan.narrow(0, 0, n)).all().item<bool>());
  // Large finite padding query rows instead: the real rows are finite again.
  c.q.narrow(0, n, 3).fill_(1e4);
  const at::Tensor with_big_q = run_attention(bug, c, n, 8);
  EXPECT_FALSE(at::isnan(with_big_q.narrow(0, 0, n)).any().item<bool>());
  EXPECT_FALSE(at::equal(with_nan.narrow(0, 0, n), with_big_q.narrow(0, 0, n)));
  // Padding rows are written (the fixed op never writes them).
  EXPECT_FALSE((with_big_q.narrow(0, n, 3) == 7).any().item<bool>());
  // Large padding values raise the amax: the real rows are quantised more coarsely (their
  // codes fall into e4m3's subnormals).
  c.v.narrow(0, n, 3).fill_(1e6);
  const at::Tensor with_big_v = run_attention(bug, c, n, 8);
  EXPECT_FALSE(at::equal(with_big_q.narrow(0, 0, n), with_big_v.narrow(0, 0, n)));
  const at::Tensor ref = attention_reference(c.q, c.k, c.v, n);
  EXPECT_GT((with_big_v.narrow(0, 0, n) - ref).abs().max().item<float>(),
            (with_big_q.narrow(0, 0, n) - ref).abs().max().item<float>());
  // With a static output_scale the real rows are right, but the padding rows are written.
  const at::Tensor stat = run_attention(bug, c, n, 8, at::tensor({0.01f}));
  const at::Tensor fixed =
      run_attention("opc_vllm::unified_attention_with_output", c, n, 8, at::tensor({0.01f}));
  EXPECT_TRUE(at::equal(stat.narrow(0, 0, n), fixed.narrow(0, 0, n)));
  EXPECT_FALSE((stat.narrow(0, n, 3) == 7).any().item<bool>());
}

TEST_F(Ports, UnifiedAttentionMetaChecksOnly) {
  const auto meta = at::TensorOptions().device(at::kMeta);
  for (const char* op : {"opc_vllm::unified_attention_with_output",
                         "opc_regress::unified_attention_with_output_phantom",
                         "opc_regress::unified_attention_with_output_nan_padding"}) {
    EXPECT_NO_THROW(call(op, {at::empty({4, 2, 8}, meta), at::empty({4, 1, 8}, meta),
                              at::empty({4, 1, 8}, meta), at::empty({4, 2, 8}, meta),
                              std::string("l"), c10::IValue()}))
        << op;
    EXPECT_THROW(call(op, {at::empty({4, 2, 8}, meta), at::empty({4, 1, 8}, meta),
                           at::empty({4, 1, 8}, meta), at::empty({4, 3, 8}, meta),
                           std::string("l"), c10::IValue()}),
                 c10::Error)
        << op;
  }
}

// ------------------------------------------------------------- sparse_attn_indexer

at::Tensor indexer_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& w,
                             int64_t topk, int64_t cols) {
  const at::Tensor dots = at::relu(at::einsum("thd,nd->thn", {q, k}));
  const at::Tensor logits = (dots * w.unsqueeze(-1)).sum(1);  // [T, N]
  const at::Tensor idx = std::get<1>(logits.sort(/*stable=*/true, -1, /*descending=*/true));
  at::Tensor want = at::full({q.size(0), cols}, -1, at::kInt);
  const int64_t kk = std::min(topk, k.size(0));
  want.narrow(1, 0, kk).copy_(idx.narrow(1, 0, kk));
  return want;
}

TEST_F(Ports, SparseAttnIndexerFixedReturnsAFreshCopy) {
  at::manual_seed(31);
  EXPECT_TRUE(arg_is_write("opc_vllm::sparse_attn_indexer", "", 3));
  for (const auto& [N, topk] : std::vector<std::pair<int64_t, int64_t>>{{9, 4}, {3, 5}, {6, 0}}) {
    const at::Tensor q = at::randn({3, 2, 4}), k = at::randn({N, 4}), w = at::randn({3, 2});
    at::Tensor buffer = at::full({5, 6}, 99, at::kInt);
    const auto out = call_ret("opc_vllm::sparse_attn_indexer", "", {q, k, w, buffer, topk});
    const at::Tensor ret = out.at(0).toTensor();
    const at::Tensor want = indexer_reference(q, k, w, topk, 6);
    EXPECT_TRUE(at::equal(buffer.narrow(0, 0, 3), want)) << buffer << want;
    EXPECT_TRUE((buffer.narrow(0, 3, 2) == 99).all().item<bool>()) << "rows past num_tokens";
    EXPECT_TRUE(at::equal(ret, want));
    EXPECT_FALSE(ret.is_alias_of(buffer));
    EXPECT_NE(ret.data_ptr(), buffer.data_ptr());
  }
  // Ties go to the lower key index.
  const at::Tensor q = at::ones({1, 1, 2});
  const at::Tensor k = at::tensor({1.f, 0.f, 2.f, 0.f, 1.f, 0.f, 2.f, 0.f}).view({4, 2});
  at::Tensor buffer = at::zeros({1, 4}, at::kInt);
  call("opc_vllm::sparse_attn_indexer", {q, k, at::ones({1, 1}), buffer, 3});
  EXPECT_TRUE(at::equal(buffer, at::tensor(std::vector<int32_t>{1, 3, 0, -1}).view({1, 4})));
  // Port checks: int32 buffer, topk within its columns, enough rows.
  EXPECT_THROW(call("opc_vllm::sparse_attn_indexer",
                    {q, k, at::ones({1, 1}), at::zeros({1, 4}, at::kLong), 3}),
               c10::Error);
  EXPECT_THROW(call("opc_vllm::sparse_attn_indexer", {q, k, at::ones({1, 1}), buffer, 5}),
               c10::Error);
  EXPECT_THROW(call("opc_vllm::sparse_attn_indexer",
                    {at::ones({2, 1, 2}), k, at::ones({2, 1}), buffer, 2}),
               c10::Error);
}

TEST_F(Ports, SparseAttnIndexerRegressionReturnsTheBuffer) {
  at::manual_seed(32);
  const at::Tensor q = at::randn({3, 2, 4}), k = at::randn({7, 4}), w = at::randn({3, 2});
  at::Tensor buffer = at::full({4, 5}, 99, at::kInt);
  const auto out =
      call_ret("opc_regress::sparse_attn_indexer_returns_buffer", "", {q, k, w, buffer, 3});
  const at::Tensor ret = out.at(0).toTensor();
  EXPECT_TRUE(ret.is_same(buffer));
  EXPECT_TRUE(at::equal(buffer.narrow(0, 0, 3), indexer_reference(q, k, w, 3, 5)));
  EXPECT_TRUE((buffer.narrow(0, 3, 1) == 99).all().item<bool>());
  // Meta: fixed gives a fresh [T, C]; the regression's fake returns the buffer itself.
  const auto meta = at::TensorOptions().device(at::kMeta);
  at::Tensor mbuf = at::empty({4, 5}, meta.dtype(at::kInt));
  const std::vector<c10::IValue> margs = {at::empty({3, 2, 4}, meta), at::empty({7, 4}, meta),
                                          at::empty({3, 2}, meta), mbuf, 3};
  const at::Tensor fresh = call_ret("opc_vllm::sparse_attn_indexer", "", margs).at(0).toTensor();
  EXPECT_EQ(fresh.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(fresh.scalar_type(), at::kInt);
  EXPECT_FALSE(fresh.is_same(mbuf));
  const at::Tensor same =
      call_ret("opc_regress::sparse_attn_indexer_returns_buffer", "", margs).at(0).toTensor();
  EXPECT_TRUE(same.is_same(mbuf));
}

// ------------------------------------------------------------------ weak_ref_tensor

TEST_F(Ports, WeakRefTensorIsANonOwningAlias) {
  const at::Tensor base = at::randn({4, 6});
  const at::Tensor input = base.t().narrow(0, 1, 3);  // strided, offset
  const at::Tensor ref = call_ret("opc_C::weak_ref_tensor", "", {input}).at(0).toTensor();
  EXPECT_EQ(ref.data_ptr(), input.data_ptr());
  EXPECT_EQ(ref.sizes(), input.sizes());
  EXPECT_EQ(ref.strides(), input.strides());
  EXPECT_FALSE(ref.storage().is_alias_of(input.storage())) << "a new, non-owning storage";
  input.fill_(3.0);
  EXPECT_TRUE((ref == 3).all().item<bool>()) << "same bytes";
  const auto meta = at::TensorOptions().device(at::kMeta);
  const at::Tensor m = at::empty({2, 3}, meta);
  const at::Tensor mt = m.t();
  const at::Tensor mref = call_ret("opc_C::weak_ref_tensor", "", {mt}).at(0).toTensor();
  EXPECT_EQ(mref.sizes(), mt.sizes());
  EXPECT_EQ(mref.strides(), mt.strides());
  EXPECT_EQ(mref.storage_offset(), 0);
}

// ---------------------------------------------------------------------- moe_forward

at::Tensor moe_reference(const at::Tensor& x, const at::Tensor& logits, const at::Tensor& w,
                         int64_t top_k) {
  const at::Tensor p = at::softmax(logits.to(at::kFloat), -1);
  const auto [pw, pi] = p.topk(top_k, -1);
  at::Tensor y = at::zeros({x.size(0), x.size(1)});
  for (int64_t t = 0; t < x.size(0); ++t)
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = pi[t][j].item<int64_t>();
      y[t] += pw[t][j] * at::matmul(w[e].to(at::kFloat), x[t].to(at::kFloat));
    }
  return y;
}

TEST_F(Ports, MoeForwardWritesHiddenStatesAndReturnsACopy) {
  at::manual_seed(41);
  EXPECT_TRUE(arg_is_write("opc_vllm::moe_forward", "", 0));
  EXPECT_FALSE(arg_is_write("opc_regress::moe_forward_pr20152", "", 0));
  for (const char* op : {"opc_vllm::moe_forward", "opc_regress::moe_forward_pr20152"}) {
    const at::Tensor x0 = at::randn({5, 8}), logits = at::randn({5, 4}), w = at::randn({4, 8, 8});
    const at::Tensor want = moe_reference(x0, logits, w, 2);
    at::Tensor x = x0.clone();
    const at::Tensor ret = call_ret(op, "", {x, logits, w, 2}).at(0).toTensor();
    expect_close(x, want, 1e-4, 1e-4, std::string(op) + " hidden_states written in place");
    expect_close(ret, want, 1e-4, 1e-4, std::string(op) + " return");
    EXPECT_FALSE(ret.is_alias_of(x)) << op;
    EXPECT_THROW(call(op, {x, logits, w, 5}), c10::Error) << op;
    // Meta: empty_like(hidden_states), as the fake.
    const auto meta = at::TensorOptions().device(at::kMeta);
    const at::Tensor mx = at::empty({5, 8}, meta);
    const at::Tensor mret = call_ret(op, "", {mx, at::empty({5, 4}, meta), at::empty({4, 8, 8}, meta), 2})
                                .at(0)
                                .toTensor();
    EXPECT_EQ(mret.sizes(), mx.sizes());
    EXPECT_FALSE(mret.is_alias_of(mx));
  }
}

// ------------------------------------------------------ vLLM IR fused_add_rms_norm

std::pair<at::Tensor, at::Tensor> ir_reference(const at::Tensor& x, const at::Tensor& r,
                                               const c10::optional<at::Tensor>& w, double eps,
                                               c10::optional<int64_t> vs) {
  const at::Tensor z = x.to(at::kDouble) + r.to(at::kDouble);
  const at::Tensor zv = vs ? z.narrow(-1, 0, *vs) : z;
  at::Tensor y = z / (zv.pow(2).mean(-1, true) + eps).sqrt();
  if (w) y = y * w->to(at::kDouble);
  return {y.to(x.scalar_type()), z.to(x.scalar_type())};
}

TEST_F(Ports, IrFusedAddRmsNormDefaultIsFunctionalMaybeInplaceWrites) {
  at::manual_seed(51);
  const std::string op = "opc_vllm_ir::fused_add_rms_norm";
  EXPECT_FALSE(arg_is_write(op, "", 0));
  EXPECT_FALSE(arg_is_write(op, "", 1));
  EXPECT_TRUE(arg_is_write(op, "maybe_inplace", 0));
  EXPECT_TRUE(arg_is_write(op, "maybe_inplace", 1));
  for (const auto t : kFloatTypes) {
    const Tol tol = tol_for(t);
    struct Variant {
      c10::optional<at::Tensor> w;
      c10::optional<int64_t> vs;
    };
    // weight in x's dtype; weight float32 for a narrower x (Gemma's weight + 1); no weight;
    // variance over the first 8 columns only.
    for (const Variant& v : std::vector<Variant>{{randn({16}, t), {}},
                                                 {at::randn({16}) + 1, {}},
                                                 {{}, {}},
                                                 {randn({16}, t), 8}}) {
      const at::Tensor x0 = randn({3, 16}, t), r0 = randn({3, 16}, t);
      const auto [want_y, want_r] = ir_reference(x0, r0, v.w, 1e-6, v.vs);
      const c10::IValue w = v.w ? c10::IValue(*v.w) : c10::IValue();
      const c10::IValue vs = v.vs ? c10::IValue(*v.vs) : c10::IValue();
      // Default overload: new tensors, inputs untouched.
      at::Tensor x = x0.clone(), r = r0.clone();
      auto out = call_ret(op, "", {x, r, w, 1e-6, vs});
      EXPECT_TRUE(at::equal(x, x0) && at::equal(r, r0)) << "default overload wrote an input";
      expect_close(out.at(0).toTensor(), want_y, tol.atol, tol.rtol, "ir default y");
      expect_close(out.at(1).toTensor(), want_r, tol.atol, tol.rtol, "ir default residual");
      EXPECT_FALSE(out.at(0).toTensor().is_alias_of(x));
      EXPECT_FALSE(out.at(1).toTensor().is_alias_of(r));
      // maybe_inplace: x and x_residual written and returned themselves.
      out = call_ret(op, "maybe_inplace", {x, r, w, 1e-6, vs});
      EXPECT_TRUE(out.at(0).toTensor().is_same(x));
      EXPECT_TRUE(out.at(1).toTensor().is_same(r));
      expect_close(x, want_y, tol.atol, tol.rtol, "ir maybe_inplace x");
      expect_close(r, want_r, tol.atol, tol.rtol, "ir maybe_inplace x_residual");
    }
  }
  // Meta: both overloads give fresh tensors (upstream's fakes are the native function).
  const auto meta = at::TensorOptions().device(at::kMeta);
  const at::Tensor mx = at::empty({3, 16}, meta), mr = at::empty({3, 16}, meta);
  for (const char* ov : {"", "maybe_inplace"}) {
    const auto out = call_ret(op, ov, {mx, mr, at::empty({16}, meta), 1e-6, c10::IValue()});
    EXPECT_EQ(out.at(0).toTensor().sizes(), mx.sizes());
    EXPECT_FALSE(out.at(0).toTensor().is_alias_of(mx)) << ov;
  }
}

TEST_F(Ports, IrFusedAddRmsNormRegressionWritesItsInputs) {
  at::manual_seed(52);
  const std::string op = "opc_regress::ir_fused_add_rms_norm_writes_input";
  EXPECT_FALSE(arg_is_write(op, "", 0));
  EXPECT_TRUE(arg_is_write(op, "maybe_inplace", 0));
  const at::Tensor x0 = at::randn({4, 8}), r0 = at::randn({4, 8}), w = at::randn({8});
  const auto [want_y, want_r] = ir_reference(x0, r0, w, 1e-5, {});
  at::Tensor x = x0.clone(), r = r0.clone();
  const auto out = call_ret(op, "", {x, r, w, 1e-5, c10::IValue()});
  EXPECT_FALSE(at::equal(x, x0));
  EXPECT_FALSE(at::equal(r, r0));
  expect_close(x, want_y, 1e-5, 1e-5, "regression wrote y into x");
  expect_close(r, want_r, 1e-5, 1e-5, "regression wrote the sum into x_residual");
  EXPECT_TRUE(out.at(0).toTensor().is_same(x));
}

}  // namespace
