"""Zero-copy views of caller arrays as the library's kvc_tensor.

Two routes, no copy on either:
  * the buffer protocol (NumPy arrays, memoryviews, bytearrays): the element
    type comes from the buffer's format character;
  * DLPack (PyTorch CPU tensors and any other `__dlpack__` exporter): the
    element type comes from the DLPack dtype, so bf16 tensors pass as they are.
The view must be C-contiguous (row-major, as kvc_tensor is) and in host
memory; a buffer written by the library must be writable.

NumPy has no bf16 or fp8 types: `view_as(array, "bf16")` reinterprets a
uint16 (or int16) array as bf16 elements, `view_as(array, "fp8_e4m3")` (or
"fp8_e5m2") a uint8 array as fp8 elements, still without a copy.
"""
import ctypes

import cffi
import numpy as np

from ._lib import dtype_code, ffi, invalid

# buffer-protocol format character (native byte order) -> kvcache dtype name
_FORMATS = {"f": "f32", "e": "f16", "b": "i8", "i": "i32", "l": "i64", "q": "i64", "?": "bool"}

# DLPack (type code, bits) -> kvcache dtype name (dlpack.h: kDLInt 0,
# kDLFloat 2, kDLBfloat 4, kDLBool 6, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12)
_DLPACK = {(2, 32): "f32", (2, 16): "f16", (4, 16): "bf16", (0, 8): "i8", (0, 32): "i32", (0, 64): "i64",
           (6, 8): "bool", (10, 8): "fp8_e4m3", (12, 8): "fp8_e5m2"}
_KDL_CPU = 1

# dlpack.h's stable ABI, read through a capsule's pointer
_dl = cffi.FFI()
_dl.cdef("""
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data; DLDevice device; int32_t ndim; DLDataType dtype;
    int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor { DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *); } DLManagedTensor;
""")
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Reinterpreted:
    """An array whose elements the library reads as `dtype` (see view_as)."""

    def __init__(self, array, dtype):
        self.array = array
        self.dtype = dtype


# storage dtypes without a NumPy type, and the same-width integer formats they ride on
_REINTERPRET = {"bf16": ("H", "h"), "f16": ("H", "h", "e"), "fp8_e4m3": ("B", "b"), "fp8_e5m2": ("B", "b")}


def view_as(array, dtype):
    """Marks a NumPy array so that its elements are read as `dtype` without a
    copy: "bf16" (or "f16") over uint16/int16 arrays, "fp8_e4m3" / "fp8_e5m2"
    over uint8/int8 arrays. Returns a wrapper every
    kvcache call accepts wherever it takes an array."""
    if dtype not in _REINTERPRET:
        raise invalid(f"view_as: dtype \"{dtype}\" is not one of {sorted(_REINTERPRET)}")
    return Reinterpreted(array, dtype)


class View:
    """A kvc_tensor over caller memory plus what keeps that memory alive."""

    def __init__(self, address, dtype, shape, keep):
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.keep = keep
        self.address = address

    def fill(self, t):
        """Writes this view into the kvc_tensor `t` (a cdata struct)."""
        if len(self.shape) > len(t.shape):
            raise invalid(f"tensor of {len(self.shape)} dims: at most {len(t.shape)} are supported")
        t.data = ffi.cast("void *", self.address)
        t.dtype = dtype_code(self.dtype)
        t.ndim = len(self.shape)
        for i, s in enumerate(self.shape):
            t.shape[i] = s

    def ptr(self, ctype):
        return ffi.cast(ctype, self.address)


def _from_buffer(obj, name, writable, reinterpret):
    # the memoryview only describes the buffer and is released at once; the
    # pointer comes from ffi.from_buffer(obj), which holds obj's buffer itself
    with memoryview(obj) as mv:
        return _buffer_view(obj, mv, name, writable, reinterpret)


def _buffer_dtype(mv, name, reinterpret):
    """The kvcache dtype name of a buffer's elements (its format character, or view_as's name)."""
    fmt = mv.format.lstrip("@=")
    if fmt[:1] in "<>!":
        if (fmt[0] == "<") != (np.little_endian):
            raise invalid(f"{name}: byte order \"{mv.format}\" is not the machine's")
        fmt = fmt[1:]
    if reinterpret is not None:
        if fmt not in _REINTERPRET[reinterpret]:
            raise invalid(f"{name}: view_as(\"{reinterpret}\") needs integer elements of the same width "
                          f"({'/'.join(_REINTERPRET[reinterpret])}), got format \"{mv.format}\"")
        dtype = reinterpret
    elif fmt in _FORMATS and not (fmt in "lq" and mv.itemsize != 8):
        dtype = _FORMATS[fmt]
    else:
        raise invalid(f"{name}: element format \"{mv.format}\" is not f32, f16, i8, i32, i64 or bool "
                      f"(bf16 from NumPy: kvcache.view_as(array, \"bf16\") over uint16)")
    return dtype


def _buffer_view(obj, mv, name, writable, reinterpret):
    dtype = _buffer_dtype(mv, name, reinterpret)
    if not mv.c_contiguous:
        raise invalid(f"{name}: the array is not C-contiguous (use numpy.ascontiguousarray)")
    if writable and mv.readonly:
        raise invalid(f"{name}: the array is read-only but the library writes it")
    buf = ffi.from_buffer("char[]", obj, require_writable=writable)
    address = int(ffi.cast("uintptr_t", buf))
    return View(address, dtype, mv.shape if mv.ndim else (), [obj, buf])


def _from_dlpack(obj, name):
    try:
        capsule = obj.__dlpack__()
    except Exception as e:  # the exporter's own refusal (a tensor that requires grad, a GPU tensor, ...)
        raise invalid(f"{name}: DLPack export refused: {e}") from None
    raw = _capsule_pointer(capsule, b"dltensor")
    t = _dl.cast("DLManagedTensor *", raw).dl_tensor
    if t.device.device_type != _KDL_CPU:
        raise invalid(f"{name}: tensor on DLPack device type {t.device.device_type}: only CPU memory is supported")
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DLPACK:
        raise invalid(f"{name}: DLPack dtype (code {key[0]}, bits {key[1]}, lanes {t.dtype.lanes}) is not "
                      "f32, f16, bf16, fp8 e4m3fn/e5m2, i8, i32, i64 or bool")
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides != _dl.NULL:
        expect = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and t.strides[i] != expect:
                raise invalid(f"{name}: the tensor is not contiguous (strides "
                              f"{[t.strides[j] for j in range(t.ndim)]}); call .contiguous() first")
            expect *= shape[i]
    address = int(_dl.cast("uintptr_t", t.data)) + int(t.byte_offset)
    # the capsule owns the export: keeping it alive keeps the memory alive,
    # and its destructor releases the export when the view goes
    return View(address, _DLPACK[key], shape, [obj, capsule])


def view(obj, name, writable=False):
    """The View of `obj` (NumPy array, buffer, DLPack exporter such as a
    torch CPU tensor, or view_as(...) wrapper); raises InvalidArgument naming
    `name` when it cannot be viewed without a copy."""
    reinterpret = None
    if isinstance(obj, Reinterpreted):
        obj, reinterpret = obj.array, obj.dtype
    try:
        memoryview(obj).release()
        has_buffer = True
    except TypeError:
        has_buffer = False
    if has_buffer:
        return _from_buffer(obj, name, writable, reinterpret)
    if hasattr(obj, "__dlpack__"):
        v = _from_dlpack(obj, name)
        if reinterpret is not None and reinterpret != v.dtype:
            raise invalid(f"{name}: view_as(\"{reinterpret}\") over a {v.dtype} tensor (DLPack tensors carry their own dtype)")
        return v
    raise invalid(f"{name}: {type(obj).__name__} is neither a buffer (NumPy array) nor a DLPack tensor")


def index_array(obj, name, dtype, writable=False):
    """Integer index arrays (lengths, slots, block tables): zero-copy when
    `obj` already is a contiguous array of `dtype` ("i32"/"i64"), otherwise a
    converted NumPy copy (lists, other integer types). Returns a View."""
    try:
        v = view(obj, name, writable)
        if v.dtype == dtype:
            return v
    except Exception:
        if writable:
            raise
    np_type = np.int32 if dtype == "i32" else np.int64
    try:
        arr = np.asarray(obj)
    except Exception:
        raise invalid(f"{name}: cannot be read as an integer array") from None
    # an empty list reads as float64 but holds no non-integer: [] is the lengths of an empty batch
    if arr.size and (arr.dtype.kind not in "iub" or arr.dtype == np.uint64):
        raise invalid(f"{name}: elements of type {arr.dtype} are not integers")
    info = np.iinfo(np_type)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise invalid(f"{name}: values outside {dtype}")
    return view(np.ascontiguousarray(arr, dtype=np_type), name)


def strided_view(obj, name):
    """(View, shape, strides in elements) of a NumPy array that may be a strided
    view into a larger buffer, read only (paged K/V in place, paged_kv.py). The
    View is the 1-D run of elements from the array's first element to its
    last, which lies inside the array's own memory, so strides must be
    whole elements and >= 0 (the first element is then the lowest)."""
    reinterpret = None
    if isinstance(obj, Reinterpreted):
        obj, reinterpret = obj.array, obj.dtype
    try:
        mv = memoryview(obj)
    except TypeError:
        raise invalid(f"{name}: {type(obj).__name__} is not a NumPy array (a strided view is read through "
                      "the buffer protocol)") from None
    with mv:
        dtype = _buffer_dtype(mv, name, reinterpret)
        shape, strides, size = tuple(mv.shape), tuple(mv.strides), mv.itemsize
    if any(s < 0 or s % size for s in strides):
        raise invalid(f"{name}: strides {list(strides)} (bytes) are not whole {size}-byte elements >= 0")
    elements = tuple(s // size for s in strides)
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, elements))
    arr = np.asarray(obj)  # a buffer: the same memory, no copy
    address = arr.__array_interface__["data"][0]
    return View(address, dtype, (extent,), [obj, arr]), shape, elements


def dtype_of(obj):
    """kvcache dtype name of an array, without keeping a view."""
    return view(obj, "array").dtype


__all__ = ["view", "view_as", "index_array", "strided_view", "dtype_of", "View", "Reinterpreted"]
