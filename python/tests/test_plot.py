"""kvcache.plot draws without a display to non-empty files of sane size, the
trace steps it draws are the manager's own usage, and the command's --plot
runs it."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import kvcache
from conftest import DATA, REPO

plot = pytest.importorskip("kvcache.plot")
pytest.importorskip("matplotlib")
TRACE = REPO / "examples" / "hybrid_pressure.json"
PNG = b"\x89PNG\r\n\x1a\n"


def assert_png(path, min_kib=8, max_kib=1024):
    data = path.read_bytes()
    assert data[:8] == PNG
    assert min_kib * 1024 <= len(data) <= max_kib * 1024, len(data)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 400 <= width <= 2000 and 200 <= height <= 1200


def test_trace_steps_are_the_managers_usage(kvcache_cmd):
    out = subprocess.run([str(kvcache_cmd), "trace", str(TRACE), "--usage"], capture_output=True, text=True, check=True)
    steps = plot.trace_steps(out.stdout)
    trace = json.loads(TRACE.read_text())
    m = kvcache.Manager(trace["layers"], block_num=trace["block_num"], max_model_len=trace["max_model_len"])
    assert len(steps) == len(trace["ops"])
    for op, step in zip(trace["ops"], steps):
        if op["op"] == "free":
            m.free(op["request"])
        else:
            ok = m.allocate_slots(op["request"], op.get("computed_tokens", 0), op["new_tokens"],
                                  op.get("lookahead_tokens", 0))
            assert step["refused"] == (not ok)
        assert step["usage"] == {k: u["used"] for k, u in m.usage().items()}
        assert step["total"] == {k: u["total"] for k, u in m.usage().items()}
    assert any(s["refused"] for s in steps)  # the example runs out of blocks on purpose


def test_prefix_hits_are_marked(kvcache_cmd, tmp_path):
    example = REPO / "python" / "examples" / "prefix_trace.json"
    out = subprocess.run([str(kvcache_cmd), "trace", str(example), "--usage"], capture_output=True, text=True, check=True)
    steps = plot.trace_steps(out.stdout)
    assert sum(1 for s in steps if s["prefix_hit_tokens"] == 64) == 13  # every request after the first
    fig = plot.block_usage(steps, tmp_path / "prefix.png")
    assert any("prefix hit (13)" in t.get_text() for t in fig.axes[0].get_legend().get_texts())


def test_block_usage_marks(tmp_path):
    steps = [{"usage": {"A": 1 + i, "B": 1 + i // 2}, "total": {"A": 11, "B": 11}, "preempted": int(i == 5),
              "prefix_hit_tokens": 16 * (i == 3), "refused": i == 7} for i in range(10)]
    fig = plot.block_usage(steps, tmp_path / "usage.png")
    assert_png(tmp_path / "usage.png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("preemption (1)" in t for t in labels) and any("prefix hit (1)" in t for t in labels)
    assert any("refused" in t for t in labels)


def test_plan_memory(tmp_path):
    p = kvcache.plan(DATA / "configs" / "gpt-oss-20b.json", max_model_len=8192, max_concurrency=8)
    plot.plan_memory(p, tmp_path / "plan.png")
    assert_png(tmp_path / "plan.png")
    plot.plan_memory(p, tmp_path / "plan.svg")
    assert (tmp_path / "plan.svg").read_text().lstrip().startswith("<?xml")


def test_latency(tmp_path):
    rng = np.random.default_rng(0)
    runs = {"a": {"ttft_ms": rng.gamma(2, 20, 100).tolist(), "tpot_ms": rng.gamma(5, 1, 100).tolist()},
            "b": {"ttft_ms": rng.gamma(2, 30, 100).tolist(), "tpot_ms": rng.gamma(5, 2, 100).tolist()}}
    fig = plot.latency(runs, tmp_path / "lat.png")
    assert_png(tmp_path / "lat.png")
    assert len(fig.axes) == 2 and "p99" in fig.axes[0].get_legend().get_texts()[0].get_text()
    # the bench's data: one JSON line per pass, one row of panels per family
    lines = [json.dumps({"family": fam, "run": run, **r}) for fam in ("qwen3", "gpt_oss") for run, r in runs.items()]
    data = tmp_path / "bench.png.jsonl"
    data.write_text("\n".join(lines) + "\n")
    r = subprocess.run([sys.executable, "-m", "kvcache.plot", "latency", str(data), str(tmp_path / "bench.png")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert_png(tmp_path / "bench.png")
    assert set(plot.latency_runs(data.read_text())) == {"qwen3", "gpt_oss"}


def test_command_line_plot_flags(kvcache_cmd, tmp_path):
    env = {**os.environ, "KVC_PYTHON": sys.executable, "MPLBACKEND": "Agg"}
    r = subprocess.run([str(kvcache_cmd), "trace", str(TRACE), "--plot", str(tmp_path / "t.png")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert_png(tmp_path / "t.png")
    assert (tmp_path / "t.png.jsonl").read_text() == r.stdout  # the data is what was printed
    r = subprocess.run([str(kvcache_cmd), "plan", str(DATA / "configs" / "Qwen3-8B.json"), "--plot",
                        str(tmp_path / "p.png")], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert_png(tmp_path / "p.png")
    assert json.loads((tmp_path / "p.png.json").read_text()) == dict(kvcache.plan(DATA / "configs" / "Qwen3-8B.json"))


def test_command_line_plot_without_python(kvcache_cmd, tmp_path):
    env = {**os.environ, "KVC_PYTHON": str(tmp_path / "no-python")}
    r = subprocess.run([str(kvcache_cmd), "plan", str(DATA / "configs" / "Qwen3-8B.json"), "--plot",
                        str(tmp_path / "p.png")], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "could not start" in r.stderr and "p.png.json" in r.stderr
    assert r.stderr.count("\n") == 1 and "Set KVC_PYTHON" in r.stderr  # what to do, in one line
    assert not (tmp_path / "p.png").exists() and (tmp_path / "p.png.json").exists()


def test_command_line_plot_finds_the_build_virtualenv(kvcache_cmd, tmp_path):
    """Without KVC_PYTHON (and no python3 on PATH) the command runs the
    virtualenv `make python-test` makes beside it: build/python-venv."""
    build = tmp_path / "build"
    venv_bin = build / "python-venv" / "bin"
    venv_bin.mkdir(parents=True)
    shutil.copy(kvcache_cmd, build / "kvcache")
    python = venv_bin / "python"  # stands in for the virtualenv's interpreter, and says it ran
    python.write_text(f'#!/bin/sh\n: > "{tmp_path}/ran"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "KVC_PYTHON"}
    env.update(PATH=str(tmp_path / "empty"), MPLBACKEND="Agg")
    r = subprocess.run([str(build / "kvcache"), "plan", str(DATA / "configs" / "Qwen3-8B.json"), "--plot",
                        str(tmp_path / "p.png")], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ran").exists()
    assert_png(tmp_path / "p.png")


def test_module_command_reports_bad_data(tmp_path):
    (tmp_path / "bad.json").write_text("{}")
    r = subprocess.run([sys.executable, "-m", "kvcache.plot", "trace", str(tmp_path / "bad.json"),
                        str(tmp_path / "x.png")], capture_output=True, text=True)
    assert r.returncode == 1 and "no usage lines" in r.stderr
    (tmp_path / "list.json").write_text("[]")  # was an AttributeError traceback for plan
    for kind in ("plan", "usage"):
        assert plot.main([kind, str(tmp_path / "list.json"), str(tmp_path / "x.png")]) == 1
