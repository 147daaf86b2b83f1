"""Thread safety of the Python objects over C handles (docs/python.md, "Threads").

The C calls release the GIL, so without the binding's per-object lock
several threads are inside one kvc_manager at once (before the lock, the
invariant checks failed in every run of the first test and steps came out
wrong in every run of the second). Eight threads hammer one Manager with
every kind of call: prefix lookups, allocations, steps, prefix indexing,
frees, reads and the invariant checks; every call must succeed and the
invariants hold throughout and at the end."""
import threading

import numpy as np

import kvcache

THREADS = 8
ROUNDS = 300
PREFIXES = [list(range(p * 100, p * 100 + 24)) for p in range(4)]  # shared by all threads: prefix hits


def _in_threads(work, *args):
    """Runs work(tid, *args) on THREADS threads released together; returns
    what they raised, each naming its thread."""
    errors, start = [], threading.Barrier(THREADS)

    def body(tid):
        start.wait()
        try:
            work(tid, *args)
        except Exception as e:
            errors.append(f"thread {tid}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _manager():
    layers = [[{"name": "k", "num_head": 1, "dim": 8, "block_size": 4}],
              [{"name": "k", "num_head": 1, "dim": 8, "block_size": 4, "attn_type": "SlidingWindow",
                "sliding_window": 8}]]
    return kvcache.Manager(layers, block_num=1024, max_model_len=128, prefix_caching=True)


def _hammer(tid, m):
    """One thread's requests (ids of its own), a few of them live at a time."""
    rng = np.random.default_rng(tid)
    live = []
    for i in range(ROUNDS):
        rid = tid * 1_000_000 + i
        tokens = PREFIXES[i % len(PREFIXES)] + [tid * 1000 + i] * int(rng.integers(1, 20))
        hit = m.find_prefix(tokens)["n_tokens"]
        if m.allocate_slots(rid, hit, len(tokens) - hit, prompt=tokens):
            step = m.step([(rid, hit, len(tokens) - hit)], is_prefill=True)
            assert step.n_tokens == len(tokens) - hit
            m.cache_computed(rid, tokens)
            assert m.has_request(rid) and len(m.block_table(rid)) > 0
            live.append(rid)
        if len(live) > 3:
            m.free(live.pop(0))
        if i % 4 == 0:
            m.check()
            m.usage()
    for rid in live:
        m.free(rid)


def test_one_manager_from_eight_threads():
    m = _manager()
    assert _in_threads(_hammer, m) == []
    m.check()
    assert m.stats()["live_requests"] == 0
    assert all(u["used"] == 1 for u in m.usage().values())  # only the null block once every request is freed


def _grow_steps(tid, m):
    """A step larger than any before regrows the manager's step buffers
    (releasing the old ones) while other threads may be building steps."""
    n = 1000 + 700 * tid  # tokens of this thread's request; past the first buffers' 1024 from thread 1 on
    assert m.allocate_slots(tid, 0, n)
    step = m.step([(tid, 0, n)], is_prefill=True)
    table = m.block_table(tid)
    want = table[np.arange(n) // 16].astype(np.int64) * 16 + np.arange(n) % 16
    assert np.array_equal(step.positions, np.arange(n))
    assert np.array_equal(step.keys["FullAttention"].slot_mapping, want)
    m.free(tid)


def test_step_buffers_regrown_under_other_threads():
    for _ in range(30):
        m = kvcache.Manager([[{"name": "k", "num_head": 1, "dim": 8, "block_size": 16}]], block_num=2048,
                            max_model_len=8192)
        assert _in_threads(_grow_steps, m) == []
        m.check()


def test_lock_is_per_object():
    a, b = _manager(), _manager()
    with a._lock:  # a call on `a` is in progress
        other = threading.Thread(target=b.allocate_slots, args=(1, 0, 4))
        other.start()
        other.join(10)
        assert not other.is_alive()  # another manager does not wait for it
        same = threading.Thread(target=a.check)
        same.start()
        same.join(0.2)
        assert same.is_alive()  # a call on the same manager does
    same.join(10)
    assert not same.is_alive() and b.has_request(1)


def test_attention_from_eight_threads():
    """attention() holds no shared handle (its scratch is per thread): calls
    from several threads at once give each thread's single-threaded result."""
    rng = np.random.default_rng(0)
    cases = [[rng.standard_normal((2, 17, 4, 32)).astype(np.float32) for _ in range(3)] for _ in range(THREADS)]
    want = [kvcache.attention(*c) for c in cases]

    def repeat(tid):
        for _ in range(20):
            assert np.array_equal(kvcache.attention(*cases[tid]), want[tid])

    assert _in_threads(repeat) == []
