"""python_state hook for contracts/vllm-cuda/moe_wna16_marlin_gemm.yaml (vLLM 0.32.0).

The Marlin MoE GEMM reads its routing as moe_align_block_size leaves it: sorted_token_ids
(the flat (token, k) indices grouped by expert, each expert's run padded to a multiple of
the block size with the sentinel M * top_k), expert_ids (the expert of each block) and
num_tokens_past_padded (the padded total). A generator cannot draw those (a permutation
grouped by expert), so this hook routes each token to top_k distinct experts, drawn from the
case's seed, and aligns them as vllm/model_executor/layers/fused_moe/moe_align_block_size.py
(:137-150) sizes the buffers: max_num_tokens_padded = M * top_k + E * (block - 1) (capped at
M * top_k * block when M * top_k < E), cdiv(that, block) expert ids.
"""

import torch


def moe_routing(case) -> dict:
    v = case.values
    m, top_k, e, block = v["num_tokens"], v["topk"], v["num_experts"], v["block"]
    device = case.args["a"].device
    gen = torch.Generator().manual_seed(case.seed % (2**63))
    topk_ids = torch.stack([torch.randperm(e, generator=gen)[:top_k] for _ in range(m)]) \
        if m > 0 else torch.empty(0, top_k, dtype=torch.long)
    flat = topk_ids.flatten()
    numel = flat.numel()
    max_padded = numel + e * (block - 1)
    if numel < e:
        max_padded = min(numel * block, max_padded)
    sentinel = numel
    sorted_ids = torch.full((max_padded,), sentinel, dtype=torch.int32)
    num_blocks = (max_padded + block - 1) // block
    expert_ids = torch.full((num_blocks,), -1, dtype=torch.int32)
    pos = 0
    for x in range(e):
        idx = (flat == x).nonzero().flatten().to(torch.int32)
        if idx.numel() == 0:
            continue
        padded = (idx.numel() + block - 1) // block * block
        sorted_ids[pos:pos + idx.numel()] = idx
        expert_ids[pos // block:(pos + padded) // block] = x
        pos += padded
    total = torch.tensor([pos], dtype=torch.int32)
    return {"sorted_token_ids": sorted_ids.to(device), "expert_ids": expert_ids.to(device),
            "num_tokens_past_padded": total.to(device)}
