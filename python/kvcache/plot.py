"""kvcache.plot: pictures of block usage, a plan's memory and latencies
(matplotlib, drawn without a display: figures are built directly, never
through pyplot).

  block_usage(steps, out)     blocks in use per manager key over steps, with
                              preemptions, prefix hits and refusals marked
  trace_steps(lines)          the steps of a `kvcache trace --usage` output
  plan_memory(plan, out)      where a plan's cache memory goes
  latency(runs, out)          TTFT / TPOT distributions; latency_runs(lines) reads
                              `kvcache bench engine --plot` data

Every function returns the matplotlib Figure and writes it to `out` when
given (the format follows the file name: .png, .svg, .pdf).

As a command (what `kvcache trace|plan|bench engine --plot FILE.png` runs):
  python -m kvcache.plot trace|plan|latency|usage DATA.json OUT.png
"""
import json
import sys

_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
           "#d62728"]
_TYPE_COLORS = {
    "FullAttention": "#1f77b4",
    "SlidingWindow": "#ff7f0e",
    "Mamba": "#2ca02c",
    "ChunkedLocal": "#9467bd",
}


def _figure(w, h):
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=100, layout="constrained")


def _save(fig, out):
    if out is not None:
        fig.savefig(out, dpi=100)
    return fig


def _fmt_bytes(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


# ---- block usage ---------------------------------------------------------------


def trace_steps(lines):
    """Steps of `kvcache trace FILE --usage` output (JSON Lines, a list of
    lines or one string): one step per op with its usage
    {"usage": {key: used}, "total": {key: total}, "refused": bool, "prefix_hit_tokens": n}
    (n: the "hit" of an allocation's op line, the tokens a prefix-cache hit
    supplied; a query's line, without "blocks", takes nothing)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    steps, pending = [], None
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        rec = json.loads(raw)
        if "op" in rec:
            pending = {"refused": rec.get("ok") is False or "error" in rec,
                       "prefix_hit_tokens": int(rec.get("hit", 0) or 0) if "blocks" in rec else 0}
        elif "usage" in rec and pending is not None:
            used, total = {}, {}
            for part in rec["usage"].split(","):
                key, _, frac = part.rpartition(":")
                u, _, t = frac.partition("/")
                used[key], total[key] = int(u), int(t)
            steps.append({**pending, "usage": used, "total": total})
            pending = None
    if not steps:
        raise ValueError("no usage lines: run `kvcache trace FILE --usage`")
    return steps


def block_usage(steps, out=None, title="Block usage per manager key"):
    """Blocks in use (null block excluded) per manager key over steps, as a
    share of the key's pool, with markers: preemptions (step["preempted"] > 0),
    prefix hits (step["prefix_hit_tokens"] > 0) and refused allocations
    (step["refused"]). steps: [{"usage": {key: used}, "total": {key: total}, ...}]."""
    fig = _figure(9, 4.2)
    ax = fig.add_subplot()
    keys = list(steps[0]["usage"]) if steps else []
    x = list(range(len(steps)))
    for i, key in enumerate(keys):
        total = steps[0]["total"][key]
        y = [100.0 * (s["usage"][key] - 1) / max(total - 1, 1) for s in steps]  # the null block is never usable
        ax.plot(x, y, color=_COLORS[i % len(_COLORS)], lw=1.6, label=f"{key} ({total - 1} blocks)")
    marks = [("preempted", "x", "#d62728", "preemption"), ("prefix_hit_tokens", "^", "#2ca02c", "prefix hit"),
             ("refused", "o", "#ff7f0e", "refused (no space)")]
    for field, marker, color, label in marks:
        at = [i for i, s in enumerate(steps) if s.get(field)]
        if at:
            ax.scatter(at, [103] * len(at), marker=marker, color=color, s=28, label=f"{label} ({len(at)})",
                       clip_on=False, zorder=3)
    ax.set_ylim(0, 106)
    ax.set_xlim(-0.5, max(len(steps) - 0.5, 0.5))
    ax.set_xlabel("step")
    ax.set_ylabel("blocks in use (% of pool)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, ncol=2, framealpha=0.9)
    return _save(fig, out)


# ---- plan memory -----------------------------------------------------------------


def plan_memory(plan, out=None):
    """Where a plan's cache memory goes: per manager key (layer group) the
    bytes of its pool, fixed-size keys (sized per request) apart from
    per-token ones, and the per-token bytes by attention type over the layers.
    plan: a kvcache.plan(...) result or the `kvcache plan --json` document."""
    fig = _figure(10, 4.2)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    managers = plan.get("managers") or []
    names = [m["key"] for m in managers]
    sizes = [m["block_num"] * m["block_bytes"] for m in managers]
    colors = ["#ff7f0e" if m["fixed"] else "#1f77b4" for m in managers]
    bars = left.barh(names, [s / 2**20 for s in sizes], color=colors)
    for bar, m, s in zip(bars, managers, sizes):
        left.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                  f" {_fmt_bytes(s)}, {m['block_num']} x {m['block_size']}-token blocks", va="center", fontsize=8)
    left.set_xlabel("MiB")
    left.set_title("pool per manager key (blue: per token, orange: fixed per request)", fontsize=9)
    left.invert_yaxis()
    left.margins(x=0.6)

    per_type = {}
    for layer in plan.get("layers") or []:
        kind = layer.get("attn_type") or "?"
        per_type[kind] = per_type.get(kind, 0) + sum(c.get("bytes_per_token") or 0 for c in layer.get("caches", []))
    labels = [f"{k}\n{_fmt_bytes(v)}/token" for k, v in per_type.items() if v > 0]
    values = [v for v in per_type.values() if v > 0]
    if values:
        colors = [_TYPE_COLORS.get(k, "#7f7f7f") for k, v in per_type.items() if v > 0]
        right.pie(values, labels=labels, colors=colors, autopct="%1.0f%%", textprops={"fontsize": 8})
    right.set_title(f"KV bytes per token by attention type ({len(plan.get('layers') or [])} layers)", fontsize=9)
    fig.suptitle(f"{plan.get('architecture', '?')}: {plan.get('kv_dtype', '?')} KV, tp {plan.get('tp', '?')}, "
                 f"total {_fmt_bytes(plan.get('total_bytes') or 0)} (fixed {_fmt_bytes(plan.get('fixed_bytes') or 0)})",
                 fontsize=10)
    return _save(fig, out)


# ---- latency -------------------------------------------------------------------


def _percentile(values, q):
    s = sorted(values)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def latency_runs(lines):
    """{family: {run: {"ttft_ms": [...], "tpot_ms": [...]}}} from the JSON
    Lines `kvcache bench engine --plot` writes (one line per latency pass)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    runs = {}
    for raw in lines:
        if raw.strip():
            rec = json.loads(raw)
            runs.setdefault(rec.get("family", ""), {})[rec["run"]] = {"ttft_ms": rec["ttft_ms"], "tpot_ms": rec["tpot_ms"]}
    if not runs:
        raise ValueError("no latency lines")
    return runs


def latency(runs, out=None, title="Latency per request"):
    """TTFT and TPOT distributions as cumulative curves (log time axis), p50
    and p99 in the legend. runs: {name: {"ttft_ms": [...], "tpot_ms": [...]}}
    (runs side by side), one such dict, or {family: {name: {...}}} for one row
    of panels per model family."""
    if "ttft_ms" in runs or "tpot_ms" in runs:
        runs = {"": runs}
    if all(isinstance(v, dict) and ("ttft_ms" in v or "tpot_ms" in v) for v in runs.values()):
        runs = {"": runs}
    fig = _figure(11, 0.6 + 3.0 * len(runs))
    for row, (family, family_runs) in enumerate(runs.items()):
        for col, (field, label) in enumerate((("ttft_ms", "time to first token (ms)"),
                                              ("tpot_ms", "time per output token (ms)"))):
            ax = fig.add_subplot(len(runs), 2, 2 * row + col + 1)
            for i, (name, r) in enumerate(family_runs.items()):
                v = sorted(float(x) for x in r.get(field) or [] if x > 0)
                if not v:
                    continue
                p50, p99 = _percentile(v, 50), _percentile(v, 99)
                ax.step(v, [(k + 1) / len(v) for k in range(len(v))], where="post", color=_COLORS[i % len(_COLORS)],
                        lw=1.3, label=f"{name + ': ' if name else ''}p50 {p50:.3g}, p99 {p99:.3g} (n={len(v)})")
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.set_xlabel(label, fontsize=8)
            ax.set_ylabel(f"{family + ': ' if family else ''}share of samples", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3, which="both")
            if ax.get_lines():
                ax.legend(fontsize=6.5, loc="lower right")
    fig.suptitle(title, fontsize=10)
    return _save(fig, out)


# ---- command -----------------------------------------------------------------------


def _load(path):
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return text


def _object(text, kind):
    """The JSON object of a usage or plan data file (another JSON value was an AttributeError traceback)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"the {kind} data must be a JSON object, not {type(data).__name__}")
    return data


def draw(kind, text, out):
    """Draws `kind` from the data text the command line tools write."""
    if kind == "trace":
        return block_usage(trace_steps(text), out, title="Block usage per manager key over the trace")
    if kind == "usage":
        data = _object(text, kind)
        return block_usage(data["steps"], out, title=data.get("title", "Block usage per manager key"))
    if kind == "plan":
        return plan_memory(_object(text, kind), out)
    if kind == "latency":
        return latency(latency_runs(text), out, title="TTFT / TPOT of the engine bench's latency passes")
    raise ValueError(f"unknown plot kind \"{kind}\" (trace, usage, plan, latency)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] in ("-h", "--help"):
        print("usage: python -m kvcache.plot trace|usage|plan|latency DATA|- OUT.png", file=sys.stderr)
        return 2
    try:
        draw(argv[0], _load(argv[1]), argv[2])
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"kvcache.plot: {argv[0]} from {argv[1]}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
