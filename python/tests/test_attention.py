"""kvcache.attention against the C library called from C (bitwise), the
float64 reference (tolerance) and torch's scaled_dot_product_attention
(tolerance, when torch is importable)."""
import itertools

import numpy as np
import pytest

import kvcache
from attn_cases import DTYPES, SHAPES, bf16_to_f32, out_bytes, out_f32, random_case, run_oracle

# every layout x storage with every q dtype and kv of the same dtype, plus int8 KV
COMBOS = [(lay, kvl, qd, qd) for (lay, kvl), qd in itertools.product(SHAPES, DTYPES)]
COMBOS += [(lay, kvl, qd, kvd) for (lay, kvl) in SHAPES for qd in ("f32", "f16") for kvd in ("i8", "fp8_e4m3")]
COMBOS += [("TND", "BNBSND", "bf16", "fp8_e5m2"), ("BSND", None, "f32", "fp8_e5m2")]
TOL = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


@pytest.mark.parametrize("layout,kv_layout,q_dtype,kv_dtype", COMBOS)
def test_bitwise_equal_to_c(attn_oracle, tmp_path, layout, kv_layout, q_dtype, kv_dtype):
    rng = np.random.default_rng(abs(hash((layout, kv_layout, q_dtype, kv_dtype))) % 2**32)
    for i in range(3):
        case = random_case(rng, layout, kv_layout, q_dtype, kv_dtype)
        out = kvcache.attention(*case.call_args, **case.call_kwargs)
        expect = run_oracle(attn_oracle, case, tmp_path)
        assert out_bytes(out) == expect, f"case {i}: {case.params}"
        # and the float64 reference agrees within the storage dtype's rounding
        ref = kvcache.attention(*case.call_args, **case.call_kwargs, impl="ref")
        a, b = out_f32(out_bytes_array(out), q_dtype), out_f32(out_bytes_array(ref), q_dtype)
        assert np.allclose(a, b, rtol=TOL[q_dtype], atol=TOL[q_dtype]), f"case {i}: {np.abs(a - b).max()}"


def out_bytes_array(out):
    return out.array if isinstance(out, kvcache.arrays.Reinterpreted) else out


def test_out_is_written_in_place():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 4, 32), dtype=np.float32)
    k = rng.standard_normal((2, 5, 2, 32), dtype=np.float32)
    v = rng.standard_normal((2, 5, 2, 32), dtype=np.float32)
    out = np.full((2, 3, 4, 32), np.nan, dtype=np.float32)
    got = kvcache.attention(q, k, v, out=out)
    assert got is out and np.isfinite(out).all()
    assert np.array_equal(out, kvcache.attention(q, k, v))


def test_lse_is_returned():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 1, 2, 16), dtype=np.float32)
    k = rng.standard_normal((1, 4, 2, 16), dtype=np.float32)
    out, lse = kvcache.attention(q, k, k, return_lse=True)
    s = np.einsum("d,kd->k", q[0, 0, 0].astype(np.float64), k[0, :, 0].astype(np.float64)) / 4.0
    assert lse.shape == (1, 2, 1, 1)
    assert abs(lse[0, 0, 0, 0] - np.log(np.exp(s).sum())) < 1e-5


def test_logit_softcap_bends_the_scores():
    """cap * tanh(s / cap) before the softmax, in the kernel and the reference; 0 is none; refused by name."""
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 1, 2, 16), dtype=np.float32) * 3
    k = rng.standard_normal((1, 6, 2, 16), dtype=np.float32)
    v = rng.standard_normal((1, 6, 2, 16), dtype=np.float32)
    s = np.einsum("d,kd->k", q[0, 0, 1].astype(np.float64), k[0, :, 1].astype(np.float64)) / 4.0
    s = 2.0 * np.tanh(s / 2.0)
    w = np.exp(s - s.max())
    want = (w / w.sum()) @ v[0, :, 1].astype(np.float64)
    for impl in ("cpu", "ref"):
        got = kvcache.attention(q, k, v, logit_softcap=2.0, impl=impl)
        assert np.abs(got[0, 0, 1] - want).max() < 1e-5
    assert np.abs(kvcache.attention(q, k, v)[0, 0, 1] - want).max() > 1e-2
    with pytest.raises(kvcache.InvalidArgument, match="logit_softcap -1"):
        kvcache.attention(q, k, v, logit_softcap=-1.0)


def test_attention_chunk_size_keeps_each_query_in_its_chunk():
    """Chunks of 3 over a causal prefill of 8 queries on 8 keys: query i sees keys [i - i % 3, i], in the kernel
    and the reference; 0 is none; refused by name."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((1, 8, 2, 16), dtype=np.float32)
    k = rng.standard_normal((1, 8, 1, 16), dtype=np.float32)
    v = rng.standard_normal((1, 8, 1, 16), dtype=np.float32)
    want = np.zeros((8, 2, 16))
    for i in range(8):
        for h in range(2):
            s = k[0, i - i % 3:i + 1, 0].astype(np.float64) @ q[0, i, h].astype(np.float64) / 4.0
            w = np.exp(s - s.max())
            want[i, h] = (w / w.sum()) @ v[0, i - i % 3:i + 1, 0].astype(np.float64)
    for impl in ("cpu", "ref"):
        got = kvcache.attention(q, k, v, attention_chunk_size=3, impl=impl)
        assert np.abs(got[0] - want).max() < 1e-5
    assert np.abs(kvcache.attention(q, k, v)[0] - want).max() > 1e-2
    with pytest.raises(kvcache.InvalidArgument, match="attention_chunk_size -1"):
        kvcache.attention(q, k, v, attention_chunk_size=-1)


def test_attention_alibi_slopes_bias_by_distance():
    """ALiBi over a causal prefill of 6 queries on 9 keys (3 cached), 4 query heads on 2 KV heads: head n's score of
    key j from the query at position p = i + 3 gains slopes[n] * (j - p), in the kernel and the reference; refused
    by name when not [Nq]."""
    rng = np.random.default_rng(6)
    q = rng.standard_normal((1, 6, 4, 16), dtype=np.float32)
    k = rng.standard_normal((1, 9, 2, 16), dtype=np.float32)
    v = rng.standard_normal((1, 9, 2, 16), dtype=np.float32)
    slopes = np.array([0.5, 0.25, 0.125, -0.0625], dtype=np.float32)
    want = np.zeros((6, 4, 16))
    for i in range(6):
        p = i + 3
        for h in range(4):
            kv = k[0, :p + 1, h // 2].astype(np.float64)
            s = kv @ q[0, i, h].astype(np.float64) / 4.0 + float(slopes[h]) * (np.arange(p + 1) - p)
            w = np.exp(s - s.max())
            want[i, h] = (w / w.sum()) @ v[0, :p + 1, h // 2].astype(np.float64)
    for impl in ("cpu", "ref"):
        got = kvcache.attention(q, k, v, alibi_slopes=slopes, impl=impl)
        assert np.abs(got[0] - want).max() < 1e-5
    assert np.abs(kvcache.attention(q, k, v)[0] - want).max() > 1e-2
    with pytest.raises(kvcache.InvalidArgument, match=r"alibi_slopes must be \[Nq = 4\]"):
        kvcache.attention(q, k, v, alibi_slopes=slopes[:2])




def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("q_dtype", ["f32", "bf16"])
@pytest.mark.parametrize("layout", ["BSND", "BNSD"])
def test_matches_torch_sdpa(layout, q_dtype):
    torch = _torch()
    import torch.nn.functional as F

    rng = np.random.default_rng(3)
    for _ in range(4):
        case = random_case(rng, layout, None, q_dtype, q_dtype, mode=3)
        L = case.logical
        B, Sq, Skv = len(L["sq"]), L["sq"][0], max(L["skv"])
        to_bnsd = (lambda x: x.transpose(0, 2, 1, 3)) if layout == "BSND" else (lambda x: x)
        q = torch.from_numpy(to_bnsd(L["q"]).astype(np.float64))
        k = torch.from_numpy(to_bnsd(L["k"]).astype(np.float64)).repeat_interleave(L["nq"] // L["nkv"], dim=1)
        v = torch.from_numpy(to_bnsd(L["v"]).astype(np.float64)).repeat_interleave(L["nq"] // L["nkv"], dim=1)
        # mode 3: query i sees keys j <= i + (Skv - Sq) (causal aligned to the last key)
        mask = torch.ones(Sq, Skv, dtype=torch.bool).tril(diagonal=Skv - Sq)
        scale = float(case.params["scale"])
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        args = list(case.call_args)
        if q_dtype == "bf16":  # the same bits as torch bf16 tensors: zero-copy through DLPack
            args = [torch.from_numpy(a.array.view(np.int16)).view(torch.bfloat16) for a in args]
        out = kvcache.attention(*args, **case.call_kwargs)
        got = out.float().numpy() if q_dtype == "bf16" else out
        got = to_bnsd(np.asarray(got, dtype=np.float64))
        assert np.allclose(got, want.numpy(), rtol=TOL[q_dtype], atol=TOL[q_dtype])
