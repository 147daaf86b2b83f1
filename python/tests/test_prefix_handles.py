"""Hit handles and block queries of kvcache.Manager (issue 24): find_prefix
returns the hit with its handle, allocate_slots(hit=...) takes it as found;
a stale or malformed hit is refused; block_info reports holders, queue and
index state."""
import pytest

import kvcache

ENTRY = {"name": "k", "num_head": 1, "dim": 8, "block_size": 4}


def cached(prompt):
    m = kvcache.Manager([[ENTRY]], block_num=40, max_model_len=64, prefix_caching=True)
    assert m.allocate_slots(1, 0, len(prompt), prompt=prompt)
    m.cache_computed(1, prompt)
    m.free(1)
    return m


def test_hit_handle_taken_once():
    prompt = list(range(100, 120))
    m = cached(prompt[:16])
    hit = m.find_prefix(prompt)
    assert hit["n_tokens"] == 16 and hit["handle"] > 0
    assert m.allocate_slots(2, 16, 4, prompt=prompt, hit=hit)
    assert m.block_table(2).tolist()[:4] == [1, 2, 3, 4]
    with pytest.raises(kvcache.InvalidArgument, match="stale hit"):
        m.allocate_slots(3, 16, 4, prompt=prompt, hit=hit)  # taken already
    m.check()


def test_malformed_hits_refused():
    prompt = list(range(100, 120))
    m = cached(prompt[:16])
    hit = m.find_prefix(prompt)
    for bad in ({}, {"n_tokens": 16}, {"n_tokens": 16, "handle": -1}, {"n_tokens": 16, "handle": True}, [16]):
        with pytest.raises(kvcache.InvalidArgument, match="hit"):
            m.allocate_slots(2, 16, 4, prompt=prompt, hit=bad)
    with pytest.raises(kvcache.InvalidArgument, match="computed_tokens = its n_tokens"):
        m.allocate_slots(2, 12, 8, prompt=prompt, hit=hit)
    assert m.allocate_slots(2, 16, 4, prompt=prompt, hit=hit)


def test_block_info():
    prompt = list(range(100, 110))
    m = kvcache.Manager([[ENTRY]], block_num=40, max_model_len=64, prefix_caching=True)
    assert m.allocate_slots(1, 0, 10, prompt=prompt)
    m.cache_computed(1, prompt)
    first = m.block_info(1)
    assert first["ref_count"] == 1 and not first["free"] and first["cached"] and first["hash"] > 0
    assert m.block_info(3)["hash"] is None  # a partial block is not cached
    m.free(1)
    again = m.block_info(1, "FullAttention")
    assert again == {"ref_count": 0, "free": True, "cached": True, "hash": first["hash"]}
    with pytest.raises(kvcache.OutOfRange, match="block 40"):
        m.block_info(40)


def test_kv_events_follow_the_cache():
    m = kvcache.Manager([[ENTRY]], block_num=6, max_model_len=64, prefix_caching=True, kv_events=64)
    a, b = list(range(1, 9)), list(range(50, 66))
    assert m.allocate_slots(1, 0, 8, prompt=a)
    m.cache_computed(1, a)
    m.free(1)
    events, lost = m.drain_kv_events()
    assert lost == 0 and [(e["type"], e["block"]) for e in events] == [("stored", 1), ("stored", 2)]
    assert events[1]["parent"] == events[0]["hash"] and events[0]["key"] == "FullAttention"
    assert m.block_info(2)["hash"] == events[1]["hash"]
    assert m.allocate_slots(2, 0, 16, prompt=b)  # takes 3, 4, 5, then evicts 2
    m.cache_computed(2, b)
    m.clear_prefix_cache()
    events, _ = m.drain_kv_events()
    assert [e["type"] for e in events] == ["removed"] + ["stored"] * 4 + ["cleared"]
    assert events[0]["block"] == 2 and events[-1]["key"] is None
    assert m.drain_kv_events() == ([], 0)
    with pytest.raises(kvcache.InvalidArgument, match="needs prefix_caching"):
        kvcache.Manager([[ENTRY]], block_num=6, max_model_len=64, kv_events=8)


def test_external_computed_tokens_cached_under_the_salt():
    """A hit, a connector's tokens after it and a salt in one allocation;
    once reported computed, the external blocks are found by that salt only."""
    prompt = list(range(100, 132))
    m = kvcache.Manager([[ENTRY]], block_num=40, max_model_len=64, prefix_caching=True)
    assert m.allocate_slots(1, 0, 8, prompt=prompt[:8], cache_salt="t1")
    m.cache_computed(1, prompt[:8])
    m.free(1)
    hit = m.find_prefix(prompt, cache_salt="t1")
    assert hit["n_tokens"] == 8
    assert m.allocate_slots(2, 8, 4, prompt=prompt, cache_salt="t1", hit=hit, num_external_computed_tokens=16)
    assert len(m.block_table(2).tolist()) == 7  # cdiv(8 + 16 + 4, 4): every position backed
    m.cache_computed(2, prompt[:28])
    m.free(2)
    assert m.find_prefix(prompt, cache_salt="t1")["n_tokens"] == 28
    assert m.find_prefix(prompt, cache_salt="t2")["n_tokens"] == 0
    for bad, message in ((-1, "must not be negative"), (32, "go past the last")):
        with pytest.raises(kvcache.InvalidArgument, match=message):
            m.allocate_slots(3, 0, 1, prompt=prompt, num_external_computed_tokens=bad)
    with pytest.raises(kvcache.InvalidArgument, match="need the prompt"):
        m.allocate_slots(3, 0, 1, num_external_computed_tokens=4)
    m.check()
