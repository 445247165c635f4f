"""python_state hooks for contracts/vllm-cuda/moe_permute.yaml, moe_permute_with_scratch.yaml,
moe_prepare_scatter.yaml, masked_moe_activation.yaml and the four FP4 MoE experts
quantisation contracts (scaled_fp4_experts_quant.yaml, silu_and_mul_scaled_fp4_experts_quant.yaml,
mxfp4_experts_quant.yaml, silu_and_mul_mxfp4_experts_quant.yaml) (vLLM 0.32.0, CUDA).

The MoE permute ops sort the flat (token, k) routes by expert and use token_expert_indices
as the values of that sort: every value v becomes a write to inv_permuted_idx[v] (the
inverse map) and a read of input row v / topk. vLLM always passes the identity,
torch.arange(num_tokens * topk).view(num_tokens, topk)
(vllm/model_executor/layers/fused_moe/moe_permute_unpermute.py:202-204 without scratch,
:64-66 the scratch's arange sliced at :106 and :239-241). A generator cannot draw a
permutation (random ints repeat, and two blocks would race to write one inverse entry),
so this hook hands it in as ``{state: token_expert_indices}``.

The sort workspace of the scratch variants is a CUB radix-sort temporary whose size only
CUB knows: vLLM sizes it with _moe_C::moe_permute_sort_workspace_size(rows, n_expert) for
the largest batch the scratch has seen (moe_permute_unpermute.py:73-78). The hook asks the
same op for ``cap_rows`` rows (the case's dim: at least num_tokens * topk, as vLLM's
scratch grows to the largest batch), as an int8 tensor like vLLM's.
"""

import torch


def _device(case):
    return case.args["topk_ids"].device


def _indices(case) -> torch.Tensor:
    v = case.values
    n, tk = v["num_tokens"], v["tk"]
    return torch.arange(n * tk, dtype=torch.int32).view(n, tk).to(_device(case))


def _workspace(case) -> torch.Tensor:
    v = case.values
    rows = max(v["cap_rows"], v["num_tokens"] * v["tk"])
    size = 0
    # Without a GPU (fake mode only) CUB cannot be asked, and the fake never reads the
    # workspace: any size does.
    if torch.cuda.is_available():
        size = int(torch.ops._moe_C.moe_permute_sort_workspace_size(rows, v["ne"]))
    # CUB's own floor (getWorkspaceSize returns at least 1)
    size = max(size, 1)
    # zeroed (vLLM's is torch.empty): what CUB leaves in the bytes it does not use is then the
    # same from run to run, as the determinism clause compares
    return torch.zeros(size, dtype=torch.int8).to(_device(case))


def permute(case) -> dict:
    """_moe_C::moe_permute: the identity token_expert_indices."""
    return {"token_expert_indices": _indices(case)}


def permute_scratch(case) -> dict:
    """_moe_C::moe_permute_with_scratch and moe_prepare_scatter: the identity
    token_expert_indices and a sort workspace sized as vLLM's scratch sizes it."""
    return {"token_expert_indices": _indices(case), "sort_workspace": _workspace(case)}


# _C::masked_moe_activation's activation names (csrc/activation_kernels.cu:1133-1180), the
# gated ones (input 2 * d wide) first, then the `_no_mul` ones (input d wide), then one the
# kernel must refuse. The contract draws the index `act` (its input width follows it) and
# this hook hands the name in as ``{state: activation}`` (a str scalar drawn by the
# contract could not size the input).
MASKED_ACTIVATIONS = (
    "silu", "silu_with_clamp", "gelu", "gelu_tanh", "situ", "swigluoai",
    "swigluoai_uninterleave", "swiglustep",
    "silu_no_mul", "gelu_no_mul", "gelu_tanh_no_mul", "relu2_no_mul",
    "sigmoid",
)


def masked_activation(case) -> dict:
    return {"activation": MASKED_ACTIVATIONS[case.values["act"]]}


def experts_offsets(case) -> dict:
    """The FP4 MoE experts quantisation's two offset vectors, as vLLM's
    get_cutlass_moe_mm_data computes them (csrc/quantization/w8a8/cutlass/moe/moe_data.cu:
    75-83): input_offset_by_experts the experts' cumulative row counts (each expert's rows
    contiguous in the permuted input, m_topk in all), output_scale_offset_by_experts the
    same counts each rounded up to 128 (the swizzled scale layout's row tile). The one is
    derived from the other, which a generator cannot draw; the counts come from the case's
    seed (an expert with no rows, one with every row, and cut points anywhere)."""
    v = case.values
    e, m = v["experts"], v["m_topk"]
    gen = torch.Generator().manual_seed(case.seed % (2**63))
    kind = int(torch.randint(0, 4, (1,), generator=gen))
    if kind == 0 and e > 0:
        counts = [0] * e
        counts[int(torch.randint(0, e, (1,), generator=gen))] = m
    else:
        cuts = sorted(int(c) for c in torch.randint(0, m + 1, (e - 1,), generator=gen))
        bounds = [0] + cuts + [m]
        counts = [bounds[i + 1] - bounds[i] for i in range(e)]
    offsets, scale_offsets = [0], [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
        scale_offsets.append(scale_offsets[-1] + (c + 127) // 128 * 128)
    device = case.args["input"].device
    return {"input_offset_by_experts": torch.tensor(offsets, dtype=torch.int32).to(device),
            "output_scale_offset_by_experts":
                torch.tensor(scale_offsets, dtype=torch.int32).to(device)}
