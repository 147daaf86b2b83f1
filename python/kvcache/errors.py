"""Exceptions: every failed library call raises a subclass of kvcache.Error
carrying the status code, its name and the library's message."""


class Error(Exception):
    """A kvcache call failed. `status` is the kvc_status code (negative),
    `status_name` its name ("KVC_EINVAL") and `message` the library's text
    (kvc_last_error), which names the argument, its value and what was expected."""

    def __init__(self, status, status_name, message):
        super().__init__(f"{status_name}: {message}")
        self.status = status
        self.status_name = status_name
        self.message = message


class InvalidArgument(Error, ValueError):
    """KVC_EINVAL: an invalid argument or configuration."""


class OutOfRange(Error, IndexError):
    """KVC_ERANGE: an index, id, size or value out of range (e.g. logits that are not finite)."""


class DoubleFree(Error):
    """KVC_EDOUBLEFREE: a block that is already free was freed again."""


class OutOfMemory(Error, MemoryError):
    """KVC_ENOMEM: host memory exhausted, or a budget too small."""


class InternalError(Error):
    """KVC_EINTERNAL: a broken internal invariant."""


BY_NAME = {
    "KVC_EINVAL": InvalidArgument,
    "KVC_ERANGE": OutOfRange,
    "KVC_EDOUBLEFREE": DoubleFree,
    "KVC_ENOMEM": OutOfMemory,
    "KVC_EINTERNAL": InternalError,
}


class QueueFull(Error):
    """KVC_NO_SPACE from the engine: every request slot is held (waiting,
    running or finished and not read yet); retry when requests finish."""
