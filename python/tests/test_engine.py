"""kvcache.Engine and kvcache.AsyncEngine over the Qwen3-shaped test model."""
import asyncio

import numpy as np
import pytest

import kvcache
from conftest import DATA

MODEL = DATA / "oracle" / "qwen3"
PROMPTS = [[1, 2, 3, 4, 5], [7, 8, 9], [100, 200, 300, 400, 500, 6, 7, 8, 9, 10]]


def engine(**kw):
    args = dict(max_num_seqs=4, kv_memory="8MiB", block_size=4)
    args.update(kw)
    return kvcache.Engine(MODEL, **args)


def test_greedy_equals_the_static_runner():
    e = engine()
    got = e.generate(PROMPTS, kvcache.SamplingParams(max_tokens=6))
    for prompt, ids in zip(PROMPTS, got):
        assert ids == kvcache.run(MODEL, [prompt], 6)[0].tolist()
    assert e.stats()["kv_blocks_in_use"] == 0 and e.stats()["running"] == 0


def test_lfm2_conv_states_greedy_equals_the_runner_with_prefix_caching():
    model = DATA / "oracle" / "lfm2"  # short-convolution layers: a state block per request
    e = kvcache.Engine(model, max_num_seqs=4, kv_memory="8MiB", block_size=4)
    assert e.prefix_caching is True  # the default, state layers included (snapshots of their states)
    assert kvcache.Engine(model, block_size=4, prefix_caching=False).prefix_caching is False
    shared = PROMPTS + [PROMPTS[0] + [7, 2]]  # the last one resumes from the first one's snapshot
    got = e.generate(PROMPTS, kvcache.SamplingParams(max_tokens=6))
    got += e.generate(shared[-1:], kvcache.SamplingParams(max_tokens=6))
    for prompt, ids in zip(shared, got):
        assert ids == kvcache.run(model, [prompt], 6)[0].tolist()
    assert e.stats()["prefix_hit_tokens"] > 0
    assert e.stats()["kv_blocks_in_use"] == 0 and e.stats()["running"] == 0


def test_a_config_without_positions_runs_through_the_engine():
    """Mamba2's config names no max_position_embeddings: Engine planned it for the checkpoint's KV dtype without
    positions and failed ("pass --max-model-len"), whatever max_model_len it was given, and so did the server."""
    model = DATA / "oracle" / "mamba2"
    e = kvcache.Engine(model, max_num_seqs=2, max_model_len=32, block_size=4)
    assert e.generate(PROMPTS[:2], kvcache.SamplingParams(max_tokens=3)) == [
        kvcache.run(model, [p], 3)[0].tolist() for p in PROMPTS[:2]]


def test_max_model_len_beyond_learned_positions_is_refused_at_creation():
    """GPT-2 has a table of 64 learned positions: an engine (and so `kvcache serve --max-model-len 300`) took a
    longer max_model_len and every request past position 63 failed its step (a 500 from the server)."""
    model = DATA / "oracle" / "gpt2"
    with pytest.raises(kvcache.InvalidArgument, match="max_model_len 65 is beyond the 64 learned positions"):
        kvcache.Engine(model, max_model_len=65, block_size=4)
    e = kvcache.Engine(model, max_model_len=64, block_size=4)  # the whole table still serves
    assert len(e.generate([[5] * 60], kvcache.SamplingParams(max_tokens=4))[0]) == 4


def test_stop_token_ends_the_request_and_is_its_last_token():
    e = engine()
    free = e.generate([PROMPTS[0]], kvcache.SamplingParams(max_tokens=6))[0]
    stop = free[2]
    first = free.index(stop)
    ids = e.generate([PROMPTS[0]], kvcache.SamplingParams(max_tokens=6, stop_token_ids=(stop,)))[0]
    assert ids == free[:first + 1]


def test_quantized_weights_batch_invariant_and_bad_values_refused():
    e = engine(weights="q8_0")
    assert e.weights == "q8_0"
    together = e.generate(PROMPTS, kvcache.SamplingParams(max_tokens=6))
    assert together == [e.generate([p], kvcache.SamplingParams(max_tokens=6))[0] for p in PROMPTS]
    for bad in ("q5_1", "Q8_0", None, 8):
        with pytest.raises(kvcache.InvalidArgument, match="weights"):
            engine(weights=bad)


def test_bf16_activations_batch_invariant_and_refused_by_name():
    e = engine(weights="bf16", activations="bf16")
    assert e.activations == "bf16"
    together = e.generate(PROMPTS, kvcache.SamplingParams(max_tokens=6))
    assert together == [e.generate([p], kvcache.SamplingParams(max_tokens=6))[0] for p in PROMPTS]
    with pytest.raises(kvcache.InvalidArgument, match="needs bf16 weights"):
        engine(activations="bf16")  # the oracle checkpoint is f32
    for bad in ("f16", "BF16", None, 16):
        with pytest.raises(kvcache.InvalidArgument, match="activations"):
            engine(weights="bf16", activations=bad)


def test_serve_takes_the_weight_dtype(capsys):
    from kvcache.serve.cli import parser

    assert parser().parse_args([str(MODEL), "--weights", "q4_0"]).weights == "q4_0"
    assert parser().parse_args([str(MODEL), "--activations", "bf16"]).activations == "bf16"
    assert parser().parse_args([str(MODEL)]).weights == "checkpoint"
    with pytest.raises(SystemExit):
        parser().parse_args([str(MODEL), "--weights", "int4"])
    assert "--weights" in capsys.readouterr().err


def test_abort_frees_the_kv_at_once():
    e = engine()
    rid = e.add_request(PROMPTS[2], kvcache.SamplingParams(max_tokens=50))
    e.step()
    assert e.stats()["kv_blocks_in_use"] > 0
    assert e.abort(rid) is True
    assert e.stats()["kv_blocks_in_use"] == 0 and not e.has_unfinished()
    assert e.abort(rid) is False


def test_queue_full_and_bad_requests_are_refused():
    e = engine(max_requests=2)
    e.add_request([1], kvcache.SamplingParams(max_tokens=2))
    e.add_request([2], kvcache.SamplingParams(max_tokens=2))
    with pytest.raises(kvcache.QueueFull):
        e.add_request([3])
    with pytest.raises(kvcache.InvalidArgument, match="vocabulary|ids must lie"):
        e.add_request([e.vocab_size])
    with pytest.raises(kvcache.InvalidArgument, match="temperature"):
        e.add_request([1], kvcache.SamplingParams(temperature=-1.0))
    with pytest.raises(kvcache.InvalidArgument, match="cache_salt"):
        e.add_request([1], cache_salt=b"x" * 65)


def test_hostile_sampling_params_and_ids_are_refused_by_name():
    e = engine()
    sp = kvcache.SamplingParams
    for params, text in (("greedy", "SamplingParams is expected, not str"),  # was AttributeError
                         (sp(stop_token_ids=None), "stop_token_ids must be a list"),  # was TypeError
                         (sp(stop_token_ids=7), "stop_token_ids must be a list"),
                         (sp(logit_bias=5), "logit_bias must map token ids to numbers"),  # was TypeError
                         (sp(max_tokens=-1), "max_tokens -1 must be >= 1"),  # was "min_tokens 0 is more than ..."
                         (sp(temperature="1"), "temperature: '1' is not a number"),  # was taken as 1.0
                         (sp(logit_bias={1: "5"}), "logit_bias bias: '5' is not a number"),  # was taken as 5.0
                         (sp(bad_words=5), "bad_words must be a list or tuple")):  # was TypeError
        with pytest.raises(kvcache.InvalidArgument, match=text):
            e.add_request([1], params)
    with pytest.raises(kvcache.InvalidArgument, match="cache_salt: a str must be Unicode text"):
        e.add_request([1], cache_salt="\ud800")  # was UnicodeEncodeError
    with pytest.raises(kvcache.InvalidArgument, match="request_id: 'x' is not an integer"):
        e.abort("x")  # was False, as for an id the engine no longer holds
    assert not e.has_unfinished() and e.stats()["waiting"] == 0


def test_generate_queues_all_of_its_prompts_or_none():
    e = engine()
    with pytest.raises(kvcache.InvalidArgument, match="ids must lie"):
        e.generate([[1, 2], [-1]])
    assert not e.has_unfinished() and e.stats()["waiting"] == 0  # [1, 2] was left queued
    rid = e.add_request([1, 2])
    with pytest.raises(kvcache.InvalidArgument, match="holds 1 request"):
        e.generate([[3]])  # was KeyError: the first step's output of rid, not one of generate's
    e.abort(rid)
    assert e.generate([[1, 2]], kvcache.SamplingParams(max_tokens=2)) == [kvcache.run(MODEL, [[1, 2]], 2)[0].tolist()]


def test_request_times_follow_the_steps():
    """RequestOutput.times, on the output that ends a request only: queued at add_request, scheduled when a step
    first ran the request (a prompt prefilled in chunks over several steps before its first token), first and last
    token at the end of their steps; with one request running at a time the second is scheduled only after the
    first's last token."""
    e = engine(max_num_seqs=1, max_num_batched_tokens=4)
    a = e.add_request(PROMPTS[2], kvcache.SamplingParams(max_tokens=3))
    b = e.add_request(PROMPTS[1], kvcache.SamplingParams(max_tokens=2))
    last = {}
    while e.has_unfinished():
        for out in e.step():
            assert (out.times is None) == (out.finish_reason is None)
            last[out.request_id] = out.times
    ta, tb = last[a], last[b]
    assert ta.queued <= tb.queued < ta.scheduled < ta.first_token < ta.last_token <= tb.scheduled
    assert tb.scheduled < tb.first_token < tb.last_token


def test_prefix_hits_count_per_request_and_salts_isolate():
    e = engine()
    prompt = list(range(10, 30))
    params = kvcache.SamplingParams(max_tokens=2)

    def cached(salt):
        rid = e.add_request(prompt, params, cache_salt=salt)
        n = 0
        while e.has_unfinished():
            n = max([n] + [o.num_cached_tokens for o in e.step() if o.request_id == rid])
        return n

    assert cached("a") == 0
    assert cached("a") == 16  # whole blocks of 4 before the last prompt token
    assert cached("b") == 0  # another tenant's salt misses
    assert cached(b"a") == 16
    assert e.stats()["prefix_hit_tokens"] == 32


def test_logprobs_are_the_model_distribution():
    e = engine()
    rid = e.add_request(PROMPTS[0], kvcache.SamplingParams(max_tokens=3, logprobs=5))
    seen = []
    while e.has_unfinished():
        for out in e.step():
            assert out.request_id == rid
            (lp,) = out.logprobs
            assert lp.token_id == out.new_token_ids[0]
            assert lp.top[0][0] == lp.token_id and lp.top[0][1] == pytest.approx(lp.logprob)  # greedy: the most likely
            assert [t for t, _ in lp.top] == sorted([t for t, _ in lp.top], key=lambda t: -dict(lp.top)[t])
            assert len(lp.top) == 5 and lp.logprob < 0
            seen.append(lp.token_id)
    assert seen == kvcache.run(MODEL, [PROMPTS[0]], 3)[0].tolist()
    _, logits = kvcache.run(MODEL, [PROMPTS[0]], 1, logits=True)
    row = logits[0, 0].astype(np.float64)
    expect = row[seen[0]] - np.log(np.exp(row - row.max()).sum()) - row.max()
    e2 = engine()
    rid = e2.add_request(PROMPTS[0], kvcache.SamplingParams(max_tokens=1, logprobs=0))
    (out,) = e2.step()
    assert out.logprobs[0].logprob == pytest.approx(expect, abs=1e-4) and out.logprobs[0].top == ()


def test_async_engine_streams_to_many_waiters_and_aborts_on_cancel():
    e = engine(max_num_seqs=8, max_requests=64)
    alone = [e.generate([p], kvcache.SamplingParams(max_tokens=8))[0] for p in PROMPTS]
    ae = kvcache.AsyncEngine(e)

    async def one(prompt):
        ids = []
        async for out in ae.generate(prompt, kvcache.SamplingParams(max_tokens=8)):
            ids.extend(out.new_token_ids)
        return ids

    async def cancelled():
        agen = ae.generate(list(range(1, 40)), kvcache.SamplingParams(max_tokens=400))
        await agen.__anext__()
        await agen.aclose()

    async def main():
        got = await asyncio.gather(*(one(PROMPTS[i % 3]) for i in range(24)), cancelled())
        for _ in range(100):
            if ae.stats()["kv_blocks_in_use"] == 0:
                break
            await asyncio.sleep(0.01)
        return got[:-1]

    try:
        got = asyncio.run(main())
        assert got == [alone[i % 3] for i in range(24)]
        assert ae.stats()["kv_blocks_in_use"] == 0 and ae.stats()["running"] == 0

        async def refused():
            async for _ in ae.generate([], kvcache.SamplingParams()):
                pass

        with pytest.raises(kvcache.InvalidArgument):
            asyncio.run(refused())
    finally:
        ae.close()


def test_gemma3_greedy_equals_the_static_runner_batched_or_alone():
    gemma = DATA / "oracle" / "gemma3"
    e = kvcache.Engine(gemma, max_num_seqs=4, kv_memory="8MiB", block_size=4)
    together = e.generate(PROMPTS, kvcache.SamplingParams(max_tokens=6))
    for prompt, ids in zip(PROMPTS, together):
        assert ids == kvcache.run(gemma, [prompt], 6)[0].tolist()
        assert ids == e.generate([prompt], kvcache.SamplingParams(max_tokens=6))[0]


class _Plan:
    """A stand-in for a structured.Grammar: the k-th generated token must be one of plan[k]; complete (and
    stopped) after len(plan) tokens."""

    def __init__(self, plan):
        self.plan = plan

    def matcher(self):
        return _PlanMatcher(self.plan)


class _PlanMatcher:
    def __init__(self, plan):
        self.plan, self.k = plan, 0

    def fill(self, words):
        words[:] = 0
        for t in self.plan[self.k]:
            words[t // 32] |= np.uint32(1 << (t % 32))

    def accept(self, token):
        ok = token in self.plan[self.k]
        self.k += 1
        return ok

    @property
    def accepting(self):
        return self.k == len(self.plan)

    stopped = accepting


class _Broken(_Plan):
    """A grammar whose first mask fails (as llguidance's does for a mask of another vocabulary's size)."""

    def matcher(self):
        m = _PlanMatcher(self.plan)
        m.fill = lambda words: (_ for _ in ()).throw(ValueError("Invalid buffer size"))
        return m


def test_structured_refusals_queue_nothing():
    """structured of another type was an AttributeError; a grammar whose first mask failed raised after the engine
    held the request, which then ran unconstrained; another vocabulary's Grammar is refused by name."""
    e = engine()
    with pytest.raises(kvcache.InvalidArgument, match="structured must be a kvcache.structured.Grammar, not str"):
        e.add_request(PROMPTS[0], kvcache.SamplingParams(structured="json"))
    with pytest.raises(ValueError, match="Invalid buffer size"):
        e.add_request(PROMPTS[0], kvcache.SamplingParams(structured=_Broken([[5]])))
    assert not e.has_unfinished() and e.step() == []
    pytest.importorskip("llguidance")
    pytest.importorskip("tokenizers")
    from text_model import tokenizer_json
    vocabulary = kvcache.structured.Vocabulary(tokenizer_json(e.vocab_size + 64), e.vocab_size + 64, [2])
    grammar = kvcache.structured.Grammar(vocabulary, kvcache.structured.regex_grammar("a+"))
    with pytest.raises(kvcache.InvalidArgument, match=f"a {e.vocab_size + 64}-token vocabulary, the model's has"):
        e.add_request(PROMPTS[0], kvcache.SamplingParams(structured=grammar))
    assert not e.has_unfinished()


def test_structured_requests_sample_allowed_tokens_only():
    e = engine()
    free = e.generate([PROMPTS[0]], kvcache.SamplingParams(max_tokens=4))[0]
    plan = [[free[0] + 1], [free[1], 300], [7, 8]]
    for params in (kvcache.SamplingParams(max_tokens=8, structured=_Plan(plan), logprobs=2),
                   kvcache.SamplingParams(max_tokens=8, structured=_Plan(plan), temperature=1.5, seed=3)):
        rid = e.add_request(PROMPTS[0], params)
        other = e.add_request(PROMPTS[0], kvcache.SamplingParams(max_tokens=4))  # a neighbour without a mask
        got, reasons, lps = {rid: [], other: []}, {}, []
        while e.has_unfinished():
            for out in e.step():
                got[out.request_id] += out.new_token_ids
                if out.request_id == rid:
                    lps += out.logprobs or []
                reasons[out.request_id] = out.finish_reason
        assert got[other] == free
        assert len(got[rid]) == 3 and all(t in allowed for t, allowed in zip(got[rid], plan))
        assert reasons[rid] == "stop"  # the grammar took nothing more: no stop token needed
        if lps:  # greedy: masked logprobs, a forced token has probability 1
            assert lps[0].token_id == free[0] + 1 and lps[0].logprob == 0.0 and len(lps[0].top) == 1
            assert lps[1].token_id == got[rid][1] and len(lps[1].top) == 2
    # a grammar that allows nothing ends its request (the engine's no_allowed_token) as "abort"
    rid = e.add_request(PROMPTS[1], kvcache.SamplingParams(max_tokens=8, structured=_Plan([[5], []])))
    outs = []
    while e.has_unfinished():
        outs += e.step()
    assert [t for o in outs for t in o.new_token_ids] == [5] and outs[-1].finish_reason == "abort"
    assert e.stats()["kv_blocks_in_use"] == 0


def test_allowed_token_ids_and_bad_words_mask_the_sampling():
    """allowed_token_ids: only those ids, beside a grammar the intersection; bad_words: a sequence's last token
    banned right after the rest of it (the test model repeats a token: (t, t) makes it change after one t).
    Logprobs stay raw without a grammar. Malformed lists are refused by name, nothing left queued."""
    e = engine()
    sp = kvcache.SamplingParams
    free = e.generate([PROMPTS[1]], sp(max_tokens=6))[0]
    t = free[0]
    assert free[:2] == [t, t]
    got = e.generate([PROMPTS[1]], sp(max_tokens=6, bad_words=((t, t),)))[0]
    assert got[0] == t and all(a != t or b != t for a, b in zip(got, got[1:]))
    # banned only right after t: between two allowed tokens the model goes back to t each time
    assert e.generate([PROMPTS[1]], sp(max_tokens=6, allowed_token_ids=(t, 3), bad_words=((t, t),)))[0] == [t, 3] * 3
    assert t not in e.generate([PROMPTS[1]], sp(max_tokens=6, bad_words=((t,),)))[0]
    assert set(e.generate([PROMPTS[1]], sp(max_tokens=6, allowed_token_ids=(3, 300)))[0]) <= {3, 300}
    plan = [[free[0] + 1, 3], [3, 4], [7]]
    got = e.generate([PROMPTS[1]], sp(max_tokens=6, structured=_Plan(plan), allowed_token_ids=[3, 4, 7, 9]))[0]
    assert got == [3, 3, 7] or got == [3, 4, 7]
    rid = e.add_request(PROMPTS[1], sp(max_tokens=1, allowed_token_ids=[300], logprobs=1))
    out = [o for o in e.step() if o.request_id == rid][0]
    assert out.new_token_ids == [300] and out.logprobs[0].top[0][0] == t  # the raw best, not the one allowed
    for params, text in ((sp(allowed_token_ids=[]), "at least one"), (sp(allowed_token_ids=[512]), r"\[0, 512\)"),
                         (sp(allowed_token_ids=5), "must be a list"), (sp(bad_words=((),)), "1 to 64"),
                         (sp(bad_words=((1, -1),)), r"\[0, 512\)"), (sp(bad_words=[[1]] * 257), "at most 256"),
                         (sp(bad_words=("ab",)), "must be a list")):
        with pytest.raises(kvcache.InvalidArgument, match=text):
            e.add_request([1], params)
    assert not e.has_unfinished() and e.stats()["waiting"] == 0
