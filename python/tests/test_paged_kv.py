"""attention's paged_kv: K and V read in place from one combined buffer
(vLLM's kv [NB, 2, ...]) give the bits of the same data copied into plain
blocks, and bad descriptors are refused by the keyword's name."""
import numpy as np
import pytest

import kvcache

NB, BS, NKV, NQ, D = 11, 16, 2, 8, 32
KV_LENS = [37, 70]  # two decode rows: 3 and 5 of the 11 blocks, in a shuffled order


def _case(rng, dtype):
    q = rng.standard_normal((len(KV_LENS), NQ, D), dtype=np.float32)
    table = rng.permutation(NB)[:10].astype(np.int32).reshape(2, 5)
    kv = rng.standard_normal((NB, 2, BS, NKV, D), dtype=np.float32).astype(dtype)  # [NB, K|V, bs, Nkv, D]
    return q, table, kv


def _bits(out):
    return np.ascontiguousarray(out).view(np.uint8)


def _plain(q, table, k, v, kv_layout="BNBSND", dtype=None):
    """The same K/V copied into plain contiguous blocks (view_as(dtype) over the copies when given)."""
    k, v = np.ascontiguousarray(k), np.ascontiguousarray(v)
    if dtype is not None:
        k, v = kvcache.view_as(k, dtype), kvcache.view_as(v, dtype)
    return kvcache.attention(q, k, v, table, kv_lens=KV_LENS, q_lens=[1, 1], kv_layout=kv_layout)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_combined_buffer_in_place_equals_plain_blocks(dtype):
    rng = np.random.default_rng(11)
    q, table, kv = _case(rng, dtype)
    expect = _plain(q, table, kv[:, 0], kv[:, 1])
    # the views of the combined buffer, described by their strides
    got = kvcache.attention(q, kv[:, 0], kv[:, 1], table, kv_lens=KV_LENS, q_lens=[1, 1], paged_kv="strides")
    assert np.array_equal(_bits(got), _bits(expect))
    # the same buffer described by hand: k at its start, v one K block further, strides in elements
    flat = kv.reshape(-1)
    rows = dict(layout="BNBSND", head_dim=D, block_stride=2 * BS * NKV * D, head_stride=D, token_stride=NKV * D)
    desc = dict(num_blocks=NB, block_size=BS, k=rows, v=rows)
    got = kvcache.attention(q, flat, flat[BS * NKV * D:], table, kv_lens=KV_LENS, q_lens=[1, 1], num_kv_heads=NKV,
                            paged_kv=desc)
    assert np.array_equal(_bits(got), _bits(expect))
    assert not np.array_equal(_bits(got), _bits(_plain(q, table, kv[:, 1], kv[:, 0])))  # K and V are not symmetric


def test_head_major_bf16_and_keys_in_lanes_views():
    rng = np.random.default_rng(12)
    q, table, kv = _case(rng, np.float32)
    bf16 = (kv.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16, [NB, 2, bs, Nkv, D]
    hm = np.ascontiguousarray(bf16.transpose(0, 1, 3, 2, 4))  # [NB, 2, Nkv, bs, D]
    expect = _plain(q, table, hm[:, 0], hm[:, 1], "BNNBSD", "bf16")
    got = kvcache.attention(q, kvcache.view_as(hm[:, 0], "bf16"), kvcache.view_as(hm[:, 1], "bf16"), table,
                            kv_lens=KV_LENS, q_lens=[1, 1], kv_layout="BNNBSD", paged_kv="strides")
    assert np.array_equal(_bits(got), _bits(expect))
    # keys in lanes [NB, Nkv, D, bs] and head-major values, as views of one buffer
    k_lanes = np.ascontiguousarray(kv[:, 0].transpose(0, 2, 3, 1))
    combined = np.concatenate([k_lanes, kv[:, 1].transpose(0, 2, 1, 3).reshape(NB, NKV, D, BS)], axis=1)
    v_view = combined[:, NKV:].reshape(NB, NKV, BS, D)
    expect = _plain(q, table, k_lanes, v_view, "BNNDBS")
    got = kvcache.attention(q, combined[:, :NKV], v_view, table, kv_lens=KV_LENS, q_lens=[1, 1], kv_layout="BNNDBS",
                            paged_kv="strides")
    assert np.array_equal(_bits(got), _bits(expect))


def test_refusals_name_the_keyword():
    rng = np.random.default_rng(13)
    q, table, kv = _case(rng, np.float16)
    call = dict(kv_lens=KV_LENS, q_lens=[1, 1])
    with pytest.raises(kvcache.InvalidArgument, match=r"k: strides .* not whole 2-byte elements >= 0"):
        kvcache.attention(q, kv[::-1, 0], kv[:, 1], table, paged_kv="strides", **call)
    with pytest.raises(kvcache.InvalidArgument, match="paged_kv describes paged K/V: it needs a block_table"):
        kvcache.attention(q[None], kv[:, 0], kv[:, 1], paged_kv="strides")
    with pytest.raises(kvcache.InvalidArgument, match="kv_layout BNBSND, BNNBSD, BNNDBS, not \"NZ\""):
        kvcache.attention(q, kv[:, 0], kv[:, 1], table, kv_layout="NZ", paged_kv="strides", **call)
    flat = kv.reshape(-1)
    rows = dict(layout="BNBSND", head_dim=D, block_stride=2 * BS * NKV * D, head_stride=D, token_stride=NKV * D)
    bad = [(dict(rows, layout="rows"), kvcache.InvalidArgument, r"paged_kv.v.layout \"rows\" is not one of"),
           (dict(rows, token_strde=1), kvcache.InvalidArgument, "paged_kv.v: unknown key.* token_strde"),
           (dict(rows, head_stride=2.5), kvcache.InvalidArgument, r"paged_kv.v.head_stride: 2.5 is not an integer"),
           # the library's checks
           (dict(rows, token_stride=0), kvcache.InvalidArgument, r"paged_kv.v.token_stride 0 must be > 0"),
           (dict(rows, block_stride=4 * BS * NKV * D), kvcache.OutOfRange, r"paged_kv.v: .*outside the tensor")]
    for v_desc, error, message in bad:
        with pytest.raises(error, match=message):
            kvcache.attention(q, flat, flat[BS * NKV * D:], table, num_kv_heads=NKV, **call,
                              paged_kv=dict(num_blocks=NB, block_size=BS, k=rows, v=v_desc))
    with pytest.raises(kvcache.InvalidArgument, match="paged_kv: missing block_size"):
        kvcache.attention(q, flat, flat, table, num_kv_heads=NKV, paged_kv=dict(num_blocks=NB, k=rows, v=rows), **call)
    with pytest.raises(kvcache.InvalidArgument, match="give num_kv_heads"):
        kvcache.attention(q, flat, flat, table, paged_kv=dict(num_blocks=NB, block_size=BS, k=rows, v=rows), **call)
