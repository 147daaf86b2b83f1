"""The attention operator and the cache writes on caller arrays (no copies).

Every array argument may be a NumPy array, a PyTorch CPU tensor (or any
DLPack exporter) or a view_as(...) wrapper; see arrays.py. Shapes and the
rules they follow are the C library's (include/kvcache/ops.h); the library
validates every call and its refusal raises kvcache.InvalidArgument /
OutOfRange with its message.
"""
import math
import threading

import numpy as np

from ._lib import check, choice, ffi, flag, int32, int64, invalid, lib, real
from .arrays import Reinterpreted, index_array, view
from .paged_kv import KV_LAYOUTS as _KV_LAYOUTS
from .paged_kv import describe

# Python names of the query layouts (ops.h kvc_attn_layout) and the batch
# layer's sequence layout each one takes its length forms from.
_LAYOUTS = {
    "TND": (lib.KVC_LAYOUT_TND, lib.KVC_SEQ_LAYOUT_TND),
    "TND_NTD": (lib.KVC_LAYOUT_TND_NTD, lib.KVC_SEQ_LAYOUT_TND_NTD),
    "NTD_TND": (lib.KVC_LAYOUT_NTD_TND, lib.KVC_SEQ_LAYOUT_NTD_TND),
    "BSH": (lib.KVC_LAYOUT_BSH, lib.KVC_SEQ_LAYOUT_BSH),
    "BSND": (lib.KVC_LAYOUT_BSND, lib.KVC_SEQ_LAYOUT_BSND),
    "BNSD": (lib.KVC_LAYOUT_BNSD, lib.KVC_SEQ_LAYOUT_BNSD),
    "BSND_NBSD": (lib.KVC_LAYOUT_BSND_NBSD, lib.KVC_SEQ_LAYOUT_BSND),
}
_QUANT = {"per_channel": lib.KVC_QUANT_PER_CHANNEL, "per_token": lib.KVC_QUANT_PER_TOKEN,
          "per_head": lib.KVC_QUANT_PER_HEAD}


def _head_count(value, name):
    """An explicit num_heads / num_kv_heads: None (read from the shapes) or a
    positive int32, refused by name before it sizes any output."""
    if value is None:
        return None
    v = int32(value, name)
    if v < 1:
        raise invalid(f"{name} {v} must be positive (a head count)")
    return v


def _pair(value, name):
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise invalid(f"{name} {value!r} is neither a name nor a (keys, values) pair of names")
    return value


def _dim(v, axis, what):
    if len(v.shape) <= axis:
        raise invalid(f"{what}: a tensor of {len(v.shape)} dims has no axis {axis} (shape {list(v.shape)})")
    return v.shape[axis]


def _heads_and_dims(layout, qv, kv, vv, paged, kv_layout, num_heads, num_kv_heads, described_dv=None):
    """(Nq, Nkv, D, Dv) read from the shapes of the layout, explicit counts
    winning; described_dv: Dv of a paged_kv descriptor (k and v shapes then say nothing)."""
    q_axis = {"TND": 1, "TND_NTD": 1, "NTD_TND": 0, "BSND": 2, "BSND_NBSD": 2, "BNSD": 1}.get(layout)
    nq = num_heads if num_heads is not None else (_dim(qv, q_axis, "q") if q_axis is not None else None)
    if described_dv is not None:
        kv_axis = None
    elif paged:
        kv_axis = {"BNBSND": 2, "BNNBSD": 1, "NZ": 1, "BNNDBS": 1}[kv_layout] if len(kv.shape) >= 4 else None
    else:
        kv_axis = {"TND": 1, "NTD_TND": 0, "BSND": 2, "BSND_NBSD": 2, "BNSD": 1}.get(layout)
    nkv = num_kv_heads if num_kv_heads is not None else (_dim(kv, kv_axis, "k") if kv_axis is not None else None)
    if nq is None or nkv is None:
        raise invalid(f"layout {layout} with k of shape {list(kv.shape)}: give num_heads and num_kv_heads "
                      "(they cannot be read from the shapes)")
    packed_q = layout == "BSH"
    packed_kv = (paged and len(kv.shape) == 3) or (not paged and layout == "BSH")
    d = _dim(qv, len(qv.shape) - 1, "q") // max(nq, 1) if packed_q else _dim(qv, len(qv.shape) - 1, "q")
    if described_dv is not None:
        dv = described_dv
    elif paged and kv_layout == "NZ":
        dv = _dim(vv, 2, "v") * _dim(vv, 4, "v")
    else:
        last = _dim(vv, len(vv.shape) - 1, "v")
        dv = last // max(nkv, 1) if packed_kv else last
    return int(nq), int(nkv), int(d), int(dv)


def _batch_lengths(layout, qv, kv, paged, kv_layout, q_lens, kv_lens):
    """Per-row query and key lengths (direct form), defaults from the shapes."""
    t_layout = layout in ("TND", "TND_NTD", "NTD_TND")
    if t_layout:
        tq = qv.shape[0] if layout != "NTD_TND" else _dim(qv, 1, "q")
        q = [tq] if q_lens is None else q_lens
    else:
        b = _dim(qv, 0, "q")
        sq = _dim(qv, 2 if layout == "BNSD" else 1, "q")
        q = [sq] * b if q_lens is None else q_lens
    if kv_lens is None:
        if paged:
            raise invalid("paged attention needs kv_lens (keys of each row, direct form)")
        if t_layout:
            kv_lens = [_dim(kv, 1 if layout == "NTD_TND" else 0, "k")] if q_lens is None else q
        else:
            kv_lens = [_dim(kv, 2 if layout == "BNSD" else 1, "k")] * len(q)
    qa = index_array(q, "q_lens", "i64")
    ka = index_array(kv_lens, "kv_lens", "i64")
    return qa, ka


def _out_shape(layout, qv, nq, dv, q_rows):
    s = qv.shape
    return {
        "TND": (q_rows, nq, dv), "NTD_TND": (q_rows, nq, dv), "TND_NTD": (nq, q_rows, dv),
        "BSH": (s[0], s[1], nq * dv), "BSND": (s[0], s[1], nq, dv),
        "BNSD": (s[0], nq, s[2], dv), "BSND_NBSD": (nq, s[0], s[1], dv),
    }[layout]


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _new_like(q, shape, dtype=None):
    """An empty output of q's kind: a torch tensor next to a torch q, else NumPy."""
    if _is_torch(q):
        import torch

        return torch.empty(shape, dtype=dtype or q.dtype)
    if dtype is not None:
        return np.empty(shape, dtype=dtype)
    if isinstance(q, Reinterpreted):
        return Reinterpreted(np.empty(shape, dtype=np.uint16), q.dtype)
    return np.empty(shape, dtype=np.asarray(q).dtype)


_workspace = threading.local()


def _cpu_workspace(p):
    threads = lib.omp_get_max_threads()
    need = ffi.new("size_t *")
    check(lib.kvc_attention_cpu_workspace_size(p, threads, need))
    have = getattr(_workspace, "bytes", -1)
    if need[0] > have:
        out = ffi.new("void **")
        check(lib.kvc_aligned_alloc(64, max(need[0], 64), out))
        _workspace.ptr = ffi.gc(out[0], lib.kvc_aligned_free)
        _workspace.bytes = max(need[0], 64)
    return _workspace.ptr, _workspace.bytes


def attention(q, k, v, block_table=None, *, layout=None, q_lens=None, kv_lens=None, num_heads=None,
              num_kv_heads=None, scale=None, sparse_mode=3, pre_tokens=None, next_tokens=None,
              bidirectional=False, mask=None, kv_layout="BNBSND", sinks=None, key_scale=None, value_scale=None,
              key_offset=None, value_offset=None, quant_mode="per_channel", paged_kv=None, q_rope=None,
              k_rope=None, out=None, return_lse=False, impl="cpu", logit_softcap=0.0,
              attention_chunk_size=0, alibi_slopes=None, alibi_bf16=False):
    """Fused inference attention (kvc_attention_cpu, or the float64 reference
    kvc_attention_ref with impl="ref").

    q, k, v: arrays in `layout` ("BSND" by default, "TND" when paged):
      TND q [T, Nq, D]; BSND q [B, S, Nq, D]; BNSD q [B, Nq, S, D]; BSH q [B, S, Nq*D];
      NTD_TND q [Nq, T, D]; TND_NTD / BSND_NBSD as named. Contiguous k/v follow
      the query's layout; with a block_table (int32 [B, W]) they are paged
      caches in `kv_layout`: "BNBSND" [NB, bs, Nkv, D], "BNNBSD" [NB, Nkv, bs, D],
      "NZ", or "BNNDBS" (k [NB, Nkv, D, bs]: keys in lanes; v [NB, Nkv, bs, Dv]).
      q_lens / kv_lens are per-row lengths (direct form; converted to
      the form the layout needs); defaults come from the shapes (paged calls
      must give kv_lens). Head counts come from the shapes unless given.
    paged_kv: paged K/V read in place, each in its own strides (docs/python.md):
      "strides" takes k and v as 4-D NumPy views in kv_layout's axis order
      ("BNBSND", "BNNBSD" or "BNNDBS"), e.g. k = kv[:, 0], v = kv[:, 1] of a
      vLLM-style kv [NB, 2, bs, Nkv, D], and describes them by their strides;
      a dict {num_blocks, block_size, k: {layout, head_dim, block_stride,
      head_stride, token_stride, channel_stride=1}, v: {...}} (strides in
      elements) describes contiguous k and v (any shape, e.g. 1-D runs of one
      buffer) and needs num_kv_heads.
    scale: default 1/sqrt(D). sparse_mode: 0 none (needs mask or
      bidirectional=True when S > 1), 1 full mask, 2 causal from the top-left,
      3 causal aligned to the last key (default), 4 band (pre_tokens/next_tokens).
    q_rope, k_rope: MLA's rope parts (both or neither): q_rope like q with Dr
      channels per head, k_rope like k (contiguous, or a paged cache in
      kv_layout, or the "k_rope" entry / view of paged_kv) with Dr channels;
      scores are scale * (q.k + q_rope.k_rope). Absorbed MLA passes the latent
      cache as both k and v with one KV head (docs/ops.md).
    logit_softcap: 0 (none), or a cap c > 0: each scaled score s becomes
      c * tanh(s / c) before the mask and the softmax (Gemma 2's
      attn_logit_softcapping; sinks are not capped).
    attention_chunk_size: 0 (none), or a chunk C > 0 (Llama 4's chunked local
      attention): a query at absolute position p = i + Skv - Sq sees only the
      keys of its own chunk [floor(p / C) C, floor(p / C) C + C), on top of
      sparse_mode's rule.
    alibi_slopes: None, or f32 [Nq] ALiBi slopes (BLOOM, MPT, Falcon-RW): head
      n's score of key j from a query at absolute position p = i + Skv - Sq
      gains alibi_slopes[n] * (j - p), after the scale and the soft-cap.
    alibi_bf16: with alibi_slopes, transformers' Falcon form instead: key j
      gains bf16(alibi_slopes[n] * bf16(j)) * scale (the bias before the
      scale, at bf16 precision).
    int8 k/v: key_scale/value_scale (f32) in quant_mode "per_channel",
      "per_token" or "per_head" (a pair for keys and values may be given).
    out: written in place (q's dtype and shape rule by default, a new array
      of q's kind when None). Returns out, or (out, lse) with return_lse.
    """
    paged = block_table is not None
    num_heads, num_kv_heads = _head_count(num_heads, "num_heads"), _head_count(num_kv_heads, "num_kv_heads")
    layout = layout or ("TND" if paged else "BSND")
    c_layout, seq_layout = choice(_LAYOUTS, layout, "layout")
    block_layout = choice(_KV_LAYOUTS, kv_layout, "kv_layout") if paged else None
    qv = view(q, "q")
    if (q_rope is None) != (k_rope is None):
        raise invalid("q_rope and k_rope go together (MLA's rope parts): give both or neither")
    krv = None
    if paged_kv is None:
        kv_, vv, desc, described_dv = view(k, "k"), view(v, "v"), None, None
        krv = None if k_rope is None else view(k_rope, "k_rope")
    elif not paged:
        raise invalid("paged_kv describes paged K/V: it needs a block_table")
    else:
        desc, kv_, vv, krv, block_size, view_nkv, described_dv = describe(paged_kv, k, v, kv_layout, k_rope)
        num_kv_heads = num_kv_heads if num_kv_heads is not None else view_nkv
        if num_kv_heads is None:
            raise invalid("paged_kv as a dict: give num_kv_heads (the shapes of k and v do not say it)")
    nq, nkv, d, dv = _heads_and_dims(layout, qv, kv_, vv, paged, kv_layout, num_heads, num_kv_heads, described_dv)
    qa, ka = _batch_lengths(layout, qv, kv_, paged, kv_layout, q_lens, kv_lens)
    n = qa.shape[0] if qa.shape else 1
    if len(ka.shape) != 1 or len(qa.shape) != 1 or ka.shape[0] != n:
        raise invalid(f"q_lens ({list(qa.shape)}) and kv_lens ({list(ka.shape)}) must be 1-D of one length")

    # the forms the layout wants, by the batch layer's rule
    q_form, kv_form = ffi.new("kvc_len_form *"), ffi.new("kvc_len_form *")
    check(lib.kvc_seq_layout_forms(seq_layout, paged, q_form, kv_form))
    q_c, kv_c = ffi.new("int64_t[]", max(n, 1)), ffi.new("int64_t[]", max(n, 1))
    check(lib.kvc_seq_lens_fill(seq_layout, paged, qa.ptr("int64_t *"), ka.ptr("int64_t *"), n, q_c, kv_c))

    p = ffi.new("kvc_attention_params *", lib.kvc_attention_default_params())
    p.layout = c_layout
    p.num_heads, p.num_kv_heads = int32(nq, "num_heads"), int32(nkv, "num_kv_heads")
    # d 0: a packed q's last dim does not hold num_heads heads, which the library refuses by name
    p.scale = 1.0 / math.sqrt(max(d, 1)) if scale is None else real(scale, "scale")
    p.logit_softcap = real(logit_softcap, "logit_softcap")
    p.attention_chunk_size = int64(attention_chunk_size, "attention_chunk_size")
    p.alibi_bf16 = bool(alibi_bf16)
    p.sparse_mode = int32(sparse_mode, "sparse_mode")
    if pre_tokens is not None:
        p.pre_tokens = int64(pre_tokens, "pre_tokens")
    if next_tokens is not None:
        p.next_tokens = int64(next_tokens, "next_tokens")
    p.bidirectional = flag(bidirectional, "bidirectional")
    p.batch = n
    p.q_lens, p.kv_lens = q_c, kv_c
    p.kv_len_form = lib.KVC_KV_FORM_CUMULATIVE if kv_form[0] == lib.KVC_LEN_CUMULATIVE else lib.KVC_KV_FORM_DIRECT
    keep = [qv, kv_, vv, krv, qa, ka, q_c, kv_c, desc]
    if paged and kv_layout == "BNBSND" and desc is None:
        # the operator reads block-major caches as [NB, bs, Nkv*D]: the same memory
        for t in (kv_, vv, krv):
            if t is not None and len(t.shape) == 4:
                t.shape = (t.shape[0], t.shape[1], t.shape[2] * t.shape[3])
    qv.fill(p.q)
    kv_.fill(p.k)
    vv.fill(p.v)
    if q_rope is not None:
        qrv = view(q_rope, "q_rope")
        keep.append(qrv)
        qrv.fill(p.q_rope)
        krv.fill(p.k_rope)
    if paged:
        tv = index_array(block_table, "block_table", "i32")
        keep.append(tv)
        tv.fill(p.block_table)
        p.kv_storage = lib.KVC_KV_BLOCKS
        p.block_layout = block_layout
        if desc is None:
            bs_axis = {"BNBSND": 1, "BNNBSD": 2, "NZ": 3, "BNNDBS": 3}[kv_layout]
            p.block_size = int32(_dim(kv_, bs_axis, "k"), "block_size")
        else:
            p.block_size, p.paged_kv = block_size, desc
    for name, arr, field in (("mask", mask, p.mask), ("sinks", sinks, p.sinks), ("key_scale", key_scale, p.key_scale),
                             ("value_scale", value_scale, p.value_scale), ("key_offset", key_offset, p.key_offset),
                             ("value_offset", value_offset, p.value_offset),
                             ("alibi_slopes", alibi_slopes, p.alibi_slopes)):
        if arr is not None:
            av = view(arr, name)
            keep.append(av)
            av.fill(field)
    if key_scale is not None or value_scale is not None:
        kq, vq = (quant_mode, quant_mode) if isinstance(quant_mode, str) else _pair(quant_mode, "quant_mode")
        p.key_quant_mode = choice(_QUANT, kq, "quant_mode")
        p.value_quant_mode = choice(_QUANT, vq, "quant_mode")

    q_rows = _dim(qv, 1, "q") if layout == "NTD_TND" else qv.shape[0]  # Tq for the T.. layouts
    if out is None:
        out = _new_like(q, _out_shape(layout, qv, nq, dv, q_rows))
    ov = view(out, "out", writable=True)
    keep.append(ov)
    ov.fill(p.out)
    lse = None
    if flag(return_lse, "return_lse"):
        t_layout = layout in ("TND", "TND_NTD", "NTD_TND")
        shape = (q_rows, nq, 1) if t_layout else (qv.shape[0], nq, qv.shape[2 if layout == "BNSD" else 1], 1)
        if _is_torch(q):
            import torch

            lse = torch.empty(shape, dtype=torch.float32)
        else:
            lse = np.empty(shape, dtype=np.float32)
        lv = view(lse, "lse", writable=True)
        keep.append(lv)
        lv.fill(p.lse)

    if impl == "cpu":
        ws, ws_bytes = _cpu_workspace(p)
        check(lib.kvc_attention_cpu(p, ws, ws_bytes))
    elif impl == "ref":
        check(lib.kvc_attention_ref(p))
    else:
        raise invalid(f"impl \"{impl}\" is not \"cpu\" or \"ref\"")
    result = out.array if isinstance(out, Reinterpreted) else out
    return (result, lse) if return_lse else result


def _slot_write(cache, update, slots, kv_layout):
    order = choice(_KV_LAYOUTS, kv_layout, "kv_layout")
    cv = view(cache, "cache", writable=True)
    uv = view(update, "update")
    sv = index_array(slots, "slots", "i64")
    if len(sv.shape) != 1:
        raise invalid(f"slots: shape {list(sv.shape)} is not 1-D")
    c, u = ffi.new("kvc_tensor *"), ffi.new("kvc_tensor *")
    cv.fill(c)
    uv.fill(u)
    return order, c, u, sv, (cv, uv)


def write_slots(cache, update, slots, *, kv_layout="BNBSND"):
    """Scatters update [T, Nkv, D] into the paged cache at slots [T]
    (slot = block * block_size + offset; -1 skips a token), in place.
    The cache is [NB, bs, Nkv, D] ("BNBSND", also NZ's logical shape),
    [NB, Nkv, bs, D] ("BNNBSD") or [NB, Nkv, D, bs] ("BNNDBS", keys in lanes),
    of update's dtype."""
    order, c, u, sv, keep = _slot_write(cache, update, slots, kv_layout)
    check(lib.kvc_write_slots(c, order, u, sv.ptr("int64_t *"), sv.shape[0]))
    del keep


def _floats(values, name):
    """f32 [n] of numbers (text such as "1" was converted by NumPy and taken as a scale)."""
    a = np.asarray(values)
    if a.dtype.kind not in "fiu":
        raise invalid(f"{name}: numbers are expected, not {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1)


def write_slots_quant(cache, update, slots, inv_scale, offset=None, *, kv_layout="BNBSND"):
    """Quantising scatter: f32 update [T, Nkv, D] into an int8 paged cache,
    q = saturate(round_half_even(x * inv_scale + offset)); inv_scale and
    offset hold 1 (per tensor) or Nkv*D (per channel) f32 values."""
    order, c, u, sv, keep = _slot_write(cache, update, slots, kv_layout)
    sc = _floats(inv_scale, "inv_scale")
    off = None if offset is None else _floats(offset, "offset")
    if off is not None and off.size != sc.size:
        raise invalid(f"offset has {off.size} values, inv_scale {sc.size}: they must match")
    off_ptr = ffi.NULL if off is None else ffi.from_buffer("float[]", off)
    check(lib.kvc_write_slots_quant(c, order, u, sv.ptr("int64_t *"), sv.shape[0], ffi.from_buffer("float[]", sc),
                                    off_ptr, sc.size))
    del keep


def write_contiguous(cache, update, starts):
    """Legacy contiguous write: update [B, L, H] into cache [B, S_max, H] at
    rows' positions starts[b] .. starts[b] + L - 1, in place."""
    cv = view(cache, "cache", writable=True)
    uv = view(update, "update")
    sv = index_array(starts, "starts", "i64")
    if len(sv.shape) > 1:  # rows of a 2-D array were read as the first batch rows' starts
        raise invalid(f"starts: shape {list(sv.shape)} is not 1-D (one start per batch row)")
    c, u = ffi.new("kvc_tensor *"), ffi.new("kvc_tensor *")
    cv.fill(c)
    uv.fill(u)
    n = sv.shape[0] if sv.shape else 1
    check(lib.kvc_write_contiguous(c, u, sv.ptr("int64_t *"), n))


def cpu_isa():
    """The SIMD path kvc_attention_cpu runs on this CPU ("amx-bf16+avx512", "avx512-...", "portable")."""
    return ffi.string(lib.kvc_attention_cpu_isa()).decode()
