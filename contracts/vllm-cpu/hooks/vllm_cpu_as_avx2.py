"""Imported before vLLM: it loads vllm/_C_AVX2 as on an AVX2 CPU (vllm_cpu_variant)."""
import vllm_cpu_variant

vllm_cpu_variant.choose("_C_AVX2")
