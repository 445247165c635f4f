"""python_state hook for contracts/vllm-cuda/moe_wna16_gemm.yaml (vLLM 0.32.0).

moe_wna16_gemm reads the same routing as the Marlin MoE GEMM (moe_align_block_size's
sorted_token_ids, expert_ids, num_tokens_post_pad, aligned to BLOCK_SIZE_M): this reuses
vllm_cuda_moe_routing.moe_routing, handing it the case's activation under the name that
hook reads ("a"); the dims it reads (num_tokens, topk, num_experts, block) are the
contract's own.
"""

import vllm_cuda_moe_routing


class _Case:
    def __init__(self, case):
        self.values = case.values
        self.seed = case.seed
        self.args = {"a": case.args["input"]}


def routing(case) -> dict:
    r = vllm_cuda_moe_routing.moe_routing(_Case(case))
    return {"sorted_token_ids": r["sorted_token_ids"], "expert_ids": r["expert_ids"],
            "num_tokens_post_pad": r["num_tokens_past_padded"]}
