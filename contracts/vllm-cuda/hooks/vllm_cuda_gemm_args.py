"""python_state hooks for contracts/vllm-cuda/machete_mm.yaml and cutlass_w4a8_mm.yaml (vLLM 0.32.0).

Both ops take ``ScalarType? out_type`` and ``str? schedule`` without a schema default, which a
contract cannot pass as scalars (the format's scalars are int, float, bool and str, and an
optional scalar without a default always takes a value). vLLM's own calls pass None for the
schedule (the kernels' heuristic picks one) and None or the activation's float dtype for
out_type; these hooks hand those in as ``{state: NAME}`` arguments.
"""

import torch

_FLOAT_DTYPES = (None, torch.float16, torch.bfloat16)


def machete_args(case) -> dict:
    # ot: 0 passes None (vLLM's MacheteLinearKernel), 1 passes A's dtype, the only out
    # type the built kernels have (csrc/quantization/machete/generate.py: out = a)
    a = case.args["A"]
    out_type = None if case.values["ot"] == 0 else a.dtype
    return {"out_type": out_type, "schedule": None}


def w4a8_args(case) -> dict:
    # ot: 0 None (the kernel's default, bfloat16), 1 float16, 2 bfloat16
    return {"out_type": _FLOAT_DTYPES[case.values["ot"]], "schedule": None}
