"""python_state hook for contracts/vllm-cuda/machete_prepack_B.yaml (vLLM 0.32.0, CUDA).

_C::machete_prepack_B takes ``ScalarType a_type`` and ``ScalarType? group_scales_type``
(torch dtypes), which a contract cannot name as scalars (the format's scalars are int,
float, bool and str). The contract draws ``at`` (0 float16, 1 bfloat16) and ``gs`` (0 None,
1 a_type itself, as vLLM passes it, 2 the other 16-bit dtype, which the kernel must
refuse), and this hook hands the dtypes in as ``{state: a_type}`` and
``{state: group_scales_type}``.
"""

import torch

_A_TYPES = (torch.float16, torch.bfloat16)


def dtypes(case) -> dict:
    a_type = _A_TYPES[case.values["at"]]
    gs = case.values["gs"]
    if gs == 0:
        group_scales_type = None
    elif gs == 1:
        group_scales_type = a_type
    else:
        group_scales_type = _A_TYPES[1 - case.values["at"]]
    return {"a_type": a_type, "group_scales_type": group_scales_type}
