"""Compares PyTorch's torch.library.opcheck with opcontract on opcontract's vLLM ports.

For every port of contracts/vllm/*.yaml this runs
  - torch.library.opcheck (default test utils) on ONE fixed sample per op, shaped as
    vLLM's kernel tests shape theirs (7 tokens, hidden 64, float16 or float32), against
    the port and against each regression target its contract lists;
  - `opcontract check` on the contract (generated cases), and `opcontract check
    --regressions` on it when it lists regressions;
and writes build/reports/opcheck-comparison.md (also printed): which tool catches which
regression and by what, the throughput of each, and what opcheck says of the fixed ports.

    scripts/opcheck-compare [--cases N] [--seed S] [--opcheck-repeats R]

(the wrapper builds if needed and runs this with the build's venv python). Build dir:
OPCONTRACT_BUILD_DIR, default build. Exit: 0 when the comparison completed, whatever the
tools found; 2 when the build or a contract is missing.
"""
import argparse
import ctypes
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
              "test_aot_dispatch_dynamic")
F16, F32, I32, I64 = torch.float16, torch.float32, torch.int32, torch.int64
FP8 = torch.float8_e4m3fn
TOKENS, HIDDEN = 7, 64
TARGET_RE = re.compile(r"\s*-\s*\{?\s*target:\s*([\w:.]+)")


# --- fixed samples, one per op: (args, kwargs) ---------------------------------------

def randn(*shape, dtype=F16):
    return torch.randn(*shape, dtype=dtype)


def slots(n, num_slots):
    """n distinct cache slots, as vLLM's cache tests draw them."""
    return torch.randperm(num_slots)[:n].to(I64)


def rms_norm():
    return (torch.empty(TOKENS, HIDDEN, dtype=F16), randn(TOKENS, HIDDEN), randn(HIDDEN), 1e-6), {}


def fused_add_rms_norm():
    return (randn(TOKENS, HIDDEN), randn(TOKENS, HIDDEN), randn(HIDDEN), 1e-6), {}


def act_and_mul():
    return (torch.empty(TOKENS, HIDDEN, dtype=F16), randn(TOKENS, 2 * HIDDEN)), {}


def rotary_embedding():
    heads, kv_heads, head_size, max_pos = 4, 2, 64, 32
    return (torch.randint(0, max_pos, (TOKENS,)), randn(TOKENS, heads, head_size),
            randn(TOKENS, kv_heads, head_size), head_size, randn(max_pos, head_size), True), {}


def reshape_and_cache_flash():
    heads, head_size, blocks, block_size = 4, 64, 4, 16
    cache = (blocks, block_size, heads, head_size)
    return (randn(TOKENS, heads, head_size), randn(TOKENS, heads, head_size),
            torch.zeros(cache, dtype=F16), torch.zeros(cache, dtype=F16),
            slots(TOKENS, blocks * block_size), "auto", torch.ones(1), torch.ones(1)), {}


def concat_and_cache_mla():
    lora, pe, blocks, block_size = 64, 16, 4, 16
    return (randn(TOKENS, lora), randn(TOKENS, pe), torch.zeros(blocks, block_size, lora + pe, dtype=F16),
            slots(TOKENS, blocks * block_size), "auto", torch.ones(1)), {}


def static_scaled_fp8_quant():
    return (torch.empty(TOKENS, HIDDEN, dtype=FP8), randn(TOKENS, HIDDEN), torch.tensor([0.01])), {}


def dynamic_scaled_fp8_quant():
    return (torch.empty(TOKENS, HIDDEN, dtype=FP8), randn(TOKENS, HIDDEN), torch.zeros(1)), {}


def moe_align_block_size():
    experts, topk, block_size = 8, 2, 16
    numel = TOKENS * topk
    padded = numel + experts * (block_size - 1)
    return (torch.randint(0, experts, (TOKENS, topk), dtype=I32), experts, block_size,
            torch.full((padded,), numel, dtype=I32),
            torch.zeros(-(-padded // block_size), dtype=I32), torch.empty(1, dtype=I32)), {}


def topk_softmax():
    experts, topk = 8, 2
    return (torch.empty(TOKENS, topk, dtype=F32), torch.empty(TOKENS, topk, dtype=I32),
            torch.empty(TOKENS, topk, dtype=I32), randn(TOKENS, experts, dtype=F32), False), {}


def sequence_parallel_chunk():
    return (randn(TOKENS, HIDDEN),), {}


def sparse_attn_indexer():
    heads, head_dim, keys, topk = 2, 16, 20, 4
    return (randn(TOKENS, heads, head_dim, dtype=F32), randn(keys, head_dim, dtype=F32),
            randn(TOKENS, heads, dtype=F32), torch.full((TOKENS + 1, 8), -1, dtype=I32), topk), {}


def unified_attention():
    """A batch of 7 real tokens padded to the capture size 8."""
    padded, heads, kv_heads, head_size = TOKENS + 1, 4, 2, 16
    return (randn(padded, heads, head_size), randn(padded, kv_heads, head_size),
            randn(padded, kv_heads, head_size), torch.zeros(padded, heads, head_size, dtype=F16),
            "model.layers.0.self_attn.attn"), {}


def weak_ref_tensor():
    return (randn(TOKENS, HIDDEN),), {}


def moe_forward():
    experts = 8
    return (randn(TOKENS, HIDDEN), randn(TOKENS, experts, dtype=F32),
            randn(experts, HIDDEN, HIDDEN) * 0.1, 2), {}


def ir_fused_add_rms_norm():
    return (randn(TOKENS, HIDDEN), randn(TOKENS, HIDDEN), randn(HIDDEN), 1e-6), {}


@dataclass
class Port:
    contract: str                       # stem of contracts/vllm/<contract>.yaml
    qualname: str                       # ns::name[.overload] of the port
    sample: Callable[[], tuple]
    context: dict = field(default_factory=dict)   # simulated process state the port reads
    described: str = ""                 # the sample, in words, for the report


PORTS = [
    Port("rms_norm", "opc_C::rms_norm", rms_norm, described="[7, 64] fp16"),
    Port("fused_add_rms_norm", "opc_C::fused_add_rms_norm", fused_add_rms_norm, described="[7, 64] fp16"),
    Port("silu_and_mul", "opc_C::silu_and_mul", act_and_mul, described="[7, 128] fp16"),
    Port("gelu_and_mul", "opc_C::gelu_and_mul", act_and_mul, described="[7, 128] fp16"),
    Port("rotary_embedding", "opc_C::rotary_embedding", rotary_embedding,
         described="q [7, 4, 64], k [7, 2, 64] fp16, neox, cache [32, 64]"),
    Port("reshape_and_cache_flash", "opc_C_cache_ops::reshape_and_cache_flash", reshape_and_cache_flash,
         described="k/v [7, 4, 64] fp16, cache [4, 16, 4, 64], \"auto\""),
    Port("concat_and_cache_mla", "opc_C_cache_ops::concat_and_cache_mla", concat_and_cache_mla,
         described="kv_c [7, 64], k_pe [7, 16] fp16, cache [4, 16, 80], \"auto\""),
    Port("static_scaled_fp8_quant", "opc_C::static_scaled_fp8_quant", static_scaled_fp8_quant,
         described="[7, 64] fp16 -> fp8_e4m3fn"),
    Port("dynamic_scaled_fp8_quant", "opc_C::dynamic_scaled_fp8_quant", dynamic_scaled_fp8_quant,
         described="[7, 64] fp16 -> fp8_e4m3fn, scale 0"),
    Port("moe_align_block_size", "opc_moe_C::moe_align_block_size", moe_align_block_size,
         described="topk_ids [7, 2] int32, 8 experts, block 16"),
    Port("topk_softmax", "opc_moe_C::topk_softmax", topk_softmax, described="gating [7, 8] fp32, k 2"),
    Port("sequence_parallel_chunk_impl", "opc_vllm::sequence_parallel_chunk_impl", sequence_parallel_chunk,
         context={"tp_size": 2, "tp_rank": 1}, described="[7, 64] fp16, tp_size 2, tp_rank 1"),
    Port("sparse_attn_indexer", "opc_vllm::sparse_attn_indexer", sparse_attn_indexer,
         described="q [7, 2, 16], k [20, 16] fp32, buffer [8, 8] int32, topk 4"),
    Port("unified_attention_with_output", "opc_vllm::unified_attention_with_output", unified_attention,
         context={"num_actual_tokens": TOKENS},
         described="q [8, 4, 16], k/v [8, 2, 16] fp16, 7 real tokens"),
    Port("weak_ref_tensor", "opc_C::weak_ref_tensor", weak_ref_tensor, described="[7, 64] fp16"),
    Port("moe_forward", "opc_vllm::moe_forward", moe_forward,
         described="hidden [7, 64] fp16, 8 experts, top_k 2"),
    Port("ir_fused_add_rms_norm", "opc_vllm_ir::fused_add_rms_norm", ir_fused_add_rms_norm,
         described="[7, 64] fp16"),
]


# --- the port library ------------------------------------------------------------------

class SimContext:
    """Sets the simulated process state (ops/sim_context.h) through its C entry point."""

    def __init__(self, lib: ctypes.CDLL):
        self._set = lib.opc_sim_set_int
        self._set.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        self._set.restype = None

    def apply(self, values: dict):
        for name, value in values.items():
            self._set(name.encode(), value)


def load_ports(build: Path) -> SimContext:
    context = ctypes.CDLL(str(build / "libopcontract_context.so"), mode=ctypes.RTLD_GLOBAL)
    torch.ops.load_library(str(build / "libopcontract_ports.so"))
    return SimContext(context)


def resolve(qualname: str) -> torch._ops.OpOverload:
    ns, name = qualname.split("::")
    name, _, overload = name.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")


# --- opcheck -------------------------------------------------------------------------

def first_line(error) -> str:
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 150 else text[:147] + "..."


def opcheck_once(qualname: str, port: Port, context: SimContext) -> dict:
    """test util -> None (passed) or the first line of its error."""
    context.apply(port.context)
    torch.manual_seed(0)
    args, kwargs = port.sample()
    try:
        results = torch.library.opcheck(resolve(qualname), args, kwargs, raise_exception=False)
    except Exception as error:  # the op does not resolve, or opcheck refuses the call
        return {util: f"opcheck could not run: {first_line(error)}" for util in TEST_UTILS}
    return {util: None if r == "SUCCESS" else first_line(r) for util, r in results.items()}


def opcheck_rate(port: Port, context: SimContext, repeats: int) -> float:
    """opcheck calls per second on the port; call it once opcheck_once has warmed the process up."""
    start = time.perf_counter()
    for _ in range(repeats):
        opcheck_once(port.qualname, port, context)
    return repeats / (time.perf_counter() - start)


# --- opcontract ---------------------------------------------------------------------

def contract_path(port: Port) -> str:
    return f"contracts/vllm/{port.contract}.yaml"


def regression_targets(port: Port) -> list:
    """The `target:` of each `regressions:` entry of the port's contract, comments skipped."""
    lines = (line.split("#", 1)[0] for line in (ROOT / contract_path(port)).read_text().splitlines())
    return [m.group(1) for m in map(TARGET_RE.match, lines) if m]


def opcontract(build: Path, contract: str, extra: list) -> tuple:
    """Runs `opcontract check`; returns (its JSON contracts list or None, error or None, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        start = time.perf_counter()
        proc = subprocess.run([str(build / "opcontract"), "check", contract, "--json", str(out), *extra],
                              cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode in (0, 1) and out.exists():
            return json.loads(out.read_text())["contracts"], None, seconds
        output = (proc.stderr + proc.stdout).strip().splitlines()
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        return None, f"opcontract {how}" + (f": {first_line(output[-1])}" if output else ", no output"), seconds


def finding_summary(entry: dict) -> str:
    if entry.get("verdict") == "error":
        return f"error: {first_line(entry.get('error', ''))}"
    findings = entry.get("findings", [])
    if not findings:
        return "nothing"
    return ", ".join(describe_finding(f) for f in findings)


def describe_finding(finding: dict) -> str:
    where = f"({finding['mode']}) @{finding['cases_tried']}" if finding["mode"] else "(static, no case)"
    return f"{finding['clause']} {where}" + (" [known]" if finding.get("known") else "")


# --- the report ----------------------------------------------------------------------

def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: list, rows: list) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def opcheck_verdict(failed: dict, on_port: dict) -> str:
    """Which utils caught the regression; failures the fixed port shares are not catches."""
    caught = [f"{u} ({m})" for u, m in failed.items() if m and not on_port.get(u)]
    shared = [u for u, m in failed.items() if m and on_port.get(u)]
    text = "; ".join(caught) if caught else "missed"
    return text + (f" [also failing on the fixed port: {', '.join(shared)}]" if shared else "")


def regression_rows(targets: dict, reg_runs: dict, opcheck_results: dict, port_results: dict) -> list:
    rows = []
    for port in PORTS:
        entries, error, _ = reg_runs.get(port.contract, ([], None, 0))
        by_target = {e["target"]: e for e in entries or []}
        for target in targets[port.contract]:
            # A target that is the port itself (weak_ref_tensor) has no fixed port to subtract.
            on_port = {} if target == port.qualname else port_results[port.contract]
            opcheck = opcheck_verdict(opcheck_results[target], on_port)
            entry = by_target.get(target)
            if entry is None:
                rows.append([target, "?", error or "not in opcontract's results", opcheck])
                continue
            reg = entry.get("regression", {})
            expected = ("as expected" if reg.get("caught_as_expected") else
                        f"NOT as expected (expects {', '.join(reg.get('expect', []))})")
            rows.append([target, reg.get("upstream", ""), f"{finding_summary(entry)} — {expected}", opcheck])
    return rows


def port_rows(port_results: dict, port_runs: dict) -> list:
    rows = []
    for port in PORTS:
        res = port_results[port.contract]
        entry, error, _ = port_runs[port.contract]
        opc = error or finding_summary(entry[0])
        utils = [f"FAIL: {m}" if m else "pass" for m in res.values()]
        rows.append([port.qualname, port.described, *utils, opc])
    return rows


def rate_rows(port_runs: dict, opcheck_rates: dict) -> list:
    rows = []
    for port in PORTS:
        entry, error, seconds = port_runs[port.contract]
        cases = entry[0].get("cases", 0) if entry else 0
        opc = f"{cases / seconds:.1f} ({cases} cases, {seconds:.2f} s)" if entry else error
        rows.append([port.qualname, f"{opcheck_rates[port.contract]:.1f}", opc])
    return rows


def port_failure_summary(port_results: dict) -> list:
    """The opcheck failures on the fixed ports, grouped by test util and message."""
    groups = {}
    for port in PORTS:
        for util, message in port_results[port.contract].items():
            if message:
                groups.setdefault((util, message), []).append(port.contract)
    clean = [p.contract for p in PORTS if not any(port_results[p.contract].values())]
    return ([f"- opcheck passes {len(clean)} of {len(PORTS)} fixed ports: {', '.join(clean)}."] +
            [f"- {util} fails on {len(ports)}: {', '.join(ports)} — {cell(message)}"
             for (util, message), ports in groups.items()])


def report(args, targets, reg_runs, port_runs, port_results, opcheck_results,
           opcheck_rates) -> str:
    seed = f", seed {args.seed}" if args.seed is not None else ""
    lines = ["# opcheck vs opcontract on the vLLM ports", "",
             f"torch {torch.__version__}. opcheck: `torch.library.opcheck` with its default test utils "
             f"({', '.join(TEST_UTILS)}) on one fixed vLLM-kernel-test-style sample per op. "
             f"opcontract: `opcontract check` with {args.cases} generated cases per contract{seed}.", "",
             "## Regressions", ""]
    lines += table(["regression target", "bug", "opcontract: caught by (clause (mode) @cases until detection)",
                    "opcheck: caught by (failed test utils)"],
                   regression_rows(targets, reg_runs, opcheck_results, port_results)) + [""]
    lines += ["## Throughput (checks of the fixed ports)", "",
              f"opcheck: samples/s over {args.opcheck_repeats} calls in a warm process (one-time imports and "
              "compilation warm-up excluded). opcontract: cases/s over the whole `opcontract check` "
              "process (startup included).", ""]
    lines += table(["port", "opcheck samples/s", "opcontract cases/s"], rate_rows(port_runs, opcheck_rates))
    lines += ["", "## The fixed ports under opcheck (and opcontract)", "",
              "No port here carries a bug under test except weak_ref_tensor (the negative control), so no "
              "other opcheck failure is a regression caught: each is either a limitation of the port that no "
              "contract states or opcheck failing in its own machinery (reasons grouped below the table). "
              "[known]: an opcontract finding its contract lists under known_findings.", ""]
    lines += table(["port", "sample", *TEST_UTILS, "opcontract findings"], port_rows(port_results, port_runs))
    lines += [""] + port_failure_summary(port_results)
    lines += ["", "Notes:", ""]
    lines += notes()
    return "\n".join(lines) + "\n"


def notes() -> list:
    with_context = [p for p in PORTS if p.context]
    how = "set from Python through libopcontract_context.so's opc_sim_set_int (ctypes)"
    return [f"- Simulated context ({', '.join(f'{p.contract}: {p.context}' for p in with_context)}) was {how}; "
            "opcontract draws it per case from the contract's `context:`.",
            "- opcheck's sample is fixed: a regression that only shows on some shapes or values (a branch, "
            "padding rows, NaN) is caught only if that sample happens to take it.",
            "- `weak_ref_tensor` is the suite's negative control: its return aliases the input by design, so "
            "flagging the port is correct; it is also listed as its own regression target."]


# --- main ----------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=100, help="opcontract cases per contract (default 100)")
    parser.add_argument("--seed", type=int, help="opcontract seed (default: opcontract's)")
    parser.add_argument("--opcheck-repeats", type=int, default=5,
                        help="timed opcheck calls per port for samples/s (default 5)")
    return parser.parse_args()


def require(build: Path):
    """Exits 2 naming what is missing: the build, or a contract of the fixed table."""
    unbuilt = [str(p) for p in (build / "opcontract", build / "libopcontract_ports.so",
                                build / "libopcontract_context.so") if not p.exists()]
    absent = [contract_path(p) for p in PORTS if not (ROOT / contract_path(p)).exists()]
    problems = [f"not built: {', '.join(unbuilt)} (scripts/setup builds it)"] if unbuilt else []
    problems += [f"no contract: {', '.join(absent)}"] if absent else []
    if problems:
        print("opcheck-compare: " + "; ".join(problems), file=sys.stderr)
        sys.exit(2)


def publish(build: Path, name: str, text: str):
    """Writes the report to build/reports/NAME and prints it."""
    out = build / "reports" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    print(f"written: {out}", file=sys.stderr)


def main():
    args = parse_args()
    build = ROOT / os.environ.get("OPCONTRACT_BUILD_DIR", "build")
    require(build)
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    context = load_ports(build)
    extra = ["--cases", str(args.cases)] + (["--seed", str(args.seed)] if args.seed is not None else [])
    targets = {p.contract: regression_targets(p) for p in PORTS}

    port_runs = {p.contract: opcontract(build, contract_path(p), extra) for p in PORTS}
    reg_runs = {p.contract: opcontract(build, contract_path(p), ["--regressions", *extra])
                for p in PORTS if targets[p.contract]}
    port_results = {p.contract: opcheck_once(p.qualname, p, context) for p in PORTS}  # also the warm-up
    opcheck_rates = {p.contract: opcheck_rate(p, context, args.opcheck_repeats) for p in PORTS}
    opcheck_results = {t: opcheck_once(t, p, context) for p in PORTS for t in targets[p.contract]}

    text = report(args, targets, reg_runs, port_runs, port_results, opcheck_results,
                  opcheck_rates)
    publish(build, "opcheck-comparison.md", text)


if __name__ == "__main__":
    main()
