"""The server with tensor parallelism: `kvcache serve --tensor-parallel-size 2` (mpirun -np 2 of `python -m
kvcache.serve`; rank 0 serves, rank 1 follows its engine) answers greedy, streamed, seeded n=2 and JSON-schema
requests with exactly the single-process server's ids and text, then stops cleanly (both ranks end, status 0).
Refusals name --tensor-parallel-size. Bounded: every wait has a deadline, the job's process group is killed on
failure."""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_fixture import running, sse_events  # noqa: E402
from text_model import make_model_dir  # noqa: E402

from kvcache.engine import tensor_parallel_check  # noqa: E402
from kvcache.errors import InvalidArgument  # noqa: E402

MPIRUN = shutil.which("mpirun")
# the same engine as serve_fixture.running's
ENGINE_ARGS = ["--served-model-name", "test", "--max-num-seqs", "8", "--kv-memory", "16MiB", "--block-size", "4",
               "--max-requests", "64"]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}},
          "required": ["name", "n"], "additionalProperties": False}


def _mpi_built(model):
    try:
        tensor_parallel_check(model, 2)
    except InvalidArgument as exc:
        return "without MPI" not in str(exc)
    return True


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("tp") / "model")


def _greedy(client):
    r = client.post("/v1/completions", json={"model": "test", "prompt": "The quick brown fox", "max_tokens": 12,
                                             "temperature": 0, "return_token_ids": True})
    return r.json()["choices"][0]


def _requests(client):
    """What each request of the test gives: ids and text as the client sees them."""
    out = [_greedy(client)]
    r = client.post("/v1/completions", json={"model": "test", "prompt": "A cache of keys", "max_tokens": 10, "n": 2,
                                             "temperature": 0.9, "seed": 7, "return_token_ids": True})
    out.append(sorted((c["index"], c["text"], c["token_ids"]) for c in r.json()["choices"]))
    with client.stream("POST", "/v1/chat/completions",
                       json={"model": "test", "messages": [{"role": "user", "content": "Blocks of tokens"}],
                             "max_tokens": 10, "temperature": 0, "stream": True}) as r:
        events = sse_events(r.iter_lines())
    out.append("".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"]))
    r = client.post("/v1/chat/completions", json={
        "model": "test", "messages": [{"role": "user", "content": "Name and number"}], "max_tokens": 40,
        "temperature": 0.7, "seed": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}})
    out.append(r.json()["choices"][0]["message"]["content"])
    for i, got in enumerate(out):
        assert got, f"request {i} gave nothing"
    return out


def _echo(client):
    """An echo + logprobs completion (the prompt scored on every rank): its tokens and their logprobs."""
    r = client.post("/v1/completions", json={"model": "test", "prompt": "The quick brown fox", "max_tokens": 2,
                                             "temperature": 0, "echo": True, "logprobs": 1})
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    return lp["tokens"], lp["token_logprobs"], [sorted(t) if t else t for t in lp["top_logprobs"]]


def _close(got, want):
    """TP logits are not bitwise one process's (docs/serve.md): the logprobs agree within 1e-5."""
    assert got[0] == want[0] and got[2] == want[2] and len(got[1]) == len(want[1])
    for g, w in zip(got[1], want[1]):
        assert (g is None and w is None) or abs(g - w) <= 1e-5, (got[1], want[1])


def _start(cmd):
    env = {**os.environ, "KVC_PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "KVC_DIST_TIMEOUT_S": "10"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def _output(proc):
    """The job's output lines so far, read on a thread (so every wait on them has its deadline)."""
    lines = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    return lines


def _url(proc, lines, deadline):
    """The URL rank 0's uvicorn says it listens on (its colours stripped); None if the job ends or time runs out."""
    while time.monotonic() < deadline and proc.poll() is None:
        for line in list(lines):
            if "Uvicorn running on" in line:
                return re.sub(r"\x1b\[[0-9;]*m", "", line).split("running on ")[1].split()[0]
        time.sleep(0.05)
    return None


def _stop(proc):
    """SIGTERM to rank 0 (as to any server): its shutdown ends the follower; the job's group is killed if not."""
    try:
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        pids = [int(p) for p in children]
        # rank 0: the child whose environment says so
        rank0 = [p for p in pids if b"OMPI_COMM_WORLD_RANK=0\0" in open(f"/proc/{p}/environ", "rb").read()]
        os.kill(rank0[0], signal.SIGTERM)
        return proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun (Open MPI)")
def test_tp2_server_equals_one_process(model, kvcache_cmd):
    """`kvcache serve --tensor-parallel-size 2` (which starts mpirun) against the server in one process."""
    if not _mpi_built(model):
        pytest.skip("the package was built without MPI")
    with running(model) as (base, _):
        with httpx.Client(base_url=base, timeout=30) as client:
            want = _requests(client)
            want_echo = _echo(client)
    proc = _start([str(kvcache_cmd), "serve", str(model), "--port", "0", "--tensor-parallel-size", "2", *ENGINE_ARGS])
    try:
        lines = _output(proc)
        url = _url(proc, lines, time.monotonic() + 60)
        assert url, "the tensor-parallel server did not start:\n" + "".join(lines)
        with httpx.Client(base_url=url, timeout=30) as client:
            got = _requests(client)
            got_echo = _echo(client)
            got.append(_greedy(client))  # the ranks still step alike after the scoring pass
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert _stop(proc) == 0, "".join(lines)
    assert got == want + want[:1]
    _close(got_echo, want_echo)


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun (Open MPI)")
def test_tp_refusals_name_the_option(model):
    if not _mpi_built(model):
        pytest.skip("the package was built without MPI")
    with pytest.raises(InvalidArgument, match=r"--tensor-parallel-size 3: .*does not divide num_attention_heads 4"):
        tensor_parallel_check(model, 3)
    # started without mpirun (one rank) for 2: refused naming the option and the ranks
    run = subprocess.run([sys.executable, "-m", "kvcache.serve", str(model), "--port", "0",
                          "--tensor-parallel-size", "2"], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "--tensor-parallel-size 2 but mpirun started 1 rank" in run.stderr, run.stderr
