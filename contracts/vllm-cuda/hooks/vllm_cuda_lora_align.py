"""python_state hook for contracts/vllm-cuda/moe_lora_align_block_size.yaml (vLLM 0.32.0).

_moe_C::moe_lora_align_block_size launches one (or two) blocks per entry of lora_ids and
each works on the rows of its LoRA slot; vLLM hands it active_lora_ids
(vllm/lora/ops/triton_ops/lora_kernel_metadata.py:65,101,145): max_loras + 1 int32 entries,
the distinct LoRA slots of the batch in ascending order (-1 first when base-model tokens are
present), the rest -1. A generator cannot draw distinct values; two equal ids would send two
blocks into one slot's cumsum and rows. This hook draws such a list from the case's seed:
a subset of range(max_loras), ascending, -1 in front when the case's `base` is 1, padded
with -1.
"""

import torch


def lora_ids(case) -> dict:
    v = case.values
    max_loras = v["nloras"]
    gen = torch.Generator().manual_seed(case.seed % (2**63))
    keep = torch.rand(max_loras, generator=gen) < 0.7
    ids = [i for i in range(max_loras) if bool(keep[i])]
    if v["base"] == 1:
        ids = [-1] + ids
    ids = ids + [-1] * (max_loras + 1 - len(ids))
    device = case.args["topk_ids"].device
    return {"lora_ids": torch.tensor(ids, dtype=torch.int32).to(device)}
