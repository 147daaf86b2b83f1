"""kvcache.AsyncEngine: an Engine stepped on one background thread, its
tokens streamed to any number of asyncio waiters (docs/python.md, "The engine").

The thread owns every call into the engine: requests to add and abort reach
it as commands, applied between steps, so the event loop never waits for a
step (a step releases the GIL while C runs). Each step's outputs go back to
the waiters' event loops with call_soon_threadsafe. A waiter that stops
listening (its task cancelled, a client gone) aborts its request: the engine
frees the request's KV before its next step.
"""
import asyncio
import collections
import contextlib
import threading

from .engine import Engine, SamplingParams


def _settle(fut, result=None, exc=None):
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


class _Stream:
    def __init__(self, loop):
        self.loop = loop
        self.queue = asyncio.Queue()
        self.added = loop.create_future()  # the engine's request id, or the refusal
        self.request_id = None
        self.gone = False  # the waiter left: abort as soon as the request exists


class _Call:
    """A function the engine thread runs between steps; its result or exception settles `done`."""

    def __init__(self, loop, fn):
        self.loop, self.fn = loop, fn
        self.done = loop.create_future()


class RequestStream:
    """One request of an AsyncEngine: `async for out in stream` gives its
    RequestOutputs, one per step that gave it tokens, the last one finished.
    Leaving the iteration early, or abort(), drops the request and frees its KV."""

    def __init__(self, engine, stream):
        self._engine = engine
        self._stream = stream
        self.request_id = stream.request_id
        self.finished = False

    def abort(self):
        if not self.finished and not self._stream.gone:
            self._stream.gone = True
            self._engine._post(("abort", self._stream))

    async def __aiter__(self):
        try:
            while not self.finished:
                out = await self._stream.queue.get()
                if isinstance(out, BaseException):
                    self.finished = True
                    raise out
                self.finished = out.finished
                yield out
        finally:
            self.abort()


class AsyncEngine:
    """Wraps an Engine (or builds one: AsyncEngine(model_dir, **engine_kwargs))
    and starts its stepping thread. add_request() queues a request and
    gives its RequestStream; generate() iterates one directly;
    stats() gives the engine's counters as of the last step (never waits
    for a step); close() stops the thread and frees the engine."""

    def __init__(self, engine, **engine_kwargs):
        self.engine = engine if isinstance(engine, Engine) else Engine(engine, **engine_kwargs)
        self._commands = collections.deque()
        self._wake = threading.Event()
        self._streams = {}  # request id -> _Stream, touched by the engine thread only
        self._stopping = False
        self._ended = None  # why the engine thread ended (an Exception), once it has; set under _lock
        self._lock = threading.Lock()  # orders _post's check-and-queue against the thread's last drain
        self._stats = self.engine.stats()
        self._thread = threading.Thread(target=self._run, name="kvcache-engine", daemon=True)
        self._thread.start()

    # ---- the event loop's side ----

    async def add_request(self, prompt_token_ids, params=SamplingParams(), *, priority=0, cache_salt=None):
        """Queues a request; returns its RequestStream once the engine took
        it, or raises the engine's refusal (InvalidArgument, OutOfMemory,
        QueueFull). Cancelled while waiting: the request is dropped."""
        stream = _Stream(asyncio.get_running_loop())
        self._post(("add", stream, (prompt_token_ids, params), {"priority": priority, "cache_salt": cache_salt}))
        try:
            await stream.added
        except asyncio.CancelledError:
            stream.gone = True
            self._post(("abort", stream))
            raise
        return RequestStream(self, stream)

    async def generate(self, prompt_token_ids, params=SamplingParams(), *, priority=0, cache_salt=None):
        """add_request, then its outputs: an async iterator of RequestOutputs."""
        request = await self.add_request(prompt_token_ids, params, priority=priority, cache_salt=cache_salt)
        try:
            async for out in request:
                yield out
        finally:
            request.abort()

    async def prompt_logprobs(self, prompt_token_ids, k=0):
        """Engine.prompt_logprobs, run on the engine thread between two steps (the requests running wait
        meanwhile: a pass over the prompt)."""
        call = _Call(asyncio.get_running_loop(), lambda: self.engine.prompt_logprobs(prompt_token_ids, k))
        self._post(("call", call))
        return await call.done

    def stats(self):
        return dict(self._stats)

    @property
    def alive(self):
        """Whether the engine thread still takes requests (False once closed, or once the thread ended on an
        error no step could catch: then add_request raises RuntimeError naming it)."""
        return self._ended is None and not self._stopping

    def close(self):
        """Stops the stepping thread (requests still running fail with
        RuntimeError) and frees the engine."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self.engine.close()

    def _post(self, command):
        with self._lock:
            ended = RuntimeError("the engine is closed") if self._stopping else self._ended
            if ended is None:
                self._commands.append(command)
                self._wake.set()
                return
        if command[0] != "abort":  # an abort of a request the ended thread already failed needs nothing
            raise ended

    # ---- the engine thread ----

    def _run(self):
        ended = RuntimeError("the engine was closed")
        try:
            while not self._stopping:
                try:
                    self._apply_commands()
                    if not self.engine.has_unfinished():
                        self._wake.wait()
                        self._wake.clear()
                        continue
                    self._deliver(self.engine.step())
                    self._stats = self.engine.stats()
                except Exception as exc:  # no progress, a failed forward: every request fails with it
                    self._fail_all(exc)
        except BaseException as exc:  # anything else ends the thread: said to every waiter and later caller
            ended = RuntimeError(f"the engine thread stopped: {exc!r}")
            raise
        finally:
            with self._lock:  # no command is queued after this: _post refuses from now on
                self._ended = ended
            self._fail_all(ended)

    def _apply_commands(self):
        changed = False
        while self._commands:
            kind, stream, *rest = self._commands.popleft()
            changed = True
            if kind == "add":
                self._add(stream, *rest)
            elif kind == "call":
                self._call_between_steps(stream)
            elif stream.request_id is not None and self._streams.pop(stream.request_id, None) is not None:
                self.engine.abort(stream.request_id)
        if changed:
            self._stats = self.engine.stats()

    def _add(self, stream, args, kwargs):
        if stream.gone:
            return
        try:
            rid = self.engine.add_request(*args, **kwargs)
        except Exception as exc:
            _call(stream.loop, _settle, stream.added, None, exc)
            return
        stream.request_id = rid
        self._streams[rid] = stream
        _call(stream.loop, _settle, stream.added, rid)

    def _call_between_steps(self, call):
        try:
            result, exc = call.fn(), None
        except Exception as e:  # the caller's to handle (a bad argument, memory)
            result, exc = None, e
        _call(call.loop, _settle, call.done, result, exc)

    def _deliver(self, outputs):
        by_loop = collections.defaultdict(list)
        for out in outputs:
            stream = self._streams.get(out.request_id)
            if stream is None:
                continue
            if out.finished:
                del self._streams[out.request_id]
            by_loop[stream.loop].append((stream.queue, out))
        for loop, items in by_loop.items():
            _call(loop, _put_all, items)

    def _fail_all(self, exc):
        for rid, stream in list(self._streams.items()):
            # an engine that failed may refuse the release too: the waiter still learns of the failure, and this
            # thread goes on (ending it would leave every later request waiting for ever)
            with contextlib.suppress(Exception):
                self.engine.abort(rid)
            _call(stream.loop, stream.queue.put_nowait, exc)
        self._streams.clear()
        while self._commands:
            kind, stream, *_ = self._commands.popleft()
            if kind in ("add", "call"):
                _call(stream.loop, _settle, stream.added if kind == "add" else stream.done, None, exc)


def _call(loop, fn, *args):
    """fn(*args) on loop's thread; nothing when that loop has closed (its waiters are gone)."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:
        pass


def _put_all(items):
    for queue, out in items:
        queue.put_nowait(out)
