"""python_state hook for contracts/vllm-cuda/matmul_mxf4_bf16_tn.yaml (vLLM 0.32.0).

QuTLASS's MXFP4 GEMM takes its block scales as float8_e8m0fnu tensors (one power of two a
byte), a dtype the contract format cannot draw. This hook builds them at the case's
geometry, on the device of the case's other tensors, in the 128x4-tiled layout vLLM's
to_blocked leaves (fp_quant.py:272, qutlass_utils.py:168-191): flattened, round_up(rows, 128)
* round_up(K / 32, 4) scales, exponents
near 2^0 (biased 127), drawn from the case's seed.
"""

import torch


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _scales(rows: int, k: int, gen: torch.Generator, device) -> torch.Tensor:
    # what to_blocked leaves: the 128x4 tiles of [rows, K / 32], padded, flattened
    shape = (_round_up(rows, 128) * _round_up(k // 32, 4),)
    exps = torch.randint(120, 135, shape, generator=gen, dtype=torch.uint8)
    return exps.view(torch.float8_e8m0fnu).to(device)


def mxf4_gemm_scales(case) -> dict:
    a = case.args["A"]
    v = case.values
    k = 128 * v["kb"]
    gen = torch.Generator().manual_seed(case.seed % (2**63))
    return {"A_sf": _scales(v["num_tokens"], k, gen, a.device),
            "B_sf": _scales(128 * v["nb"], k, gen, a.device)}
