"""python_state hooks for vLLM 0.32.0 CUDA contracts whose arguments are metadata a generator
cannot draw (values that must agree with each other and with other arguments' shapes).

cutlass_moe_mm_data (contracts/vllm-cuda/cutlass_moe_mm.yaml): the CUTLASS fp8 grouped GEMM
reads, per expert e, the start row expert_offsets[e] (int64 [E]) of its run of the permuted
activations, its problem size problem_sizes[e] (int32 [E, 3]) and the leading dimensions
a_strides / b_strides / c_strides (int64 [E]). vLLM computes them with
get_cutlass_moe_mm_problem_sizes_from_expert_offsets (fused_moe/experts/cutlass_moe.py:213-217:
[m_e, N, K], or [N, m_e, K] when the permuted rows number <= 64, the kernels' swap-AB
configurations, grouped_mm_c3x_sm90.cu:145-154, grouped_mm_c3x_sm100.cu:98) and fills the
strides with K (a, b) and N (c) (cutlass_moe.py:300-302, per GEMM). This hook splits the case's M rows
among its E experts at random cut points drawn from the case's seed (some experts empty), and
builds the same tensors.
"""

import torch


def _split_rows(case, experts: int, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each expert's first row and the row after its last: the case's rows split among its
    experts at cut points drawn from the case's seed (an expert may get none)."""
    gen = torch.Generator().manual_seed(case.seed % (2**63))
    cuts = torch.sort(torch.randint(0, rows + 1, (max(experts - 1, 0),), generator=gen)).values.to(torch.int64)
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), cuts])
    ends = torch.cat([cuts, torch.tensor([rows], dtype=torch.int64)])
    return starts, ends


def cutlass_moe_mm_data(case) -> dict:
    v = case.values
    e, m = v["experts"], v["rows"]
    n, k = 16 * v["nb"], 16 * v["kb"]
    device = case.args["a_tensors"].device
    starts, ends = _split_rows(case, e, m)
    counts = (ends - starts).to(torch.int32)
    swap_ab = m <= 64
    sizes = torch.empty((e, 3), dtype=torch.int32)
    if swap_ab:
        sizes[:, 0] = n
        sizes[:, 1] = counts
    else:
        sizes[:, 0] = counts
        sizes[:, 1] = n
    sizes[:, 2] = k
    return {
        "expert_offsets": starts.to(device),
        "problem_sizes": sizes.to(device),
        "a_strides": torch.full((e,), k, dtype=torch.int64).to(device),
        "b_strides": torch.full((e,), k, dtype=torch.int64).to(device),
        "c_strides": torch.full((e,), n, dtype=torch.int64).to(device),
    }


def fp4_group_mm_data(case) -> dict:
    """Metadata of the CUTLASS NVFP4 / MXFP4 grouped GEMMs (contracts/vllm-cuda/
    cutlass_fp4_group_mm.yaml, cutlass_mxfp4_group_mm.yaml), as get_cutlass_moe_mm_data
    leaves it for them (fused_moe/experts/cutlass_moe.py:608-620, :646-647): per expert e,
    problem_sizes[e] = [m_e, N, K] (no swap-AB: blockscale_offsets is given), expert_offsets
    the int32 prefix sums of m_e (the [E + 1] tensor less its last entry) and sf_offsets the
    prefix sums of m_e rounded up to 128 (compute_expert_blockscale_offsets), the rows of
    each expert's block scales in a_blockscale. The case's M rows are split among its E
    experts at cut points drawn from the case's seed."""
    v = case.values
    e, m = v["experts"], v["rows"]
    n, k = 128 * v["nb"], 128 * v["kb"]
    device = case.args["a"].device
    starts, ends = _split_rows(case, e, m)
    counts = ends - starts
    rounded = (counts + 127) // 128 * 128
    sf_starts = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(rounded, 0)[:-1]])
    sizes = torch.empty((e, 3), dtype=torch.int32)
    sizes[:, 0] = counts.to(torch.int32)
    sizes[:, 1] = n
    sizes[:, 2] = k
    return {
        "expert_offsets": starts.to(torch.int32).to(device),
        "sf_offsets": sf_starts.to(torch.int32).to(device),
        "problem_sizes": sizes.to(device),
    }
