"""The C sampler (kvc_sampler_sample_tokens) against a straightforward Python reference of
kvcache/engine.h's rules, over random logits (ties, -inf, NaN), tokens and parameters: min_tokens,
logit_bias, the repetition / frequency / presence penalties (float32, as the C steps), then greedy or
temperature, min_p, top-k and top-p (float64 weights summed in the C order), so every draw compares
exactly; and kvcache.Engine taking the same parameters."""
import math

import numpy as np
import pytest

import kvcache
from kvcache._lib import ffi, lib
from conftest import DATA

MODEL = DATA / "oracle" / "qwen3"
F32 = np.float32


def rank(x):
    return -math.inf if math.isnan(x) else x


def steps(logits, p, tokens, n_prompt):
    """Steps 1-3 in float32: min_tokens mask, logit_bias, repetition, then frequency and presence."""
    w = np.array(logits, dtype=F32)
    out = tokens[n_prompt:]
    if p["min_tokens"] > len(out):
        for t in p["stops"]:
            w[t] = -np.inf
    for t, b in p["bias"]:
        w[t] = w[t] + F32(b)
    r = F32(p["repetition_penalty"])
    if r not in (0, 1):
        for t in set(tokens):
            w[t] = w[t] / r if w[t] > 0 else w[t] * r
    for t in set(out):
        w[t] = w[t] - F32(p["frequency_penalty"]) * F32(out.count(t))
        w[t] = w[t] - F32(p["presence_penalty"])
    return [float(x) for x in w]


def draw(logits, p, k):
    """Greedy, or the temperature / min_p / top-k / top-p draw with counter k's uniform number."""
    v = len(logits)
    best, best_v = 0, -math.inf
    for t, x in enumerate(logits):
        if x > best_v:
            best, best_v = t, x
    mx = rank(logits[best])
    temperature, top_k, top_p = float(F32(p["temperature"])), p["top_k"], float(F32(p["top_p"]))
    if temperature == 0 or top_k == 1 or not math.isfinite(mx):
        return best
    inv_t, min_p = 1.0 / temperature, float(F32(p["min_p"]))
    u = lib.kvc_sample_uniform(p["seed"], k)

    def weight(t):
        x = math.exp((rank(logits[t]) - mx) * inv_t)
        return x if x >= min_p else 0.0

    kk = min(top_k, v) if top_k > 0 else v
    if kk == v and top_p >= 1:  # no cut: the tokens in id order
        total = 0.0
        for t in range(v):
            total += weight(t)
        target, acc, last = u * total, 0.0, 0
        for t in range(v):
            x = weight(t)
            if x <= 0:
                continue
            acc, last = acc + x, t
            if target < acc:
                return t
        return last
    order = sorted(range(v), key=lambda t: (-rank(logits[t]), t))
    w = [weight(t) for t in order]
    total = 0.0
    for t in (order[:kk] if kk < v else range(v)):
        total += weight(t)
    cut, kept, m = top_p * total, 0.0, 0
    while m < kk:
        if w[m] == 0 and m > 0:
            break
        kept += w[m]
        m += 1
        if kept >= cut:
            break
    target, acc, j = u * kept, 0.0, 0
    while j < m - 1:
        acc += w[j]
        if target < acc:
            break
        j += 1
    return order[j]


def c_params(p):
    s = ffi.new("kvc_sampling_params *", lib.kvc_sampling_default_params())
    for name in ("temperature", "top_k", "top_p", "seed", "min_p", "presence_penalty", "frequency_penalty",
                 "repetition_penalty", "min_tokens"):
        setattr(s, name, p[name])
    keep = [ffi.new("int32_t[]", p["stops"]), ffi.new("kvc_logit_bias[]", p["bias"])]
    if p["stops"]:
        s.min_tokens_ids, s.n_min_tokens_ids = keep[0], len(p["stops"])
    if p["bias"]:
        s.logit_bias, s.n_logit_bias = keep[1], len(p["bias"])
    return s, keep


def random_case(rng):
    v = int(rng.integers(1, 48))
    kind = rng.integers(0, 100, v)
    logits = np.where(kind < 3, np.nan, np.where(kind < 6, -np.inf, rng.integers(-12, 12, v) * 0.25))
    n_prompt, n_out = int(rng.integers(0, 6)), int(rng.integers(0, 12))
    tokens = [int(t) for t in rng.integers(0, v, n_prompt + n_out)]
    pick = lambda values: values[int(rng.integers(0, len(values)))]  # noqa: E731
    p = dict(temperature=pick([0.0, 0.3, 1.0, 1.7]), top_k=pick([0, 0, 1, 3, v + 1]),
             top_p=pick([1.0, 1.0, 0.5, 0.9]), seed=int(rng.integers(0, 2**63)), min_p=pick([0.0, 0.0, 0.05, 0.3]),
             presence_penalty=pick([0.0, 1.5, -0.7]), frequency_penalty=pick([0.0, 0.4, -2.0]),
             repetition_penalty=pick([1.0, 1.3, 0.6, 2.0]), min_tokens=pick([0, 0, 3, 20]),
             stops=[int(t) for t in rng.integers(0, v, int(rng.integers(0, 3)))],
             bias=[(int(t), float(F32(rng.uniform(-100, 100)))) for t in rng.integers(0, v, int(rng.integers(0, 4)))])
    return logits, tokens, n_prompt, p


def test_c_sampler_equals_the_reference_on_random_cases():
    rng = np.random.default_rng(5)
    sampler = ffi.new("kvc_sampler **")
    tok = ffi.new("int32_t *")
    for _ in range(600):
        logits, tokens, n_prompt, p = random_case(rng)
        v = len(logits)
        assert lib.kvc_sampler_create(v, sampler) == lib.KVC_OK
        try:
            s, keep = c_params(p)
            row = np.ascontiguousarray(logits, dtype=np.float32)
            ids = ffi.new("int32_t[]", tokens or [0])
            st = lib.kvc_sampler_sample_tokens(sampler[0], ffi.from_buffer("float[]", row), s, ids, n_prompt,
                                               len(tokens), tok)
            assert st == lib.KVC_OK, ffi.string(lib.kvc_last_error())
            want = draw(steps(row, p, tokens, n_prompt), p, len(tokens) - n_prompt)
            assert tok[0] == want, (p, tokens, n_prompt, list(row))
            assert np.array_equal(row, np.asarray(logits, dtype=np.float32), equal_nan=True)  # not written
        finally:
            lib.kvc_sampler_destroy(sampler[0])


def test_reference_rules_on_hand_made_logits():
    """The reference itself, checked by hand on the rules' definitions (so the random test compares with
    what the docs say, not with a copy of the C code's mistakes)."""
    base = dict(temperature=0.0, top_k=0, top_p=1.0, seed=0, min_p=0.0, presence_penalty=0.0,
                frequency_penalty=0.0, repetition_penalty=1.0, min_tokens=0, stops=[], bias=[])
    logits = [1.0, 3.0, 2.0, -1.0]
    assert steps(logits, {**base, "bias": [(3, 100.0)]}, [], 0)[3] == 99.0
    assert steps(logits, {**base, "repetition_penalty": 2.0}, [1, 3], 1) == [1.0, 1.5, 2.0, -2.0]
    got = steps(logits, {**base, "frequency_penalty": 0.5, "presence_penalty": 0.25}, [1, 2, 2, 0], 1)
    assert got == [1.0 - 0.5 - 0.25, 3.0, 2.0 - 1.0 - 0.25, -1.0]  # token 1 only in the prompt: untouched
    assert steps(logits, {**base, "min_tokens": 2, "stops": [1]}, [0, 2], 1)[1] == -math.inf
    assert steps(logits, {**base, "min_tokens": 2, "stops": [1]}, [0, 2, 2], 1)[1] == 3.0
    # min_p 0.5 at T 1 keeps only what is within log(2) of the best
    for k in range(50):
        assert draw(logits, {**base, "temperature": 1.0, "min_p": 0.5, "seed": 9}, k) in (1, 2)


def engine(**kw):
    return kvcache.Engine(MODEL, max_num_seqs=4, kv_memory="8MiB", block_size=4, **kw)


def test_engine_takes_the_options_batch_invariant():
    e = engine()
    prompts = [[1, 2, 3, 4, 5], [7, 8, 9], [100, 200, 300, 6, 7]]
    plain = e.generate(prompts, kvcache.SamplingParams(max_tokens=6))
    forced = e.generate(prompts, kvcache.SamplingParams(max_tokens=4, logit_bias={42: 100}))
    assert forced == [[42] * 4] * 3
    params = kvcache.SamplingParams(max_tokens=6, temperature=0.9, seed=3, min_p=0.1, presence_penalty=0.5,
                                    frequency_penalty=1.0, repetition_penalty=1.3, logit_bias={5: 2.0, 9: -3.0},
                                    min_tokens=4, stop_token_ids=(plain[0][0],))
    together = e.generate(prompts, params)
    assert together == [e.generate([p], params)[0] for p in prompts]  # alone or batched, the same tokens
    assert all(len(ids) >= 4 and plain[0][0] not in ids[:4] for ids in together)
    # min_tokens holds the stop token back: a stop that ends the plain output at once waits 3 tokens
    stop = plain[1][0]
    assert e.generate([prompts[1]], kvcache.SamplingParams(max_tokens=6, stop_token_ids=(stop,)))[0] == [stop]
    held = e.generate([prompts[1]], kvcache.SamplingParams(max_tokens=6, stop_token_ids=(stop,), min_tokens=3))[0]
    assert len(held) >= 3 and stop not in held[:3]
    for bad, match in ((dict(logit_bias={512: 1.0}), "logit_bias"), (dict(logit_bias={1: 101}), "bias"),
                       (dict(min_p=1.5), "min_p"), (dict(presence_penalty=3), "presence_penalty"),
                       (dict(repetition_penalty=0), "repetition_penalty"), (dict(min_tokens=20), "min_tokens"),
                       (dict(logit_bias={"a": 1}), "logit_bias")):
        with pytest.raises(kvcache.InvalidArgument, match=match):
            e.add_request([1, 2], kvcache.SamplingParams(max_tokens=8, **bad))
