"""vLLM's process state, built offline and kept per worker: what the state hooks share.

The contracts of vLLM's Python-registered ops that read state (attention, MLA, MoE,
collectives) name hooks in the modules beside this one (``python_state: vllm_attention:...``);
run the check with PYTHONPATH=contracts/vllm-cpu/hooks (scripts/check-vllm does). Those hooks
use what is here:

- ``vllm_config(kind, dtype, **fields)``: a ``VllmConfig`` built without weights or network
  from a folder holding only a small ``config.json`` (``HF_HUB_OFFLINE=1``,
  ``skip_tokenizer_init``), once per configuration in this process;
- ``world_size_one(config)``: vLLM's world-size-1 process groups (gloo), made once;
- ``enter(*contexts)``: keeps vLLM's context managers (``set_current_vllm_config``,
  ``set_forward_context``) entered after the hook returns, for the op's call, until the next
  hook call replaces them;
- ``built(key, make)``: a per-process cache that also times each build (``build_costs``).

opcontract forks one worker per checked contract and runs its cases there, so a layer built
for a configuration serves every case of that configuration in the worker.
"""

import json
import os
import tempfile
import time
from contextlib import ExitStack
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from vllm.config import CacheConfig, ModelConfig, VllmConfig, set_current_vllm_config  # noqa: E402

# What each kind of model needs in its config.json (no weights are ever loaded).
_ARCHITECTURES = {
    "llama": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
    "mixtral": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"},
    "deepseek_v2": {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2"},
}
_BASE = {"num_hidden_layers": 1, "vocab_size": 128, "max_position_embeddings": 4096,
         "intermediate_size": 64, "rms_norm_eps": 1e-6}

_cache: dict[Any, Any] = {}
build_costs: dict[Any, float] = {}  # key -> seconds its one build took in this process


def built(key: Any, make: Callable[[], Any]) -> Any:
    """``make()``'s result for ``key``, made once in this process and timed."""
    if key not in _cache:
        start = time.perf_counter()
        _cache[key] = make()
        build_costs[key] = time.perf_counter() - start
    return _cache[key]


def vllm_config(kind: str, dtype: torch.dtype, block_size: int = 16, **fields: Any) -> VllmConfig:
    """A VllmConfig for a model of ``kind`` whose config.json holds ``fields``; cached."""
    key = ("config", kind, dtype, block_size, tuple(sorted(fields.items())))

    def make() -> VllmConfig:
        folder = tempfile.mkdtemp(prefix=f"opcontract-{kind}-")
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump({**_ARCHITECTURES[kind], **_BASE, **fields, "torch_dtype": str(dtype)[6:]}, f)
        model = ModelConfig(model=folder, tokenizer=folder, dtype=dtype, max_model_len=4096,
                            skip_tokenizer_init=True)
        return VllmConfig(model_config=model, cache_config=CacheConfig(block_size=block_size))

    return built(key, make)


def world_size_one(config: VllmConfig) -> None:
    """vLLM's process groups at world size 1 (gloo), as a single-process server makes them."""
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import model_parallel_is_initialized

    def make() -> bool:
        with set_current_vllm_config(config):
            if not model_parallel_is_initialized():
                init_distributed_environment(1, 0, "file://" + tempfile.mktemp(prefix="opcontract-dist-"),
                                             0, backend="gloo")
                initialize_model_parallel(1, 1)
        return True

    built("world_size_one", make)


_entered = ExitStack()


def enter(*contexts: Any) -> None:
    """Leaves the previous call's contexts and enters these until the next call's."""
    global _entered
    _entered.close()
    _entered = ExitStack()
    for c in contexts:
        _entered.enter_context(c)
