"""Makes vLLM register its CUDA build's ops and their Python fakes on a machine without a GPU.

vLLM picks its platform by probing the GPU; with none it finds no platform and loads no op
library, and vllm/_custom_ops.py then registers no fake (each is guarded by whether its op is
loaded). Imported before vllm._custom_ops (``--import vllm_cuda_platform --import
vllm._custom_ops``), this module sets vLLM's current platform to its CUDA one and loads the
op libraries with vLLM's own ``CudaPlatform.import_kernels()``, as vLLM does at start on a
CUDA machine. The libraries link the CUDA driver (libcuda.so.1); where no driver is
installed, scripts/check-vllm-cuda puts a stub of it on LD_LIBRARY_PATH (libcuda_stub.c):
every driver call fails, torch.cuda.is_available() stays False, and only PyTorch's
FakeTensorMode, which needs no GPU, can call the ops.
"""
import vllm.platforms as _platforms
from vllm.platforms.cuda import CudaPlatform

_platforms._current_platform = CudaPlatform()
CudaPlatform.import_kernels()
