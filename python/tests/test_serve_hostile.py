"""kvcache.serve against hostile clients: ones that hold their connection
without finishing a request (slowloris), each cut off after --read-timeout
while the others are served; many leaving at once, running or waiting."""
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import socket
import struct
import threading
import time

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402

from kvcache.serve import app  # noqa: E402
from serve_fixture import metric, running, slow_steps  # noqa: E402
from text_model import make_model_dir  # noqa: E402

BODY = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 2}).encode()
HEAD = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


class _Records(logging.Handler):
    def __init__(self, level=logging.ERROR):
        super().__init__(level)
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


def test_clients_leaving_at_once_free_every_block(tmp_path, monkeypatch):
    """Twelve clients (streams and not, n 1 to 3; two run at a time, the rest wait) leave at once, a few steps
    in: every request is aborted, running or waiting, and every KV block is back in the pool."""
    with running(make_model_dir(tmp_path / "m"), max_num_seqs=2) as (url, srv):
        slow_steps(monkeypatch, srv, 0.01)

        async def client(h, i, leave):
            body = {"model": "test", "prompt": "The quick brown fox " * (1 + i % 4), "max_tokens": 200,
                    "ignore_eos": True, "n": 1 + i % 3, "stream": i % 2 == 0}
            if body["stream"]:
                async with h.stream("POST", url + "/v1/completions", json=body) as r:
                    async for _ in r.aiter_lines():
                        await leave.wait()
                        return
            await h.post(url + "/v1/completions", json=body)  # cancelled: given up

        async def main():
            leave = asyncio.Event()
            async with httpx.AsyncClient(timeout=30) as h:
                tasks = [asyncio.ensure_future(client(h, i, leave)) for i in range(12)]
                while metric((await h.get(url + "/metrics")).text, "kvcache_num_requests_waiting") == 0:
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.1)
                leave.set()
                for t in tasks[1::2]:  # the non-streamed ones
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run(asyncio.wait_for(main(), 30))
        deadline = time.monotonic() + 5
        names = ("kvcache_kv_cache_blocks_in_use", "kvcache_num_requests_running", "kvcache_num_requests_waiting")
        while [metric(httpx.get(url + "/metrics").text, n) for n in names] != [0, 0, 0]:
            assert time.monotonic() < deadline, "the KV of clients that left was not freed"
            time.sleep(0.02)


def test_a_client_that_stops_reading_its_stream_is_dropped(tmp_path, monkeypatch):
    """A client that asks for a long stream and stops reading it: the socket's buffers fill, and the server waited
    for them to drain for ever, the connection held (and, while it ran, the request's KV). Now, write_timeout after
    the write stalls, the connection is dropped and the request aborted: every block back in the pool long before
    the generation would have ended, and the stream cut (no [DONE])."""
    with running(make_model_dir(tmp_path / "m"), write_timeout=0.3, send_buffer=4096) as (url, srv):
        slow_steps(monkeypatch, srv, 0.01)  # 400 steps: 4 s or more
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # before connect: a small window
        sock.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        body = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 400, "ignore_eos": True, "n": 4,
                           "logprobs": 20, "stream": True}).encode()  # about 1 KB an event
        t0 = time.monotonic()
        sock.sendall(HEAD % len(body) + body)
        while metric(httpx.get(url + "/metrics").text, "kvcache_prompt_tokens_total") == 0:  # admitted
            assert time.monotonic() < t0 + 10
            time.sleep(0.01)
        names = ("kvcache_kv_cache_blocks_in_use", "kvcache_num_requests_running", "kvcache_num_requests_waiting")
        while [metric(httpx.get(url + "/metrics").text, n) for n in names] != [0, 0, 0]:
            assert time.monotonic() < t0 + 3, "the request of a client that stopped reading kept running"
            time.sleep(0.02)
        sock.settimeout(10)
        data = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(1 << 20):
                data += chunk
        sock.close()
        assert data.startswith(b"HTTP/1.1 200") and b"data: [DONE]" not in data  # cut off, not finished


def test_a_stream_whose_client_left_is_not_written_to_on(tmp_path, monkeypatch):
    """Streams whose clients leave (the socket reset) while the event loop is behind, a backlog of steps queued:
    the backlog was written to the lost connection back to back, the loop never turning to learn it was lost, and
    each write past the fifth logged asyncio's warning "socket.send() raised exception." (a line per event, per
    client). Each event now waits for the loop's turn before it is written."""
    warnings = _Records(logging.WARNING)
    logging.getLogger("asyncio").addHandler(warnings)
    try:
        with running(make_model_dir(tmp_path / "m")) as (url, srv):
            sse = app._sse
            monkeypatch.setattr(app, "_sse", lambda obj: time.sleep(0.01) or sse(obj))  # the loop falls behind
            body = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 300, "ignore_eos": True,
                               "stream": True}).encode()
            for _ in range(2):
                sock = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close(): a reset
                sock.sendall(HEAD % len(body) + body)
                assert sock.recv(65536).startswith(b"HTTP/1.1 200")
                time.sleep(0.2)  # a backlog builds
                sock.close()
            deadline = time.monotonic() + 10
            while metric(httpx.get(url + "/metrics").text, "kvcache_num_requests_running") > 0:
                assert time.monotonic() < deadline
                time.sleep(0.02)
    finally:
        logging.getLogger("asyncio").removeHandler(warnings)
    assert [r.getMessage() for r in warnings.records] == []


def test_connections_beyond_max_connections_are_answered_503(tmp_path):
    with running(make_model_dir(tmp_path / "m"), max_connections=2) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
        time.sleep(0.1)  # both accepted (the backlog is served in order: the next one is the third anyway)
        r = httpx.get(url + "/v1/models", timeout=10)  # a third connection
        assert r.status_code == 503 and r.json()["error"]["code"] == "too_many_connections"
        assert r.headers["connection"] == "close"
        idle[0].close()
        deadline = time.monotonic() + 5
        while httpx.get(url + "/v1/models", timeout=10).status_code != 200:  # once its close is seen: served
            assert time.monotonic() < deadline, "a connection below the cap was refused"
            time.sleep(0.02)
        idle[1].close()


def test_structured_outputs_that_compile_slowly_do_not_hold_every_worker_thread(tmp_path, monkeypatch):
    """Grammars are compiled and checked on worker threads; 41 requests whose grammars took long (20,000
    guided_choice options take seconds each, and the work goes on when the client leaves) held all of anyio's 40
    default threads, which also parse every request: a plain request waited for them (36 s here with 45). They now
    queue on threads of their own."""
    from kvcache import structured

    release = threading.Event()
    check, choices = structured.Grammar.check, structured.choice_grammar  # compiled, then checked: both held
    monkeypatch.setattr(structured.Grammar, "check", lambda self: (release.wait(30), check(self)))
    monkeypatch.setattr(structured, "choice_grammar", lambda value: release.wait(30) and choices(value))
    with running(make_model_dir(tmp_path / "m")) as (url, _):
        slow = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 1, "guided_choice": ["a", "b"]}).encode()
        socks = [socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=30) for _ in range(41)]
        try:
            for s in socks:
                s.sendall(HEAD.replace(b"Host: x", b"Host: x\r\nConnection: close") % len(slow) + slow)
            time.sleep(0.2)
            t0 = time.monotonic()
            assert httpx.post(url + "/v1/completions", content=BODY, timeout=10).status_code == 200
            assert time.monotonic() - t0 < 5
        finally:
            release.set()
        for s in socks:
            assert answer(s)[0].startswith(b"HTTP/1.1 200")
            s.close()


def test_a_structured_request_does_not_wait_for_the_grammars_of_clients_gone(tmp_path, monkeypatch):
    """8 structured requests whose clients left while their grammars were built (4 on the grammar threads, 4
    waiting for one): the 4 waiting never compile, so a structured request after them waits for the 4 running
    (llguidance cannot interrupt a compile) and not for 8, and those 4 go no further than their compile. Every
    one of them was compiled, then checked, while the real request waited behind them."""
    from kvcache import structured
    from kvcache.serve import protocol

    release, compiled, compile_grammar = threading.Event(), [], protocol.compile_grammar

    def slow(gen):  # the abandoned requests' compile takes until release
        compiled.append(gen.grammar[1])
        if gen.grammar[1] == ["gone"]:
            release.wait(30)
        return compile_grammar(gen)

    monkeypatch.setattr(protocol, "compile_grammar", slow)
    checked, check = [], structured.Grammar.check
    monkeypatch.setattr(structured.Grammar, "check", lambda self: (checked.append(1), check(self)))

    def until(condition, what):
        deadline = time.monotonic() + 10
        while not condition():
            assert time.monotonic() < deadline, what
            time.sleep(0.01)

    with running(make_model_dir(tmp_path / "m")) as (url, server):
        gone = json.dumps({"model": "test", "prompt": "hi", "max_tokens": 1, "guided_choice": ["gone"]}).encode()
        socks = [socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=30) for _ in range(8)]
        try:
            for s in socks:
                s.sendall(HEAD % len(gone) + gone)
            until(lambda: server._grammar_threads is not None and
                  server._grammar_threads.statistics().tasks_waiting == 4, "4 grammars waiting for a thread")
        finally:
            for s in socks:
                s.close()
        until(lambda: server._grammar_threads.statistics().tasks_waiting == 0, "the gone clients' grammars queued")
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            real = pool.submit(httpx.post, url + "/v1/completions", timeout=30,
                               json={"model": "test", "prompt": "hi", "max_tokens": 8, "guided_choice": ["real"]})
            until(lambda: server._grammar_threads.statistics().tasks_waiting == 1, "the real request queued")
            release.set()
            r = real.result()
        assert r.status_code == 200 and r.json()["choices"][0]["text"] == "real", r.text
        assert compiled.count(["gone"]) == 4 and compiled[-1] == ["real"], compiled
        assert len(checked) == 1  # the 4 compiled for gone clients went no further
