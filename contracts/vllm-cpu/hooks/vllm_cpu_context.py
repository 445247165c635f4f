"""Process state for vLLM's Python-registered ops, set by opcontract before every call.

`vllm.model_executor.models.utils` does `from vllm.distributed import
get_tensor_model_parallel_rank, get_tensor_model_parallel_world_size`, so the op and its
fake look those names up in that module's globals: patching them there (not in
vllm.distributed) is what the op sees. Named by a contract as
`python_context: vllm_cpu_context:set_tp`; run the check with
PYTHONPATH=contracts/vllm-cpu/hooks.
"""

import vllm.model_executor.models.utils as _utils


def set_tp(tp_size: int, tp_rank: int) -> None:
    """Makes the op see a tensor-parallel group of tp_size ranks, this one tp_rank."""
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank {tp_rank} outside a group of {tp_size}")
    _utils.get_tensor_model_parallel_world_size = lambda: tp_size
    _utils.get_tensor_model_parallel_rank = lambda: tp_rank
