"""Serves a tiny model with vLLM's CPU build and records its custom-op calls.

A real serve, offline: vLLM's own engine, scheduler, model runner, attention backend and
kernels, with random weights (load_format="dummy") from a config.json alone, prompts given
as token ids (no tokenizer), the engine core in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0)
so that the recorder (opcontract.record) sees every op call of loading and serving.

    python contracts/vllm-cpu/traffic/serve.py --model contracts/vllm-cpu/traffic/llama-tiny \\
        --dtype bfloat16 [--compiled] --out build/reports/vllm-cpu-traffic.jsonl
    python contracts/vllm-cpu/traffic/serve.py --model DIR --serve DIR/serve.json --out calls.jsonl

Appends to --out (a recording, docs/format.md "Recordings"); prints one line: the model,
dtype, mode, tokens generated and seconds taken. scripts/check-vllm serves each bundled
config this way (the fixed workload below), then holds the contracts to the recordings
(opcontract admit). A serve sweep (traffic/sweep.py) draws the whole run instead and hands
it over as --serve, a JSON object (every key optional): dtype, compiled, block_size,
max_num_seqs, max_num_batched_tokens, enable_prefix_caching, max_model_len, max_tokens,
kv_cache_bytes,
prompts (token id lists), sampling (one per prompt: {"temperature": T, "seed": S or null}),
program (the name the recording gives this serve).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
# vLLM sizes the CPU KV cache from the machine's memory unless told (measured: 17.5 GB of a
# 24 GB machine for this 2-layer model, enough to push a 2-core CI machine into swap). These
# prompts need a block or two per request: 4 MiB (64 blocks of 128 tokens for the bfloat16
# model, 32 for the float32 one) holds them, and keeps the recorded caches small enough to
# replay. VLLM_CPU_KVCACHE_SPACE (whole GiB) would override it, so it is dropped.
os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
KV_CACHE_BYTES = 4 << 20

from opcontract import record  # noqa: E402

# The bundled serves' workload: prompts of a few lengths, as token ids below the tiny
# vocabulary (a short one, one spanning several attention blocks' worth of tokens, one in
# between), greedy, seeded random and greedy sampling.
PROMPTS = [[1, 17, 42], list(range(3, 73)), [5 + (7 * i) % 400 for i in range(23)]]
SAMPLING = [{"temperature": 0.0}, {"temperature": 0.8, "seed": 7}, {"temperature": 0.0}]


def run_settings(a: argparse.Namespace) -> dict:
    """The serve's settings: --serve's JSON over the command line's and the bundled defaults."""
    s = {"dtype": a.dtype, "compiled": a.compiled, "max_tokens": a.max_tokens, "max_model_len": 128,
         "prompts": PROMPTS, "sampling": SAMPLING, "kv_cache_bytes": KV_CACHE_BYTES}
    if a.serve:
        with open(a.serve) as f:
            s.update(json.load(f))
    if len(s["sampling"]) != len(s["prompts"]):
        raise SystemExit(f"serve.py: {len(s['prompts'])} prompts but {len(s['sampling'])} sampling entries")
    return s


def engine_args(s: dict) -> dict:
    """LLM()'s keyword arguments for these settings (vLLM's defaults where a key is absent)."""
    kw = {"dtype": s["dtype"], "max_model_len": s["max_model_len"], "enforce_eager": not s["compiled"],
          "kv_cache_memory_bytes": s["kv_cache_bytes"]}
    for key in ("block_size", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching"):
        if s.get(key) is not None:
            kw[key] = s[key]
    return kw


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a folder holding a Hugging Face config.json")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--compiled", action="store_true", help="torch.compile the model (default: --enforce-eager)")
    p.add_argument("--serve", help="a JSON file of the run's settings and workload (a sweep's serve.json)")
    p.add_argument("--out", required=True, help="the recording to append to")
    p.add_argument("--max-tokens", type=int, default=8)
    a = p.parse_args()
    s = run_settings(a)

    started = time.monotonic()
    mode = "compiled" if s["compiled"] else "eager"
    program = s.get("program") or f"serve {os.path.basename(a.model)} {s['dtype']} {mode}"
    with record.recording(a.out, program=program):
        from vllm import LLM, ModelRegistry, SamplingParams

        # vLLM inspects a model class in a fresh Python process the first time it meets it
        # (so as not to initialize CUDA in this one), caching what it finds under
        # VLLM_CACHE_ROOT: with a cold cache that is vLLM imported once more per serve
        # (measured: 35-40 s on a loaded 2-core machine). There is no CUDA to spare here, so
        # the class is registered from this process instead; it is vLLM's own class.
        with open(os.path.join(a.model, "config.json")) as f:
            arch = json.load(f)["architectures"][0]
        if arch in ModelRegistry.models:
            ModelRegistry.register_model(arch, ModelRegistry.models[arch].load_model_cls())

        llm = LLM(model=a.model, load_format="dummy", skip_tokenizer_init=True, seed=0, **engine_args(s))
        params = [SamplingParams(max_tokens=s["max_tokens"], temperature=p["temperature"], seed=p.get("seed"),
                                 ignore_eos=True, detokenize=False) for p in s["sampling"]]
        outputs = llm.generate([{"prompt_token_ids": ids} for ids in s["prompts"]], params, use_tqdm=False)
    tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    print(f"served {os.path.basename(a.model)} ({s['dtype']}, {mode}): {len(s['prompts'])} prompts, {tokens} tokens "
          f"generated in {time.monotonic() - started:.1f} s", flush=True)
    return 0 if tokens == len(s["prompts"]) * s["max_tokens"] else 1


if __name__ == "__main__":
    sys.exit(main())
