"""python -m kvcache.bench_serve: a load generator for an OpenAI-compatible
server (kvcache.serve or another one).

Requests arrive as a Poisson process at each given rate (inf: all at once),
each one a streaming /v1/completions request whose prompt is token ids: a
shared prefix (for a given fraction of the requests) then random ids, short
or long (a given fraction). It reports, per rate: requests and output tokens
per second, TTFT, TPOT (time per output token after the first) and
inter-token latency p50/p90/p99 in milliseconds, and the prefix-cache hit
rate read from the server's /metrics (kvcache.serve's counters) over the run.
--static-batch N replaces the arrivals with the baseline of static batching:
all requests queued at once and sent in lock-step waves of N, each wave after
the previous one has finished.
"""
import argparse
import asyncio
import json
import math
import random
import sys
import time


def percentiles(values, ps=(50, 90, 99)):
    """{"p50": ..} of values (nearest rank); None for an empty list."""
    if not values:
        return {f"p{p}": None for p in ps}
    s = sorted(values)
    return {f"p{p}": s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] for p in ps}


def make_prompts(args, rng):
    prefix = [rng.randrange(args.vocab) for _ in range(args.prefix_len)]
    prompts = []
    for _ in range(args.num_requests):
        n = args.long_input_len if rng.random() < args.long_fraction else args.input_len
        head = prefix if rng.random() < args.shared_prefix else []
        prompts.append(head + [rng.randrange(args.vocab) for _ in range(n)])
    return prompts


async def one_request(client, args, prompt):
    body = {"model": args.model, "prompt": prompt, "max_tokens": args.output_len, "temperature": 0,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    import httpx

    start = time.perf_counter()
    arrivals, tokens = [], 0
    try:  # a connection refused or cut, an answer that is not SSE JSON: this request failed, the run goes on
        async with client.stream("POST", "/v1/completions", json=body) as r:
            if r.status_code != 200:
                return {"error": f"{r.status_code} {(await r.aread()).decode(errors='replace')[:200]}"}
            async for line in r.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
                if chunk.get("choices"):
                    arrivals.append(time.perf_counter())
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    if not arrivals:
        return {"error": "no tokens"}
    itl = [b - a for a, b in zip(arrivals, arrivals[1:])]
    tpot = (arrivals[-1] - arrivals[0]) / (tokens - 1) if tokens > 1 else None
    return {"ttft": arrivals[0] - start, "tpot": tpot, "itl": itl, "tokens": tokens, "end": arrivals[-1]}


def scrape(client_sync, name):
    import httpx

    try:
        text = client_sync.get("/metrics").text
    except httpx.HTTPError:  # no metrics (another server, or none listening): no hit rate
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def run_rate(args, rate, prompts, rng):
    import httpx

    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    with httpx.Client(base_url=args.url, headers=headers) as sync:
        before = [scrape(sync, n) for n in ("kvcache_prefix_cache_queries_total", "kvcache_prefix_cache_hits_total")]
        async with httpx.AsyncClient(base_url=args.url, headers=headers, timeout=None, limits=limits) as client:
            start = time.perf_counter()
            if args.static_batch:
                results = []
                for i in range(0, len(prompts), args.static_batch):
                    wave = prompts[i:i + args.static_batch]
                    results += await asyncio.gather(*(one_request(client, args, p) for p in wave))
            else:
                tasks = []
                for p in prompts:
                    tasks.append(asyncio.ensure_future(one_request(client, args, p)))
                    if rate != math.inf:
                        await asyncio.sleep(rng.expovariate(rate))
                results = await asyncio.gather(*tasks)
        after = [scrape(sync, n) for n in ("kvcache_prefix_cache_queries_total", "kvcache_prefix_cache_hits_total")]
    ok = [r for r in results if "error" not in r]
    wall = max((r["end"] for r in ok), default=start) - start
    out_tokens = sum(r["tokens"] for r in ok)
    hit_rate = None
    if None not in before + after and after[0] > before[0]:
        hit_rate = (after[1] - before[1]) / (after[0] - before[0])
    ms = lambda d: {k: None if v is None else round(v * 1e3, 3) for k, v in d.items()}  # noqa: E731
    return {"rate": rate if rate != math.inf else "inf", "requests": len(prompts), "failed": len(results) - len(ok),
            "errors": sorted({r["error"] for r in results if "error" in r})[:3], "duration_s": round(wall, 3),
            "request_throughput": round(len(ok) / wall, 3) if wall > 0 else None,
            "output_token_throughput": round(out_tokens / wall, 3) if wall > 0 else None,
            "ttft_ms": ms(percentiles([r["ttft"] for r in ok])),
            "tpot_ms": ms(percentiles([r["tpot"] for r in ok if r["tpot"] is not None])),
            "itl_ms": ms(percentiles([x for r in ok for x in r["itl"]])),
            "prefix_cache_hit_rate": None if hit_rate is None else round(hit_rate, 4)}


def parser():
    p = argparse.ArgumentParser(prog="python -m kvcache.bench_serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default http://127.0.0.1:8000)")
    p.add_argument("--model", required=True, help="the served model's name")
    p.add_argument("--api-key", help="bearer token, when the server wants one")
    p.add_argument("--rate", type=float, nargs="+", default=[math.inf],
                   help="request arrival rates per second, one run each (default inf: all at once)")
    p.add_argument("--num-requests", type=int, default=64, help="requests per rate (default 64)")
    p.add_argument("--input-len", type=int, default=128, help="random prompt tokens of a short prompt (default 128)")
    p.add_argument("--long-input-len", type=int, default=1024, help="random tokens of a long prompt (default 1024)")
    p.add_argument("--long-fraction", type=float, default=0.0, help="fraction of long prompts (default 0)")
    p.add_argument("--prefix-len", type=int, default=256, help="tokens of the shared prefix (default 256)")
    p.add_argument("--shared-prefix", type=float, default=0.5,
                   help="fraction of requests that begin with the shared prefix (default 0.5)")
    p.add_argument("--output-len", type=int, default=64, help="tokens generated per request (default 64)")
    p.add_argument("--vocab", type=int, default=500, help="prompt ids are drawn from [0, vocab) (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the prompts and arrivals")
    p.add_argument("--static-batch", type=int, default=0, metavar="N",
                   help="baseline of static batching: send the requests in waves of N at once, each wave after "
                        "the previous one has finished (--rate is then ignored; default 0: off)")
    p.add_argument("--json", action="store_true", help="print one JSON object per rate")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    for name in ("long_fraction", "shared_prefix"):
        if not 0 <= getattr(args, name) <= 1:
            sys.exit(f"--{name.replace('_', '-')} must lie in [0, 1]")
    if not all(r > 0 for r in args.rate) or args.num_requests < 1 or args.output_len < 1:  # (nan passed min() <= 0)
        sys.exit("--rate, --num-requests and --output-len must be positive")
    for name, least in (("input_len", 1), ("long_input_len", 1), ("vocab", 1), ("prefix_len", 0)):
        if getattr(args, name) < least:  # --vocab 0 was randrange's ValueError; -1 lengths made empty prompts
            sys.exit(f"--{name.replace('_', '-')} must be at least {least}")
    if args.static_batch < 0:
        sys.exit("--static-batch must be 0 (off) or positive")
    if args.static_batch:
        args.rate = [math.inf]
    for rate in args.rate:
        rng = random.Random(args.seed)
        report = asyncio.run(run_rate(args, rate, make_prompts(args, rng), rng))
        if args.json:
            print(json.dumps(report), flush=True)
            continue
        print(f"rate {report['rate']}/s: {report['requests']} requests ({report['failed']} failed) in "
              f"{report['duration_s']} s: {report['request_throughput']} req/s, "
              f"{report['output_token_throughput']} output tok/s, prefix-cache hit rate "
              f"{report['prefix_cache_hit_rate']}")
        for key in ("ttft_ms", "tpot_ms", "itl_ms"):
            print(f"  {key[:-3].upper():5s} ms  " + "  ".join(f"{k} {v}" for k, v in report[key].items()))
        for e in report["errors"]:
            print(f"  error: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
