"""kvcache.plan: a model's config.json -> its KV cache plan (kvc_model_plan)."""
import json
import math
import os
import re

from ._lib import c_path, check, dtype_code, ffi, int64, invalid, lib, read_regular

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(value, name="kv_memory"):
    """Bytes from an int or a string such as "64GiB", "512MiB", "1.5GB", "1e9"; a refusal names `name`."""
    if isinstance(value, bool):
        raise invalid(f"{name} {value!r} is not a byte count")
    if isinstance(value, int):
        return int64(value, name)
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).upper() not in _UNITS:
        raise invalid(f"{name} \"{value}\" is not a size (examples: 64GiB, 512MiB, 1.5GB, 1e9)")
    try:
        number = float(m.group(1)) * _UNITS[m.group(2).upper()]  # "1e300TiB" is infinite only after the unit
    except ValueError:
        number = math.nan
    if not math.isfinite(number):  # (int() of it was an OverflowError)
        raise invalid(f"{name} \"{value}\" is not a size (examples: 64GiB, 512MiB, 1.5GB, 1e9)")
    return int64(int(number), name)


def _config_text(config):
    if isinstance(config, dict):
        try:  # an object JSON has no form for, a cycle, NaN (which C would call invalid JSON at some byte)
            return json.dumps(config, allow_nan=False).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            raise invalid(f"config: the dict is not JSON: {exc}") from None
    if isinstance(config, (str, os.PathLike)):
        path = os.fsdecode(c_path(config, "config"))
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:  # a missing or unreadable file was the OSError itself, not the InvalidArgument Engine and run raise
            return read_regular(path)  # the library refuses bytes that are not UTF-8, naming the first
        except OSError as exc:
            raise invalid(f"{path}: cannot open ({exc.strerror})") from None
    raise invalid(f"config: {type(config).__name__} is neither a dict nor a path to config.json")


class Plan(dict):
    """The plan as the document `kvcache plan --json` prints (a dict), keeping
    the C plan it came from so that Manager(plan) can build on it."""

    def __init__(self, handle):
        text = ffi.new("char **")
        check(lib.kvc_model_plan_to_json(handle, text))
        try:
            super().__init__(json.loads(ffi.string(text[0]).decode()))
        finally:
            lib.kvc_plan_json_free(text[0])
        self._handle = handle

    def manager(self, **kwargs):
        """A Manager over this plan's caches and block counts, with its
        pools: the keys whose entry slots agree in page bytes draw from one
        shared pool (the plan gives keys of different bytes per token block
        sizes that make their pages equal; kvcache plan shows each key's
        block size and pool; Manager.usage() names each key's pool).
        Keyword arguments go to Manager (block_num= overrides the counts and
        keeps the pools)."""
        from .manager import Manager

        return Manager(self, **kwargs)

    def caches(self, torch=False, pages="huge"):
        """Allocates the cache tensors this plan asks for and returns them:
        a list with one dict per layer (plan["layers"] order) of
        {cache name: array}, e.g. caches[0]["k_cache"] of shape
        [block_num, block_size, kv heads, head dim] (head-major
        [block_num, kv heads, block_size, head dim], MLA latent
        [block_num, block_size, 1, dim], Mamba [block_num, *state shape]).

        The arrays are NumPy views of the C library's own allocation
        (kvc_cache_storage_allocate: aligned, 2 MiB huge pages where the
        system allows with pages="huge", block 0 zero-filled), no copy;
        torch=True gives torch CPU tensors over the same memory
        (torch.from_numpy; bf16 / fp8 caches viewed as torch.bfloat16 /
        float8). NumPy has no bf16 or fp8: such caches are uint16 / uint8
        arrays, read by the library through kvcache.view_as(array, "bf16").
        The memory is freed when the last array (or tensor) is gone. The
        result also has .nbytes and .dtypes {(layer, name): dtype}."""
        from .storage import allocate

        return allocate(self._handle, torch=torch, pages=pages)


def plan(config, tp=1, block_size=128, kv_dtype=None, kv_memory=None, max_model_len=None, max_concurrency=1,
         next_n=0):
    """The KV cache plan of a Hugging Face config (a dict, a config.json path
    or a model directory): paged or legacy caches, per-layer attention types,
    mask modes, caches per tensor-parallel rank and the block planner's
    numbers. kv_dtype: "f32", "f16", "bf16", "i8" ("int8"), "fp8_e4m3" ("fp8")
    or "fp8_e5m2" (default: the config's torch_dtype); kv_memory: a byte budget (int or "64GiB"); without it the
    caches are sized for max_model_len x max_concurrency tokens."""
    opt = ffi.new("kvc_plan_options *", lib.kvc_plan_default_options())
    opt.tp = int64(tp, "tp")
    opt.block_size = int64(block_size, "block_size")
    if kv_dtype is not None:
        opt.kv_dtype_set = True
        opt.kv_dtype = dtype_code(kv_dtype, "kv_dtype")
    if max_model_len is not None:
        opt.max_model_len = int64(max_model_len, "max_model_len")
    opt.max_concurrency = int64(max_concurrency, "max_concurrency")
    opt.next_n = int64(next_n, "next_n")
    if kv_memory is not None:
        opt.kv_memory_bytes = parse_bytes(kv_memory)
    data = _config_text(config)
    out = ffi.new("kvc_model_plan **")
    check(lib.kvc_model_plan_create(data, len(data), opt, out))
    return Plan(ffi.gc(out[0], lib.kvc_model_plan_destroy))
