#!/usr/bin/env python3
"""kvcache's CPU attention next to PyTorch's CPU scaled_dot_product_attention.

Not part of the build or CI: it needs a PyTorch install (any Python with
`import torch` working; see docs/bench-attention.md, "PyTorch SDPA"). It runs
`kvcache bench attention --json --only LABEL` for one shape at a time and
PyTorch on the same shape in the same process tree, alternating the two
ROUNDS times, and prints both medians and their ratio, so that a machine
whose speed moves with its neighbours' load affects both sides alike.

Shapes (those of `kvcache bench attention`): prefill, batch 1, 512 and 2048
new tokens over 4k and 16k keys, causal, 32 query heads over 8 KV heads,
head dim 128; decode, one new token, 32 query heads over 32, 8 or 4 KV
heads, batches 1/8 at 4k/16k keys (--decode all: every decode shape of the
benchmark). kvcache reads bf16/f16 KV from a paged cache (block size 128) with
f32 queries; PyTorch gets contiguous [B, H, S, D] tensors, all of one dtype.

Causal here means what kvcache computes: the new tokens are the last q_len of
kv_len positions, so query i sees keys 0 .. kv_len - q_len + i ("lower
right"). PyTorch's is_causal=True aligns the triangle top-left (query i sees
keys 0 .. i), which is far less work when q_len < kv_len; it is not used.
PyTorch prefill is timed in three forms per dtype in the first round, the
fastest then alone in the later rounds, and its median counts:
  mask-gqa   boolean lower-right mask, K/V with 8 heads, enable_gqa=True
  mask-rep   the same mask, K/V repeated to 32 heads (the copy is not timed)
  bias-rep   torch.nn.attention.bias.causal_lower_right, K/V repeated
and, for reference only, `full`: no mask at all (more work: every query sees
every key). Decode uses enable_gqa=True (no mask: one query sees all keys);
its KV is rotated over copies of at least 1 GiB in total, as kvcache's is,
so both read it cold.

Usage:
  python3 tools/torch_sdpa_compare.py [--kvcache build/kvcache] [--threads N]
      [--rounds 3] [--phase prefill|decode|both] [--decode some|all]
      [--dtypes bf16,f16,f32] [--only LABEL_TEXT] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

GIB = 1 << 30


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvcache", default="build/kvcache", help="the kvcache command (default build/kvcache)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both sides (default: OMP_NUM_THREADS, else every CPU of this process)")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two sides per shape (default 3)")
    ap.add_argument("--phase", choices=["prefill", "decode", "both"], default="both")
    ap.add_argument("--decode", choices=["some", "all"], default="some",
                    help="some: batches 1 and 8 at 4k/16k keys; all: every decode shape of the benchmark")
    ap.add_argument("--dtypes", default="bf16,f16,f32",
                    help="PyTorch dtypes to time for prefill (the fastest counts; kvcache's prefill is bf16)")
    ap.add_argument("--pages", choices=["2m", "4k"], default="2m", help="kvcache's cache pages (--pages of the bench)")
    ap.add_argument("--only", default="", help="only the shapes whose label (as kvcache bench's --only) contains this")
    ap.add_argument("--storage", default="BnBsH", choices=["BnBsH", "BnNDBs"],
                    help="kvcache's paged cache layout: token-major blocks, or keys in lanes (K [NB, Nkv, D, bs])")
    ap.add_argument("--json", action="store_true", help="one JSON object per shape instead of a table")
    return ap.parse_args()


def shapes(phase, decode_set):
    out = []
    if phase in ("prefill", "both"):
        for q, kv in ((512, 4096), (2048, 4096), (512, 16384), (2048, 16384)):
            out.append(dict(phase="prefill", batch=1, q_len=q, kv_len=kv, q_heads=32, kv_heads=8, dtype="bf16"))
    if phase in ("decode", "both"):
        if decode_set == "all":
            bk = ((1, 4096), (1, 16384), (1, 32768), (8, 4096), (8, 16384), (32, 4096))
        else:
            bk = ((1, 4096), (1, 16384), (8, 4096), (8, 16384))
        for kvh in (8, 32, 4):
            for dt in ("f16", "bf16"):
                for b, kv in bk:
                    out.append(dict(phase="decode", batch=b, q_len=1, kv_len=kv, q_heads=32, kv_heads=kvh, dtype=dt))
    return out


def label(s, storage="BnBsH"):
    return "%s/b%d/q%d/kv%d/g%d/%s/%s" % (s["phase"], s["batch"], s["q_len"], s["kv_len"],
                                         s["q_heads"] // s["kv_heads"], s["dtype"], storage)


def pairs(s):
    """Visible (query, key) pairs per head, lower-right causal."""
    q, kv = s["q_len"], s["kv_len"]
    return s["batch"] * (q * (kv - q) + q * (q + 1) // 2)


def gflops(s, us):
    return 4.0 * s["q_heads"] * 128 * pairs(s) / (us * 1e-6) / 1e9


def run_kvcache(args, s, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [args.kvcache, "bench", "attention", "--json", "--pages", args.pages, "--only", label(s, args.storage)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if "matches no row" in done.stderr:  # e.g. keys in lanes exist for batch 8 at 4k keys only
        return None
    done.check_returncode()
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(rows) != 1:
        sys.exit("torch_sdpa_compare: %s printed %d rows for %s" % (" ".join(cmd), len(rows), label(s, args.storage)))
    return rows[0]


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class TorchSide:
    def __init__(self, torch, dtypes):
        import torch.nn.functional as F
        from torch.nn.attention.bias import causal_lower_right

        self.torch, self.F, self.lower_right = torch, F, causal_lower_right
        names = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
        self.dtypes = [(d, names[d]) for d in dtypes]

    def prefill(self, s, only=None):
        """{form/dtype: median seconds} for the forms described above (only: those keys)."""
        torch, F = self.torch, self.F
        H, Hk, D, L, S = s["q_heads"], s["kv_heads"], 128, s["q_len"], s["kv_len"]
        g = torch.Generator().manual_seed(1)
        mask = torch.ones(L, S, dtype=torch.bool).tril(S - L)
        bias = self.lower_right(L, S)
        reps = 1 if L >= 2048 else 3
        res = {}
        for name, dt in self.dtypes:
            if only is not None and not any(key.endswith("/" + name) for key in only):
                continue
            q = torch.randn(1, H, L, D, generator=g).to(dt)
            k = torch.randn(1, Hk, S, D, generator=g).to(dt)
            v = torch.randn(1, Hk, S, D, generator=g).to(dt)
            kr, vr = k.repeat_interleave(H // Hk, 1), v.repeat_interleave(H // Hk, 1)
            forms = {
                "mask-gqa": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True),
                "mask-rep": lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask),
                "bias-rep": lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=bias),
                "full": lambda: F.scaled_dot_product_attention(q, kr, vr),
            }
            for form, fn in forms.items():
                if only is not None and "%s/%s" % (form, name) not in only:
                    continue
                fn()  # warm-up: first-call dispatch and allocations
                res["%s/%s" % (form, name)] = median_time(fn, reps)
        return res

    def decode(self, s):
        """{"gqa/DTYPE": median seconds} over cold KV copies."""
        torch, F = self.torch, self.F
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[s["dtype"]]
        B, H, Hk, D, S = s["batch"], s["q_heads"], s["kv_heads"], 128, s["kv_len"]
        per_copy = 2 * B * Hk * S * D * 2
        copies = max(1, -(-GIB // per_copy))
        g = torch.Generator().manual_seed(2)
        q = torch.randn(B, H, 1, D, generator=g).to(dt)
        kv = [(torch.randn(B, Hk, S, D, generator=g).to(dt), torch.randn(B, Hk, S, D, generator=g).to(dt))
              for _ in range(copies)]
        times = []
        for r in range(-1, 5):  # r = -1: warm-up
            k, v = kv[(r + 1) % copies]
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            if r >= 0:
                times.append(time.perf_counter() - t0)
        return {"gqa/" + s["dtype"]: statistics.median(times)}


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as e:
        sys.exit("torch_sdpa_compare: PyTorch is not importable here (%s); see docs/bench-attention.md" % e)
    threads = args.threads or int(os.environ.get("OMP_NUM_THREADS", "0")) or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    side = TorchSide(torch, args.dtypes.split(","))
    print("# torch %s (CPU capability %s), %d threads on both sides; kvcache %s, caches on %s pages"
          % (torch.__version__, torch.backends.cpu.get_cpu_capability(), threads, args.kvcache, args.pages),
          file=sys.stderr if args.json else sys.stdout)
    if not args.json:
        print("%-36s %11s %11s %-16s %8s %8s %8s %11s" % ("shape", "kvcache us", "torch us", "torch form", "ours x",
                                                        "our GF/s", "torch GF", "torch full"))
    for s in shapes(args.phase, args.decode):
        if args.only not in label(s, args.storage):
            continue
        ours, theirs, row, only = [], {}, None, None
        for _ in range(args.rounds):
            row = run_kvcache(args, s, threads)
            if row is None:
                break
            ours.append(row["us"])
            t = side.prefill(s, only) if s["phase"] == "prefill" else side.decode(s)
            for k, v in t.items():
                theirs.setdefault(k, []).append(v * 1e6)
            if only is None and s["phase"] == "prefill":  # later rounds: the fastest same-work form, and full
                same = {k: v for k, v in t.items() if not k.startswith("full/")}
                fulls = {k: v for k, v in t.items() if k.startswith("full/")}
                only = {min(same, key=same.get), min(fulls, key=fulls.get)}
        if row is None:
            print("%s: not a row of kvcache bench attention, skipped" % label(s, args.storage), file=sys.stderr)
            continue
        med = {k: statistics.median(v) for k, v in theirs.items()}
        same_work = {k: v for k, v in med.items() if not k.startswith("full/")}
        best_form = min(same_work, key=same_work.get)
        our_us, best_us = statistics.median(ours), same_work[best_form]
        full = min((v for k, v in med.items() if k.startswith("full/")), default=None)
        out = dict(shape=label(s, args.storage), threads=threads, kvcache_us=round(our_us, 1), torch_us=round(best_us, 1),
                   torch_form=best_form, ratio=round(best_us / our_us, 3), kvcache_gflops=round(gflops(s, our_us), 2),
                   torch_gflops=round(gflops(s, best_us), 2), torch_full_us=round(full, 1) if full else None,
                   torch_all_us={k: round(v, 1) for k, v in med.items()}, isa=row["isa"], cpu_flags=row["cpu_flags"],
                   torch=torch.__version__)
        if args.json:
            print(json.dumps(out))
        else:
            print("%-36s %11.1f %11.1f %-16s %8.2f %8.2f %8.2f %11s" % (
                out["shape"], our_us, best_us, best_form, out["ratio"], out["kvcache_gflops"], out["torch_gflops"],
                "%.1f" % full if full else "-"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
