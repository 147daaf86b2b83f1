"""kvcache.Manager: the request-level block manager (kvc_manager) and the
metadata of one forward step (kvc_step_metadata_build), with NumPy arrays."""
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from ._lib import c_name, check, choice, cstr, dtype_code, ffi, flag, int32, int64, invalid, lib
from ._locking import serialised
from .plan import Plan

_ENTRY_INTS = ("num_head", "block_size", "sliding_window", "compress_ratio", "next_n", "attention_chunk_size")


def _attn_type(name, what):
    out = ffi.new("kvc_attn_type *")
    check(lib.kvc_attn_type_parse(c_name(name, what), out))
    return out[0]


def _copy_name(field, text, what):
    raw = c_name(text, what)
    if len(raw) >= len(field):
        raise invalid(f"{what} \"{text}\" is longer than {len(field) - 1} bytes")
    ffi.memmove(field, raw + b"\0", len(raw) + 1)


def _fill_entry(e, spec, where):
    known = {"name", "attn_type", "dim", "dtype", "needs_block", "manager_key", "layout", "shape", *_ENTRY_INTS}
    unknown = set(spec) - known
    if unknown:
        raise invalid(f"{where}: unknown field(s) {sorted(unknown)} (known: {sorted(known)})")
    _copy_name(e.name, spec.get("name", "k_cache"), f"{where} name")
    e.attn_type = _attn_type(spec.get("attn_type", "FullAttention"), f"{where} attn_type")
    for f in _ENTRY_INTS:
        if f in spec:
            setattr(e, f, int64(spec[f], f"{where} {f}"))
    if "dtype" in spec:
        e.dtype = dtype_code(spec["dtype"], f"{where} dtype")
    if "needs_block" in spec:
        e.needs_block = flag(spec["needs_block"], f"{where} needs_block")
    if "manager_key" in spec:
        _copy_name(e.manager_key, spec["manager_key"], f"{where} manager_key")
    if "layout" in spec:
        e.layout = choice({"block_major": 0, "head_major": 1}, spec["layout"], f"{where} layout")
    for field, count, name in (("dim", "n_dims", "dim"), ("shape", "n_shape", "shape")):
        if name in spec:
            dims = spec[name]
            dims = [dims] if not isinstance(dims, (list, tuple)) else list(dims)
            if len(dims) > len(getattr(e, field)):
                raise invalid(f"{where} {name}: {len(dims)} dims, at most {len(getattr(e, field))}")
            for i, dv in enumerate(dims):
                getattr(e, field)[i] = int64(dv, f"{where} {name}[{i}]")
            setattr(e, count, len(dims))
    if "shape" in spec:
        e.is_state = True


class _Description:
    """A kvc_model_cache_info built from Python: a list of layers, each a list
    of cache dicts (or {"layer": i, "caches": [...]})."""

    def __init__(self, layers):
        if not isinstance(layers, (list, tuple)) or not layers:
            raise invalid("cache description: a non-empty list of layers is expected")
        self.entries, self.layer_arr = [], ffi.new("kvc_layer_cache_info[]", len(layers))
        for li, layer in enumerate(layers):
            caches = layer.get("caches") if isinstance(layer, dict) else layer
            if not isinstance(caches, (list, tuple)):
                raise invalid(f"layer {li}: a list of caches (or {{\"caches\": [...]}}) is expected")
            arr = ffi.new("kvc_cache_entry[]", max(len(caches), 1))
            for ci, spec in enumerate(caches):
                arr[ci] = lib.kvc_cache_entry_default()
                if not isinstance(spec, dict):
                    raise invalid(f"layer {li} cache {ci}: a dict is expected")
                _fill_entry(arr[ci], spec, f"layer {li} cache {ci}")
            self.entries.append(arr)
            index = layer.get("layer", li) if isinstance(layer, dict) else li
            self.layer_arr[li].layer_idx = int32(index, f"layer {li} index")
            self.layer_arr[li].n_caches = len(caches)
            self.layer_arr[li].caches = arr
        self.ci = ffi.new("kvc_model_cache_info *")
        self.ci.num_layers = len(layers)
        self.ci.n_layer_infos = len(layers)
        self.ci.layer_infos = self.layer_arr
        check(lib.kvc_validate_cache_info(self.ci, -1))

    def group_keys(self):
        keys = []
        for li in range(self.ci.n_layer_infos):
            layer = self.ci.layer_infos[li]
            for ci in range(layer.n_caches):
                e = ffi.addressof(layer.caches[ci])
                key = cstr(lib.kvc_cache_entry_group_key(e))
                if e.needs_block and key not in keys:
                    keys.append(key)
        return keys


@dataclass
class StepKey:
    """One manager key of a step: its block table and slot mapping."""
    attn_type: str
    block_size: int
    width: int
    block_table: np.ndarray  # int32 [n_rows, width]
    slot_mapping: Optional[np.ndarray]  # int64 [n_tokens]; None for Mamba / compressed keys


@dataclass
class StepMetadata:
    """What the model needs for one step (kvc_step_metadata), copied out."""
    is_prefill: bool
    n_rows: int
    n_tokens: int
    prompt_tokens: int
    positions: np.ndarray  # int64 [n_tokens]
    kv_pos: np.ndarray  # int64 [n_rows]
    seq_lens_q: np.ndarray  # int64 [n_rows]
    seq_lens_kv: np.ndarray  # int64 [n_rows]
    cu_seq_lens_q: np.ndarray  # int64 [n_rows], inclusive prefix sums
    cu_seq_lens_kv: np.ndarray  # int64 [n_rows]
    keys: Dict[str, StepKey]


def _tokens(tokens):
    try:
        a = np.asarray(tokens)
    except Exception:
        raise invalid("tokens: not a list of token ids") from None
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise invalid(f"tokens: a 1-D list of integer token ids is expected, got shape {list(a.shape)} of {a.dtype}")
    if a.size and (a.min() < -(2**31) or a.max() >= 2**31):
        raise invalid("tokens: ids outside int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _salt(cache_salt):
    """A cache salt as (char[] or None, length in bytes): a str is encoded as
    UTF-8, bytes are taken as they are (a NUL byte counts like any other);
    None, "" and b"" are no salt. Any other type is refused, not str()-ed."""
    if cache_salt is None:
        return None, 0
    if isinstance(cache_salt, str):
        try:
            raw = cache_salt.encode()
        except UnicodeEncodeError:
            raise invalid("cache_salt: the string cannot be encoded as UTF-8") from None
    elif isinstance(cache_salt, bytes):
        raw = cache_salt
    else:
        raise invalid(f"cache_salt: expected str or bytes, got {type(cache_salt).__name__}")
    return (ffi.new("char[]", raw), len(raw)) if raw else (None, 0)


def _prompt(tokens, cache_salt):
    """A kvc_prompt over a copy of the ids; returns (prompt, what keeps it valid)."""
    arr = _tokens(tokens)
    p = ffi.new("kvc_prompt *")
    buf = ffi.from_buffer("int32_t[]", arr)
    p.tokens, p.n_tokens = buf, arr.size
    salt, p.cache_salt_len = _salt(cache_salt)
    p.cache_salt = ffi.NULL if salt is None else salt
    return p, arr, buf, salt


def _copy(ptr, n, dtype, ctype):
    if n == 0 or ptr == ffi.NULL:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(ffi.buffer(ffi.cast(ctype, ptr), n * np.dtype(dtype).itemsize), dtype=dtype).copy()


def _counted_plan(ci, keys, block_num, planned):
    """A block plan of explicit counts (an int for every key, or {key:
    count}); the keys the planned block plan (a Plan's, else None) puts in
    one shared pool keep sharing it, so they need equal counts."""
    counts = block_num if isinstance(block_num, dict) else {k: block_num for k in keys}
    names = [ffi.new("char[]", c_name(k, "block_num key")) for k in counts]
    nums = ffi.new("int64_t[]", [int64(v, f"block_num[{k}]") for k, v in counts.items()])
    blocks = ffi.new("kvc_block_plan *")
    check(lib.kvc_block_plan_from_counts(ci, ffi.new("const char *[]", names), nums, len(names), blocks))
    pools = {} if planned is None else \
        {ffi.string(planned.groups[g].key): planned.groups[g].pool_id for g in range(planned.n_groups)}
    if any(pools.values()):
        for g in range(blocks.n_groups):
            blocks.groups[g].pool_id = pools[ffi.string(blocks.groups[g].key)]
        check(lib.kvc_block_plan_check_pools(blocks))
    return blocks


@serialised
class Manager:
    """Block bookkeeping of every cache group (manager key) of a model.

    Manager(plan) uses a kvcache.plan(...) result (its caches and block
    counts); Manager(layers, block_num=...) a cache description: a list of
    layers, each a list of cache dicts such as
    {"name": "k_cache", "num_head": 8, "dim": 128, "block_size": 16,
     "attn_type": "SlidingWindow", "sliding_window": 4096}
    and block_num an int (every key) or {key: blocks} (null block included).
    A plan's keys whose entry slots agree in page bytes share one pool (one
    id space and free queue, as the engine serves them; usage() names each
    key's pool); block_num with a plan keeps those pools, so the keys of one
    pool take equal counts.
    kv_events=N (with prefix_caching) queues up to N KV events for
    drain_kv_events().

    Thread-safe: calls on one Manager take turns under its own lock (the C
    calls release the GIL); different managers run in parallel.
    """

    def __init__(self, source, *, max_model_len=None, block_num=None, max_requests=0, prefix_caching=False,
                 prefix_salt=0, state_snapshot_interval=0, kv_events=0):
        if isinstance(source, Plan):
            self._owner = source
            ci = ffi.addressof(source._handle[0], "cache_info")
            blocks = ffi.addressof(source._handle[0], "blocks")
            keys = [ffi.string(blocks.groups[i].key).decode() for i in range(blocks.n_groups)]
            if max_model_len is None:
                max_model_len = source._handle.options.max_model_len
        else:
            self._owner = _Description(source)
            ci, blocks, keys = self._owner.ci, None, self._owner.group_keys()
            if block_num is None:
                raise invalid("block_num: give the blocks of every key ({key: count} or one count for all)")
            if max_model_len is None:
                raise invalid("max_model_len: required with a cache description")
        if block_num is not None:
            blocks = _counted_plan(ci, keys, block_num, blocks)
        self._blocks = blocks
        p = ffi.new("kvc_manager_params *", lib.kvc_manager_default_params())
        p.max_model_len = int64(max_model_len, "max_model_len")
        p.max_requests = int64(max_requests, "max_requests")
        p.prefix_caching = flag(prefix_caching, "prefix_caching")
        if isinstance(prefix_salt, bool) or not hasattr(prefix_salt, "__index__") \
                or not 0 <= prefix_salt.__index__() < 2**64:
            raise invalid(f"prefix_salt: {prefix_salt!r} is not a 64-bit unsigned integer")
        p.prefix_salt = prefix_salt.__index__()
        p.state_snapshot_interval = int64(state_snapshot_interval, "state_snapshot_interval")
        p.kv_event_capacity = int64(kv_events, "kv_events")
        out = ffi.new("kvc_manager **")
        check(lib.kvc_manager_create(ci, blocks, p, out))
        # the destructor holds what the manager reads (the description, the
        # block plan) so that they are released only after it
        self._handle = ffi.gc(out[0], lambda m, deps=(self._owner, blocks): lib.kvc_manager_destroy(m))
        self._steps = None

    @property
    def _m(self):
        if self._handle is None:
            raise invalid("the Manager is closed (Manager.close(), or the end of its `with` block)")
        return self._handle

    def close(self):
        """Frees the C manager and its step buffers now rather than when the
        object is collected; any later call raises InvalidArgument. Closing
        twice is harmless. `with plan.manager() as m:` closes at the end."""
        steps, self._steps = self._steps, None
        if steps is not None:
            ffi.release(steps[0])
        handle, self._handle = self._handle, None
        if handle is not None:
            ffi.release(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- keys ------------------------------------------------------------
    @property
    def keys(self):
        """Manager keys in manager order (bit i of a key mask = keys[i])."""
        return [cstr(lib.kvc_manager_key(self._m, i)) for i in range(lib.kvc_manager_n_keys(self._m))]

    def key_index(self, key):
        if key is None:
            return 0
        if isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < lib.kvc_manager_n_keys(self._m):
                raise invalid(f"key index {key} outside [0, {lib.kvc_manager_n_keys(self._m)})")
            return key
        out = ffi.new("int32_t *")
        check(lib.kvc_manager_key_index(self._m, c_name(key, "key"), out))
        return out[0]

    @property
    def max_model_len(self):
        return lib.kvc_manager_max_model_len(self._m)

    # ---- requests --------------------------------------------------------
    def allocate_slots(self, request_id, computed_tokens, num_new_tokens, lookahead_tokens=0, reserved_tokens=0,
                       keys=None, prompt=None, cache_salt=None, hit=None, num_external_computed_tokens=0):
        """Backs positions 0 .. computed + new + lookahead - 1 of the request
        in every selected key (default all), or nothing anywhere. Returns
        True (done, possibly clamped to max_model_len) or False (not enough
        free blocks: nothing was allocated). With prefix caching, the first
        call of a request passes its prompt (token ids) and, after a hit from
        find_prefix, computed_tokens = the hit's n_tokens; passing the hit
        itself (hit=, the dict find_prefix returned) takes its blocks as found
        without hashing the prompt again (a stale hit, or one found for another
        prompt, raises InvalidArgument: query again). cache_salt (str,
        UTF-8 encoded, or bytes) is fixed by the request's first call, whatever
        its computed_tokens and with or without a prompt; only requests with
        the same salt share blocks, and a later call may repeat it only.
        num_external_computed_tokens: the prompt tokens right after the hit
        whose KV a connector writes from outside before the step (first call,
        with the prompt); they count as computed, and once reported with
        cache_computed they are cached under the salt like any computed
        block (docs/prefix-caching.md, "External computed tokens")."""
        req = ffi.new("kvc_slot_request *")
        keep = None
        if prompt is not None:
            keep = _prompt(prompt, cache_salt)
            req.prompt = keep[0]
        found = None
        if hit is not None:
            found = ffi.new("kvc_prefix_hit *")
            handle = hit.get("handle") if isinstance(hit, dict) else None
            if not isinstance(handle, int) or isinstance(handle, bool) or not 0 <= handle < 1 << 64:
                raise invalid("hit: a dict find_prefix returned, with its handle (an int in [0, 2^64))")
            found.handle = handle
            found.n_tokens = int64(hit.get("n_tokens"), "hit n_tokens")
            req.hit = found
        salt, req.cache_salt_len = _salt(cache_salt)
        req.cache_salt = ffi.NULL if salt is None else salt
        req.request_id = int64(request_id, "request_id")
        req.computed_tokens = int64(computed_tokens, "computed_tokens")
        req.num_external_computed_tokens = int64(num_external_computed_tokens, "num_external_computed_tokens")
        req.num_new_tokens = int64(num_new_tokens, "num_new_tokens")
        req.lookahead_tokens = int64(lookahead_tokens, "lookahead_tokens")
        req.reserved_tokens = int64(reserved_tokens, "reserved_tokens")
        if keys is not None:
            if not isinstance(keys, (list, tuple, set, frozenset)):  # 5 was a TypeError, "abc" read as "a", "b", "c"
                raise invalid(f"keys: a list of manager keys is expected, not {type(keys).__name__}")
            chosen = {self.key_index(k) for k in keys}
            req.skip_keys = sum(1 << i for i in range(len(self.keys)) if i not in chosen)
        status = check(lib.kvc_manager_allocate_slots(self._m, req))
        del keep, salt, found
        return status != lib.KVC_NO_SPACE

    # ---- prefix caching ------------------------------------------------------
    def find_prefix(self, tokens, cache_salt=None):
        """The longest cached prefix of a prompt every key accepts:
        {"n_tokens": L, "entries": {key: table entries}, "cached": {key: cached blocks},
        "handle": h} (L = 0: a miss, and always a miss with prefix caching off;
        h names the blocks found, for allocate_slots(hit=...)). cache_salt:
        str or bytes, as in allocate_slots."""
        prompt = _prompt(tokens, cache_salt)
        hit = ffi.new("kvc_prefix_hit *")
        check(lib.kvc_manager_find_prefix(self._m, prompt[0], hit))
        keys = self.keys
        return {"n_tokens": hit.n_tokens, "entries": {k: hit.n_entries[i] for i, k in enumerate(keys)},
                "cached": {k: hit.n_cached[i] for i, k in enumerate(keys)}, "handle": hit.handle}

    def drain_kv_events(self):
        """The KV events recorded since the last drain (kv_events > 0),
        oldest first, and how many a full queue lost: ([event, ...], lost).
        An event is {"type": "stored" | "removed" | "cleared", "key": name
        (None for cleared), "block": id, "tokens": tokens hashed, "hash": int,
        "parent": int (stored only, else None)}."""
        names = {0: "stored", 1: "removed", 2: "cleared"}
        keys, events, lost = self.keys, [], 0
        buf = ffi.new("kvc_kv_event[]", 256)
        n, n_lost = ffi.new("int64_t *"), ffi.new("int64_t *")
        while True:
            check(lib.kvc_manager_drain_kv_events(self._m, buf, 256, n, n_lost))
            lost += n_lost[0]
            for e in buf[0:n[0]]:
                kind = names[e.type]
                events.append({"type": kind, "key": keys[e.key_index] if e.key_index >= 0 else None,
                               "block": e.block_id, "tokens": e.n_tokens,
                               "hash": e.hash_hi << 64 | e.hash_lo if kind != "cleared" else None,
                               "parent": e.parent_hi << 64 | e.parent_lo if kind == "stored" else None})
            if n[0] < 256:
                return events, lost

    def block_info(self, block_id, key=None):
        """One block of a key's pool (default the first key):
        {"ref_count": holders, "free": in the free queue, "cached": indexed,
        "hash": the 128-bit chain hash it is indexed under as an int (None
        when not cached)}."""
        out = ffi.new("kvc_block_info *")
        check(lib.kvc_manager_block_info(self._m, self.key_index(key), int32(block_id, "block_id"), out))
        return {"ref_count": out.ref_count, "free": bool(out.free), "cached": bool(out.cached),
                "hash": (out.hash_hi << 64 | out.hash_lo) if out.cached else None}

    def cache_computed(self, request_id, tokens):
        """Indexes the request's full blocks once tokens (prompt then
        generated ids, all computed) are in the cache. A Mamba key keeps a
        snapshot (and releases the step's copy source) only on a report that
        covers the request's last allocation (computed + new tokens)."""
        arr = _tokens(tokens)
        check(lib.kvc_manager_cache_computed(self._m, int64(request_id, "request_id"),
                                             ffi.from_buffer("int32_t[]", arr), arr.size))

    def state_source(self, request_id, key=None):
        """Mamba keys with prefix caching: the block the request's next state
        starts from (0 when its own state block already holds it)."""
        out = ffi.new("int32_t *")
        check(lib.kvc_manager_state_source(self._m, int64(request_id, "request_id"), self.key_index(key), out))
        return out[0]

    def prefix_stats(self):
        """{"queries", "hits", "query_tokens", "hit_tokens", "evictions", "cached_blocks"}."""
        st = ffi.new("kvc_prefix_stats *")
        check(lib.kvc_manager_prefix_stats(self._m, st))
        return {f: getattr(st, f) for f in ("queries", "hits", "query_tokens", "hit_tokens", "evictions",
                                            "cached_blocks")}

    def clear_prefix_cache(self):
        check(lib.kvc_manager_clear_prefix_cache(self._m))

    def free(self, request_id):
        """Returns every block of the request (an unknown id does nothing)."""
        check(lib.kvc_manager_free(self._m, int64(request_id, "request_id")))

    def has_request(self, request_id, key=None):
        return bool(lib.kvc_manager_has_request(self._m, int64(request_id, "request_id"), self.key_index(key)))

    def _ids(self, fn, *args):
        n = ffi.new("int64_t *")
        check(fn(self._m, *args, ffi.NULL, 0, n))
        out = np.zeros(n[0], dtype=np.int32)
        if n[0]:
            check(fn(self._m, *args, ffi.cast("int32_t *", ffi.from_buffer(out)), n[0], n))
        return out

    def block_table(self, request_id, key=None):
        """The request's logical block table of one key (first key by
        default), null entries (0) included: int32 array."""
        return self._ids(lib.kvc_manager_block_ids, int64(request_id, "request_id"), self.key_index(key))

    def block_tables(self, request_id):
        return {k: self.block_table(request_id, i) for i, k in enumerate(self.keys)}

    def free_queue(self, key=None):
        """Free block ids of a key, next to be handed out first."""
        return self._ids(lib.kvc_manager_free_queue, self.key_index(key))

    # ---- usage -----------------------------------------------------------
    def usage(self):
        """{key: {"used", "free", "cached_free", "total", "block_size", "pool", "attn_type"}} (the
        null block counts as used; cached_free: free blocks still holding indexed prefix data;
        pool: the first key drawing from the same pool, the key itself for a pool of its own;
        used, free and total are the pool's, shared by its keys)."""
        out = {}
        for i, k in enumerate(self.keys):
            total, free = lib.kvc_manager_num_blocks(self._m, i), lib.kvc_manager_num_free(self._m, i)
            out[k] = {"used": total - free, "free": free, "total": total,
                      "cached_free": lib.kvc_manager_num_cached_free(self._m, i),
                      "block_size": lib.kvc_manager_block_size(self._m, i),
                "pool": cstr(lib.kvc_manager_key(self._m, lib.kvc_manager_pool_key(self._m, i))),
                      "attn_type": cstr(lib.kvc_attn_type_name(lib.kvc_manager_key_type(self._m, i)))}
        return out

    def stats(self):
        return {"live_requests": lib.kvc_manager_num_live_requests(self._m), "max_model_len": self.max_model_len,
                "keys": self.usage(), "prefix": self.prefix_stats()}

    def check(self):
        """Runs the manager's invariant checks; InternalError names a broken one."""
        check(lib.kvc_manager_check_invariants(self._m))

    # ---- step metadata -----------------------------------------------------
    def step(self, rows, is_prefill):
        """Metadata of one step over rows [(request_id, computed_tokens,
        num_new_tokens), ...] in batch order (request_id < 0: padding), built
        from the current block tables (call after the step's allocate_slots: a
        row past its request's allocation, or of an unknown request, raises
        InvalidArgument)."""
        try:
            rows = [tuple(r) for r in rows]
        except TypeError:  # escaped as Python's TypeError
            raise invalid(f"rows: a list of (request_id, computed_tokens, num_new_tokens) is expected, got "
                          f"{type(rows).__name__}") from None
        n = len(rows)
        req = ffi.new("kvc_step_request[]", max(n, 1))
        tokens = 0
        for i, r in enumerate(rows):
            if len(r) != 3:
                raise invalid(f"row {i}: (request_id, computed_tokens, num_new_tokens) expected, got {r!r}")
            req[i].request_id = int64(r[0], f"row {i} request_id")
            req[i].computed_tokens = int64(r[1], f"row {i} computed_tokens")
            req[i].num_new_tokens = int64(r[2], f"row {i} num_new_tokens")
            tokens += max(req[i].num_new_tokens, 0)
        self._ensure_steps(n, tokens)
        md = ffi.new("kvc_step_metadata *")
        check(lib.kvc_step_metadata_build(self._steps[0], req, n, flag(is_prefill, "is_prefill"), md))
        nr, nt = md.n_rows, md.n_tokens
        keys = {}
        for i in range(md.n_keys):
            k = md.keys[i]
            keys[cstr(k.key)] = StepKey(
                attn_type=cstr(lib.kvc_attn_type_name(k.attn_type)), block_size=k.block_size, width=k.width,
                block_table=_copy(k.block_table, nr * k.width, np.int32, "int32_t *").reshape(nr, k.width),
                slot_mapping=None if k.slot_mapping == ffi.NULL else _copy(k.slot_mapping, nt, np.int64, "int64_t *"))
        arr = {f: _copy(getattr(md, f), nt if f == "positions" else nr, np.int64, "int64_t *")
               for f in ("positions", "kv_pos", "seq_lens_q", "seq_lens_kv", "cu_seq_lens_q", "cu_seq_lens_kv")}
        return StepMetadata(is_prefill=bool(md.is_prefill), n_rows=nr, n_tokens=nt, prompt_tokens=md.prompt_tokens,
                            keys=keys, **arr)

    def _ensure_steps(self, rows, tokens):
        # sized once, regrown (doubling) only when a step is larger than any before
        if self._steps is not None and rows <= self._steps[1] and tokens <= self._steps[2]:
            return
        r = max(rows, 64 if self._steps is None else self._steps[1] * 2)
        t = max(tokens, 1024 if self._steps is None else self._steps[2] * 2)
        # a row never needs more tokens than max_model_len: a larger step is the builder's refusal
        r, t = min(r, 2**31 - 1), min(t, max(r, 1) * self.max_model_len)
        out = ffi.new("kvc_step_buffers **")
        check(lib.kvc_step_buffers_create(self._m, r, t, out))
        self._steps = None  # the old buffers go first
        self._steps = (ffi.gc(out[0], lambda b, m=self._m: lib.kvc_step_buffers_destroy(b)), r, t)
