"""A kvcache.serve server on 127.0.0.1 and an ephemeral port, run by uvicorn
on a thread of the test process, stopped when the test is done."""
import contextlib
import json
import socket
import threading
import time

import uvicorn

from kvcache.serve import Server


@contextlib.contextmanager
def running(model_dir, send_buffer=None, **kwargs):
    """Yields (base URL, Server) of a server over model_dir (kwargs: Server's). send_buffer: the kernel's send
    buffer of each connection in bytes (default: autotuned, up to megabytes), so a test can fill it quickly."""
    args = dict(served_model_name="test", max_num_seqs=8, kv_memory="16MiB", block_size=4, max_requests=64)
    args.update(kwargs)
    server = Server(model_dir, **args)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if send_buffer is not None:  # the accepted sockets inherit it
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(server.app, log_level="warning", lifespan="on", http=server.http_protocol)
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", server
    finally:
        uv.should_exit = True
        thread.join(30)
        sock.close()


def command_url(proc):
    """The URL a `python -m kvcache.serve` process (stdout a text pipe) says it listens on; None if it ended."""
    for line in proc.stdout:
        if "Uvicorn running on" in line:
            return line.split("running on ")[1].split()[0]
    return None


def slow_steps(monkeypatch, server, seconds=0.02):
    """Each engine step of server takes `seconds` longer, so a request is still running when the client acts."""
    engine = server.engine.engine
    step = engine.step

    def slow():
        time.sleep(seconds)
        return step()

    monkeypatch.setattr(engine, "step", slow)


def metric(text, name):
    """The value of an unlabelled metric in Prometheus text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


def sse_events(lines):
    """The JSON payloads of server-sent event lines, up to [DONE]."""
    out = []
    for line in lines:
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            return out
        out.append(json.loads(line[6:]))
    raise AssertionError("the stream ended without [DONE]")
