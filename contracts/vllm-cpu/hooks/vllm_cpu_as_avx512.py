"""Imported before vLLM: it loads vllm/_C_AVX512 as on an AVX-512 CPU without BF16 (vllm_cpu_variant)."""
import vllm_cpu_variant

vllm_cpu_variant.choose("_C_AVX512")
