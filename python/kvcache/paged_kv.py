"""attention's paged_kv keyword: paged K and V read in place through the
library's descriptor (ops.h kvc_paged_kv, docs/ops.md "Paged K/V descriptor"),
given as a dict of strides or read from strided NumPy views of the caches."""
from ._lib import choice, ffi, int32, int64, invalid, lib
from .arrays import strided_view, view

# Paged cache block layouts (attention's kv_layout, the writes' layout, a described tensor's layout).
KV_LAYOUTS = {
    "BNBSND": lib.KVC_BLOCK_BNBSND,  # [NB, bs, Nkv, D] (or [NB, bs, Nkv*D])
    "BNNBSD": lib.KVC_BLOCK_BNNBSD,  # [NB, Nkv, bs, D]
    "NZ": lib.KVC_BLOCK_NZ,  # [NB, Nkv, D/c0, bs, c0]
    "BNNDBS": lib.KVC_BLOCK_BNNDBS,  # K [NB, Nkv, D, bs] (keys in lanes); attention reads V as BNNBSD
}
# paged_kv="strides": the axes (block, slot, head, channel) of a 4-D view in each layout
_AXES = {"BNBSND": (0, 1, 2, 3), "BNNBSD": (0, 2, 1, 3), "BNNDBS": (0, 3, 1, 2)}
_TENSOR_KEYS = ("layout", "head_dim", "block_stride", "head_stride", "token_stride")
_STRIDES = ("block_stride", "head_stride", "token_stride", "channel_stride")


def _keys(spec, name, required, optional=()):
    """Refuses anything but a dict holding the required keys and no others, naming `name`."""
    if not isinstance(spec, dict):
        raise invalid(f"{name} {spec!r} is not a dict of {', '.join(required + optional)}")
    unknown = sorted((str(key) for key in spec if key not in required + optional))
    if unknown:
        raise invalid(f"{name}: unknown key(s) {', '.join(unknown)} (it takes {', '.join(required + optional)})")
    missing = [key for key in required if key not in spec]
    if missing:
        raise invalid(f"{name}: missing {', '.join(missing)}")


def _fill_tensor(t, spec, name):
    """One kvc_paged_tensor from {layout, head_dim, *_stride} (channel_stride 1 when absent)."""
    _keys(spec, name, _TENSOR_KEYS, ("channel_stride",))
    t.layout = choice(KV_LAYOUTS, spec["layout"], f"{name}.layout")
    t.head_dim = int64(spec["head_dim"], f"{name}.head_dim")
    for field in _STRIDES:
        setattr(t, field, int64(spec.get(field, 1), f"{name}.{field}"))


def _from_views(k, v, kv_layout, k_rope=None):
    """(spec, k View, v View, k_rope View or None, Nkv) of k, v (and MLA's k_rope) as 4-D NumPy views in
    kv_layout's axis order (k_rope in k's), each placed by its own strides (views of one combined buffer)."""
    if kv_layout not in _AXES:
        raise invalid(f"paged_kv \"strides\" reads views with kv_layout {', '.join(_AXES)}, not \"{kv_layout}\" "
                      "(describe NZ tiles with a paged_kv dict)")
    spec, views, dims = {}, {"k_rope": None}, {}
    for name, arr in (("k", k), ("v", v), ("k_rope", k_rope)):
        if arr is None:
            continue
        layout = "BNNBSD" if name == "v" and kv_layout == "BNNDBS" else kv_layout
        views[name], shape, strides = strided_view(arr, name)
        if len(shape) != 4:
            raise invalid(f"paged_kv \"strides\": {name} of shape {list(shape)} is not a 4-D {layout} view")
        b, o, g, c = _AXES[layout]
        spec[name] = dict(layout=layout, head_dim=shape[c], block_stride=strides[b], head_stride=strides[g],
                          token_stride=strides[o], channel_stride=strides[c])
        dims[name] = (shape[b], shape[o], shape[g])
    for name in dims:
        if dims[name] != dims["k"]:
            raise invalid("paged_kv \"strides\": k has (blocks, block_size, kv heads) {}, {} {}: they must match"
                          .format(dims["k"], name, dims[name]))
    nb, bs, nkv = dims["k"]
    return dict(num_blocks=nb, block_size=bs, **spec), views["k"], views["v"], views["k_rope"], nkv


def describe(paged_kv, k, v, kv_layout, k_rope=None):
    """(kvc_paged_kv cdata, k View, v View, k_rope View or None, block_size, Nkv or None, Dv) of
    attention's paged_kv: "strides" (k, v and k_rope strided views, see _from_views)
    or a dict {num_blocks, block_size, k: {...}, v: {...}[, k_rope: {...}]} over contiguous
    k, v and k_rope (e.g. 1-D runs of one buffer); the library checks the values."""
    if isinstance(paged_kv, str):
        if paged_kv != "strides":
            raise invalid(f"paged_kv \"{paged_kv}\" is neither \"strides\" nor a dict")
        spec, kv_, vv, krv, nkv = _from_views(k, v, kv_layout, k_rope)
    else:
        _keys(paged_kv, "paged_kv", ("num_blocks", "block_size", "k", "v"), ("k_rope",))
        if ("k_rope" in paged_kv) != (k_rope is not None):
            raise invalid("paged_kv: a \"k_rope\" entry goes with the k_rope array (give both or neither)")
        spec, kv_, vv, nkv = paged_kv, view(k, "k"), view(v, "v"), None
        krv = None if k_rope is None else view(k_rope, "k_rope")
    d = ffi.new("kvc_paged_kv *")
    d.num_blocks = int64(spec["num_blocks"], "paged_kv.num_blocks")
    _fill_tensor(d.k, spec["k"], "paged_kv.k")
    _fill_tensor(d.v, spec["v"], "paged_kv.v")
    if krv is not None:
        _fill_tensor(d.k_rope, spec["k_rope"], "paged_kv.k_rope")
    return d, kv_, vv, krv, int32(spec["block_size"], "paged_kv.block_size"), nkv, d.v.head_dim
