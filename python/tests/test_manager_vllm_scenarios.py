"""The scenarios of vLLM v1's KV cache manager tests (tests/v1/core/
test_prefix_caching.py, test_single_type_kv_cache_manager.py), replayed on
kvcache.Manager: allocation counts, which block ids are handed out and in
which order, hit lengths, holders, salts, lookahead, eviction, clearing and
KV events. Each test names the vLLM test it follows. Where our documented
behaviour differs (docs/prefix-caching.md), the test asserts ours and says so.

The API differs in one way that runs through every test: vLLM indexes a
block when it is allocated for tokens about to be computed; we index it
when the caller reports the tokens computed (cache_computed), so each
scenario reports its steps computed where vLLM would have cached them."""
import kvcache

BS = 16


def entry(block_size=BS, **kw):
    return {"name": "k", "num_head": 1, "dim": 8, "block_size": block_size, **kw}


def full(blocks, block_size=BS, **kw):
    """A FullAttention model with `blocks` usable blocks (the null block is added)."""
    return kvcache.Manager([[entry(block_size)]], block_num=blocks + 1, max_model_len=8192,
                           prefix_caching=True, **kw)


def run(m, rid, tokens, salt=None):
    """Admits a request with the hit the manager finds and computes its whole
    prompt (vLLM: get_computed_blocks, allocate_slots, then the step). Returns
    the hit length."""
    hit = m.find_prefix(tokens, cache_salt=salt)
    assert m.allocate_slots(rid, hit["n_tokens"], len(tokens) - hit["n_tokens"], prompt=tokens, cache_salt=salt,
                            hit=hit)
    m.cache_computed(rid, tokens)
    return hit["n_tokens"]


def blocks_of(*ids):
    return [i for i in ids for _ in range(BS)]


def test_prefill_block_ids_and_free_order():
    # mirrors test_prefix_caching.py::test_prefill
    m = full(10)
    common = blocks_of(0, 1, 2)  # three full blocks
    assert run(m, 0, common + [3] * 7) == 0
    assert m.block_table(0).tolist() == [1, 2, 3, 4]
    for b in (1, 2, 3):
        assert m.block_info(b)["cached"] and m.block_info(b)["ref_count"] == 1
    assert not m.block_info(4)["cached"] and m.block_info(4)["ref_count"] == 1  # the partial block
    # a hit on the common prefix while its blocks are still held: 3 holders -> 2 each
    assert run(m, 1, common + [3] * 5) == 48
    assert m.block_table(1).tolist() == [1, 2, 3, 5]
    assert [m.block_info(b)["ref_count"] for b in (1, 2, 3)] == [2, 2, 2]
    assert m.usage()["FullAttention"]["free"] == 5
    m.free(0)
    m.free(1)
    # vLLM's order: the blocks no index holds (partial 5, then 4) at the head,
    # the never-used ones, then the cached prefix last block first
    assert m.free_queue().tolist() == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]
    # a hit on free cached blocks takes them out of the middle; the new block is the head
    assert run(m, 2, common + [3] * 6) == 48
    assert m.block_table(2).tolist() == [1, 2, 3, 5]
    assert m.usage()["FullAttention"]["free"] == 6 and len(m.free_queue()) == 6
    m.free(2)
    # a miss of 10 blocks evicts in queue order
    assert run(m, 3, [99] * (16 * 10)) == 0
    assert m.block_table(3).tolist() == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]
    assert m.free_queue().tolist() == []
    assert m.prefix_stats()["evictions"] == 3
    m.check()


def test_prompt_of_whole_blocks_never_hits_its_last_block():
    # mirrors the max_cache_hit_length = prompt - 1 rule of
    # kv_cache_manager.get_computed_blocks (test_prefill, test_cache_blocks...)
    m = full(10)
    prompt = blocks_of(0, 1, 2)
    run(m, 0, prompt)
    m.free(0)
    assert m.find_prefix(prompt)["n_tokens"] == 32  # the last token is computed again
    assert m.find_prefix(prompt + [7])["n_tokens"] == 48
    assert m.find_prefix(prompt[:1])["n_tokens"] == 0


def test_decode_fills_and_caches_the_partial_block():
    # mirrors test_prefix_caching.py::test_decode
    m = full(10)
    tokens = blocks_of(0, 1, 2) + [3] * 7
    run(m, 0, tokens)
    assert m.block_table(0).tolist() == [1, 2, 3, 4]
    for step in range(4):  # decode tokens 55 .. 58 fit block 4
        assert m.allocate_slots(0, len(tokens), 1)
        tokens.append(8)
        m.cache_computed(0, tokens)
    assert m.block_table(0).tolist() == [1, 2, 3, 4] and not m.block_info(4)["cached"]
    for step in range(6):  # 59 .. 64: block 4 fills, the 65th token needs block 5
        assert m.allocate_slots(0, len(tokens), 1)
        tokens.append(9)
        m.cache_computed(0, tokens)
    assert m.block_table(0).tolist() == [1, 2, 3, 4, 5]
    assert m.block_info(4)["cached"] and not m.block_info(5)["cached"]


def test_evict_order():
    # mirrors test_prefix_caching.py::test_evict
    m = full(10)
    first = blocks_of(*range(5)) + [5] * 7  # 5 full blocks and 7 tokens: 6 blocks
    run(m, 0, first)
    run(m, 1, blocks_of(10, 11, 12) + [13] * 7)  # 4 blocks
    assert m.usage()["FullAttention"]["free"] == 0
    m.free(0)
    m.free(1)
    assert m.free_queue().tolist() == [10, 6, 5, 4, 3, 2, 1, 9, 8, 7]
    # a hit on the first two blocks, 3 more tokens: one new block, from the head
    assert run(m, 2, first[:32] + [20, 21, 22]) == 32
    assert m.block_table(2).tolist() == [1, 2, 10]
    assert m.free_queue().tolist() == [6, 5, 4, 3, 9, 8, 7]


def test_evicted_block_loses_its_hash():
    # mirrors test_prefix_caching.py::test_hash_block_correct_reuse
    m = full(2)
    run(m, 0, blocks_of(0))
    assert m.block_info(1)["cached"]
    m.free(0)
    assert m.free_queue().tolist() == [2, 1]  # the cached block went to the tail
    assert run(m, 1, [5] * 20) == 0  # takes 2, then 1 (evicted) for the partial second block
    assert m.block_table(1).tolist() == [2, 1]
    info = m.block_info(1)
    assert info["hash"] is None and info["ref_count"] == 1  # the old hash went with the eviction
    assert m.find_prefix(blocks_of(0) + [1])["n_tokens"] == 0
    assert m.prefix_stats()["evictions"] == 1


def test_computed_blocks_not_evicted():
    # mirrors test_prefix_caching.py::test_computed_blocks_not_evicted
    m = full(2)
    a, b = blocks_of(0), blocks_of(1)
    run(m, 0, a)
    run(m, 1, b)
    m.free(0)
    m.free(1)
    assert m.free_queue().tolist() == [1, 2]
    # a's block is hit, so b's (behind it in the queue) is the one evicted
    assert run(m, 2, a + blocks_of(2)) == 16
    assert m.block_table(2).tolist() == [1, 2]
    assert m.find_prefix(b + [0])["n_tokens"] == 0


def test_caching_disabled_allocates_by_count_only():
    # mirrors test_prefix_caching.py::test_basic_prefix_caching_disabled
    m = kvcache.Manager([[entry(4)]], block_num=5, max_model_len=8192)
    prompt = list(range(10))
    assert m.find_prefix(prompt)["n_tokens"] == 0
    assert m.allocate_slots(1, 0, 10, prompt=prompt)
    assert m.block_table(1).tolist() == [1, 2, 3]
    m.free(1)
    # ours, documented: with caching off freed blocks join the tail in table
    # order (vLLM's latest pool reuses them last-freed first); vLLM asserts
    # only the count here
    assert m.free_queue().tolist() == [4, 1, 2, 3]
    assert m.find_prefix(list(range(16)))["n_tokens"] == 0
    assert m.allocate_slots(2, 0, 16, prompt=list(range(16)))
    assert len(m.block_table(2)) == 4
    assert not m.allocate_slots(3, 0, 4, prompt=list(range(4)))
    assert not m.has_request(3)


def test_partial_blocks_are_not_cached():
    # mirrors test_prefix_caching.py::test_cache_blocks (only full blocks are cached)
    m = full(10, block_size=4)
    tokens = list(range(14))
    assert m.allocate_slots(0, 0, 14, prompt=tokens)
    m.cache_computed(0, tokens[:8])  # two blocks computed so far
    assert [m.block_info(b)["cached"] for b in (1, 2, 3, 4)] == [True, True, False, False]
    m.cache_computed(0, tokens)  # 14 tokens: block 3 fills, block 4 holds 2
    assert [m.block_info(b)["cached"] for b in (1, 2, 3, 4)] == [True, True, True, False]
    assert m.prefix_stats()["cached_blocks"] == 3


def test_cache_salt_isolates_tenants():
    # mirrors test_prefix_caching.py::test_cache_key_salting
    m = full(20)
    prompt = blocks_of(0, 1, 2) + [3] * 5
    run(m, 0, prompt, salt="salt1")
    m.free(0)
    assert m.find_prefix(prompt, cache_salt="salt1")["n_tokens"] == 48
    assert m.find_prefix(prompt, cache_salt="salt2")["n_tokens"] == 0
    assert m.find_prefix(prompt)["n_tokens"] == 0
    run(m, 1, prompt, salt="salt2")
    # the same tokens under two salts: different chains from the first block on
    hashes = {m.block_info(b)["hash"] for b in (1, 2, 3, 5, 6, 7)}
    assert len(hashes) == 6


def test_no_space_with_hit_changes_nothing():
    # mirrors test_prefix_caching.py::test_prefill_not_enough_free_blocks_with_computed_blocks
    m = full(10)
    common = blocks_of(0, 1, 2)
    run(m, 0, common + [3] * 7)
    m.free(0)
    queue = m.free_queue().tolist()
    # the hit's 3 free blocks count against the pool: 3 + 8 new > 10
    hit = m.find_prefix(common + [4] * 120)
    assert hit["n_tokens"] == 48
    assert not m.allocate_slots(1, 48, 120, prompt=common + [4] * 120, hit=hit)
    assert m.free_queue().tolist() == queue and m.block_info(1)["ref_count"] == 0
    # 3 + 7 new fits exactly
    assert run(m, 2, common + [4] * 100) == 48
    assert m.usage()["FullAttention"]["free"] == 0


def test_lookahead_tokens_get_slots():
    # mirrors test_prefix_caching.py::test_allocate_with_lookahead
    m = full(10, block_size=4)
    prompt = [1, 2, 3]
    assert m.allocate_slots(0, 0, 3, lookahead_tokens=2, prompt=prompt)  # 5 slots
    assert len(m.block_table(0)) == 2
    m.free(0)
    assert m.allocate_slots(1, 0, 3, lookahead_tokens=6, prompt=prompt)  # 9 slots
    assert len(m.block_table(1)) == 3
    m.free(1)
    # lookahead slots are not cached: only computed tokens are
    assert m.allocate_slots(2, 0, 4, lookahead_tokens=4, prompt=[1, 2, 3, 4])
    m.cache_computed(2, [1, 2, 3, 4])
    assert m.prefix_stats()["cached_blocks"] == 1


def hybrid(blocks, window_blocks=2):
    sw = entry(attn_type="SlidingWindow", sliding_window=window_blocks * BS)
    return kvcache.Manager([[entry()], [sw]], block_num=blocks + 1, max_model_len=8192, prefix_caching=True)


def test_hybrid_full_and_sliding_hit():
    # mirrors test_prefix_caching.py::test_prefill_hybrid_model (full + sliding
    # window of 2 blocks). Ours: each key has its own pool here (vLLM shares
    # one), so both keys number their blocks from 1.
    m = hybrid(10)
    common = blocks_of(0, 1, 2)
    assert run(m, 0, common + [3] * 7) == 0
    tables = {k: v.tolist() for k, v in m.block_tables(0).items()}
    assert tables == {"FullAttention": [1, 2, 3, 4], "SlidingWindow": [1, 2, 3, 4]}
    hit = m.find_prefix(common + [3] * 5)
    # 48 tokens: the window needs blocks 1 and 2 only; entry 0 is a null block
    assert hit["n_tokens"] == 48
    assert hit["entries"] == {"FullAttention": 3, "SlidingWindow": 3}
    assert hit["cached"] == {"FullAttention": 3, "SlidingWindow": 2}
    assert m.allocate_slots(1, 48, 5, prompt=common + [3] * 5, hit=hit)
    tables = {k: v.tolist() for k, v in m.block_tables(1).items()}
    assert tables == {"FullAttention": [1, 2, 3, 5], "SlidingWindow": [0, 2, 3, 5]}
    assert m.block_info(1, "SlidingWindow")["ref_count"] == 1  # request 0's only
    assert [m.block_info(b, "SlidingWindow")["ref_count"] for b in (2, 3)] == [2, 2]


def test_sliding_window_gives_back_blocks_behind_the_window():
    # mirrors test_single_type_kv_cache_manager.py::test_sliding_window_remove_skipped_blocks
    m = hybrid(10)
    tokens = blocks_of(0, 1, 2) + [3] * 7
    run(m, 0, tokens)
    # once 55 tokens are computed the next query reads 24 .. 55: block 0 left the window
    assert m.allocate_slots(0, 55, 1)
    assert m.block_table(0, "SlidingWindow").tolist() == [0, 2, 3, 4]
    info = m.block_info(1, "SlidingWindow")
    assert info["free"] and info["cached"]  # cached, so at the tail of the queue
    assert m.free_queue("SlidingWindow").tolist()[-1] == 1
    tokens.append(5)
    m.cache_computed(0, tokens)
    m.free(0)
    # the window's table had a null entry: only real blocks come back
    assert m.usage()["SlidingWindow"]["free"] == 10


def test_clear_while_blocks_are_held():
    # mirrors test_prefix_caching.py::test_reset_prefix_cache. vLLM refuses
    # (returns False) while any block is held; ours, documented, empties every
    # index at once: held blocks stay with their requests, uncached.
    m = full(10, kv_events=64)
    prompt = blocks_of(0, 1) + [2] * 3
    run(m, 0, prompt)
    m.drain_kv_events()
    m.clear_prefix_cache()
    assert m.block_table(0).tolist() == [1, 2, 3]
    assert not m.block_info(1)["cached"] and m.block_info(1)["ref_count"] == 1
    assert m.find_prefix(prompt)["n_tokens"] == 0
    assert m.drain_kv_events()[0] == [{"type": "cleared", "key": None, "block": 0, "tokens": 0, "hash": None,
                                       "parent": None}]
    m.free(0)  # nothing is cached any more: all three go to the head, last block first
    assert m.free_queue().tolist()[:3] == [3, 2, 1]
    m.check()


def test_kv_events_stored_removed_cleared():
    # mirrors test_prefix_caching.py::test_kv_cache_events. Ours, documented:
    # one stored event per block (vLLM: one per batch of blocks, with their
    # token ids); removed when a cached block is handed out for new data.
    m = full(3, kv_events=64)
    prompt = blocks_of(0, 1) + [2] * 3
    run(m, 0, prompt)
    events, lost = m.drain_kv_events()
    assert lost == 0 and [(e["type"], e["block"], e["tokens"]) for e in events] == [("stored", 1, 16),
                                                                                   ("stored", 2, 16)]
    assert events[1]["parent"] == events[0]["hash"]
    m.free(0)
    run(m, 1, [9] * 40)  # takes 3 (uncached, head), then 2 and 1: both evicted
    events, _ = m.drain_kv_events()
    removed = [(e["block"], e["hash"]) for e in events if e["type"] == "removed"]
    assert [b for b, _ in removed] == [2, 1]
    m.free(1)
    m.clear_prefix_cache()
    events, _ = m.drain_kv_events()
    assert [e["type"] for e in events] == ["cleared"]


def test_hybrid_hit_shrinks_with_an_evicted_window_block():
    # mirrors the eviction cases of test_prefix_caching.py::test_prefill_hybrid_model:
    # losing the last cached block of either key drops the common hit to 2 blocks
    m = hybrid(10)
    common = blocks_of(0, 1, 2)
    run(m, 0, common + [3] * 7)
    m.free(0)
    assert m.free_queue("SlidingWindow").tolist() == [4, 5, 6, 7, 8, 9, 10, 3, 2, 1]
    query = common + [3] * 5
    assert m.find_prefix(query)["n_tokens"] == 48
    # a request of the sliding key alone takes 8 blocks: the last, 3, is the prompt's third block
    assert m.allocate_slots(9, 0, 8 * BS, keys=["SlidingWindow"])
    hit = m.find_prefix(query)
    assert hit["n_tokens"] == 32 and hit["cached"] == {"FullAttention": 2, "SlidingWindow": 2}
    m.free(9)
    assert m.allocate_slots(10, 0, 8 * BS, keys=["FullAttention"])  # now the full key loses its block 3
    assert m.find_prefix(query)["n_tokens"] == 32
    m.check()


def test_full_and_mamba_hit_needs_a_snapshot():
    # mirrors the "2g-full+mamba" case of test_prefix_caching.py::
    # test_prefill_hybrid_model_combinations. vLLM's Mamba manager keeps a
    # state at every block boundary, so a 55-token prefill in one step gives
    # a 48-token hit. Ours, documented: a state is kept only where a step
    # ends at a snapshot position (as vLLM's "align" mode, whose scheduler
    # ends chunks there), so the same prefill gives no hit, and a prefill
    # chunked at 48 gives the 48-token hit.
    ssm = {"name": "ssm", "attn_type": "Mamba", "shape": [8], "block_size": 1}
    m = kvcache.Manager([[entry()], [ssm]], block_num=11, max_model_len=8192, prefix_caching=True,
                        state_snapshot_interval=BS)
    prompt = blocks_of(0, 1, 2) + [3] * 7
    query = prompt[:48] + [3] * 5
    run(m, 0, prompt)
    m.free(0)
    assert m.find_prefix(query)["n_tokens"] == 0
    assert m.allocate_slots(1, 0, 48, prompt=prompt)
    m.cache_computed(1, prompt[:48])
    assert m.allocate_slots(1, 48, 7)
    m.cache_computed(1, prompt)
    m.free(1)
    hit = m.find_prefix(query)
    assert hit["n_tokens"] == 48 and hit["cached"] == {"FullAttention": 3, "Mamba": 1}


def test_same_content_computed_twice_indexes_the_first():
    # mirrors the duplicate-block cases of test_prefix_caching.py (BlockHashToBlockMap
    # keeps every block under a hash). Ours, documented: the first block indexed
    # stays the cached copy and the other stays private, so when freed it is
    # uncached and goes to the head.
    m = full(10)
    prompt = blocks_of(0, 1) + [2] * 3
    for rid in (0, 1):  # both admitted before either is computed: two misses
        assert m.find_prefix(prompt)["n_tokens"] == 0
        assert m.allocate_slots(rid, 0, len(prompt), prompt=prompt)
    m.cache_computed(0, prompt)
    m.cache_computed(1, prompt)
    assert [m.block_info(b)["cached"] for b in (1, 2, 4, 5)] == [True, True, False, False]
    m.free(0)
    m.free(1)
    assert m.free_queue().tolist() == [6, 5, 4, 3, 7, 8, 9, 10, 2, 1]
    assert m.find_prefix(prompt)["n_tokens"] == 32
