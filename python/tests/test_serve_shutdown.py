"""kvcache.serve stopping with requests in flight: SIGINT / SIGTERM end the
process within --shutdown-timeout, status 0, no traceback; a request the
server stops gets an error answer (a stream: an error event and [DONE]) and
its KV is freed."""
import asyncio
import json
import signal
import subprocess
import sys
import threading
import time

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402

from serve_fixture import command_url, metric, running, slow_steps, sse_events  # noqa: E402
from text_model import make_model_dir  # noqa: E402

BODY = {"model": "test", "prompt": "The quick brown fox", "max_tokens": 400, "temperature": 0, "ignore_eos": True}
# the command line with every engine step 20 ms slower: 400 tokens take 8 s, far beyond the shutdown timeout
SLOW_SERVE = """import sys, time
import kvcache.engine as E
step = E.Engine.step
E.Engine.step = lambda self: (time.sleep(0.02), step(self))[1]
from kvcache.serve.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("model"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_with_requests_in_flight(model_dir, tmp_path, signum):
    script = tmp_path / "slow_serve.py"
    script.write_text(SLOW_SERVE)
    proc = subprocess.Popen([sys.executable, str(script), str(model_dir), "--port", "0", "--kv-memory", "8MiB",
                             "--served-model-name", "test", "--shutdown-timeout", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = command_url(proc)
        assert url is not None
        answers = {}

        def whole():
            answers["whole"] = httpx.post(url + "/v1/completions", json=BODY, timeout=30)

        waiter = threading.Thread(target=whole)
        waiter.start()
        with httpx.stream("POST", url + "/v1/completions", json={**BODY, "stream": True}, timeout=30) as r:
            lines = r.iter_lines()
            next(lines)  # generating
            deadline = time.monotonic() + 5
            while metric(httpx.get(url + "/metrics").text, "kvcache_num_requests_running") < 2:  # both in flight
                assert time.monotonic() < deadline
                time.sleep(0.01)
            start = time.monotonic()
            proc.send_signal(signum)
            events = sse_events(list(lines))
        waiter.join(30)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and time.monotonic() - start < 5, out
        assert "Traceback" not in out, out
        assert events[-1]["error"]["code"] == "shutting_down"
        assert answers["whole"].status_code == 503 and answers["whole"].json()["error"]["code"] == "shutting_down"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


async def cancel_midway(srv, body, running=lambda srv: srv.engine.stats()["kv_blocks_in_use"] > 0):
    """Calls the application as the ASGI server does, cancels the call once running(srv) (by default: while its
    request runs), as uvicorn does to the requests left at its shutdown timeout; returns the messages sent."""
    data, sent = json.dumps(body).encode(), []
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/completions", "raw_path": b"/v1/completions", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    messages = [{"type": "http.request", "body": data, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client stays

    async def send(message):
        sent.append(message)

    task = asyncio.ensure_future(srv.app(scope, receive, send))
    deadline = time.monotonic() + 5
    while not running(srv):
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.wait_for(task, 5)  # taken: the call ends with an answer, not CancelledError
    return sent


def kv_freed(srv, timeout=2):
    deadline = time.monotonic() + timeout
    while any(srv.engine.stats()[k] for k in ("kv_blocks_in_use", "running", "waiting")):
        assert time.monotonic() < deadline, "the KV of a cancelled request was not freed"
        time.sleep(0.02)


def test_a_request_cancelled_while_tokenized_answers_503(model_dir, monkeypatch):
    with running(model_dir) as (url, srv):
        tokenizing, encode = threading.Event(), srv.tokenizer.encode

        def slow(*args, **kwargs):
            tokenizing.set()
            time.sleep(0.3)
            return encode(*args, **kwargs)

        monkeypatch.setattr(srv.tokenizer, "encode", slow)
        sent = asyncio.run(cancel_midway(srv, BODY, lambda srv: tokenizing.is_set()))
        assert sent[0]["status"] == 503 and b"shutting_down" in sent[1]["body"]
        monkeypatch.undo()
        kv_freed(srv)
        assert httpx.post(url + "/v1/completions", json={**BODY, "max_tokens": 2}).status_code == 200


@pytest.mark.parametrize("stream", [False, True])
def test_a_cancelled_request_answers_and_frees_its_kv(model_dir, monkeypatch, stream):
    with running(model_dir) as (_, srv):
        slow_steps(monkeypatch, srv)
        sent = asyncio.run(cancel_midway(srv, {**BODY, "stream": stream}))
        assert sent[0]["status"] == (200 if stream else 503) and sent[-1].get("more_body", False) is False
        body = b"".join(m.get("body", b"") for m in sent[1:]).decode()
        assert "shutting_down" in body and body.endswith("data: [DONE]\n\n") == stream
        kv_freed(srv)
        monkeypatch.undo()
        assert httpx.post(_ + "/v1/completions", json={**BODY, "max_tokens": 2}).status_code == 200


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the thread's own end
def test_an_engine_thread_that_ends_fails_its_requests_and_health(model_dir, monkeypatch):
    """vLLM's /health answers 503 once its engine is dead. Here the engine thread ends on an error no step
    catches (SystemExit from a step): the streamed request in flight gets an error event and [DONE], /health
    turns 503, and a new request is answered 503 engine_dead at once (it waited for ever: its command went to a
    queue no thread read)."""
    with running(model_dir) as (url, srv):
        assert httpx.get(url + "/health").status_code == 200
        step, steps = srv.engine.engine.step, []

        def dying():
            steps.append(1)
            if len(steps) == 3:
                raise SystemExit("a step that ends the thread")
            return step()

        monkeypatch.setattr(srv.engine.engine, "step", dying)
        with httpx.stream("POST", url + "/v1/completions", json={**BODY, "stream": True}, timeout=10) as r:
            events = sse_events(r.iter_lines())
        assert events[-1]["error"]["code"] is None and "the engine thread stopped" in events[-1]["error"]["message"]
        assert httpx.get(url + "/health").status_code == 503
        r = httpx.post(url + "/v1/completions", json={**BODY, "max_tokens": 2}, timeout=10)
        assert r.status_code == 503 and r.json()["error"]["code"] == "engine_dead", r.text
