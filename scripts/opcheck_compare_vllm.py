"""PyTorch's torch.library.opcheck and opcontract side by side on vLLM's own CPU ops.

In one run on one machine, for each op below (vLLM's own build, loaded as vLLM loads it):
  - opcheck (its default test utils) on one fixed sample, 7 tokens x hidden 64 as vLLM's
    kernel tests shape theirs, called --opcheck-repeats times in a warm process;
  - `opcontract check` on its contract in contracts/vllm-cpu/ (every mode the contract
    runs and the misuse search on), all contracts in one process, one job;
and prints both rates, their ratio and what each found; writes
build/reports/opcheck-comparison-vllm.md (also printed).

    scripts/opcheck-compare --vllm [--cases N] [--seed S] [--opcheck-repeats R]

Rates: opcheck samples per second of its calls; opcontract cases per second of the
contract's check (its cases, misuse search and shrinking: the JSON results' seconds.total),
and over the whole process (start-up, importing vLLM, included). CPU seconds per case
(user + system of each tool's process) travel between machines better than rates; on a
machine with more cores, `--jobs` adds processes, not speed per case.
Exit: 0 when the comparison completed, 2 when the build or vLLM is missing.
"""
import argparse
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from opcheck_compare import TEST_UTILS, first_line, publish, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKENS, HIDDEN = 7, 64
IMPORTS = ["vllm.platforms.cpu", "vllm._custom_ops", "vllm.model_executor.models.utils"]


def _rms_norm():
    x = torch.randn(TOKENS, HIDDEN, dtype=torch.float16)
    return (torch.empty_like(x), x, torch.randn(HIDDEN, dtype=torch.float16), 1e-6)


def _act_and_mul():
    x = torch.randn(TOKENS, 2 * HIDDEN, dtype=torch.float16)
    return (torch.empty(TOKENS, HIDDEN, dtype=torch.float16), x)


# contract in contracts/vllm-cpu/, vLLM's op, opcheck's sample
OPS = [("rms_norm", "_C::rms_norm", _rms_norm),
       ("silu_and_mul", "_C::silu_and_mul", _act_and_mul),
       ("gelu_tanh_and_mul", "_C::gelu_tanh_and_mul", _act_and_mul)]


def opcheck(qualname: str, sample, repeats: int) -> tuple[dict, float, float]:
    """(test util -> None or its failure, samples/s, CPU seconds a sample), warm."""
    ns, name = qualname.split("::")
    op = getattr(getattr(torch.ops, ns), name).default

    def once():
        torch.manual_seed(0)
        results = torch.library.opcheck(op, sample(), raise_exception=False)
        return {u: None if r == "SUCCESS" else first_line(r) for u, r in results.items()}

    verdict = once()  # the warm-up: opcheck's first call compiles
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        once()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return verdict, repeats / wall, cpu / repeats


def opcontract(build: Path, cases: int, seed) -> tuple[list, float, float]:
    """(the JSON results' contracts, process wall seconds, its CPU seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        command = [str(build / "opcontract"), "check",
                   *(f"contracts/vllm-cpu/{c}.yaml" for c, _, _ in OPS),
                   "--cases", str(cases), "--jobs", "1", "--json", str(out)]
        command += [a for m in IMPORTS for a in ("--import", m)]
        command += ["--seed", str(seed)] if seed is not None else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 1) or not out.exists():
            last = (proc.stderr + proc.stdout).strip().splitlines()[-1:] or ["no output"]
            missing(f"opcontract exited {proc.returncode}: {first_line(last[0])}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return json.loads(out.read_text())["contracts"], wall, cpu


def found_by_opcontract(entry: dict) -> str:
    findings = entry.get("findings", [])
    known = sum(1 for f in findings if f.get("known"))
    clauses = sorted({f"{f['clause']} ({f['mode'] or 'once'})" for f in findings})
    return f"{len(findings)} ({known} known): {', '.join(clauses)}" if findings else "nothing"


def found_by_opcheck(verdict: dict) -> str:
    failed = [f"{u}: {m}" for u, m in verdict.items() if m]
    return "; ".join(failed) if failed else f"passes all {len(verdict)} tests"


def report(args, rows: list, wall: float, cpu: float, total_cases: int) -> str:
    vllm = importlib.metadata.version("vllm-cpu")
    seed = f", seed {args.seed}" if args.seed is not None else ""
    lines = ["# opcheck vs opcontract on vLLM's own CPU ops", "",
             f"vllm-cpu {vllm} (vLLM's own build, as vLLM loads it here), torch {torch.__version__}, "
             f"{os.cpu_count()} cores. opcheck: {', '.join(TEST_UTILS)} on one {TOKENS} x {HIDDEN} float16 "
             f"sample, {args.opcheck_repeats} calls after a warm-up. opcontract: `opcontract check` with "
             f"{args.cases} cases per contract{seed}, every mode of its contract, the misuse search on, "
             "one job.", ""]
    lines += table(["op", "opcheck samples/s", "opcontract cases/s", "ratio", "opcheck CPU ms a sample",
                    "opcontract CPU ms a case", "opcheck found", "opcontract found"],
                   [[r[0], f"{r[1]:.1f}", f"{r[2]:.1f}", f"{r[2] / r[1]:.1f}", f"{r[3] * 1e3:.1f}",
                     f"{r[4] * 1e3:.1f}", r[5], r[6]] for r in rows])
    lines += ["", f"opcontract's whole process: {total_cases} cases in {wall:.1f} s "
              f"({total_cases / wall:.1f} cases/s, start-up and vLLM's import included), "
              f"{cpu:.1f} CPU s ({cpu / total_cases * 1e3:.1f} ms a case)."]
    lines += ["", "opcontract cases/s: the contract's cases over its check's own seconds (cases, the "
              "misuse search, shrinking every finding); its CPU ms a case: the process's CPU time over "
              "all cases, start-up included."]
    return "\n".join(lines) + "\n"


def missing(what: str):
    print(f"opcheck-compare --vllm: {what}", file=sys.stderr)
    sys.exit(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=300, help="opcontract cases per contract (default 300)")
    parser.add_argument("--seed", type=int, help="opcontract seed (default: opcontract's)")
    parser.add_argument("--opcheck-repeats", type=int, default=20,
                        help="timed opcheck calls per op (default 20)")
    args = parser.parse_args()
    build = ROOT / os.environ.get("OPCONTRACT_BUILD_DIR", "build")
    if not (build / "opcontract").exists():
        missing(f"not built: {build / 'opcontract'} (scripts/setup builds it)")
    try:
        for module in IMPORTS:
            __import__(module)
    except ImportError as e:
        missing(f"vLLM is not importable here ({e}); scripts/check-vllm installs vllm-cpu into .venv")
    os.environ["PYTHONPATH"] = str(ROOT / "contracts/vllm-cpu/hooks")
    os.environ.setdefault("OPCONTRACT_PYTHON", sys.executable)

    entries, wall, cpu = opcontract(build, args.cases, args.seed)
    by_op = {e["target"]: e for e in entries}
    total_cases = sum(e.get("cases", 0) for e in entries)
    rows = []
    for contract, qualname, sample in OPS:
        verdict, rate, cpu_a_sample = opcheck(qualname, sample, args.opcheck_repeats)
        entry = by_op[qualname]
        check_seconds = entry["seconds"]["total"]
        rows.append([qualname, rate, entry["cases"] / check_seconds, cpu_a_sample, cpu / total_cases,
                     found_by_opcheck(verdict), found_by_opcontract(entry)])
    publish(build, "opcheck-comparison-vllm.md", report(args, rows, wall, cpu, total_cases))


if __name__ == "__main__":
    main()
