"""The HTTP/1.1 protocol the server runs under uvicorn: uvicorn's h11 one with
a deadline on a request's headers.

uvicorn arms its keep-alive timer only after a response and disarms it at the
first byte received, so a connection that sends nothing, or trickles its
headers a byte at a time, was held for ever (each one a socket and a parser's
buffer). Here the headers of each request must arrive within read_timeout
seconds of the connection's start or of the previous response's end; the
body then has its own deadline (Server._body)."""
from uvicorn.protocols.http.h11_impl import H11Protocol


class _HeaderDeadline(H11Protocol):
    read_timeout = 30.0  # set by protocol()
    _deadline = None

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

    def connection_made(self, transport):
        super().connection_made(transport)
        self._arm()

    def handle_events(self):
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request's headers are in

    def on_response_complete(self):
        self._arm()  # before: a pipelined request handled there disarms it
        super().on_response_complete()

    def connection_lost(self, exc):
        self._disarm()
        super().connection_lost(exc)


def protocol(read_timeout):
    """The protocol class (uvicorn's `http` setting) whose requests' headers must arrive within read_timeout s."""
    return type("HeaderDeadline", (_HeaderDeadline,), {"read_timeout": read_timeout})
