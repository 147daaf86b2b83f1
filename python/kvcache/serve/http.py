"""The HTTP/1.1 protocol the server runs under uvicorn: uvicorn's h11 one with
a deadline on a request's headers, a deadline on a stalled write, and a cap on
the connections open at once.

uvicorn arms its keep-alive timer only after a response and disarms it at the
first byte received, so a connection that sends nothing, or trickles its
headers a byte at a time, was held for ever (each one a socket and a parser's
buffer). Here the headers of each request must arrive within read_timeout
seconds of the connection's start or of the previous response's end; the
body then has its own deadline (Server._body).

A client that stops reading an answer (a stream, mostly) fills the socket's
buffers; uvicorn then waits for them to drain for ever, the request's KV held
all the while. Here a write that has not drained within write_timeout seconds
drops the connection: the request sees a disconnect and is aborted.

A connection opened while max_connections others are open is answered 503
(uvicorn's limit_concurrency answers the same status, but as plain text, and
counts the connection itself: its limit N lets N - 1 in) and closed."""
import functools
import json

from uvicorn.protocols.http.h11_impl import H11Protocol

from .protocol import ApiError


async def _too_many(max_connections, scope, receive, send):
    """The ASGI application answering a connection over the cap: 503 in the OpenAI error shape, then close."""
    body = json.dumps(ApiError(503, f"the server has {max_connections} connections open, "
                                    "retry later (--max-connections)", type="server_error",
                               code="too_many_connections").body()).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _Deadlines(H11Protocol):
    read_timeout = 30.0  # these three: set by protocol()
    write_timeout = 30.0
    max_connections = 256
    _deadline = None
    _stall = None

    def _arm(self):
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout, self._expired)

    def _disarm(self):
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self):
        self._deadline = None
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()  # no request in progress: its headers did not come in time

    def _stalled(self):
        self._stall = None
        self.transport.abort()  # close() would wait for the buffer to drain: for ever

    def connection_made(self, transport):
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:  # this one is among them
            self.app = functools.partial(_too_many, self.max_connections)
        self._arm()

    def handle_events(self):
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request's headers are in

    def on_response_complete(self):
        self._arm()  # before: a pipelined request handled there disarms it
        super().on_response_complete()

    def pause_writing(self):
        super().pause_writing()
        if self._stall is None:
            self._stall = self.loop.call_later(self.write_timeout, self._stalled)

    def resume_writing(self):
        super().resume_writing()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def connection_lost(self, exc):
        self._disarm()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        super().connection_lost(exc)


def protocol(read_timeout, write_timeout, max_connections):
    """The protocol class (uvicorn's `http` setting): a request's headers must arrive within read_timeout s, a
    stalled write must drain within write_timeout s, and at most max_connections connections are served at once."""
    return type("Deadlines", (_Deadlines,), {"read_timeout": read_timeout, "write_timeout": write_timeout,
                                             "max_connections": max_connections})
