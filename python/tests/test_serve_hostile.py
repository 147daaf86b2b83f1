"""kvcache.serve against clients that hold their connection without finishing
a request (slowloris): each is cut off after --read-timeout while the others
are served."""
import json
import logging
import socket
import time

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402

from serve_fixture import running  # noqa: E402
from text_model import make_model_dir  # noqa: E402

BODY = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 2}).encode()
HEAD = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def answer(sock):
    """What the server sends before it closes the connection, and the seconds it took."""
    t0, out = time.monotonic(), b""
    while chunk := sock.recv(65536):
        out += chunk
    return out, time.monotonic() - t0


def test_a_client_that_never_finishes_its_request_is_cut_off(tmp_path):
    errors = _Records()
    logging.getLogger("uvicorn.error").addHandler(errors)
    try:
        with running(make_model_dir(tmp_path / "m"), read_timeout=0.5) as (url, _):
            port = int(url.rsplit(":", 1)[1])
            socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
            socks[0].sendall(HEAD % len(BODY) + BODY[:10])  # half a body: was held as long as the client liked
            socks[1].sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")  # half the headers: the same
            # socks[2] sends nothing: the same; socks[3] leaves in the middle of its body (a traceback in the log)
            socks[3].sendall(HEAD % len(BODY) + BODY[:10])
            time.sleep(0.1)
            socks[3].close()
            assert httpx.post(url + "/v1/completions", content=BODY, timeout=10).status_code == 200  # not blocked
            out, took = answer(socks[0])
            assert out.startswith(b"HTTP/1.1 408") and b"request_timeout" in out and took < 5
            for s in socks[1:3]:
                assert answer(s)[0] == b""  # closed: no request to answer
            for s in socks[:3]:
                s.close()
            assert httpx.post(url + "/v1/completions", content=BODY, timeout=10).status_code == 200
    finally:
        logging.getLogger("uvicorn.error").removeHandler(errors)
    assert [r.getMessage() for r in errors.records] == []
