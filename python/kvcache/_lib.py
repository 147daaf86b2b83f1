"""The compiled cffi module and the one status check every wrapper uses."""
import os
import stat

import numpy as np

from ._ffi import ffi, lib
from .errors import BY_NAME, Error, InvalidArgument


def status_name(status):
    return ffi.string(lib.kvc_status_str(status)).decode()


def check(status):
    """Returns a success status (>= 0) unchanged; raises the Error subclass
    of a failure with the library's message."""
    if status >= 0:
        return status
    name = status_name(status)
    message = ffi.string(lib.kvc_last_error()).decode(errors="replace")
    raise BY_NAME.get(name, Error)(status, name, message)


def invalid(message):
    """The exception for a fault found on the Python side, before any call
    (same class and status as the library's own refusal of bad input)."""
    return InvalidArgument(lib.KVC_EINVAL, "KVC_EINVAL", message)


def choice(table, value, what):
    """table[value] for a name from a fixed set; anything else (also an
    unhashable value) is refused naming `what` and the choices."""
    if not isinstance(value, str) or value not in table:
        raise invalid(f"{what} \"{value}\" is not one of {', '.join(table)}")
    return table[value]


def _whole(raw, what, value):
    if b"\0" in raw:
        raise invalid(f"{what} {value!r} contains a NUL byte, which a C string cannot hold")
    return raw


def c_name(text, what):
    """A name (key, cache entry, type) as the bytes of a C string; a NUL
    inside is refused naming `what` rather than cutting the name short."""
    try:
        raw = str(text).encode()
    except UnicodeEncodeError:
        raise invalid(f"{what} {text!r} cannot be encoded as UTF-8") from None
    return _whole(raw, what, text)


def c_path(path, what):
    """A file system path (str, bytes or os.PathLike) as a C string, NUL refused."""
    try:
        raw = os.fsencode(path)
    except TypeError:
        raise invalid(f"{what}: {type(path).__name__} is not a path") from None
    return _whole(raw, what, path)


def cstr(text):
    return ffi.string(text).decode() if text != ffi.NULL else None


def dtype_code(name, what="dtype"):
    """The kvc_dtype of a short name ("f32", "bf16", ...). Anything but a
    str (a dtype id by number) is refused, and an unknown name gets the
    library's message, both naming `what`."""
    if not isinstance(name, str):
        raise invalid(f"{what} {name!r} is not a dtype name (a str such as \"f16\")")
    out = ffi.new("kvc_dtype *")
    if lib.kvc_dtype_parse(c_name(name, what), out) < 0:
        raise invalid(f"{what}: " + ffi.string(lib.kvc_last_error()).decode(errors="replace"))
    return out[0]


def dtype_name(code):
    return ffi.string(lib.kvc_dtype_name(code)).decode()


def int64(value, name):
    """An int64 argument: bools, non-integers and values beyond int64 are
    refused as InvalidArgument naming the argument."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise invalid(f"{name}: {value!r} is not an integer")
    v = value.__index__()
    if not -(2**63) <= v < 2**63:
        raise invalid(f"{name}: {v} does not fit int64")
    return v


def int32(value, name):
    v = int64(value, name)
    if not -(2**31) <= v < 2**31:
        raise invalid(f"{name}: {v} does not fit int32")
    return v


def flag(value, name):
    """A true/false argument: a bool (NumPy's too); anything else refused, where bool() took "no" as true."""
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(f"{name}: {value!r} is not true or false")
    return bool(value)


def real(value, name):
    """A float argument (ints and NumPy scalars accepted; the library judges the value). Text is no number:
    float() took temperature="1" (and "inf") as a value."""
    if isinstance(value, (bool, str, bytes, bytearray)):
        raise invalid(f"{name}: {value!r} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise invalid(f"{name}: {value!r} is not a number") from None


MAX_FILE_BYTES = 64 << 20  # the C reader's KVC_MAX_INPUT_BYTES (docs/limits.md)


def read_regular(path):
    """The bytes of a model directory's file, refused by name unless it is a regular file of at most
    MAX_FILE_BYTES, opened without blocking (a FIFO under a file's name blocked for ever, /dev/zero read until
    memory ran out). OSError as open raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        os.close(fd)
        raise invalid(f"{path}: a regular file of at most {MAX_FILE_BYTES} bytes is expected")
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_FILE_BYTES + 1)
