"""Zero copy: the C kernels write into the caller's own memory, through the
buffer protocol (NumPy) and through DLPack (torch tensors and any exporter)."""
import numpy as np
import pytest

import kvcache


class DLPackOnly:
    """Exposes an array through __dlpack__ alone (no buffer protocol), the
    route torch tensors take."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def _paged(rng, dtype=np.float32):
    NB, bs, nkv, D = 6, 4, 2, 16
    cache = np.zeros((NB, bs, nkv, D), dtype=dtype)
    upd = rng.standard_normal((5, nkv, D)).astype(dtype)
    slots = np.array([4, 5, 9, -1, 23], dtype=np.int64)
    return cache, upd, slots


@pytest.mark.parametrize("wrap", [lambda a: a, DLPackOnly], ids=["buffer", "dlpack"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_write_slots_writes_caller_memory(wrap, dtype):
    rng = np.random.default_rng(0)
    cache, upd, slots = _paged(rng, dtype)
    address = cache.__array_interface__["data"][0]
    kvcache.write_slots(wrap(cache), wrap(upd), slots)
    assert cache.__array_interface__["data"][0] == address
    flat = cache.reshape(-1, *cache.shape[2:])
    for t, s in enumerate(slots):
        if s >= 0:
            assert np.array_equal(flat[s], upd[t])
    written = {int(s) for s in slots if s >= 0}
    assert not any(flat[i].any() for i in range(flat.shape[0]) if i not in written)


def test_write_slots_head_major():
    rng = np.random.default_rng(1)
    cache = np.zeros((3, 2, 4, 8), dtype=np.float32)  # [NB, Nkv, bs, D]
    upd = rng.standard_normal((2, 2, 8)).astype(np.float32)
    kvcache.write_slots(cache, upd, [5, 8], kv_layout="BNNBSD")
    assert np.array_equal(cache[1, :, 1], upd[0]) and np.array_equal(cache[2, :, 0], upd[1])


def test_write_slots_quant_rounds_into_int8_cache():
    cache = np.zeros((2, 4, 1, 4), dtype=np.int8)
    upd = np.array([[[0.5, 1.5, -2.5, 1000.0]]], dtype=np.float32)
    kvcache.write_slots_quant(cache, upd, [6], inv_scale=[1.0])
    assert cache[1, 2, 0].tolist() == [0, 2, -2, 127]  # half to even, saturated


def test_write_slots_quant_fp8_through_view_as():
    bits = np.zeros((1, 4, 1, 5), dtype=np.uint8)
    upd = np.array([[[1.0, 0.5, -2.0, 448.0, 1000.0]]], dtype=np.float32)
    kvcache.write_slots_quant(kvcache.view_as(bits, "fp8_e4m3"), upd, [2], inv_scale=[1.0])
    # e4m3fn: bias 7, 3 mantissa bits; 448 is the largest finite value and 1000 saturates to it
    assert bits[0, 2, 0].tolist() == [0x38, 0x30, 0xC0, 0x7E, 0x7E]


def test_write_contiguous_in_place():
    cache = np.zeros((2, 6, 4), dtype=np.float32)
    upd = np.ones((2, 2, 4), dtype=np.float32)
    kvcache.write_contiguous(cache, upd, [1, 4])
    assert cache[0, 1:3].all() and cache[1, 4:6].all() and cache.sum() == 16


@pytest.mark.parametrize("wrap", [lambda a: a, DLPackOnly], ids=["buffer", "dlpack"])
def test_attention_reads_and_writes_caller_memory(wrap):
    rng = np.random.default_rng(2)
    NB, bs, nkv, D = 5, 4, 1, 16
    kc = np.zeros((NB, bs, nkv, D), dtype=np.float32)
    vc = np.zeros((NB, bs, nkv, D), dtype=np.float32)
    k = rng.standard_normal((6, nkv, D)).astype(np.float32)
    v = rng.standard_normal((6, nkv, D)).astype(np.float32)
    table = np.array([[3, 1]], dtype=np.int32)
    slots = np.array([12, 13, 14, 15, 4, 5])  # block 3 then block 1
    kvcache.write_slots(wrap(kc), k, slots)
    kvcache.write_slots(wrap(vc), v, slots)
    q = rng.standard_normal((1, 2, D)).astype(np.float32)
    out = np.zeros((1, 2, D), dtype=np.float32)
    kvcache.attention(wrap(q), wrap(kc), wrap(vc), wrap(table), q_lens=[1], kv_lens=[6], out=wrap(out))
    want = kvcache.attention(q, k, v, layout="TND", q_lens=[1], kv_lens=[6], num_kv_heads=1)
    assert np.array_equal(out, want)  # the caches the writes filled, read in place


def test_read_only_output_is_refused():
    q = np.zeros((1, 1, 1, 8), dtype=np.float32)
    out = np.zeros_like(q)
    out.setflags(write=False)
    with pytest.raises(kvcache.InvalidArgument, match="read-only"):
        kvcache.attention(q, q, q, out=out)


def test_non_contiguous_is_refused_not_copied():
    q = np.zeros((1, 4, 2, 8), dtype=np.float32)[:, ::2]
    with pytest.raises(kvcache.InvalidArgument, match="contiguous"):
        kvcache.attention(q, q, q)
    with pytest.raises(kvcache.InvalidArgument, match="contiguous"):
        kvcache.attention(DLPackOnly(np.zeros((1, 4, 2, 8), dtype=np.float32)[:, ::2]), q, q)


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    cache = torch.zeros(4, 4, 2, 8, dtype=torch.bfloat16)
    upd = torch.randn(3, 2, 8).to(torch.bfloat16)
    ptr = cache.data_ptr()
    kvcache.write_slots(cache, upd, torch.tensor([4, 5, 15]))
    assert cache.data_ptr() == ptr
    assert torch.equal(cache.view(-1, 2, 8)[[4, 5, 15]], upd)
    q = torch.randn(1, 3, 4, 8).to(torch.bfloat16)
    out = torch.empty(1, 3, 4, 8, dtype=torch.bfloat16)
    kvcache.attention(q, q[:, :, :2].contiguous(), q[:, :, :2].contiguous(), out=out)
    assert out.data_ptr() != 0 and torch.isfinite(out.float()).all()
