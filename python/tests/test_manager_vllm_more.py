"""More scenarios of vLLM v1's KV cache manager tests, replayed on
kvcache.Manager (the first set is test_manager_vllm_scenarios.py, whose
docstring explains the one API difference that runs through all of them:
a block is indexed when the caller reports it computed). Each test names
the vLLM test it follows (tests/v1/core/test_prefix_caching.py,
test_single_type_kv_cache_manager.py, test_kv_cache_utils.py and the
scheduler's preemption tests); where our documented behaviour differs
(docs/prefix-caching.md, "Where we differ from vLLM") the test asserts ours
and says so."""
import kvcache

BS = 16


def entry(block_size=BS, **kw):
    return {"name": "k", "num_head": 1, "dim": 8, "block_size": block_size, **kw}


def manager(layers, blocks, **kw):
    """`blocks` usable blocks per key (the null block is added)."""
    return kvcache.Manager(layers, block_num=blocks + 1, max_model_len=8192, prefix_caching=True, **kw)


def full(blocks, block_size=BS, **kw):
    return manager([[entry(block_size)]], blocks, **kw)


def sliding(window, block_size=BS, key=None):
    extra = {"manager_key": key} if key else {}
    return entry(block_size, attn_type="SlidingWindow", sliding_window=window, **extra)


def blocks_of(*ids):
    return [i for i in ids for _ in range(BS)]


def run(m, rid, tokens, salt=None):
    """Admits a request with the hit the manager finds and computes its
    whole prompt in one step; returns the hit length."""
    hit = m.find_prefix(tokens, cache_salt=salt)
    assert m.allocate_slots(rid, hit["n_tokens"], len(tokens) - hit["n_tokens"], prompt=tokens, cache_salt=salt,
                            hit=hit)
    m.cache_computed(rid, tokens)
    return hit["n_tokens"]


def refs(m, ids, key=None):
    return [m.block_info(b, key)["ref_count"] for b in ids]


def evict_cached(m, key, n):
    """Hands out the first n cached free blocks of a key for new data (and
    every uncached free block in front of them), then gives them back
    uncached: the index loses exactly those n blocks."""
    u = m.usage()[key]
    in_front = u["free"] - u["cached_free"]
    assert m.allocate_slots(999, 0, (in_front + n) * m.usage()[key]["block_size"], keys=[key])
    m.free(999)
    assert m.usage()[key]["cached_free"] == u["cached_free"] - n


def test_refused_hit_leaves_held_and_free_blocks_alone():
    # test_prefix_caching.py::test_prefill_not_enough_free_blocks_with_computed_blocks:
    # a hit of 6 blocks, 3 held by a running request and 3 free, plus 3 new
    # blocks, does not fit 5 free blocks; nothing may change
    m = full(10)
    common = blocks_of(0, 1, 2)
    assert run(m, 0, common) == 0
    assert m.block_table(0).tolist() == [1, 2, 3]
    assert run(m, 1, common * 2) == 48  # the query's cap is 95 tokens: 5 blocks, 3 cached
    assert m.block_table(1).tolist() == [1, 2, 3, 4, 5, 6]
    m.free(1)
    assert refs(m, [1, 2, 3, 4, 5, 6]) == [1, 1, 1, 0, 0, 0]
    run(m, 2, [7] * 32)
    assert m.usage()["FullAttention"]["free"] == 5
    stats, queue = m.prefix_stats(), m.free_queue().tolist()
    hit = m.find_prefix(common * 3)
    assert hit["n_tokens"] == 96 and hit["cached"] == {"FullAttention": 6}
    assert not m.allocate_slots(3, 96, 48, prompt=common * 3, hit=hit)
    assert refs(m, [1, 2, 3, 4, 5, 6]) == [1, 1, 1, 0, 0, 0]
    assert m.free_queue().tolist() == queue and not m.has_request(3)
    assert m.prefix_stats() == stats  # a refused admission is not counted
    # the refusal did not use up the hit: once there is room it is taken as found
    m.free(2)
    assert m.allocate_slots(3, 96, 48, prompt=common * 3, hit=hit)
    assert m.block_table(3).tolist()[:6] == [1, 2, 3, 4, 5, 6]
    assert refs(m, [1, 2, 3, 4, 5, 6]) == [2, 2, 2, 1, 1, 1]
    assert m.prefix_stats()["hits"] == stats["hits"] + 1
    m.check()


def hybrid(blocks=10, window_blocks=2):
    return manager([[entry()], [sliding(window_blocks * BS)]], blocks)


def hybrid_after_prefill():
    m = hybrid()
    common = blocks_of(0, 1, 2)
    run(m, 0, common + [3] * 7)
    m.free(0)
    return m, common + [3] * 5


def touch_window(m, query):
    """A request takes the hit and is freed uncomputed: the sliding key's
    window blocks (logical 1 and 2) move to the tail of its queue, behind
    logical block 0; the full key's blocks go back as before."""
    hit = m.find_prefix(query)
    assert m.allocate_slots(50, hit["n_tokens"], len(query) - hit["n_tokens"], prompt=query, hit=hit)
    m.free(50)


def test_hybrid_hit_after_evicting_blocks_of_one_key():
    # test_prefix_caching.py::test_prefill_hybrid_model, its
    # _test_partial_request_hit cases (full + sliding window of 2 blocks,
    # three cached blocks 1, 2, 3 in each key, hit 48 tokens before eviction)
    fa, sw = "FullAttention", "SlidingWindow"
    # the sliding key's block 0 is outside the window at 48: the hit stays
    m, query = hybrid_after_prefill()
    touch_window(m, query)
    assert m.free_queue(sw).tolist()[-3:] == [1, 3, 2]
    evict_cached(m, sw, 1)
    assert not m.block_info(1, sw)["cached"] and m.block_info(2, sw)["cached"]
    assert m.find_prefix(query)["n_tokens"] == 48
    # losing the full key's first block is a complete miss
    m, query = hybrid_after_prefill()
    touch_window(m, query)  # the full key's queue ends 3, 2, 1 again
    evict_cached(m, fa, 2)
    evict_cached(m, fa, 1)
    assert [m.block_info(b, fa)["cached"] for b in (1, 2, 3)] == [False, False, False]
    assert m.find_prefix(query)["n_tokens"] == 0
    # the last block of either key: 32
    for key in (fa, sw):
        m, query = hybrid_after_prefill()
        evict_cached(m, key, 1)
        assert not m.block_info(3, key)["cached"]
        assert m.find_prefix(query)["n_tokens"] == 32
    # the full key keeps 2 blocks, the sliding key loses block 0: at 32 the
    # window needs blocks 0 and 1, so no length suits both keys
    m, query = hybrid_after_prefill()
    touch_window(m, query)
    evict_cached(m, sw, 1)
    evict_cached(m, fa, 1)
    assert m.find_prefix(query)["n_tokens"] == 0
    m.check()


def window_only(window=4, block_size=2, blocks=40):
    return manager([[sliding(window, block_size)]], blocks)


def cache_pair(m, rid, tokens, j):
    """Caches exactly logical blocks j - 1 and j (block size 2, window 4):
    a request opened with 2j + 1 computed tokens backs only the blocks its
    window reads, and reporting the tokens indexes those."""
    assert m.allocate_slots(rid, 2 * j + 1, 1)
    assert m.block_table(rid).tolist()[:j - 1] == [0] * (j - 1)
    m.cache_computed(rid, tokens[:2 * j + 2])
    m.free(rid)


def test_sliding_window_hit_needs_only_the_window():
    # test_single_type_kv_cache_manager.py::test_sliding_window_possible_cached_prefix
    # (window 4, blocks of 2: a hit of L needs blocks (L - 3) // 2 .. L / 2 - 1)
    tokens = list(range(100, 124))  # 12 blocks
    m = window_only()
    for rid, j in enumerate((1, 7, 11)):  # cached: 0, 1, 6, 7, 10, 11
        cache_pair(m, rid, tokens, j)
    sw = "SlidingWindow"
    hit = m.find_prefix(tokens + [0])
    assert hit["n_tokens"] == 24 and hit["entries"][sw] == 12 and hit["cached"][sw] == 2
    assert m.find_prefix(tokens[:22] + [0])["n_tokens"] == 16  # 9, 8 missing: down to 6, 7
    assert m.find_prefix(tokens)["n_tokens"] == 16  # the cap of 23 tokens leaves 11 blocks
    assert m.find_prefix(tokens[:3])["n_tokens"] == 2  # one block, inside the window
    assert m.find_prefix(tokens[:10] + [0])["n_tokens"] == 4
    # a block missing inside the window: [cached, missing, cached, cached]
    m = window_only()
    cache_pair(m, 0, tokens, 1)
    cache_pair(m, 1, tokens, 3)
    evict_cached(m, sw, 1)  # the oldest cached free block: logical 1
    assert [m.find_prefix(tokens[:n] + [0])["n_tokens"] for n in (8, 6, 4, 2)] == [8, 2, 2, 2]
    # the chain is checked through the parent hashes: the same two blocks
    # after another first block are not a hit
    other = [7, 7] + tokens[2:]
    assert m.find_prefix(other[:8] + [0])["n_tokens"] == 0
    m.check()


def test_sliding_window_and_chunk_give_back_blocks_step_by_step():
    # test_single_type_kv_cache_manager.py::test_sliding_window_remove_skipped_blocks
    # and test_chunked_local_attention_remove_skipped_blocks (blocks of 2,
    # window 4 / chunk 4, 11 blocks)
    m = window_only(blocks=11)
    assert m.allocate_slots(0, 0, 22)
    ids = m.block_table(0).tolist()
    assert ids == list(range(1, 12))
    expect = {0: 0, 4: 0, 5: 1, 6: 1, 7: 2, 11: 4}  # computed tokens -> null entries
    for computed, nulls in expect.items():
        assert m.allocate_slots(0, computed, 0)
        assert m.block_table(0).tolist() == [0] * nulls + ids[nulls:]
    # blocks 3 and 4 (logical 2, 3) left together: the later one first, at
    # the head (nothing was reported computed, so nothing is cached)
    assert m.free_queue().tolist()[:4] == [4, 3, 2, 1]
    cl = manager([[entry(2, attn_type="ChunkedLocal", attention_chunk_size=4)]], 11)
    assert cl.allocate_slots(0, 0, 22)
    for computed, nulls in {0: 0, 3: 0, 4: 2, 6: 2, 12: 6}.items():
        assert cl.allocate_slots(0, computed, 0)
        assert cl.block_table(0).tolist() == [0] * nulls + ids[nulls:]
    cl.check()


def test_chunked_local_hit_rule():
    # test_single_type_kv_cache_manager.py::test_chunked_local_attention_possible_cached_prefix
    # (chunk 4, blocks of 2: a hit of L needs the blocks from floor(L / 4) * 4 / 2 on)
    tokens = list(range(200, 224))
    m = manager([[entry(2, attn_type="ChunkedLocal", attention_chunk_size=4)]], 40)
    cl = "ChunkedLocal"

    def cache(rid, computed, new):
        assert m.allocate_slots(rid, computed, new)
        m.cache_computed(rid, tokens[:computed + new])
        m.free(rid)

    cache(0, 0, 4)  # blocks 0 and 1
    assert m.find_prefix(tokens[:2] + [0])["n_tokens"] == 2  # [T]
    assert m.find_prefix(tokens[:4] + [0])["n_tokens"] == 4  # [T, T]
    assert m.find_prefix(tokens[:6] + [0])["n_tokens"] == 4  # [T, T, F]
    cache(1, 4, 2)  # block 2 alone: its chunk starts at 4
    hit = m.find_prefix(tokens[:6] + [0])
    assert hit["n_tokens"] == 6 and hit["entries"][cl] == 3 and hit["cached"][cl] == 1  # [T, T, T]
    # [T, T, T, F]: vLLM takes 8 (the chunk of the query at 8 starts there, so
    # no cached block is needed); ours, documented, ends a hit on a cached
    # block, which only a model of chunked layers alone would notice
    assert m.find_prefix(tokens[:8] + [0])["n_tokens"] == 6
    cache(2, 16, 2)  # block 8 alone; 3 .. 7 are not cached
    assert m.find_prefix(tokens[:18] + [1])["n_tokens"] == 18  # [.., T]: 9 entries, 8 null
    assert m.find_prefix(tokens[:18] + [1])["cached"][cl] == 1
    m.check()


def test_stored_event_parent_behind_a_null_block():
    # test_prefix_caching.py::test_null_parent_block_hash: the first block a
    # sliding key stores after its null entries names its logical parent's
    # hash, not the null block's (none) nor the seed
    m = manager([[entry()], [sliding(2 * BS)]], 10, kv_events=64)
    prompt = blocks_of(0, 1, 2, 3) + [9]
    # 48 tokens come from a connector: the sliding key backs from block 1 on
    assert m.allocate_slots(0, 0, len(prompt) - 48, prompt=prompt, num_external_computed_tokens=48)
    assert m.block_table(0, "SlidingWindow").tolist() == [0, 1, 2, 3, 4]
    m.cache_computed(0, prompt)
    events, lost = m.drain_kv_events()
    assert lost == 0
    fa = [e for e in events if e["key"] == "FullAttention"]
    sw = [e for e in events if e["key"] == "SlidingWindow"]
    assert len(fa) == 4 and [e["block"] for e in sw] == [1, 2, 3]  # logical 1, 2, 3
    assert sw[0]["parent"] == fa[0]["hash"]
    assert [e["hash"] for e in sw] == [e["hash"] for e in fa[1:]]
    assert [e["parent"] for e in sw[1:]] == [e["hash"] for e in sw[:-1]]


def test_events_when_the_same_content_is_computed_again():
    # test_prefix_caching.py::test_kv_cache_events (2, 3 and 10 blocks to
    # cache; the pool holds exactly those): the second request takes no hit,
    # so every cached block is removed before the same hashes are stored again
    for n in (2, 3, 10):
        m = full(n, kv_events=64)
        tokens = list(range(n * BS))
        assert m.allocate_slots(0, 0, n * BS, prompt=tokens)
        m.cache_computed(0, tokens)
        first, _ = m.drain_kv_events()
        assert [e["type"] for e in first] == ["stored"] * n
        assert m.prefix_stats()["cached_blocks"] == n
        m.free(0)
        assert m.usage()["FullAttention"]["cached_free"] == n
        assert m.allocate_slots(1, 0, n * BS, prompt=tokens)
        m.cache_computed(1, tokens)
        events, lost = m.drain_kv_events()
        assert lost == 0 and [e["type"] for e in events] == ["removed"] * n + ["stored"] * n
        assert {e["hash"] for e in events[:n]} == {e["hash"] for e in first}
        assert [e["hash"] for e in events[n:]] == [e["hash"] for e in first]
        assert m.prefix_stats()["cached_blocks"] == n and m.prefix_stats()["evictions"] == n
        m.free(1)
        m.clear_prefix_cache()
        events, _ = m.drain_kv_events()
        assert [e["type"] for e in events] == ["cleared"] and m.prefix_stats()["cached_blocks"] == 0
        assert m.usage()["FullAttention"]["cached_free"] == 0


def test_lru_across_requests_and_hits():
    # test_prefix_caching.py::test_evict and test_computed_blocks_not_evicted:
    # the least recently freed blocks go first, and a hit renews a block
    m = full(10)
    a, b, c = blocks_of(1, 2, 3), blocks_of(4, 5, 6), blocks_of(7, 8, 9)
    for rid, p in enumerate((a, b, c)):
        run(m, rid, p)
    for rid in range(3):
        m.free(rid)
    assert m.free_queue().tolist() == [10, 3, 2, 1, 6, 5, 4, 9, 8, 7]
    assert run(m, 3, a + [0]) == 48  # takes 1, 2, 3 from the middle and 10 from the head
    m.free(3)
    assert m.free_queue().tolist() == [10, 6, 5, 4, 9, 8, 7, 3, 2, 1]
    # b is now the oldest: a miss of 4 blocks takes 10 and b's blocks, from its end
    run(m, 4, [42] * 64)
    assert m.block_table(4).tolist() == [10, 6, 5, 4]
    assert m.find_prefix(b + [0])["n_tokens"] == 0
    assert m.find_prefix(a + [0])["n_tokens"] == 48 and m.find_prefix(c + [0])["n_tokens"] == 48
    # nothing leaks (test_scheduler.py::test_memory_leak): every block is
    # free again, and every indexed block is a free one
    m.free(4)
    u = m.usage()["FullAttention"]
    assert u["free"] == 10 and u["cached_free"] == m.prefix_stats()["cached_blocks"] == 10
    m.check()


def test_preempted_request_readmitted_with_its_generated_blocks():
    # test_scheduler.py's preemption cases with prefix caching: a preempted
    # request is freed and admitted again with prompt + generated tokens; its
    # blocks filled during decode were cached, so the hit covers them
    m = full(10)
    tokens = blocks_of(0, 1, 2) + [3] * 7
    run(m, 0, tokens)
    while len(tokens) < 70:  # decode to 70 computed tokens: block 4 fills at 64
        assert m.allocate_slots(0, len(tokens), 1)
        tokens.append(len(tokens))
        m.cache_computed(0, tokens)
    assert m.block_table(0).tolist() == [1, 2, 3, 4, 5]
    m.free(0)  # preempted: the partial block 5 to the head, 4 .. 1 to the tail
    assert m.free_queue().tolist()[0] == 5 and m.free_queue().tolist()[-4:] == [4, 3, 2, 1]
    resumed = tokens + [77]  # the token sampled before preemption is not computed yet
    assert run(m, 0, resumed) == 64
    assert m.block_table(0).tolist() == [1, 2, 3, 4, 5]
    assert m.prefix_stats()["queries"] == 2 and m.prefix_stats()["hit_tokens"] == 64
    m.check()


def test_full_and_mamba_preemption_resumes_from_the_last_snapshot():
    # test_prefix_caching.py's mamba combinations with preemption: a request
    # chunked at snapshot positions (every 16 tokens) leaves a snapshot at
    # each; preempted at 70 tokens, it resumes from the one at 64
    ssm = {"name": "ssm", "attn_type": "Mamba", "shape": [8], "block_size": 1}
    m = manager([[entry()], [ssm]], 12, state_snapshot_interval=BS)
    prompt = list(range(55))
    done = 0
    for step in (16, 16, 16, 7):
        assert m.allocate_slots(0, done, step, prompt=prompt if done == 0 else None)
        done += step
        m.cache_computed(0, prompt[:done])
        assert m.state_source(0, "Mamba") == 0  # a step's copy source is released once it is computed
    tokens = list(prompt)
    while len(tokens) < 70:
        assert m.allocate_slots(0, len(tokens), 1)
        tokens.append(1000 + len(tokens))
        m.cache_computed(0, tokens)
    m.free(0)
    assert m.find_prefix(tokens[:50])["n_tokens"] == 48
    hit = m.find_prefix(tokens + [5])
    assert hit["n_tokens"] == 64 and hit["cached"] == {"FullAttention": 4, "Mamba": 1}
    assert m.allocate_slots(0, 64, 7, prompt=tokens + [5], hit=hit)
    source = m.state_source(0, "Mamba")
    assert source != 0 and m.block_info(source, "Mamba")["cached"]
    assert source not in m.block_table(0, "Mamba").tolist()
    m.cache_computed(0, tokens + [5])
    assert m.state_source(0, "Mamba") == 0 and m.block_info(source, "Mamba")["free"]
    m.check()


def test_hybrid_combinations_share_the_prefix():
    # test_prefix_caching.py::test_prefill_hybrid_model_combinations: the
    # second prompt sharing 3 blocks hits 48 tokens in every combination (a
    # Mamba key needs its first prefill to stop at the snapshot, 48)
    specs = {
        "full": entry(),
        "sw": sliding(2 * BS, key="sw"),
        "sw_large": sliding(4 * BS, key="sw_large"),
        "mamba": {"name": "ssm", "attn_type": "Mamba", "shape": [4], "block_size": 1},
    }
    combos = [["full", "sw"], ["full", "mamba"], ["sw", "mamba"], ["sw", "sw_large"], ["full", "sw", "mamba"],
              ["full", "sw", "sw_large"], ["sw", "mamba", "sw_large"]]
    common = blocks_of(0, 1, 2)
    prompt = common + [3] * 7
    for combo in combos:
        m = manager([[specs[s]] for s in combo], 10 * len(combo), state_snapshot_interval=BS)
        assert m.find_prefix(prompt)["n_tokens"] == 0
        assert m.allocate_slots(0, 0, 48, prompt=prompt)
        m.cache_computed(0, prompt[:48])
        assert m.allocate_slots(0, 48, 7)
        m.cache_computed(0, prompt)
        query = common + [4] * 5
        assert run(m, 1, query) == 48, combo
        m.free(0)
        m.free(1)
        m.check()


def test_hybrid_keys_with_other_block_sizes_hit_on_their_common_multiple():
    # the scheduler block size of test_prefix_caching.py (the least common
    # multiple of the groups' block sizes): full attention in blocks of 16,
    # a sliding window of 64 in blocks of 32; 55 cached tokens are 3 full
    # blocks of one key but 1 of the other, so the common hit is 32
    m = manager([[entry(16)], [sliding(64, block_size=32)]], 10)
    prompt = blocks_of(0, 1, 2) + [3] * 7
    run(m, 0, prompt)
    hit = m.find_prefix(blocks_of(0, 1, 2) + [4] * 5)
    assert hit["n_tokens"] == 32 and hit["entries"] == {"FullAttention": 2, "SlidingWindow": 1}
    # a longer shared prefix: 64 tokens are 4 and 2 blocks
    m.free(0)
    run(m, 1, blocks_of(0, 1, 2, 3) + [5] * 3)
    assert m.find_prefix(blocks_of(0, 1, 2, 3) + [6])["n_tokens"] == 64
    m.check()


def test_full_key_of_larger_blocks_bounds_the_window_hit():
    # test_prefix_caching.py::test_different_block_size: full attention in
    # blocks of 32, a window of 32 in blocks of 16; 112 of a 160-token prompt
    # computed
    m = manager([[entry(32)], [sliding(32, block_size=16)]], 20)
    common = blocks_of(*range(10))
    assert m.allocate_slots(0, 0, 7 * BS, prompt=common)
    assert [len(t) for t in m.block_tables(0).values()] == [4, 7]
    m.cache_computed(0, common[:7 * BS])
    for n in (7 * BS + 1, 6 * BS + 1):
        hit = m.find_prefix(common[:n])
        assert hit["n_tokens"] == 96 and hit["entries"] == {"FullAttention": 3, "SlidingWindow": 6}
    m.free(0)
    # the window loses blocks 6 and 5: it would take 80, which is not a
    # whole number of the full key's blocks, so both settle on 64
    evict_cached(m, "SlidingWindow", 2)
    hit = m.find_prefix(common[:7 * BS + 1])
    assert hit["n_tokens"] == 64 and hit["entries"] == {"FullAttention": 2, "SlidingWindow": 4}
    m.check()


def test_usage_and_hit_statistics():
    # test_kv_cache_utils.py::test_metrics and the free-block counts of
    # test_prefix_caching.py: usage follows holders, cached free blocks are
    # counted apart, and the statistics count admissions, not queries
    m = full(10)
    prompt = blocks_of(0, 1, 2) + [3] * 7
    run(m, 0, prompt)
    u = m.usage()["FullAttention"]
    assert (u["used"], u["free"], u["cached_free"], u["total"]) == (5, 6, 0, 11)
    m.free(0)
    u = m.usage()["FullAttention"]
    assert (u["used"], u["free"], u["cached_free"]) == (1, 10, 3)
    for _ in range(3):  # queries alone change nothing
        m.find_prefix(prompt)
    assert m.prefix_stats() == {"queries": 1, "hits": 0, "query_tokens": 55, "hit_tokens": 0, "evictions": 0,
                                "cached_blocks": 3}
    assert run(m, 1, blocks_of(0, 1) + [8] * 20) == 32
    assert m.usage()["FullAttention"]["cached_free"] == 1  # block 3 is still free and cached
    run(m, 2, [9] * (16 * 5))  # the 5 uncached free blocks are in front: no eviction yet
    assert m.prefix_stats()["evictions"] == 0 and m.usage()["FullAttention"]["cached_free"] == 1
    assert m.free_queue().tolist() == [3]
    assert m.prefix_stats()["queries"] == 3 and m.prefix_stats()["hits"] == 1
    assert m.prefix_stats()["query_tokens"] == 55 + 52 + 80 and m.prefix_stats()["hit_tokens"] == 32
    assert m.allocate_slots(2, 80, 1)  # the last free block, cached: an eviction
    assert m.prefix_stats()["evictions"] == 1 and m.prefix_stats()["cached_blocks"] == 3 + 1 + 5 - 1
    assert m.usage()["FullAttention"]["free"] == 0
    m.check()


def test_engine_salt_and_cache_salt_seed_every_hash():
    # test_kv_cache_utils.py::test_hash_block_tokens / test_request_block_hasher
    # (a hash covers the parent's hash, the block's tokens and the extra keys
    # of its request). Ours, documented: the only extra keys are the engine
    # salt and the request's cache salt (no LoRA or multimodal inputs here;
    # a caller serving several adapters puts the adapter in the cache salt).
    prompt = blocks_of(0, 1) + [2]

    def hashes(prefix_salt=0, salt=None):
        m = full(4, prefix_salt=prefix_salt)
        run(m, 0, prompt, salt)
        return [m.block_info(b)["hash"] for b in (1, 2)]

    assert hashes() == hashes()  # the same inputs, the same chain in any manager
    assert len({*hashes(), *hashes(prefix_salt=5), *hashes(salt="t"), *hashes(prefix_salt=5, salt="t")}) == 8
    # a second block equal to another prompt's second block is not a hit after another first block
    m = full(4)
    run(m, 0, prompt)
    assert m.find_prefix(blocks_of(7, 1) + [2])["n_tokens"] == 0


def test_mamba_reports_older_than_the_last_allocation():
    # vLLM's async scheduler allocates a request's next step before the
    # outputs of its current one are processed. A report (cache_computed)
    # that comes after the next allocation, or a partial report inside a
    # step, says nothing of the state block, which that step writes in
    # place: it must keep no snapshot of it, and must not release the copy
    # source the scheduled step still has to read.
    ssm = {"name": "ssm", "attn_type": "Mamba", "shape": [8], "block_size": 1}
    prompt = list(range(55))
    query = prompt[:48] + [1, 2]
    for pipelined in (True, False):
        m = manager([[entry()], [ssm]], 12, state_snapshot_interval=BS)
        assert m.allocate_slots(0, 0, 48 if pipelined else 55, prompt=prompt)
        if pipelined:
            assert m.allocate_slots(0, 48, 7)  # the next chunk, scheduled before the first is reported
        m.cache_computed(0, prompt[:48])
        state = m.block_table(0, "Mamba").tolist()[0]
        assert not m.block_info(state, "Mamba")["cached"]  # it holds (or will hold) the state at 55
        assert m.find_prefix(query)["n_tokens"] == 0
        m.cache_computed(0, prompt)
        assert m.find_prefix(query)["n_tokens"] == 0
        m.check()
    # a hit's copy source outlives a report that does not cover the step
    m = manager([[entry()], [ssm]], 12, state_snapshot_interval=BS)
    assert m.allocate_slots(0, 0, 48, prompt=prompt)
    m.cache_computed(0, prompt[:48])
    m.free(0)
    hit = m.find_prefix(prompt)
    assert hit["n_tokens"] == 48
    assert m.allocate_slots(1, 48, 7, prompt=prompt, hit=hit)
    source = m.state_source(1, "Mamba")
    assert source != 0
    m.cache_computed(1, prompt[:48])  # nothing new computed yet
    assert m.state_source(1, "Mamba") == source and m.block_info(source, "Mamba")["ref_count"] == 1
    m.cache_computed(1, prompt)
    assert m.state_source(1, "Mamba") == 0 and m.block_info(source, "Mamba")["free"]
    m.check()


def test_a_hit_is_taken_only_for_the_prompt_it_was_found_for():
    # vLLM's get_computed_blocks(request) -> allocate_slots(request, ...,
    # new_computed_blocks) keeps a hit with its request; our hit is a value,
    # so a scheduler that mixes up two requests' hits must be refused rather
    # than hand one prompt's KV to another
    m = full(10)
    a = blocks_of(0, 1, 2) + [3] * 5
    run(m, 0, a)
    m.free(0)
    hit = m.find_prefix(a)
    queue = m.free_queue().tolist()
    for other in (blocks_of(7, 1, 2) + [3] * 5, blocks_of(0, 1, 9) + [3] * 5):
        try:
            m.allocate_slots(1, 48, 5, prompt=other, hit=hit)
            raise AssertionError("another prompt's hit was taken")
        except kvcache.InvalidArgument as e:
            assert "another prompt" in str(e)
        assert not m.has_request(1) and m.free_queue().tolist() == queue
    # the same first 48 tokens with another tail: the hit is right for it
    assert m.allocate_slots(1, 48, 7, prompt=a[:48] + [8] * 7, hit=hit)
    assert m.block_table(1).tolist()[:3] == [1, 2, 3]
    # a window's hit is checked on the blocks it takes
    m = hybrid()
    run(m, 0, a)
    m.free(0)
    hit = m.find_prefix(a)
    try:
        m.allocate_slots(1, 48, 5, prompt=blocks_of(0, 1, 9) + [3] * 5, hit=hit)
        raise AssertionError("another prompt's hit was taken")
    except kvcache.InvalidArgument as e:
        assert "another prompt" in str(e) and "block 2" in str(e)
    m.check()


def test_stored_events_after_a_clear_with_held_blocks():
    # test_prefix_caching.py::test_reset_prefix_cache refuses a reset while
    # blocks are held, so vLLM's events never name a parent a clear dropped.
    # Ours clears anyway (documented): a running request's next stored block
    # names its parent, no longer cached, and a consumer must take that.
    tokens, m = [2] * 35, full(10, kv_events=64)
    assert m.allocate_slots(0, 0, 35, prompt=tokens)
    m.cache_computed(0, tokens)
    last_stored = m.drain_kv_events()[0][-1]
    m.clear_prefix_cache()
    while len(tokens) < 48:  # decode fills block 3
        assert m.allocate_slots(0, len(tokens), 1)
        tokens.append(5)
        m.cache_computed(0, tokens)
    events, _ = m.drain_kv_events()
    assert [e["type"] for e in events] == ["cleared", "stored"]
    assert events[1]["block"] == 3 and events[1]["parent"] == last_stored["hash"]
    assert m.prefix_stats()["cached_blocks"] == 1 and m.find_prefix(tokens)["n_tokens"] == 0
