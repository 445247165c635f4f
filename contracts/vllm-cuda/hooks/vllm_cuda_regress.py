"""A mistake planted in a copy of vLLM's scaled_fp4_quant fake, for ``opcontract check
--regressions`` on contracts/vllm-cuda/scaled_fp4_quant.yaml (vllm 0.32.0, CUDA build).

Imported as ``--import vllm_cuda_regress`` after vllm_cuda_platform and vllm._custom_ops. It
registers ``opc_regress_vllm_cuda::scaled_fp4_quant_padded_k``, with the schema of vLLM's
``_C::scaled_fp4_quant`` and no kernel (none runs without a GPU), whose fake is vLLM's own
(vllm/_custom_ops.py, ``_scaled_fp4_quant_fake``) but for one argument: it allocates through
vLLM's helper ``create_fp4_output_tensors`` with ``padded_n``, the K padding for CUTLASS that
vLLM's ``.out`` path asks for, where the functional kernel allocates ``n``
(csrc/quantization/fp4/nvfp4_quant_entry.cu). The helper's own docstring warns of it ("Must
match the C++ scaled_fp4_quant_func allocation exactly when ``padded_n`` is ``None``"): the
fake then predicts wider returns than the kernel makes whenever n % 64 != 0, and a compiled
graph plans with them. The contract's ``returns:`` catch it (``fake``).
"""

from torch.library import Library

from vllm._custom_ops import create_fp4_output_tensors
from vllm.utils.math_utils import round_up


def _padded_k_fake(input, input_scale, is_sf_swizzled_layout):
    n = input.shape[-1]
    m = input.numel() // n
    return create_fp4_output_tensors(m, n, input.device, is_sf_swizzled_layout,
                                     padded_n=round_up(n, 64))  # vLLM's fake: no padded_n


_lib = Library("opc_regress_vllm_cuda", "DEF")
_lib.define("scaled_fp4_quant_padded_k(Tensor input, Tensor input_scale, bool is_sf_swizzled_layout)"
            " -> (Tensor, Tensor)")
_lib._register_fake("scaled_fp4_quant_padded_k", _padded_k_fake)
