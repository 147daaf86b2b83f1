"""Every wrapped call's bad input raises a kvcache.Error subclass whose
message is the library's own (kvc_last_error right after the call)."""
import os
import threading
import time

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
_packed = np.zeros((1, 2, 16), dtype=np.float32)  # BSH: 16 = num_heads x head_dim

CASES = [
    ("plan missing field", lambda: kvcache.plan({"model_type": "llama"}), kvcache.InvalidArgument, "num_hidden_layers"),
    ("plan tp", lambda: kvcache.plan(LLAMA, tp=0), kvcache.InvalidArgument, "tp 0"),
    ("plan block_size", lambda: kvcache.plan(LLAMA, block_size=-3), kvcache.InvalidArgument, "block_size -3"),
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
    # an infinite offset wrote 127 for every value
    ("quant write offset", lambda: kvcache.write_slots_quant(_cache.astype(np.int8), _upd, [1], [1.0], [np.inf]),
     kvcache.InvalidArgument, "offset[0] = inf must be finite"),
    ("contiguous start", lambda: kvcache.write_contiguous(np.zeros((1, 4, 8), np.float32), np.zeros((1, 2, 8), np.float32),
                                                          [3]), kvcache.OutOfRange, "start 3"),
    ("run missing dir", lambda: kvcache.run("/nonexistent", [[1]]), kvcache.InvalidArgument, "cannot open"),
    ("run token id", lambda: kvcache.run(QWEN3, [[100000]]), kvcache.OutOfRange, "100000"),
    ("run new tokens", lambda: kvcache.run(QWEN3, [[1]], max_new_tokens=0), kvcache.InvalidArgument, "max_new_tokens 0"),
    ("run mode", lambda: kvcache.run(QWEN3, [[1]], mode="mla_latent"), kvcache.InvalidArgument, "needs an MLA model"),
    # issue 23 #11: the default scale divided by zero first (ZeroDivisionError)
    ("attention packed heads", lambda: kvcache.attention(_packed, _packed, _packed, layout="BSH", num_heads=17,
                                                         num_kv_heads=1), kvcache.InvalidArgument,
     "does not hold num_heads 17 heads"),
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
    ("step rows not a list", lambda: _manager().step(5, True), "rows: a list of"),
    # a [2, 2] array of starts was read as the starts 0, 1 of the two batch rows
    ("contiguous starts 2-D", lambda: kvcache.write_contiguous(np.zeros((2, 4, 8), np.float32),
                                                               np.zeros((2, 2, 8), np.float32), [[0, 1], [2, 3]]),
     r"starts: shape \[2, 2\] is not 1-D"),
    ("unknown cache field", lambda: kvcache.Manager(_desc(heads=3), block_num=4, max_model_len=8), "unknown field"),
    ("prompts", lambda: kvcache.run(QWEN3, []), "non-empty list"),
    # issue 23 #11: these escaped as numpy's ValueError and cffi's OverflowError
    ("num_heads negative", lambda: kvcache.attention(_q, _q, _q, num_heads=-2), "num_heads -2 must be positive"),
    ("num_heads packed", lambda: kvcache.attention(_packed, _packed, _packed, layout="BSH", num_heads=-2,
                                                   num_kv_heads=1), "num_heads -2 must be positive"),
    ("num_kv_heads negative", lambda: kvcache.attention(_q, _q, _q, num_kv_heads=-2), "num_kv_heads -2"),
    ("layer index", lambda: kvcache.Manager([{"layer": 2**40, "caches": _desc()[0]}], block_num=4, max_model_len=8),
     "layer 0 index: 1099511627776 does not fit int32"),
    # issue 23 #2: names were cut at the NUL (a key "FullAttention\0x" was FullAttention)
    ("key with NUL", lambda: _manager().block_table(1, key="FullAttention\0x"), r"key 'FullAttention\\x00x' contains"),
    ("entry name with NUL", lambda: kvcache.Manager(_desc(name="k\0x"), block_num=4, max_model_len=8),
     r"cache 0 name 'k\\x00x' contains a NUL"),
    ("manager_key with NUL", lambda: kvcache.Manager(_desc(manager_key="a\0b"), block_num=4, max_model_len=8),
     r"manager_key 'a\\x00b' contains a NUL"),
    ("block_num key with NUL", lambda: kvcache.Manager(_desc(), block_num={"FullAttention\0x": 4}, max_model_len=8),
     r"block_num key 'FullAttention\\x00x' contains a NUL"),
    ("attn_type with NUL", lambda: kvcache.Manager(_desc(attn_type="FullAttention\0x"), block_num=4, max_model_len=8),
     r"attn_type 'FullAttention\\x00x' contains a NUL"),
    # dtype names: the keyword (or description entry) named; a dtype id by number is not a name
    ("plan dtype", lambda: kvcache.plan(LLAMA, kv_dtype="f64"), "kv_dtype: dtype \"f64\" is unknown"),
    ("plan dtype by number", lambda: kvcache.plan(LLAMA, kv_dtype=1), "kv_dtype 1 is not a dtype name"),
    ("engine dtype", lambda: kvcache.Engine(QWEN3, kv_dtype="nope"), "kv_dtype: dtype \"nope\" is unknown"),
    ("engine dtype by number", lambda: kvcache.Engine(QWEN3, kv_dtype=1000), "kv_dtype 1000 is not a dtype name"),
    ("description dtype by number", lambda: kvcache.Manager(_desc(dtype=-1), block_num=4, max_model_len=64),
     "cache 0 dtype -1 is not a dtype name"),
    ("dtype with NUL", lambda: kvcache.plan(LLAMA, kv_dtype="f16\0x"), r"kv_dtype 'f16\\x00x' contains a NUL"),
    ("config path with NUL", lambda: kvcache.plan(f"{LLAMA}\0x"), "config '.*' contains a NUL"),
    ("model_dir with NUL", lambda: kvcache.run(f"{QWEN3}\0x", [[1]]), "model_dir '.*' contains a NUL"),
    # choices given as lists or numbers escaped as TypeError
    ("layout not a name", lambda: kvcache.attention(_q, _q, _q, layout=["BSND"]), "layout"),
    ("quant_mode not a pair", lambda: kvcache.attention(_q, _q, _q, key_scale=np.ones(8, np.float32), quant_mode=5),
     "quant_mode 5 is neither"),
    ("run mode not a name", lambda: kvcache.run(QWEN3, [[1]], mode=["paged"]), "mode"),
    ("cache layout not a name", lambda: kvcache.Manager(_desc(layout=[0]), block_num=4, max_model_len=8), "layout"),
    # true/false arguments: bool("no") was true, so the string turned the feature on
    ("engine prefix_caching", lambda: kvcache.Engine(QWEN3, prefix_caching="no"), "prefix_caching: 'no' is not true"),
    ("engine check_invariants", lambda: kvcache.Engine(QWEN3, check_invariants=1), "check_invariants: 1 is not true"),
    ("manager prefix_caching", lambda: kvcache.Manager(_desc(), block_num=4, max_model_len=8, prefix_caching="off"),
     "prefix_caching: 'off' is not true"),
    ("description needs_block", lambda: kvcache.Manager(_desc(needs_block="no"), block_num=4, max_model_len=8),
     "cache 0 needs_block: 'no' is not true"),
    ("attention bidirectional", lambda: kvcache.attention(_q, _q, _q, bidirectional="no"), "bidirectional: 'no'"),
    ("run mla_paged", lambda: kvcache.run(QWEN3, [[1]], mla_paged=None), "mla_paged: None is not true"),
    ("run logits", lambda: kvcache.run(QWEN3, [[1]], logits="no"), "logits: 'no' is not true"),
    ("run stream", lambda: kvcache.run(QWEN3, [[1]], stream="no"), "stream: 'no' is not true"),
    ("attention return_lse", lambda: kvcache.attention(_q, _q, _q, return_lse="no"), "return_lse: 'no' is not true"),
    ("step is_prefill", lambda: _manager().step([(1, 0, 5)], "no"), "is_prefill: 'no' is not true"),
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


@pytest.mark.parametrize("layout,shape", [("BSND", (0, 2, 2, 8)), ("BNSD", (0, 2, 2, 8)), ("BSH", (0, 2, 16)),
                                          ("BSND_NBSD", (0, 2, 2, 8)), ("TND", (0, 2, 8))])
def test_zero_size_batch(layout, shape):
    """An empty batch runs as the C operator's batch 0 (an empty output);
    it was refused as "q_lens: elements of type float64" (issue 23 #11)."""
    z = np.zeros(shape, np.float32)
    heads = {"num_heads": 2, "num_kv_heads": 2} if layout == "BSH" else {}
    out = kvcache.attention(z, z, z, layout=layout, **heads)
    assert out.size == 0 and out.dtype == np.float32
    # explicit empty lengths against a query that has a row: the batch's shape is named
    with pytest.raises(kvcache.InvalidArgument, match=r"q has shape \[1, 2, 2, 8\], expected \[0, 2, 2, 8\]"):
        kvcache.attention(_q, _q, _q, q_lens=[], kv_lens=[])


def test_quantized_write_scales_are_numbers():
    """inv_scale="1" (NumPy converts text) was taken as the scale 1."""
    for args in (("1",), ([1.0], ["0"])):
        with pytest.raises(kvcache.InvalidArgument, match="(inv_scale|offset): numbers are expected"):
            kvcache.write_slots_quant(_cache.astype(np.int8), _upd, [1], *args)


def test_plan_reads_a_regular_config_file_only(tmp_path):
    """plan(path) read config.json with Python's open: a FIFO blocked for ever (so did Engine on such a model
    directory) and /dev/zero read until memory ran out; bytes that are not UTF-8 became U+FFFD silently. Now a
    regular file of at most 64 MiB, whose bytes go to the library as they are."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    threading.Timer(5, _unblock, [fifo]).start()  # should plan block: it then reads an end, and fails otherwise
    for path in (fifo, tmp_path, "/dev/null"):
        with pytest.raises(kvcache.InvalidArgument, match="a regular file of at most 67108864 bytes"):
            kvcache.plan(path)
    fifo.unlink()
    text = LLAMA.read_bytes().replace(b'"llama"', b'"llama\xff"', 1)
    fifo.write_bytes(text)
    with pytest.raises(kvcache.InvalidArgument, match="UTF-8"):
        kvcache.plan(fifo)


@pytest.mark.parametrize("kind", ["fifo", "deep", "list"])
def test_run_through_the_engine_reads_a_regular_config_file_only(tmp_path, kind):
    """run(stream=True) read config.json's eos ids with Python's open before the engine read it: a FIFO blocked
    (for ever, without the writer below), deep nesting was a RecursionError and a list an AttributeError. Now the
    engine's reader refuses each, naming the file."""
    (tmp_path / "model.safetensors").symlink_to(QWEN3 / "model.safetensors")
    config = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
        threading.Timer(5, _unblock, [config]).start()
    else:
        config.write_text("[" * 100000 + "]" * 100000 if kind == "deep" else "[]")
    t0 = time.monotonic()
    with pytest.raises(kvcache.InvalidArgument, match="config.json"):
        kvcache.run(tmp_path, [[1, 2, 3]], max_new_tokens=2, stream=True)
    assert time.monotonic() - t0 < 4


def _unblock(fifo):
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader (refused as it should be)
        pass
