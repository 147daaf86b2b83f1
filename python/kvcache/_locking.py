"""One lock per object over a C handle (docs/python.md, "Threads").

The cffi calls release the GIL, so two Python threads can be inside the
library at the same time. The library's objects (a kvc_manager, its step
buffers) are not thread-safe, so every method of a class decorated with
@serialised runs under the object's own reentrant lock: calls on one object
take turns, calls on different objects run in parallel. The lock also keeps
a call from using a handle that another call is replacing or releasing (the
step buffers a larger step regrows)."""
import functools
import inspect
import threading


def _locked(fn):
    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)

    return call


def serialised(cls):
    """Class decorator: __init__ gives the object its lock (an RLock, so a
    method may call another), and every other method and property accessor
    of the class body runs under it."""
    for name, attr in list(vars(cls).items()):
        if isinstance(attr, property):
            accessors = (f and _locked(f) for f in (attr.fget, attr.fset, attr.fdel))
            setattr(cls, name, property(*accessors, attr.__doc__))
        elif inspect.isfunction(attr) and name != "__init__":
            setattr(cls, name, _locked(attr))
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        self._lock = threading.RLock()
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls
