#!/usr/bin/env python3
"""The PyTorch side of `kvcache bench model MODEL_DIR` (outside CI, like
tools/torch_sdpa_compare.py): transformers + PyTorch on the same model
directory, the same prompts (the benchmark's xorshift ids) and the same
batches, greedy with a KV cache, printing the same figures: prefill ms and
tokens/s (the first forward over the batch of prompts), decode ms per step
(the mean of the next 16 steps, one token per row each), and resident memory.

    python3 -m venv /tmp/torch-venv
    /tmp/torch-venv/bin/pip install torch transformers safetensors   # ~6 GB (PyPI's CUDA wheel, run on CPU)
    /tmp/torch-venv/bin/python tools/torch_model_compare.py MODEL_DIR [--dtype bf16|f32|both]
        [--batches 1,8,32] [--prompts 64,512] [--threads 2] [--json]

Default: bf16 and f32 in turn (bf16 weights and activations, PyTorch's own bf16 path; f32:
the weights widened), attn_implementation="sdpa", torch.set_num_threads(--threads, default 2),
one timed generate per configuration (three when the batch has at most 4,096 prompt tokens,
the median taken), after one untimed warm-up of batch 1 x 8 tokens.

--deviation N times nothing: for each batch x prompt it prints how far PyTorch bf16 lies from
PyTorch f32 on the same ids, in the measures of `kvcache run --compare-weights` (N greedy f32
tokens, then both dtypes teacher-forced on them: largest |logit difference| and KL(f32 || bf16),
mean and max over the N steps of every row), and the --prompt-ids flags that give kvcache the
same prompts.
"""
import argparse
import json
import os
import statistics
import time

DECODE_STEPS = 16
MASK64 = (1 << 64) - 1
CACHE_ARG = None


def prompt_ids(B, P, vocab):
    """bench/bench_model.c's ids: xorshift64 from 0x9E3779B97F4A7C15 ^ (B * 131 + P), id = x % V."""
    x = 0x9E3779B97F4A7C15 ^ (B * 131 + P)
    out = []
    for _ in range(B * P):
        x ^= (x << 13) & MASK64
        x ^= x >> 7
        x ^= (x << 17) & MASK64
        out.append(x % vocab)
    return [out[b * P:(b + 1) * P] for b in range(B)]


def rss_gb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e9
    return float("nan")


def parse_list(text, what, top):
    try:
        v = [int(t) for t in text.split(",")]
    except ValueError:
        raise SystemExit("%s: numbers separated by commas (got %r)" % (what, text))
    if not v or any(n < 1 or n > top for n in v):
        raise SystemExit("%s: each in 1 .. %d (got %r)" % (what, top, text))
    return v


def generate(torch, model, ids):
    """One greedy run: (prefill ms, decode ms per step)."""
    from transformers import DynamicCache
    import inspect
    global CACHE_ARG
    if CACHE_ARG is None:  # transformers >= 5.25 names it `cache`, earlier versions `past_key_values`
        CACHE_ARG = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    x = torch.tensor(ids, dtype=torch.long)
    cache = DynamicCache()
    t0 = time.perf_counter()
    out = model(input_ids=x, **{CACHE_ARG: cache}, use_cache=True)
    nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)
    t1 = time.perf_counter()
    for _ in range(DECODE_STEPS):
        out = model(input_ids=nxt, **{CACHE_ARG: cache}, use_cache=True)  # the cache grows in place
        nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / DECODE_STEPS


def deviation(torch, models, ids, n):
    """PyTorch bf16 against f32 on prompts ids, teacher-forced on n greedy f32 tokens:
    (max |dlogit|, KL mean, KL max, argmax equal, steps)."""
    x = torch.tensor(ids, dtype=torch.long)
    P = x.shape[1]
    seq = models["f32"].generate(x, max_new_tokens=n, do_sample=False, min_new_tokens=n)
    ref, got = (models[d](input_ids=seq).logits[:, P - 1:P - 1 + n, :].to(torch.float64) for d in ("f32", "bf16"))
    lp, lq = torch.log_softmax(ref, -1), torch.log_softmax(got, -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)
    same = int((ref.argmax(-1) == got.argmax(-1)).sum())
    return float((got - ref).abs().max()), float(kl.mean()), float(kl.max()), same, int(kl.numel())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--dtype", default="both", choices=["bf16", "f32", "both"])
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--prompts", default="64,512")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--deviation", type=int, default=0, metavar="N",
                    help="bf16 against f32 on N greedy tokens instead of timings")
    a = ap.parse_args()
    batches, prompts = parse_list(a.batches, "--batches", 256), parse_list(a.prompts, "--prompts", 65536)
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.set_num_threads(a.threads)
    vocab = AutoConfig.from_pretrained(a.model_dir).vocab_size
    dtypes = {"bf16": torch.bfloat16, "f32": torch.float32}
    names = ["bf16", "f32"] if a.dtype == "both" else [a.dtype]
    header = {"bench": "torch_model", "dir": a.model_dir, "torch": torch.__version__,
              "transformers": transformers.__version__, "threads": torch.get_num_threads(),
              "cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "loadavg": open("/proc/loadavg").read().strip()}
    if a.json:
        print(json.dumps(header))
    else:
        print("PyTorch %(torch)s, transformers %(transformers)s, %(threads)d threads, CPU capability "
              "%(cpu_capability)s; load average at start: %(loadavg)s" % header)
    if a.deviation > 0:
        models = {n: AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=dtypes[n], attn_implementation="sdpa")
                  for n in ("f32", "bf16")}
        with torch.inference_mode():
            for P in prompts:
                for B in batches:
                    ids = prompt_ids(B, P, vocab)
                    err, kl_mean, kl_max, same, steps = deviation(torch, models, ids, a.deviation)
                    row = {"bench": "torch_deviation", "batch": B, "prompt": P, "steps": steps,
                           "max_logit_err": err, "kl_mean": kl_mean, "kl_max": kl_max, "argmax_same": same}
                    print(json.dumps(row) if a.json else
                          "bf16 against f32, %d x %d, %d steps: max |dlogit| %.3g, KL mean %.3g, max %.3g, "
                          "argmax %d/%d" % (B, P, steps, err, kl_mean, kl_max, same, steps), flush=True)
                    if not a.json:
                        print("  kvcache: " + " ".join("--prompt-ids " + ",".join(map(str, r)) for r in ids))
        return
    for name in names:
        t0 = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=dtypes[name], attn_implementation="sdpa")
        model.eval()
        load_s = time.perf_counter() - t0
        with torch.inference_mode():
            generate(torch, model, prompt_ids(1, 8, vocab))  # warm-up
            if not a.json:
                print("%s: loaded in %.1f s, VmRSS %.2f GB" % (name, load_s, rss_gb()))
                print("%5s %6s | %11s %11s | %9s" % ("batch", "prompt", "prefill ms", "tokens/s", "decode ms"))
            for P in prompts:
                for B in batches:
                    ids = prompt_ids(B, P, vocab)
                    reps = 3 if B * P <= 4096 else 1
                    runs = [generate(torch, model, ids) for _ in range(reps)]
                    pre = statistics.median(r[0] for r in runs)
                    dec = statistics.median(r[1] for r in runs)
                    row = {"bench": "torch_model_run", "dtype": name, "batch": B, "prompt": P, "prefill_ms": pre,
                           "prefill_tokens_per_s": B * P / pre * 1e3, "decode_ms": dec, "vm_rss_gb": rss_gb()}
                    if a.json:
                        print(json.dumps(row), flush=True)
                    else:
                        print("%5d %6d | %11.1f %11.1f | %9.2f" % (B, P, pre, row["prefill_tokens_per_s"], dec),
                              flush=True)
        del model


if __name__ == "__main__":
    main()
