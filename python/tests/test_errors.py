"""Every wrapped call's bad input raises a kvcache.Error subclass whose
message is the library's own (kvc_last_error right after the call)."""
import numpy as np
import pytest

import kvcache
from conftest import DATA
from kvcache._ffi import ffi, lib

LLAMA = DATA / "configs" / "Llama-3.1-8B.json"
QWEN3 = DATA / "oracle" / "qwen3"


def _manager():
    return kvcache.plan(LLAMA, max_model_len=64, max_concurrency=2, block_size=16).manager()


def _desc(**cache):
    return [[{"name": "k", "num_head": 1, "dim": 8, "block_size": 16, **cache}]]


_q = np.zeros((1, 2, 2, 8), dtype=np.float32)
_cache = np.zeros((2, 4, 1, 8), dtype=np.float32)
_upd = np.zeros((1, 1, 8), dtype=np.float32)

CASES = [
    ("plan missing field", lambda: kvcache.plan({"model_type": "llama"}), kvcache.InvalidArgument, "num_hidden_layers"),
    ("plan tp", lambda: kvcache.plan(LLAMA, tp=0), kvcache.InvalidArgument, "tp 0"),
    ("plan block_size", lambda: kvcache.plan(LLAMA, block_size=-3), kvcache.InvalidArgument, "block_size -3"),
    ("plan dtype", lambda: kvcache.plan(LLAMA, kv_dtype="f64"), kvcache.InvalidArgument, "\"f64\" is unknown"),
    ("plan budget", lambda: kvcache.plan(LLAMA, kv_memory="1KiB"), kvcache.OutOfMemory, "budget"),
    ("plan concurrency", lambda: kvcache.plan(LLAMA, max_concurrency=0), kvcache.InvalidArgument, "max_concurrency 0"),
    ("allocate negative", lambda: _manager().allocate_slots(1, -1, 5), kvcache.InvalidArgument, "must not be negative"),
    ("allocate padding id", lambda: _manager().allocate_slots(-1, 0, 5), kvcache.InvalidArgument, "request id -1"),
    ("unknown key", lambda: _manager().block_table(1, key="nope"), kvcache.InvalidArgument, "\"nope\" is unknown"),
    ("step empty row", lambda: _manager().step([(1, 0, 0)], True), kvcache.InvalidArgument, "num_new_tokens 0"),
    ("step repeated id", lambda: _manager().step([(1, 0, 5), (1, 0, 5)], True), kvcache.InvalidArgument, "twice"),
    ("description heads", lambda: kvcache.Manager(_desc(num_head=0), block_num=4, max_model_len=64),
     kvcache.InvalidArgument, "num_head 0"),
    ("description attn_type", lambda: kvcache.Manager(_desc(attn_type="Foo"), block_num=4, max_model_len=64),
     kvcache.InvalidArgument, "\"Foo\" is unknown"),
    ("block count key", lambda: kvcache.Manager(_desc(), block_num={"x": 4}, max_model_len=64),
     kvcache.InvalidArgument, "\"x\" matches no manager key"),
    ("max_model_len", lambda: kvcache.Manager(_desc(), block_num=4, max_model_len=0), kvcache.InvalidArgument,
     "max_model_len 0"),
    ("attention mode", lambda: kvcache.attention(_q, _q, _q, sparse_mode=7), kvcache.InvalidArgument, "sparse_mode 7"),
    ("attention scale", lambda: kvcache.attention(_q, _q, _q, scale=-1), kvcache.InvalidArgument, "scale -1"),
    ("attention lengths", lambda: kvcache.attention(_q, _q, _q, q_lens=[5]), kvcache.InvalidArgument, "q_lens entry 5"),
    ("attention paged table", lambda: kvcache.attention(_q[0], _cache, _cache, np.zeros((1, 1, 1), np.int32), q_lens=[2],
                                                        kv_lens=[2]), kvcache.InvalidArgument, "block_table"),
    ("write slot range", lambda: kvcache.write_slots(_cache.copy(), _upd, [8]), kvcache.OutOfRange, "slot 8"),
    ("write dtype", lambda: kvcache.write_slots(_cache.copy(), _upd.astype(np.float16), [1]), kvcache.InvalidArgument,
     "dtype f16"),
    ("quant write cache", lambda: kvcache.write_slots_quant(_cache.copy(), _upd, [1], [1.0]), kvcache.InvalidArgument,
     "needs an int8"),
    ("contiguous start", lambda: kvcache.write_contiguous(np.zeros((1, 4, 8), np.float32), np.zeros((1, 2, 8), np.float32),
                                                          [3]), kvcache.OutOfRange, "start 3"),
    ("run missing dir", lambda: kvcache.run("/nonexistent", [[1]]), kvcache.InvalidArgument, "cannot open"),
    ("run token id", lambda: kvcache.run(QWEN3, [[100000]]), kvcache.OutOfRange, "100000"),
    ("run new tokens", lambda: kvcache.run(QWEN3, [[1]], max_new_tokens=0), kvcache.InvalidArgument, "max_new_tokens 0"),
    ("run mode", lambda: kvcache.run(QWEN3, [[1]], mode="mla_latent"), kvcache.InvalidArgument, "needs an MLA model"),
]


@pytest.mark.parametrize("name,call,exc,text", CASES, ids=[c[0] for c in CASES])
def test_library_message(name, call, exc, text):
    with pytest.raises(exc) as info:
        call()
    e = info.value
    assert isinstance(e, kvcache.Error) and e.status < 0
    assert text in e.message
    # the message is the library's: what kvc_last_error holds after the call
    assert e.message == ffi.string(lib.kvc_last_error()).decode()
    assert e.status_name == ffi.string(lib.kvc_status_str(e.status)).decode()


PY_SIDE = [
    ("not an array", lambda: kvcache.attention("q", _q, _q), "neither a buffer"),
    ("float64 array", lambda: kvcache.attention(_q.astype(np.float64), _q, _q), "element format"),
    ("kv_layout", lambda: kvcache.attention(_q[0], _cache, _cache, [[1]], kv_layout="XY", q_lens=[2], kv_lens=[2]),
     "kv_layout \"XY\""),
    ("layout", lambda: kvcache.attention(_q, _q, _q, layout="NOPE"), "layout \"NOPE\""),
    ("int overflow", lambda: _manager().allocate_slots(2**70, 0, 1), "does not fit int64"),
    ("bool as int", lambda: _manager().allocate_slots(True, 0, 1), "is not an integer"),
    ("unknown cache field", lambda: kvcache.Manager(_desc(heads=3), block_num=4, max_model_len=8), "unknown field"),
    ("prompts", lambda: kvcache.run(QWEN3, []), "non-empty list"),
]


@pytest.mark.parametrize("name,call,text", PY_SIDE, ids=[c[0] for c in PY_SIDE])
def test_python_side_checks_raise_kvcache_errors(name, call, text):
    """Faults only Python can see (types, layouts by name) raise the same
    class with status KVC_EINVAL and a message naming the argument."""
    with pytest.raises(kvcache.InvalidArgument, match=text) as info:
        call()
    assert info.value.status == lib.KVC_EINVAL


def test_failed_write_leaves_cache_unchanged():
    cache = np.arange(64, dtype=np.float32).reshape(2, 4, 1, 8)
    before = cache.copy()
    with pytest.raises(kvcache.OutOfRange):
        kvcache.write_slots(cache, np.ones((2, 1, 8), np.float32), [1, 99])
    assert np.array_equal(cache, before)
