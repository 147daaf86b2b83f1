"""kvcache.storage: the cache tensors a plan asks for (kvc_cache_storage), as
NumPy arrays or torch tensors over the library's own allocation (no copy)."""
import numpy as np

from ._lib import check, choice, dtype_name, ffi, flag, invalid, lib

# kvcache dtype -> the NumPy type of the same width (NumPy has no bf16 or fp8:
# those come as uint16 / uint8; kvcache.view_as(array, "bf16") reads them right)
_NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i8": np.int8, "i32": np.int32,
          "i64": np.int64, "bool": np.bool_, "fp8_e4m3": np.uint8, "fp8_e5m2": np.uint8}
# ... and the torch dtype a uint tensor is viewed as (torch has these types)
_TORCH = {"bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}
_PAGES = {"huge": "KVC_STORAGE_PAGES_HUGE", "system": "KVC_STORAGE_PAGES_SYSTEM", "base": "KVC_STORAGE_PAGES_BASE"}


class Caches(list):
    """The planned caches: one dict per layer of the plan ({cache name: array},
    in plan["layers"] order), over one allocation of the C library. Every
    array keeps that allocation alive; it is freed when the last one goes.

    nbytes: bytes of all tensors; dtypes: {(layer, name): kvcache dtype name}
    (bf16 and fp8 caches are uint16 / uint8 NumPy arrays; pass them as
    kvcache.view_as(array, "bf16"), or ask for torch tensors)."""

    nbytes = 0
    dtypes = None


def _numpy_view(t, owner):
    dtype = dtype_name(t.dtype)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    nbytes = int(np.prod(shape, dtype=np.int64)) * lib.kvc_dtype_size(t.dtype)
    # a cdata that holds the storage: the buffer keeps it, the array keeps the buffer
    keeper = ffi.gc(ffi.cast("char *", t.data), lambda _p, owner=owner: None)
    return dtype, np.frombuffer(ffi.buffer(keeper, nbytes), dtype=_NUMPY[dtype]).reshape(shape)


def _torch_view(array, dtype):
    import torch

    # shares the memory; uint16 goes through int16, which every torch version takes
    tensor = torch.from_numpy(array.view(np.int16) if array.dtype == np.uint16 else array)
    name = _TORCH.get(dtype)
    return tensor.view(getattr(torch, name)) if name and hasattr(torch, name) else tensor


def allocate(plan_handle, torch=False, pages="huge"):
    """Allocates the caches of a C plan (kvc_model_plan *): see Plan.caches."""
    pages = choice(_PAGES, pages, "pages")  # (a list was a TypeError: unhashable)
    if flag(torch, "torch"):
        try:
            import torch as _  # noqa: F401
        except ImportError:
            raise invalid("torch=True: PyTorch is not importable (pip install torch)") from None
    params = ffi.new("kvc_cache_storage_params *", lib.kvc_cache_storage_default_params())
    params.pages = getattr(lib, pages)
    ci = ffi.addressof(plan_handle[0], "cache_info")
    out = ffi.new("kvc_cache_storage **")
    check(lib.kvc_cache_storage_allocate(ci, ffi.addressof(plan_handle[0], "blocks"), params, out))
    owner = ffi.gc(out[0], lib.kvc_cache_storage_destroy)
    caches = Caches()
    caches.nbytes, caches.dtypes = lib.kvc_cache_storage_bytes(owner), {}
    for li in range(ci.n_layer_infos):
        layer, arrays = ci.layer_infos[li], {}
        for c in range(layer.n_caches):
            e = layer.caches[c]
            if not e.needs_block:
                continue
            name = ffi.string(e.name).decode()
            dtype, array = _numpy_view(e.tensor, owner)
            e.tensor.data = ffi.NULL  # the plan keeps no pointer into storage it does not own
            arrays[name] = _torch_view(array, dtype) if torch else array
            caches.dtypes[(li, name)] = dtype
        caches.append(arrays)
    return caches
