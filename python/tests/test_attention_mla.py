"""attention's q_rope / k_rope (MLA): scores scale * (q.k + q_rope.k_rope) against a float64 NumPy reference,
contiguous and paged, the rope cache read in place from a combined latent + rope buffer, and the refusals."""
import numpy as np
import pytest

import kvcache

NQ, DC, DR = 4, 32, 16  # absorbed-style: one latent KV head of Dc channels (also the value), rope Dr
NB, BS = 9, 8
KV_LENS = [13, 30]


def _reference(q, qr, k, kr, v, scale, causal_offset):
    """out [Sq, Nq, Dv] of one request: k/kr/v [Skv, Nkv, .], query row i sees keys j <= i + causal_offset."""
    q, qr, k, kr, v = (np.asarray(a, np.float64) for a in (q, qr, k, kr, v))
    g = q.shape[1] // k.shape[1]
    k, kr, v = (np.repeat(a, g, axis=1) for a in (k, kr, v))
    s = scale * (np.einsum("ihd,jhd->hij", q, k) + np.einsum("ihd,jhd->hij", qr, kr))
    i, j = np.arange(q.shape[0])[:, None], np.arange(k.shape[0])[None, :]
    s = np.where(j <= i + causal_offset, s, -np.inf)
    w = np.exp(s - s.max(axis=2, keepdims=True))
    return np.einsum("hij,jhd->ihd", w / w.sum(axis=2, keepdims=True), v)


def test_contiguous_mla_matches_float64():
    rng = np.random.default_rng(21)
    t, nkv = 11, 2
    q, qr = rng.standard_normal((t, NQ, DC), np.float32), rng.standard_normal((t, NQ, DR), np.float32)
    k, kr = rng.standard_normal((t, nkv, DC), np.float32), rng.standard_normal((t, nkv, DR), np.float32)
    v = rng.standard_normal((t, nkv, DC), np.float32)
    scale = 1 / np.sqrt(DC + DR)
    expect = _reference(q, qr, k, kr, v, scale, 0)
    for impl in ("cpu", "ref"):
        got = kvcache.attention(q, k, v, layout="TND", q_rope=qr, k_rope=kr, scale=scale, impl=impl)
        np.testing.assert_allclose(got, expect, rtol=2e-5, atol=2e-6)
    plain = kvcache.attention(q, k, v, layout="TND", scale=scale)
    assert not np.allclose(plain, expect, atol=1e-3)  # the rope part is read


def _paged_case(rng):
    table = rng.permutation(NB)[:8].astype(np.int32).reshape(2, 4)
    buf = rng.standard_normal((NB, BS, 1, DC + DR), np.float32)  # one buffer: latent then rope per token
    q = rng.standard_normal((2, NQ, DC), np.float32)
    qr = rng.standard_normal((2, NQ, DR), np.float32)
    return table, buf, q, qr


def _paged_reference(table, buf, q, qr, scale):
    out = []
    for b, n in enumerate(KV_LENS):
        rows = np.concatenate([buf[blk] for blk in table[b]])[:n]  # [n, 1, Dc + Dr]
        lat, rope = rows[..., :DC], rows[..., DC:]
        out.append(_reference(q[b:b + 1], qr[b:b + 1], lat, rope, lat, scale, n - 1)[0])
    return np.stack(out)


def test_paged_mla_latent_as_k_and_v_and_in_place_rope():
    rng = np.random.default_rng(22)
    table, buf, q, qr = _paged_case(rng)
    scale = 1 / np.sqrt(DC + DR)
    call = dict(kv_lens=KV_LENS, q_lens=[1, 1], scale=scale)
    lat, rope = np.ascontiguousarray(buf[..., :DC]), np.ascontiguousarray(buf[..., DC:])
    got = kvcache.attention(q, lat, lat, table, q_rope=qr, k_rope=rope, **call)
    np.testing.assert_allclose(got, _paged_reference(table, buf, q, qr, scale), rtol=2e-5, atol=2e-6)
    # the latent and rope parts read in place from the combined buffer: the same bits
    views = kvcache.attention(q, buf[..., :DC], buf[..., :DC], table, q_rope=qr, k_rope=buf[..., DC:],
                              paged_kv="strides", **call)
    assert np.array_equal(views.view(np.uint8), got.view(np.uint8))
    rows = dict(layout="BNBSND", head_dim=DC, block_stride=BS * (DC + DR), head_stride=DC + DR,
                token_stride=DC + DR)
    desc = dict(num_blocks=NB, block_size=BS, k=rows, v=rows, k_rope=dict(rows, head_dim=DR))
    flat = buf.reshape(-1)
    hand = kvcache.attention(q, flat, flat, table, q_rope=qr, k_rope=flat[DC:], num_kv_heads=1, paged_kv=desc,
                             **call)
    assert np.array_equal(hand.view(np.uint8), got.view(np.uint8))


def test_refusals_name_the_rope_parts():
    rng = np.random.default_rng(23)
    table, buf, q, qr = _paged_case(rng)
    lat, rope = np.ascontiguousarray(buf[..., :DC]), np.ascontiguousarray(buf[..., DC:])
    call = dict(kv_lens=KV_LENS, q_lens=[1, 1])
    with pytest.raises(kvcache.InvalidArgument, match="q_rope and k_rope go together"):
        kvcache.attention(q, lat, lat, table, q_rope=qr, **call)
    with pytest.raises(kvcache.InvalidArgument, match="q_rope and k_rope go together"):
        kvcache.attention(q, lat, lat, table, k_rope=rope, **call)
    rows = dict(layout="BNBSND", head_dim=DC, block_stride=BS * DC, head_stride=DC, token_stride=DC)
    desc = dict(num_blocks=NB, block_size=BS, k=rows, v=rows, k_rope=dict(rows, head_dim=DR))
    with pytest.raises(kvcache.InvalidArgument, match="a \"k_rope\" entry goes with the k_rope array"):
        kvcache.attention(q, lat.reshape(-1), lat.reshape(-1), table, num_kv_heads=1, paged_kv=desc, **call)
    with pytest.raises(kvcache.InvalidArgument, match="k has .* k_rope .* they must match"):
        kvcache.attention(q, buf[..., :DC], buf[..., :DC], table, q_rope=qr, k_rope=buf[:4, :, :, DC:],
                          paged_kv="strides", **call)
    with pytest.raises(kvcache.InvalidArgument, match="key_rope head dim 16 differs from the query_rope head dim 8"):
        kvcache.attention(q, lat, lat, table, q_rope=np.ascontiguousarray(qr[..., :8]), k_rope=rope, **call)
