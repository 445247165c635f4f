"""A serve sweep: tiny models of every family vLLM's CPU backend serves, drawn at random, served.

The bundled serves (the folders beside this file) are six fixed configurations; a contract
whose ranges were read off them admits what they call and little else. A sweep draws the
configurations instead: for each architecture family (dense GQA, MoE, MLA, sliding window
with soft-capping, Mamba2, gated delta-net) a model shape, a way of running it and a
workload, each parameter drawn from what vLLM 0.32 accepts (the comments cite where), and
serves each for a few steps with the recorder on (serve.py). Every drawn configuration is
written out, so any finding replays:

    python sweep.py --configs 30 --seed 7 --out build/sweep      # draw and serve 30
    python sweep.py --replay build/sweep/007-gemma2              # serve one of them again
    python sweep.py --configs 30 --seed 7 --out DIR --draw-only  # write the configs only

DIR/sweep.json lists every configuration (its family, model, run and workload, how its
serve ended and how long it took); DIR/NNN-FAMILY/ holds its config.json, serve.json and the
serve's log; DIR/recording.jsonl the calls of them all, each serve a session whose program
is the configuration's id, so admission names the configurations behind every rejection
(scripts/serve-sweep runs it). Progress goes to stderr, a line per serve with an estimate
of the time left. The draw depends on the seed alone, not on this machine: the serves do
(vLLM picks its kernels by the CPU's features).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 512  # token ids below it; the tiny models' vocabulary

# vllm/v1/attention/backends/cpu_attn.py, CPUAttentionBackend.get_supported_head_sizes.
CPU_ATTN_HEAD_SIZES = [32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512]
# Same file, get_supported_kernel_block_sizes: MultipleOf(32); vllm/platforms/cpu.py
# check_and_update_config defaults an unset block size to 128 (None: vLLM's choice; hybrid
# models then get vLLM's own alignment of attention and Mamba pages, e.g. 640).
BLOCK_SIZES = [None, None, 32, 64, 96, 128, 160, 256]
# vllm/platforms/cpu.py, CpuPlatform.supported_dtypes (x86).
DTYPES = ["bfloat16", "bfloat16", "float32", "float16"]


def pick(rng: random.Random, choices):
    return choices[rng.randrange(len(choices))]


def heads(rng: random.Random) -> dict:
    """Attention heads: KV heads, query heads per KV head (GQA groups), a head size."""
    kv = pick(rng, [1, 1, 2, 4])
    return {
        "num_key_value_heads": kv,
        "num_attention_heads": kv * pick(rng, [1, 2, 4]),
        "head_dim": pick(rng, CPU_ATTN_HEAD_SIZES),
    }


def dense_base(rng: random.Random, arch: str, model_type: str) -> dict:
    """What every decoder here has: vocabulary, widths, layers, norms, rotary."""
    return {
        "architectures": [arch],
        "model_type": model_type,
        "vocab_size": VOCAB,
        "hidden_size": pick(rng, [64, 128, 128, 192, 256, 384]),
        # Real MLPs are wide and rarely a power of two (Llama-3 8B: 14336).
        "intermediate_size": pick(rng, [64, 128, 256, 352, 512, 1024, 1408]),
        "num_hidden_layers": pick(rng, [1, 2, 2, 3]),
        "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": rng.random() < 0.3,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def moe(rng: random.Random, **names) -> dict:
    """Experts and top-k under the family's key names (Qwen3-MoE's by default)."""
    experts = pick(rng, [2, 4, 8, 16, 60, 64])
    keys = {"experts": "num_experts", "topk": "num_experts_per_tok", "inter": "moe_intermediate_size"}
    keys.update(names)
    return {
        keys["experts"]: experts,
        keys["topk"]: rng.randint(1, min(8, experts)),
        keys["inter"]: pick(rng, [32, 64, 96, 128, 256]),
    }


def llama(rng):  # dense GQA
    return {**dense_base(rng, "LlamaForCausalLM", "llama"), **heads(rng), "hidden_act": "silu"}


def qwen3_moe(rng):
    return {
        **dense_base(rng, "Qwen3MoeForCausalLM", "qwen3_moe"),
        **heads(rng),
        **moe(rng),
        "norm_topk_prob": rng.random() < 0.7,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "hidden_act": "silu",
    }


def gemma2(rng):  # sliding window and logit soft-capping
    c = {**dense_base(rng, "Gemma2ForCausalLM", "gemma2"), **heads(rng)}
    layers = c["num_hidden_layers"]
    c.update(
        {
            "query_pre_attn_scalar": c["head_dim"],
            "hidden_activation": "gelu_pytorch_tanh",
            "layer_types": [pick(rng, ["sliding_attention", "full_attention"]) for _ in range(layers)],
            "sliding_window": pick(rng, [8, 16, 32, 33, 64, 100]),
            "attn_logit_softcapping": pick(rng, [None, 30.0, 50.0]),
            "final_logit_softcapping": pick(rng, [None, 30.0]),
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 1,
        }
    )
    return c


def deepseek_v2(rng):  # MLA
    # vllm/v1/attention/backends/mla/cpu_mla.py and amx_mla.py: the CPU MLA kernels take a
    # latent of kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 only; the other dims vary.
    c = {
        **dense_base(rng, "DeepseekV2ForCausalLM", "deepseek_v2"),
        **moe(rng, experts="n_routed_experts"),
        "num_attention_heads": pick(rng, [1, 2, 4, 8]),
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": pick(rng, [16, 32, 64, 128]),
        "v_head_dim": pick(rng, [16, 32, 64, 128]),
        # n_shared_experts: an int in vLLM's DeepseekV2 config (None fails its validation).
        "q_lora_rank": pick(rng, [None, None, 64, 96]),
        "n_shared_experts": pick(rng, [1, 2]),
        "first_k_dense_replace": pick(rng, [0, 1]),
        "moe_layer_freq": 1,
        "topk_method": "greedy",
        "n_group": 1,
        "topk_group": 1,
        "scoring_func": "softmax",
        "norm_topk_prob": rng.random() < 0.5,
        "routed_scaling_factor": 1.0,
        "hidden_act": "silu",
    }
    c["num_key_value_heads"] = c["num_attention_heads"]
    return c


def nemotron_h(rng):  # Mamba2 hybrid
    c = {**dense_base(rng, "NemotronHForCausalLM", "nemotron_h"), **heads(rng)}
    layers = c["num_hidden_layers"]
    # M: a Mamba2 mixer, *: attention, -: an MLP; at least one Mamba layer. (With a KV block
    # shorter than a prompt, vLLM 0.32's CPU build fails the prefill: FINDINGS.md, U.)
    pattern = "M" + "".join(pick(rng, "M*-") for _ in range(layers - 1))
    groups = pick(rng, [1, 1, 2])
    c.update(
        {
            "hybrid_override_pattern": pattern,
            "mamba_num_heads": groups * pick(rng, [1, 2, 4, 8]),
            "mamba_head_dim": pick(rng, [16, 32, 64]),
            "n_groups": groups,
            "ssm_state_size": pick(rng, [16, 32, 64, 128]),
            "conv_kernel": pick(rng, [2, 3, 4]),
            "expand": 2,
            "chunk_size": pick(rng, [64, 128, 256]),
            "use_conv_bias": rng.random() < 0.7,
            "mamba_hidden_act": "silu",
            "mlp_hidden_act": "relu2",
            "layer_norm_epsilon": 1e-5,
            "pad_token_id": 0,
        }
    )
    return c


def qwen3_next(rng):  # gated delta-net hybrid
    c = {**dense_base(rng, "Qwen3NextForCausalLM", "qwen3_next"), **heads(rng), **moe(rng)}
    layers = max(2, c["num_hidden_layers"])
    key_heads = pick(rng, [1, 2])
    # csrc/cpu's chunk_gated_delta_rule_cpu refuses a key head size other than the value
    # head size ("expect head_dim to be equal to head_dim_v"), and its GDN kernels
    # dispatch head sizes 64 and 128 only (DISPATCH_HEAD_DIM: "Unexpected head dim size"):
    # the CPU build serves GDN models with those (Qwen3-Next: 128 and 128).
    head = pick(rng, [64, 128])
    c.update(
        {
            "num_hidden_layers": layers,
            "layer_types": ["linear_attention"]
            + [pick(rng, ["linear_attention", "full_attention"]) for _ in range(layers - 1)],
            "partial_rotary_factor": pick(rng, [0.25, 0.5]),
            "linear_conv_kernel_dim": pick(rng, [2, 3, 4]),
            "linear_key_head_dim": head,
            "linear_value_head_dim": head,
            "linear_num_key_heads": key_heads,
            "linear_num_value_heads": key_heads * pick(rng, [1, 2, 4]),
            "shared_expert_intermediate_size": pick(rng, [32, 64, 128]),
            "norm_topk_prob": True,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "hidden_act": "silu",
        }
    )
    return c


FAMILIES = {
    "llama": llama,
    "qwen3-moe": qwen3_moe,
    "gemma2": gemma2,
    "deepseek-v2": deepseek_v2,
    "nemotron-h": nemotron_h,
    "qwen3-next": qwen3_next,
}


def kv_bytes_per_token(model: dict, dtype: str) -> int:
    """A generous upper bound on one token's cache in every layer (keys and values, or MLA's latent)."""
    width = {"float32": 4}.get(dtype, 2)
    per_layer = 576 if "kv_lora_rank" in model else 2 * model["num_key_value_heads"] * model["head_dim"]
    return model["num_hidden_layers"] * per_layer * width


def run_and_workload(rng: random.Random, family: str, model: dict) -> dict:
    """How the model runs and what it serves; vLLM's defaults where a key is None."""
    mla = family == "deepseek-v2"
    # vllm/model_executor/layers/mamba/ops/cpu/gdn_attention.py: "CPU GDN attention requires BF16";
    # vLLM's ModelConfig refuses float16 for gemma2 ("Numerical instability").
    dtypes = {"qwen3-next": ["bfloat16"], "gemma2": ["bfloat16", "float32"]}.get(family, DTYPES)
    s = {
        "dtype": pick(rng, dtypes),
        "compiled": rng.random() < 0.25,
        # MLA: vllm/platforms/cpu.py sets block_size 16 for CPU MLA whatever is asked (AMX MLA
        # takes multiples of 32), and turns chunked prefill and prefix caching off (MLA on a
        # non-GPU platform): asking changes nothing, so the draw leaves them to vLLM.
        "block_size": None if mla else pick(rng, BLOCK_SIZES),
        "max_num_seqs": pick(rng, [None, 1, 2, 4, 8]),
        "max_model_len": pick(rng, [128, 256]),
        "max_tokens": rng.randint(3, 10),
        "enable_prefix_caching": None if mla else pick(rng, [None, True, False]),
    }
    # Chunked prefill: a token budget per step below the longest prompt splits it.
    s["max_num_batched_tokens"] = None if mla else pick(rng, [None, None, 32, 64, 128])
    if s["max_num_batched_tokens"] is not None:
        s["max_num_batched_tokens"] = max(s["max_num_batched_tokens"], s["max_num_seqs"] or 1)
    n = rng.randint(1, 6)
    longest = s["max_model_len"] - s["max_tokens"]
    shared = [rng.randrange(3, VOCAB) for _ in range(rng.randint(0, 40))] if s["enable_prefix_caching"] else []
    s["prompts"] = []
    for _ in range(n):
        length = pick(rng, [1, 2, 3, 7, 16, 33, 64, 100, longest])
        own = [rng.randrange(3, VOCAB) for _ in range(length)]
        s["prompts"].append((shared + own)[: max(1, longest)])
    # Seeded random sampling with chunked prefill fails in vLLM 0.32 itself on CPU ("CPU
    # Generator does not use offset", gpu_model_runner.py: FINDINGS.md, V): such a run
    # samples unseeded. A prefill is split once the prompts batched together pass the budget.
    chunked = s["max_num_batched_tokens"] is not None and s["max_num_batched_tokens"] < sum(map(len, s["prompts"]))
    s["sampling"] = []
    for _ in range(n):
        kind = pick(rng, ["greedy", "greedy", "seeded", "random"])
        if kind == "greedy":
            s["sampling"].append({"temperature": 0.0})
        else:
            seeded = kind == "seeded" and not chunked
            s["sampling"].append(
                {"temperature": pick(rng, [0.5, 0.8, 1.0]), "seed": rng.randrange(1 << 31) if seeded else None}
            )
    # The cache: room for every prompt at full length, times 1 to 4 (vLLM allocates as many
    # blocks as the bytes hold; 4 MiB at least, as the bundled serves have).
    need = kv_bytes_per_token(model, s["dtype"]) * s["max_model_len"] * max(n, 2)
    s["kv_cache_bytes"] = max(4 << 20, int(need * rng.uniform(1.0, 4.0)))
    return s


def draw(seed: int, count: int, families: list) -> list:
    """The sweep's configurations: families in turn, so that a short sweep meets each."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        family = families[i % len(families)]
        model = FAMILIES[family](rng)
        run = run_and_workload(rng, family, model)
        cid = f"{i:03d}-{family}"
        run["program"] = f"sweep {seed}/{cid} ({run['dtype']}, {'compiled' if run['compiled'] else 'eager'})"
        out.append({"id": cid, "family": family, "model": model, "serve": run})
    return out


def write_config(out_dir: str, c: dict) -> str:
    d = os.path.join(out_dir, c["id"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({**c["model"], "torch_dtype": c["serve"]["dtype"]}, f, indent=1)
    with open(os.path.join(d, "serve.json"), "w") as f:
        json.dump(c["serve"], f, indent=1)
    return d


def serve(config_dir: str, recording: str, timeout: int, env: dict) -> tuple:
    """Serves one configuration: (status, seconds, the log's last line)."""
    started = time.monotonic()
    log_path = os.path.join(config_dir, "serve.log")
    cmd = [
        sys.executable,
        os.path.join(HERE, "serve.py"),
        "--model",
        config_dir,
        "--serve",
        os.path.join(config_dir, "serve.json"),
        "--out",
        recording,
    ]
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode
            status = "served" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout} s"
    with open(log_path, errors="replace") as log:
        lines = [ln.rstrip() for ln in log if ln.strip()]
    last = lines[-1] if lines else ""
    if status != "served":  # the error, not a trailing warning
        errors = [ln for ln in lines if "Error" in ln or "error:" in ln]
        last = errors[-1] if errors else last
    return status, time.monotonic() - started, last


def minutes(s: float) -> str:
    return f"{int(s // 60)} min {int(s % 60):02d} s" if s >= 60 else f"{s:.0f} s"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=12, help="how many configurations to draw (default 12)")
    p.add_argument("--seed", type=int, default=0, help="the draw's seed (the same seed, the same configurations)")
    p.add_argument("--out", default="build/sweep", help="the folder the sweep writes (default build/sweep)")
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, default every family")
    p.add_argument("--timeout", type=int, default=600, help="seconds one serve may take (default 600)")
    p.add_argument("--draw-only", action="store_true", help="write the configurations, serve none")
    p.add_argument("--replay", metavar="CONFIG_DIR", help="serve one configuration a sweep wrote, again")
    a = p.parse_args()
    env = dict(os.environ)
    if a.replay:
        out = os.path.join(a.replay, "replay.jsonl")
        status, seconds, last = serve(a.replay, out, a.timeout, env)
        print(f"{a.replay}: {status} in {minutes(seconds)}: {last}\nrecording: {out}")
        return 0 if status == "served" else 1

    families = [f.strip() for f in a.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families or a.configs < 1:
        p.error(f"--families takes {', '.join(FAMILIES)} (got {', '.join(unknown) or 'none'}); --configs at least 1")
    os.makedirs(a.out, exist_ok=True)
    recording = os.path.join(a.out, "recording.jsonl")
    if os.path.exists(recording):
        os.remove(recording)
    configs = draw(a.seed, a.configs, families)
    for c in configs:
        c["dir"] = write_config(a.out, c)
    sweep_path = os.path.join(a.out, "sweep.json")

    def save():
        with open(sweep_path, "w") as f:
            json.dump({"seed": a.seed, "families": families, "configs": configs}, f, indent=1)

    save()
    if a.draw_only:
        print(f"[serve-sweep] {len(configs)} configurations drawn (seed {a.seed}): {sweep_path}", file=sys.stderr)
        return 0
    started = time.monotonic()
    for i, c in enumerate(configs, 1):
        c["status"], c["seconds"], c["last_line"] = serve(c["dir"], recording, a.timeout, env)
        save()
        spent = time.monotonic() - started
        left = spent / i * (len(configs) - i)
        run = c["serve"]
        print(
            f"[serve-sweep] {i}/{len(configs)} {c['id']} ({run['dtype']}, {'compiled' if run['compiled'] else 'eager'}, "
            f"block {run['block_size'] or 'default'}, {len(run['prompts'])} prompts): {c['status']} in "
            f"{minutes(c['seconds'])}; about {minutes(left)} left",
            file=sys.stderr,
            flush=True,
        )
        if c["status"] != "served":
            print(f"[serve-sweep]    {c['last_line'][:300]}", file=sys.stderr, flush=True)
    served = sum(c["status"] == "served" for c in configs)
    print(
        f"[serve-sweep] {served}/{len(configs)} configurations served in {minutes(time.monotonic() - started)} "
        f"(seed {a.seed}): {sweep_path}, {recording}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
