"""Which build of vLLM's CPU library a check judges: vLLM's own pick, or another this CPU runs.

vLLM 0.32 ships three builds of its x86 op library, ``vllm/_C`` (AVX-512 with BF16, and the
AMX kernels), ``vllm/_C_AVX512`` and ``vllm/_C_AVX2``, and ``CpuPlatform.import_kernels``
imports one by torch.cpu's feature probes. Each registers the ``_C`` namespace, so one
process holds one of them.

``choose(build)``, called before vLLM is imported (the modules ``vllm_cpu_as_avx512`` and
``vllm_cpu_as_avx2`` do, as ``--import`` hooks), makes torch.cpu's probes answer as on the
least capable CPU vLLM loads that build on: ``_C_AVX2``, no AVX-512 (so no BF16, VNNI or
AMX); ``_C_AVX512``, AVX-512 without BF16 (so no AMX: every AMX CPU has AVX512-BF16).
vLLM's own import then picks that build, and its Python code (the MoE's AMX experts,
attention's ISA choice) takes the paths it takes on such a CPU: a check judges the build as
vLLM runs it there, not a mix vLLM never runs. It refuses a build this CPU cannot run, by
vLLM's own rule.

    python -m vllm_cpu_variant     # one line per build this CPU runs, vLLM's pick first:
                                   # BUILD HOOK WORDS ("-" for no hook)
"""
import torch

# What each build needs, by vLLM's rule (CpuPlatform.import_kernels), most capable first.
_NEEDS = {
    "_C": ("_is_avx512_supported", "_is_avx512_bf16_supported"),
    "_C_AVX512": ("_is_avx512_supported",),
    "_C_AVX2": ("_is_avx2_supported",),
}
# The probes that answer no when vLLM is to load a build (the features it goes without).
_HIDDEN = {
    "_C": (),
    "_C_AVX512": ("_is_avx512_bf16_supported", "_is_amx_tile_supported", "_is_amx_fp16_supported"),
    "_C_AVX2": ("_is_avx512_supported", "_is_avx512_bf16_supported", "_is_vnni_supported",
                "_is_amx_tile_supported", "_is_amx_fp16_supported"),
}
# The hook module that chooses each build, and the CPU it makes vLLM see.
_HOOKS = {
    "_C_AVX512": ("vllm_cpu_as_avx512", "as on an AVX-512 CPU without BF16, where vLLM picks it"),
    "_C_AVX2": ("vllm_cpu_as_avx2", "as on an AVX2 CPU, where vLLM picks it"),
}
_REAL = {name: getattr(torch.cpu, name) for names in _NEEDS.values() for name in names}


def runnable() -> list:
    """The builds this CPU runs, vLLM's own pick first."""
    return [b for b in _NEEDS if all(_REAL[probe]() for probe in _NEEDS[b])]


def _answer_no() -> bool:
    return False


def choose(build: str) -> None:
    """Makes vLLM, imported after this, load `build` as on a CPU where it picks it."""
    if build not in _NEEDS:
        raise ImportError(f"{build}: vLLM 0.32's CPU library builds are {', '.join(_NEEDS)}")
    if build not in runnable():
        raise ImportError(f"{build}: this CPU cannot run it (it needs "
                          f"{' and '.join(p[4:-10] for p in _NEEDS[build])}); it runs {', '.join(runnable())}")
    for probe in _HIDDEN[build]:
        setattr(torch.cpu, probe, _answer_no)


if __name__ == "__main__":
    builds = runnable()
    for b in builds:
        hook, words = ("-", "vLLM's pick on this CPU") if b == builds[0] else _HOOKS[b]
        print(b, hook, words)
