/* A stand-in for the CUDA driver (libcuda.so.1) on a machine without one, so that vLLM's
 * CUDA op libraries load and register their ops (scripts/check-vllm-cuda builds it). It
 * defines the driver functions those libraries link, and each fails with
 * CUDA_ERROR_STUB_LIBRARY (34): nothing here can reach a GPU, and the CUDA runtime, finding
 * no cuInit, reports no device. Arguments are ignored (the x86-64 calling convention lets a
 * function taking none be called with any). */
#define CUDA_ERROR_STUB_LIBRARY 34

int cuGetProcAddress_v2(void) { return CUDA_ERROR_STUB_LIBRARY; }
int cuPointerGetAttribute(void) { return CUDA_ERROR_STUB_LIBRARY; }
int cuTensorMapEncodeTiled(void) { return CUDA_ERROR_STUB_LIBRARY; }
