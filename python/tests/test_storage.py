"""plan(...).caches(): the planned cache tensors as NumPy arrays (and torch
tensors) over the C library's storage, no copy; Manager.close() and `with`;
the plan-to-paged-decode example runs."""
import gc
import runpy

import numpy as np
import pytest

import kvcache
from conftest import DATA, REPO

LLAMA = DATA / "configs" / "Llama-3.1-8B.json"


def small_plan(kv_memory="16MiB", **kwargs):
    return kvcache.plan(LLAMA, block_size=16, kv_memory=kv_memory, **kwargs)


def test_caches_have_the_planned_shapes_and_bytes():
    plan = small_plan(kv_dtype="f16")
    caches = plan.caches()
    blocks = plan["block_num"]["FullAttention"]
    assert len(caches) == len(plan["layers"]) == 32
    for layer in caches:
        assert sorted(layer) == ["k_cache", "v_cache"]
        for array in layer.values():
            assert array.shape == (blocks, 16, 8, 128) and array.dtype == np.float16
            assert array.flags.c_contiguous and array.flags.writeable
    assert caches.nbytes == plan["total_bytes"] == 2 * 32 * blocks * 16 * 8 * 128 * 2
    assert not caches[0]["k_cache"][0].any()  # block 0, the null block, zero-filled


def test_caches_are_the_librarys_storage_and_outlive_the_list():
    caches = small_plan(kv_memory="256MiB", kv_dtype="f16").caches(pages="huge")  # 4 MiB a tensor
    k = caches[3]["k_cache"]
    # the library's tensors of >= 2 MiB start on a 2 MiB boundary; NumPy's own arrays need not
    assert k.nbytes >= 2 << 20 and k.ctypes.data % (2 << 20) == 0
    del caches
    gc.collect()
    update = np.full((1, 8, 128), 2.0, np.float16)
    kvcache.write_slots(k, update, [5 * 16 + 3])  # the library writes the array itself
    assert (k[5, 3] == 2.0).all() and k.sum() == 2.0 * 8 * 128


def test_bf16_caches_are_uint16_arrays_the_library_reads_through_view_as():
    caches = small_plan().caches()  # the config's torch_dtype: bf16
    k = caches[0]["k_cache"]
    assert k.dtype == np.uint16 and caches.dtypes[(0, "k_cache")] == "bf16"
    kvcache.write_slots(kvcache.view_as(k, "bf16"), kvcache.view_as(np.full((1, 8, 128), 0x3F80, np.uint16), "bf16"),
                        [16])
    assert (k[1, 0] == 0x3F80).all()  # 1.0 in bf16


def test_bad_page_policy_is_refused():
    with pytest.raises(kvcache.InvalidArgument, match="pages \"tiny\""):
        small_plan().caches(pages="tiny")
    with pytest.raises(kvcache.InvalidArgument, match="pages \"\\['huge'\\]\""):  # was TypeError: unhashable
        small_plan().caches(pages=["huge"])
    with pytest.raises(kvcache.InvalidArgument, match="torch: 'no' is not true or false"):  # imported torch
        small_plan().caches(torch="no")


def test_torch_tensors_share_the_storage():
    torch = pytest.importorskip("torch")
    caches = small_plan(kv_memory="256MiB").caches(torch=True)
    k = caches[0]["k_cache"]
    assert isinstance(k, torch.Tensor) and k.dtype == torch.bfloat16 and k.data_ptr() % (2 << 20) == 0
    k[1, 0] = 1.0
    assert caches[0]["k_cache"][1, 0].float().sum().item() == 8 * 128


def test_manager_close_and_with():
    plan = small_plan()
    with plan.manager() as m:
        m.allocate_slots(1, computed_tokens=0, num_new_tokens=40)
        m.step([(1, 0, 40)], is_prefill=True)  # step buffers too
        assert m.block_table(1).tolist() == [1, 2, 3]
    with pytest.raises(kvcache.InvalidArgument, match="the Manager is closed"):
        m.block_table(1)
    m.close()  # twice is harmless
    other = plan.manager()
    other.close()
    with pytest.raises(kvcache.InvalidArgument, match="closed"):
        other.allocate_slots(1, computed_tokens=0, num_new_tokens=1)


def test_plan_to_paged_decode_example_runs(capsys):
    runpy.run_path(str(REPO / "python" / "examples" / "plan_to_paged_decode.py"), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("prefill  12 tokens") and sum(line.startswith("decode") for line in out) == 3
    assert out[-1].startswith("paged attention, 2 layers, prefill + 3 decode steps")
