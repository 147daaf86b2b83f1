"""kvcache.Manager: allocation, tables, usage and step metadata, against a
shadow model of the block counts and the slot rule."""
import numpy as np
import pytest

import kvcache
from conftest import DATA


def cdiv(a, b):
    return -(-a // b)


def test_from_plan():
    p = kvcache.plan(DATA / "configs" / "gpt-oss-20b.json", block_size=16, max_model_len=256, max_concurrency=2)
    m = p.manager()
    assert m.keys == [g["key"] for g in p["managers"]]
    assert {k: u["total"] for k, u in m.usage().items()} == p["block_num"]
    assert m.allocate_slots(1, 0, 100)
    assert len(m.block_table(1, "FullAttention")) == cdiv(100, 16)
    m.free(1)
    assert all(u["used"] == 1 for u in m.usage().values())  # only the null block
    m.check()


def test_no_space_allocates_nothing():
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}]], block_num=5, max_model_len=64)
    assert m.allocate_slots(1, 0, 12)  # 3 of the 4 usable blocks
    assert not m.allocate_slots(2, 0, 8)  # needs 2
    assert not m.has_request(2) and m.usage()["FullAttention"]["free"] == 1
    for keys in (5, "FullAttention"):  # a TypeError; a string read as its characters
        with pytest.raises(kvcache.InvalidArgument, match="keys: a list of manager keys is expected"):
            m.allocate_slots(3, 0, 4, keys=keys)
    assert m.free_queue().tolist() == [4]


def test_random_ops_against_shadow():
    rng = np.random.default_rng(7)
    bs, blocks, max_len = 4, 40, 60
    m = kvcache.Manager([[{"name": "k", "num_head": 2, "dim": 8, "block_size": bs}]], block_num=blocks,
                        max_model_len=max_len)
    held = {}
    for _ in range(400):
        rid = int(rng.integers(0, 8))
        if rng.random() < 0.3:
            m.free(rid)
            held.pop(rid, None)
            continue
        computed = held.get(rid, 0)
        new = int(rng.integers(1, 10))
        need = cdiv(min(computed + new, max_len), bs) - cdiv(computed, bs)
        free = blocks - 1 - sum(cdiv(t, bs) for t in held.values())
        ok = m.allocate_slots(rid, computed, new)
        assert ok == (need <= free)
        if ok:
            held[rid] = min(computed + new, max_len)
        assert m.usage()["FullAttention"]["free"] == blocks - 1 - sum(cdiv(t, bs) for t in held.values())
        for r, t in held.items():
            table = m.block_table(r)
            assert len(table) == cdiv(t, bs) and (table > 0).all()
        m.check()


def test_step_metadata_follows_the_tables():
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}],
                         [{"name": "k", "num_head": 1, "dim": 8, "block_size": 4, "attn_type": "SlidingWindow",
                           "sliding_window": 5}]], block_num=30, max_model_len=32)
    assert m.allocate_slots(10, 0, 7) and m.allocate_slots(11, 0, 3)
    md = m.step([(10, 0, 7), (11, 0, 3), (-1, 0, 2)], is_prefill=True)
    assert md.n_rows == 3 and md.n_tokens == 12 and md.prompt_tokens == 10
    assert md.positions.tolist() == [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 0, 0]
    assert md.cu_seq_lens_q.tolist() == [7, 10, 12] and md.seq_lens_kv.tolist() == [7, 3, 2]
    full = md.keys["FullAttention"]
    assert full.block_table.shape == (3, cdiv(32, 4)) and not full.block_table[2].any()
    assert full.block_table[0, :2].tolist() == m.block_table(10, "FullAttention").tolist()
    rows = [0] * 7 + [1] * 3
    for t, (row, pos) in enumerate(zip(rows, md.positions[:10])):
        assert full.slot_mapping[t] == full.block_table[row, pos // 4] * 4 + pos % 4
    # decode: one token each, after growing the tables
    assert m.allocate_slots(10, 7, 1) and m.allocate_slots(11, 3, 1)
    md = m.step([(10, 7, 1), (11, 3, 1)], is_prefill=False)
    assert md.positions.tolist() == [7, 3] and md.kv_pos.tolist() == [7, 3]
    sw = md.keys["SlidingWindow"]
    assert sw.slot_mapping[0] == sw.block_table[0, 7 // 4] * 4 + 3


def test_chunked_local_releases_whole_chunks():
    """ChunkedLocal, chunk 6 over blocks of 4: the query at p reads [p // 6 * 6, p], so a decode at 12 drops
    entries 1 and 2 while the one at 10 keeps entry 1 (positions 4..7 hold 6 and 7)."""
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4, "attn_type": "ChunkedLocal",
                           "attention_chunk_size": 6}]], block_num=9, max_model_len=64)
    assert m.keys == ["ChunkedLocal"]
    assert m.allocate_slots(1, 0, 10)
    assert m.block_table(1).tolist() == [1, 2, 3]
    assert m.allocate_slots(1, 10, 1)
    assert m.block_table(1).tolist() == [0, 2, 3]
    assert m.allocate_slots(1, 11, 1) and m.allocate_slots(1, 12, 1)
    assert m.block_table(1).tolist() == [0, 0, 0, 4]
    assert m.usage()["ChunkedLocal"]["used"] == 1 + 1  # the null block and block 4
    m.check()
    with pytest.raises(kvcache.InvalidArgument, match="attention_chunk_size 0 must be set"):
        kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4, "attn_type": "ChunkedLocal"}]],
                        block_num=9, max_model_len=64)


def test_step_buffers_grow():
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 16}]], block_num=400, max_model_len=512)
    rows = [(r, 0, 500) for r in range(6)]
    for r, _, n in rows:
        assert m.allocate_slots(r, 0, n)
    md = m.step(rows, True)
    assert md.n_tokens == 3000 and md.keys["FullAttention"].slot_mapping.shape == (3000,)


def test_prefix_cache_hit_reuses_blocks():
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}]], block_num=40, max_model_len=64,
                        prefix_caching=True)
    prompt = list(range(100, 140))
    assert m.allocate_slots(1, 0, len(prompt), prompt=prompt)
    first = m.block_table(1).tolist()
    m.cache_computed(1, prompt)
    m.free(1)
    assert m.usage()["FullAttention"]["cached_free"] == 10
    longer = prompt + [7, 8, 9, 10]
    hit = m.find_prefix(longer)
    assert hit["n_tokens"] == 40 and hit["cached"]["FullAttention"] == 10
    assert m.find_prefix(longer, cache_salt="tenant-b")["n_tokens"] == 0  # another salt shares nothing
    assert m.allocate_slots(2, hit["n_tokens"], len(longer) - hit["n_tokens"], prompt=longer)
    assert m.block_table(2).tolist()[:10] == first
    stats = m.prefix_stats()
    assert stats["hits"] == 1 and stats["hit_tokens"] == 40 and stats["queries"] == 2
    m.check()
    m.clear_prefix_cache()
    assert m.prefix_stats()["cached_blocks"] == 0


def test_prefix_cache_off_never_hits():
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}]], block_num=20, max_model_len=64)
    assert m.allocate_slots(1, 0, 8, prompt=list(range(8)))
    m.cache_computed(1, list(range(8)))
    m.free(1)
    assert m.find_prefix(list(range(12)))["n_tokens"] == 0


def test_step_past_the_allocation_is_refused():
    """issue 23 #11: a row past its request's allocation (its tokens would map
    into the null block) and a row of an unknown request are errors in every
    build, naming the request and the position."""
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}]], block_num=10, max_model_len=64)
    assert m.allocate_slots(1, 0, 4)
    assert m.step([(1, 3, 1)], is_prefill=False).keys["FullAttention"].slot_mapping.tolist() == [7]
    with pytest.raises(kvcache.InvalidArgument, match=r"request 1\): position 4 lies in logical block 1"):
        m.step([(1, 4, 1)], is_prefill=False)
    with pytest.raises(kvcache.InvalidArgument, match=r"request 2\): the request holds no blocks"):
        m.step([(2, 0, 1)], is_prefill=True)
