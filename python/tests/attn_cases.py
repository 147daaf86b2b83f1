"""Random attention cases for the tests: the arrays, the Python call's
arguments, and the C parameters written out explicitly (from the layout
rules of ops.h, not from the binding) for the C oracle."""
import math
import subprocess
from dataclasses import dataclass, field

import numpy as np

import kvcache
from kvcache._ffi import lib

# (layout, paged kv_layout or None)
SHAPES = [("BSND", None), ("BNSD", None), ("BSH", None), ("TND", None), ("TND", "BNBSND"), ("TND", "BNNBSD"),
          ("BNSD", "BNNBSD"), ("TND", "BNNDBS")]
DTYPES = ["f32", "f16", "bf16"]


def to_bf16_bits(x):
    """float32 -> bf16 bit patterns (round to nearest even), as uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def make_array(rng, shape, dtype, scale=1.0):
    """(array for the call, its float32 values, bytes for the oracle)."""
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    if dtype == "f32":
        return x, x, x.tobytes()
    if dtype == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float32), h.tobytes()
    if dtype == "bf16":
        b = to_bf16_bits(x)
        return kvcache.view_as(b, "bf16"), bf16_to_f32(b), b.tobytes()
    if dtype in ("fp8_e4m3", "fp8_e5m2"):
        # sign | exponent | mantissa with exponents near the bias: magnitudes 1/8 .. 8, no NaN/inf patterns
        e4 = dtype == "fp8_e4m3"
        exp = rng.integers(4, 10, size=shape) if e4 else rng.integers(12, 18, size=shape)
        mant = rng.integers(0, 8 if e4 else 4, size=shape)
        sign = rng.integers(0, 2, size=shape)
        bits = ((sign << 7) | (exp << (3 if e4 else 2)) | mant).astype(np.uint8)
        m_bits, bias = (3, 7) if e4 else (2, 15)
        values = ((-1.0) ** sign * 2.0 ** (exp - bias) * (1 + mant / 2**m_bits)).astype(np.float32)
        return kvcache.view_as(bits, dtype), values, bits.tobytes()
    if dtype == "i8":
        i = rng.integers(-127, 128, size=shape).astype(np.int8)
        return i, i.astype(np.float32), i.tobytes()
    raise ValueError(dtype)


@dataclass
class Case:
    call_args: tuple
    call_kwargs: dict
    params: dict  # scalar C parameters (name -> value)
    tensors: dict  # name -> (dtype, shape, bytes)
    out_shape: tuple
    out_dtype: str
    logical: dict = field(default_factory=dict)  # float32 q, k, v per row for the torch comparison


def random_case(rng, layout, kv_layout, q_dtype, kv_dtype, mode=None):
    paged = kv_layout is not None
    B = int(rng.integers(1, 4))
    nkv = int(rng.choice([1, 2]))
    nq = nkv * int(rng.choice([1, 2, 4]))
    D = int(rng.choice([16, 32, 64]))
    bs = int(rng.choice([4, 16]))
    if layout == "TND" and not paged:
        sq = [int(rng.integers(1, 9)) for _ in range(B)]
        skv = list(sq)
    else:
        s = int(rng.integers(1, 7))
        sq = [s] * B if not paged else [1] * B
        skv = [int(rng.integers(max(sq[b], 1), 20)) for b in range(B)]
    if mode is None:
        mode = int(rng.choice([2, 3, 4])) if max(sq) > 1 else 3
    scale = None if rng.random() < 0.5 else float(rng.uniform(0.05, 0.3))
    kv_scale = 0.02 if kv_dtype == "i8" else 1.0

    # logical data per row, then placed in the layout's tensors
    qa_, qf, qb = None, None, None
    params = dict(num_heads=nq, num_kv_heads=nkv, sparse_mode=mode, batch=B,
                  scale=repr(1.0 / math.sqrt(D) if scale is None else scale))
    if mode == 4:
        params["pre_tokens"], params["next_tokens"] = 2, 0
    tensors = {}
    kw = dict(sparse_mode=mode, scale=scale, layout=layout)
    if mode == 4:
        kw.update(pre_tokens=2, next_tokens=0)
    if layout in ("BSND", "BNSD", "BSH"):
        Sq, Skv = sq[0], max(skv)
        qshape = {"BSND": (B, Sq, nq, D), "BNSD": (B, nq, Sq, D), "BSH": (B, Sq, nq * D)}[layout]
        out_shape = {"BSND": (B, Sq, nq, D), "BNSD": (B, nq, Sq, D), "BSH": (B, Sq, nq * D)}[layout]
        params["q_lens"] = " ".join(str(x) for x in sq)
        params["kv_lens"] = " ".join(str(x) for x in skv)
        params["kv_len_form"] = lib.KVC_KV_FORM_DIRECT
        kw.update(q_lens=sq, kv_lens=skv)
        if layout == "BSH":
            kw.update(num_heads=nq, num_kv_heads=nkv)
    else:
        T = sum(sq)
        qshape, out_shape = (T, nq, D), (T, nq, D)
        params["q_lens"] = " ".join(str(x) for x in np.cumsum(sq))
        kw.update(q_lens=sq, kv_lens=skv)
        if paged:
            params["kv_lens"] = " ".join(str(x) for x in skv)
            params["kv_len_form"] = lib.KVC_KV_FORM_DIRECT
        else:
            params["kv_lens"] = " ".join(str(x) for x in np.cumsum(skv))
            params["kv_len_form"] = lib.KVC_KV_FORM_CUMULATIVE
    params["layout"] = getattr(lib, "KVC_LAYOUT_" + layout)
    q, qf, qb = make_array(rng, qshape, q_dtype)
    tensors["q"] = (q_dtype, qshape, qb)

    if paged:
        W = max(-(-x // bs) for x in skv)
        NB = B * W + 1 + int(rng.integers(0, 3))
        ids = rng.permutation(np.arange(1, NB))[: B * W].astype(np.int32).reshape(B, W)
        vshape = (NB, bs, nkv, D) if kv_layout == "BNBSND" else (NB, nkv, bs, D)
        kshape = (NB, nkv, D, bs) if kv_layout == "BNNDBS" else vshape  # keys in lanes
        k, kf, kb = make_array(rng, kshape, kv_dtype)
        v, vf, vb = make_array(rng, vshape, kv_dtype)
        c_shape = (NB, bs, nkv * D) if kv_layout == "BNBSND" else kshape
        tensors["k"] = (kv_dtype, c_shape, kb)
        tensors["v"] = (kv_dtype, (NB, bs, nkv * D) if kv_layout == "BNBSND" else vshape, vb)
        tensors["block_table"] = ("i32", ids.shape, ids.tobytes())
        params["kv_storage"] = lib.KVC_KV_BLOCKS
        params["block_layout"] = getattr(lib, "KVC_BLOCK_" + kv_layout)
        params["block_size"] = bs
        args = (q, k, v, ids)
        kw["kv_layout"] = kv_layout
    else:
        if layout == "TND":
            kshape = (sum(skv), nkv, D)
        else:
            Skv = max(skv)
            kshape = {"BSND": (B, Skv, nkv, D), "BNSD": (B, nkv, Skv, D), "BSH": (B, Skv, nkv * D)}[layout]
        k, kf, kb = make_array(rng, kshape, kv_dtype)
        v, vf, vb = make_array(rng, kshape, kv_dtype)
        tensors["k"] = (kv_dtype, kshape, kb)
        tensors["v"] = (kv_dtype, kshape, vb)
        args = (q, k, v)
    if kv_dtype == "i8":
        ks = np.array([kv_scale], dtype=np.float32)
        vs = np.array([0.03], dtype=np.float32)
        kw.update(key_scale=ks, value_scale=vs, quant_mode="per_channel")
        tensors["key_scale"] = ("f32", (1,), ks.tobytes())
        tensors["value_scale"] = ("f32", (1,), vs.tobytes())
        params["key_quant"] = params["value_quant"] = lib.KVC_QUANT_PER_CHANNEL
    return Case(args, kw, params, tensors, out_shape, q_dtype,
                logical=dict(q=qf, k=kf, v=vf, sq=sq, skv=skv, nq=nq, nkv=nkv, D=D))


def run_oracle(exe, case, tmp):
    """Output bytes of kvc_attention_cpu called from C with case's parameters."""
    lines = [f"{k} {v}" for k, v in case.params.items()]
    for name, (dt, shape, data) in case.tensors.items():
        (tmp / f"{name}.bin").write_bytes(data)
        lines.append(f"tensor {name} {dt} {len(shape)} {' '.join(str(s) for s in shape)}")
    lines.append(f"tensor out {case.out_dtype} {len(case.out_shape)} {' '.join(str(s) for s in case.out_shape)}")
    (tmp / "params.txt").write_text("\n".join(lines) + "\n")
    r = subprocess.run([str(exe), str(tmp)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return (tmp / "out.bin").read_bytes()


def out_bytes(out):
    a = out.array if isinstance(out, kvcache.arrays.Reinterpreted) else out
    return np.ascontiguousarray(a).tobytes()


def out_f32(out, dtype):
    a = np.asarray(out)
    return bf16_to_f32(a) if dtype == "bf16" else a.astype(np.float32)
