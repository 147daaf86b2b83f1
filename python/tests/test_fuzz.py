"""Light fuzzing of the binding's argument checking (hypothesis): any
argument values give a result or a kvcache.Error, never another exception or
a crash, and a refused call leaves the object unchanged."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvcache
from conftest import DATA

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
wide = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-3, 300), st.integers(2**63, 2**70))
CONFIG = (DATA / "configs" / "gpt-oss-20b.json").read_text()


@FUZZ
@given(tp=wide, block_size=wide, max_model_len=wide, max_concurrency=wide, next_n=wide,
       kv_memory=st.one_of(st.none(), wide, st.text(max_size=8)))
def test_plan_options(tp, block_size, max_model_len, max_concurrency, next_n, kv_memory):
    try:
        p = kvcache.plan(__import__("json").loads(CONFIG), tp=tp, block_size=block_size, max_model_len=max_model_len,
                         max_concurrency=max_concurrency, next_n=next_n, kv_memory=kv_memory)
    except kvcache.Error as e:
        assert e.message
        return
    assert p["block_size"] == block_size


ops = st.lists(st.tuples(st.sampled_from(["alloc", "free"]), st.integers(-2, 6), wide, wide, st.integers(-1, 40),
                         st.integers(-1, 40)), max_size=25)


@FUZZ
@given(ops=ops)
def test_manager_calls(ops):
    m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}],
                         [{"name": "k", "num_head": 1, "dim": 8, "block_size": 4, "attn_type": "SlidingWindow",
                           "sliding_window": 6}]], block_num=12, max_model_len=40)
    for op, rid, computed, new, look, reserved in ops:
        before = {k: m.block_table(max(rid, 0), k).tolist() for k in m.keys}
        try:
            if op == "alloc":
                m.allocate_slots(rid, computed, new, look, reserved)
            else:
                m.free(rid)
        except kvcache.Error:
            assert before == {k: m.block_table(max(rid, 0), k).tolist() for k in m.keys}
        m.check()


@FUZZ
@given(mode=st.integers(-3, 8), scale=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()),
       pre=st.one_of(st.none(), wide), nxt=st.one_of(st.none(), wide),
       q_lens=st.one_of(st.none(), st.lists(st.integers(-2, 6), min_size=0, max_size=3)),
       kv_lens=st.one_of(st.none(), st.lists(st.integers(-2, 9), min_size=0, max_size=3)),
       bidirectional=st.booleans())
def test_attention_scalars(mode, scale, pre, nxt, q_lens, kv_lens, bidirectional):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 2, 8)).astype(np.float32)
    k = rng.standard_normal((2, 5, 1, 8)).astype(np.float32)
    try:
        out = kvcache.attention(q, k, k, sparse_mode=mode, scale=scale, pre_tokens=pre, next_tokens=nxt,
                                q_lens=q_lens, kv_lens=kv_lens, bidirectional=bidirectional)
    except kvcache.Error as e:
        assert e.message
        return
    assert out.shape == q.shape


@FUZZ
@given(nq=st.one_of(st.none(), wide), nkv=st.one_of(st.none(), wide), batch=st.integers(0, 2),
       layout=st.sampled_from(["BSND", "BSH"]))
def test_attention_head_counts(nq, nkv, batch, layout):
    q = np.zeros((batch, 3, 2, 8), dtype=np.float32)
    if layout == "BSH":
        q = q.reshape(batch, 3, 16)
    try:
        out = kvcache.attention(q, q, q, layout=layout, num_heads=nq, num_kv_heads=nkv)
    except kvcache.Error as e:
        assert e.message
        return
    assert out.shape == q.shape


@FUZZ
@given(layer=wide, name=st.text(max_size=6), key=st.text(max_size=6))
def test_description_layer_and_names(layer, name, key):
    try:
        m = kvcache.Manager([{"layer": layer, "caches": [{"name": name, "num_head": 1, "dim": 8, "block_size": 4,
                                                           "manager_key": key}]}], block_num=4, max_model_len=8)
    except kvcache.Error as e:
        assert e.message
        return
    assert "\0" not in name + key and m.keys == [m.keys[0]]


@FUZZ
@given(slots=st.lists(st.integers(-3, 40), min_size=0, max_size=6))
def test_write_slots(slots):
    cache = np.zeros((4, 4, 1, 8), dtype=np.float32)
    upd = np.ones((len(slots), 1, 8), dtype=np.float32)
    try:
        kvcache.write_slots(cache, upd, np.array(slots, dtype=np.int64))
    except kvcache.Error:
        assert not cache.any()  # all slots are checked before any write
        return
    assert cache.sum() == 8 * len({s for s in slots if s >= 0})
