"""kvcache.serve's choices: n per prompt, batches of prompts, echo, seeds per
choice, and the limits a prompt meets (the model's length, integer fields)."""
import asyncio
import json
import time

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402
import openai  # noqa: E402

from kvcache.detokenize import open_tail  # noqa: E402
from serve_fixture import metric, running, slow_steps, sse_events  # noqa: E402
from text_model import make_model_dir  # noqa: E402

GREEDY = {"model": "test", "max_tokens": 8, "temperature": 0, "ignore_eos": True}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running(make_model_dir(tmp_path_factory.mktemp("model")), enable_prompt_tokens_details=True) as (url, srv):
        yield url, srv


def post(url, path, body):
    r = httpx.post(url + path, json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def streamed(url, path, body):
    """Per choice index: (joined text, last finish reason); and the usage chunk."""
    with httpx.stream("POST", url + path, json={**body, "stream": True, "stream_options": {"include_usage": True}},
                      timeout=60) as r:
        assert r.status_code == 200
        events = sse_events(list(r.iter_lines()))
    texts, reasons = {}, {}
    for e in events[:-1]:
        (c,) = e["choices"]
        texts[c["index"]] = texts.get(c["index"], "") + (c["text"] if "text" in c else c["delta"].get("content", ""))
        reasons[c["index"]] = c["finish_reason"] or reasons.get(c["index"])
    assert events[-1]["choices"] == [] and all(e["usage"] is None for e in events[:-1])  # OpenAI: null till then
    return [(texts[i], reasons[i]) for i in sorted(texts)], events[-1]["usage"]


def test_n_and_a_batch_of_prompts_are_choices_prompt_by_prompt(server):
    url, srv = server
    prompts = ["The quick brown fox", srv.tokenizer.encode("Unicode: café 日本語 🙂")]
    alone = [post(url, "/v1/completions", {**GREEDY, "prompt": p}) for p in prompts]
    r = post(url, "/v1/completions", {**GREEDY, "prompt": prompts, "n": 2})
    assert [c["index"] for c in r["choices"]] == [0, 1, 2, 3]
    assert [c["text"] for c in r["choices"]] == [a["choices"][0]["text"] for a in alone for _ in range(2)]
    assert r["usage"]["prompt_tokens"] == sum(a["usage"]["prompt_tokens"] for a in alone)  # each prompt once
    assert r["usage"]["completion_tokens"] == 4 * 8
    got, usage = streamed(url, "/v1/completions", {**GREEDY, "prompt": prompts, "n": 2})
    assert got == [(c["text"], c["finish_reason"]) for c in r["choices"]]
    assert usage["completion_tokens"] == 32 and usage["prompt_tokens"] == r["usage"]["prompt_tokens"]
    with openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0) as client:
        c = client.chat.completions.create(model="test", messages=[{"role": "user", "content": "hi"}], n=3,
                                           max_tokens=6, temperature=0, extra_body={"ignore_eos": True})
        assert [x.index for x in c.choices] == [0, 1, 2] and len({x.message.content for x in c.choices}) == 1
        assert c.usage.completion_tokens == 3 * 6
    chat = {**GREEDY, "messages": [{"role": "user", "content": "Héllo 🙂"}], "n": 2}
    whole = post(url, "/v1/chat/completions", chat)
    got, _ = streamed(url, "/v1/chat/completions", chat)
    assert got == [(c["message"]["content"], c["finish_reason"]) for c in whole["choices"]]


def test_sampled_choices_take_seed_plus_their_index(server):
    url, _ = server
    body = {"model": "test", "prompt": "The quick", "max_tokens": 12, "temperature": 1.0, "ignore_eos": True}
    r = post(url, "/v1/completions", {**body, "n": 3, "seed": 5})
    each = [post(url, "/v1/completions", {**body, "seed": 5 + j})["choices"][0]["text"] for j in range(3)]
    assert [c["text"] for c in r["choices"]] == each and len(set(each)) > 1
    # the largest seed the field takes (int64, as vLLM's) wraps for choice 1 instead of failing it
    top = post(url, "/v1/completions", {**body, "n": 2, "seed": 2**63 - 1})
    low = post(url, "/v1/completions", {**body, "seed": -(2**63)})
    assert top["choices"][1]["text"] == low["choices"][0]["text"]
    # beyond int64: 400 with pydantic's bound names, which vLLM's tests look for (test_long_seed)
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    for seed, bound in ((2**63, "less_than_equal"), (-(2**63) - 1, "greater_than_equal")):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="test", messages=[{"role": "user", "content": "hi"}], seed=seed,
                                           temperature=0, max_tokens=2)
        assert bound in err.value.message


def test_echo_puts_the_prompt_before_the_text(server):
    url, srv = server
    for prompt in ("Numbers 0 1 2 3", srv.tokenizer.encode("Emoji: 🙂 🚀")):
        plain = post(url, "/v1/completions", {**GREEDY, "prompt": prompt})["choices"][0]["text"]
        text = prompt if isinstance(prompt, str) else srv.tokenizer.decode(prompt)
        assert post(url, "/v1/completions", {**GREEDY, "prompt": prompt, "echo": True})["choices"][0]["text"] \
            == text + plain
        assert streamed(url, "/v1/completions", {**GREEDY, "prompt": prompt, "echo": True})[0] \
            == [(text + plain, "length")]


def test_token_ids_that_end_inside_a_character(server):
    """Prompt ids cut inside a character: the choice's text begins with that character (when the model's
    tokens complete it: it was dropped, a U+FFFD streamed in its place), echo + text is the decode of prompt and
    output, no delta holds half a character, and a token's text_offset counts the characters before its bytes."""
    url, srv = server
    tok = srv.tokenizer
    body = {**GREEDY, "max_tokens": 4, "logprobs": 0, "return_tokens_as_token_ids": True}
    completed = 0
    for text in ("日本語のテキスト",):
        ids = tok.encode(text)
        for prompt in [ids[:k] for k in range(1, len(ids)) if open_tail(tok, ids[:k])]:
            r = post(url, "/v1/completions", {**body, "prompt": prompt})["choices"][0]
            out = [int(t.split(":")[1]) for t in r["logprobs"]["tokens"]]
            whole = tok.decode(prompt + out)
            echo = post(url, "/v1/completions", {**GREEDY, "max_tokens": 4, "prompt": prompt, "echo": True})
            assert echo["choices"][0]["text"] == whole and whole.endswith(r["text"])
            with httpx.stream("POST", url + "/v1/completions", json={**body, "prompt": prompt, "stream": True},
                              timeout=60) as s:
                deltas = [e["choices"][0]["text"] for e in sse_events(list(s.iter_lines()))]
            assert "".join(deltas) == r["text"]  # so no U+FFFD in a delta where whole has none
            assert streamed(url, "/v1/completions", {**GREEDY, "max_tokens": 4, "prompt": prompt, "echo": True})[0] \
                == [(whole, "length")]
            lent = b"".join(tok.token_bytes(t) for t in prompt[len(prompt) - open_tail(tok, prompt):])
            for i, at in enumerate(r["logprobs"]["text_offset"]):
                before = (lent + b"".join(tok.token_bytes(t) for t in out[:i])).decode("utf-8", "replace")
                assert r["text"][:at] in (before, before[:-1])  # less an unfinished character, decoded as U+FFFD
            completed += "\ufffd" not in tok.decode(prompt + out[:1])
    assert completed  # the test model's first greedy token completes the character for some of the cuts


def error_of(r, status):
    assert r.status_code == status, r.text
    return r.json()["error"]


def test_a_prompt_the_model_cannot_continue_is_400_naming_it(server):
    url, srv = server
    n = srv.max_model_len
    tok = srv.tokenizer
    words = next(k for k in range(n) if len(tok.encode(tok.apply_chat_template(
        [{"role": "user", "content": "x " * k}]), add_special_tokens=False)) >= n)
    for content in ("x " * words, "x " * 2 * n):  # exactly the model's length, and far beyond
        err = error_of(httpx.post(url + "/v1/chat/completions", json={"model": "test", "messages": [
            {"role": "user", "content": content}]}), 400)  # no max_tokens: up to the model's length
        assert err["param"] == "messages" and f"maximum context length is {n}" in err["message"]
        assert err["code"] == "context_length_exceeded"  # OpenAI's code
    err = error_of(httpx.post(url + "/v1/completions", json={"model": "test", "prompt": [5] * n}), 400)
    assert err["param"] == "prompt" and f"maximum context length is {n}" in err["message"]
    err = error_of(httpx.post(url + "/v1/completions", json={"model": "test", "prompt": [5] * (n - 4),
                                                             "max_tokens": 5}), 400)
    assert err["param"] == "max_tokens" and err["code"] == "context_length_exceeded"
    assert post(url, "/v1/completions", {"model": "test", "prompt": [5] * (n - 4), "max_tokens": 4})
    err = error_of(httpx.post(url + "/v1/completions", json={"model": "test", "prompt": ["hi", ""]}), 400)
    assert err["param"] == "prompt" and "prompt[1]" in err["message"]


def test_integral_floats_are_integers(server):
    url, _ = server
    r = post(url, "/v1/completions", {"model": "test", "prompt": "hi", "max_tokens": 3.0, "n": 2.0,
                                      "temperature": 0, "ignore_eos": True})
    assert len(r["choices"]) == 2 and r["usage"]["completion_tokens"] == 6
    for field, value in (("max_tokens", 2.5), ("n", 1.5), ("max_tokens", "3"), ("logprobs", True)):
        assert error_of(httpx.post(url + "/v1/completions", json={"model": "test", "prompt": "hi", field: value}),
                        400)["param"] == field


def test_a_client_that_leaves_aborts_every_choice(server, monkeypatch):
    url, srv = server
    slow_steps(monkeypatch, srv)  # 400 tokens take 8 s
    body = {"model": "test", "prompt": "The quick brown fox " * 10, "max_tokens": 400, "ignore_eos": True, "n": 3,
            "stream": True}
    with httpx.Client(timeout=30) as h:
        with h.stream("POST", url + "/v1/completions", json=body) as r:
            lines = r.iter_lines()
            for _ in range(6):
                next(lines)
            text = h.get(url + "/metrics").text
            assert metric(text, "kvcache_num_requests_running") + metric(text, "kvcache_num_requests_waiting") == 3
    deadline = time.monotonic() + 2
    while srv.engine.stats()["kv_blocks_in_use"] or srv.engine.stats()["running"]:
        assert time.monotonic() < deadline, "the KV of a disconnected client's choices was not freed"
        time.sleep(0.02)


def test_vllm_text_options_stop_string_kept_and_special_tokens_shown(server):
    url, srv = server
    body = {**GREEDY, "prompt": "The quick", "max_tokens": 24}
    text = post(url, "/v1/completions", body)["choices"][0]["text"]
    stop = text[5:8]
    kept = {**body, "stop": [stop], "include_stop_str_in_output": True}
    r = post(url, "/v1/completions", kept)["choices"][0]
    assert (r["text"], r["finish_reason"]) == (text[:text.index(stop) + len(stop)], "stop")
    assert streamed(url, "/v1/completions", kept)[0] == [(r["text"], "stop")]
    special = "<|im_start|>"  # a special token a sampled text may hold: shown only with skip_special_tokens false
    for seed in range(20):
        sampled = {**body, "temperature": 2.0, "seed": seed, "max_tokens": 64}
        shown = post(url, "/v1/completions", {**sampled, "skip_special_tokens": False})["choices"][0]["text"]
        if special in shown:
            assert special not in post(url, "/v1/completions", sampled)["choices"][0]["text"]
            break
    else:
        pytest.fail(f"no sampled text held {special}")


def test_continuous_usage_stats_give_the_usage_so_far_in_every_chunk(server):
    """Each chunk's usage counts the tokens of the chunks up to it (vLLM's test: completion_tokens grows with every
    chunk that has choices). It counted the steps already generated when the chunk was written, those still
    queued behind it included: 10 in every chunk of a 10-token chat reply."""
    url, _ = server
    options = {"include_usage": True, "continuous_usage_stats": True}
    for path, body in (("/v1/completions", {"prompt": "hi"}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "n": 2})):
        with httpx.stream("POST", url + path, json={**GREEDY, **body, "stream": True, "stream_options": options,
                                                    "return_token_ids": True}, timeout=60) as r:
            events = sse_events(list(r.iter_lines()))
        sent = 0
        for e in events:
            sent += sum(len(c.get("token_ids") or []) for c in e["choices"])
            assert e["usage"]["completion_tokens"] == sent, (path, e)
            assert e["usage"]["total_tokens"] == e["usage"]["prompt_tokens"] + sent
        assert sent == 8 * body.get("n", 1) and events[-1]["choices"] == []


def test_choices_beyond_the_queue(tmp_path, monkeypatch):
    """More choices than the server ever holds: 400 naming n (no retry can help). More than the places left
    beside a running request: 503 queue_full, and none of its choices runs."""
    with running(make_model_dir(tmp_path / "model"), max_num_seqs=1, max_requests=2) as (url, srv):
        body = {**GREEDY, "prompt": "The quick", "max_tokens": 50, "n": 3}
        err = error_of(httpx.post(url + "/v1/completions", json=body), 400)
        assert err["param"] == "n" and "--max-requests" in err["message"]
        slow_steps(monkeypatch, srv)  # the stream below runs for 4 s unless stopped
        with httpx.stream("POST", url + "/v1/completions", timeout=60,
                          json={**GREEDY, "prompt": "The quick", "max_tokens": 200, "stream": True}) as r:
            lines = r.iter_lines()  # held: a dropped iterator closes the stream (the server then aborts it)
            next(lines)
            err = error_of(httpx.post(url + "/v1/completions", json={**body, "n": 2}), 503)
            assert err["code"] == "queue_full"
        monkeypatch.undo()
        deadline = time.monotonic() + 2
        while srv.engine.stats()["kv_blocks_in_use"] or srv.engine.stats()["running"] or srv.engine.stats()["waiting"]:
            assert time.monotonic() < deadline, "the choices queued before the refusal still run"
            time.sleep(0.02)
        assert len(post(url, "/v1/completions", {**body, "n": 2})["choices"]) == 2


def test_cache_salt_keeps_a_prefix_to_its_own_salt(server):
    url, _ = server
    body = {**GREEDY, "prompt": "Prefix caching shares the blocks of a prompt that many requests begin with " * 2}

    def cached(**kw):
        return post(url, "/v1/completions", {**body, **kw})["usage"]["prompt_tokens_details"]["cached_tokens"]

    assert cached(cache_salt="tenant-a") == 0
    assert cached(cache_salt="tenant-a") > 0  # its own prompt, cached
    assert cached(cache_salt="tenant-b") == 0 and cached() == 0  # never under another salt, nor without one
    assert cached(cache_salt="tenant-b", n=2) > 0  # the first choice of a prompt says what its prompt found


def test_mixed_concurrent_clients_get_what_each_gets_alone(server):
    """24 clients at once, completions and chat, streamed and not, n 1 to 3: greedy text is batch invariant."""
    url, _ = server

    def case(i):
        chat = i % 2 == 1
        body = {**GREEDY, "max_tokens": 12, "n": 1 + i % 3, "stream": i % 4 >= 2}
        if chat:
            return "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": f"Ünïcödé 🙂 {i}"}]}
        return "/v1/completions", {**body, "prompt": f"Numbers {i} 日本語"}

    async def one(client, path, body):
        if not body["stream"]:
            r = await client.post(path, json=body)
            return [c.get("text", c.get("message", {}).get("content")) for c in r.json()["choices"]]
        async with client.stream("POST", path, json=body) as r:
            events = sse_events([line async for line in r.aiter_lines()])
        texts = [""] * body["n"]
        for e in events:
            for c in e["choices"]:
                texts[c["index"]] += c["text"] if "text" in c else c["delta"].get("content", "")
        return texts

    async def run():
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            alone = [await one(client, *case(i)) for i in range(24)]
            together = await asyncio.wait_for(asyncio.gather(*(one(client, *case(i)) for i in range(24))), 30)
            return alone, together

    alone, together = asyncio.run(run())
    assert together == alone and all(len(set(t)) == 1 and t[0] for t in alone)


def test_stop_reason_names_what_stopped_a_choice(server):
    url, _ = server
    body = {**GREEDY, "prompt": "The quick", "max_tokens": 10}
    first = post(url, "/v1/completions", {**body, "logprobs": 0, "return_tokens_as_token_ids": True})["choices"][0]
    assert (first["finish_reason"], first["stop_reason"]) == ("length", None)
    token = int(first["logprobs"]["tokens"][3].split(":")[1])
    by_token = post(url, "/v1/completions", {**body, "stop_token_ids": [token]})["choices"][0]
    assert (by_token["finish_reason"], by_token["stop_reason"]) == ("stop", token)
    stop = first["text"][2:5]
    by_text = post(url, "/v1/completions", {**body, "stop": ["zzz", stop]})["choices"][0]
    assert (by_text["finish_reason"], by_text["stop_reason"]) == ("stop", stop)
    chat = {**body, "messages": [{"role": "user", "content": "x"}]}
    stop = post(url, "/v1/chat/completions", chat)["choices"][0]["message"]["content"][2:5]
    with httpx.stream("POST", url + "/v1/chat/completions", json={**chat, "stop": [stop], "stream": True}) as r:
        events = sse_events(list(r.iter_lines()))
    assert all(e["choices"][0]["stop_reason"] is None for e in events[:-1])
    assert events[-1]["choices"][0]["finish_reason"] == "stop" and events[-1]["choices"][0]["stop_reason"] == stop


def test_add_special_tokens_as_vllm_defaults_it(tmp_path):
    """A tokenizer that puts <|endoftext|> before a text: completions add it unless add_special_tokens is false,
    chat (whose template writes its own) only when it is true."""
    model = make_model_dir(tmp_path / "model")
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    a, b = {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}
    tokenizer["post_processor"] = {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, a],
        "pair": [a, b], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [0],
                                                             "tokens": ["<|endoftext|>"]}}}
    (model / "tokenizer.json").write_text(json.dumps(tokenizer))
    with running(model) as (url, _):
        def n_prompt(path, **kw):
            return post(url, path, {"model": "test", "max_tokens": 1, **kw})["usage"]["prompt_tokens"]

        plain = n_prompt("/v1/completions", prompt="hi", add_special_tokens=False)
        assert n_prompt("/v1/completions", prompt="hi") == plain + 1
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        assert n_prompt("/v1/chat/completions", **chat, add_special_tokens=True) \
            == n_prompt("/v1/chat/completions", **chat) + 1
        # chat echo repeats a final assistant message only: after a user's, the reply alone (was refused)
        body = {"model": "test", **chat, "max_tokens": 3, "temperature": 0}
        assert httpx.post(url + "/v1/chat/completions", json={**body, "echo": True}).json()["choices"] == \
            httpx.post(url + "/v1/chat/completions", json=body).json()["choices"]


def test_echo_with_logprobs_scores_the_prompt(server):
    """lm-evaluation-harness's loglikelihood request (local-completions: echo, logprobs 1, max_tokens 1, reading
    token_logprobs[ctxlen:-1]) and vLLM's echo without generation (max_tokens 0): the prompt's tokens come with
    their log-probabilities, the first one null (no context); they were refused (400). A prompt made of a
    greedy continuation's ids scores each continued token as the generation gave it."""
    url, _ = server
    gen = post(url, "/v1/completions", {**GREEDY, "prompt": "The quick brown", "max_tokens": 5, "logprobs": 2,
                                        "return_tokens_as_token_ids": True, "return_token_ids": True})["choices"][0]
    prompt_ids, out_ids = gen["prompt_token_ids"], gen["token_ids"]
    for max_tokens in (0, 1):
        body = {**GREEDY, "prompt": prompt_ids + out_ids, "echo": True, "logprobs": 2, "max_tokens": max_tokens,
                "return_tokens_as_token_ids": True}
        c = post(url, "/v1/completions", body)["choices"][0]
        lp, n = c["logprobs"], len(prompt_ids) + len(out_ids)
        assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["text_offset"]) == n + max_tokens
        assert lp["tokens"][:n] == [f"token_id:{t}" for t in prompt_ids + out_ids]
        assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
        assert all(v <= 0 for v in lp["token_logprobs"][1:]) and lp["text_offset"] == sorted(lp["text_offset"])
        got = lp["token_logprobs"][len(prompt_ids):n]
        assert got == pytest.approx(gen["logprobs"]["token_logprobs"], abs=1e-4)
        for scored, generated in zip(lp["top_logprobs"][len(prompt_ids):n], gen["logprobs"]["top_logprobs"]):
            assert scored.keys() == generated.keys()
            assert list(scored.values()) == pytest.approx(list(generated.values()), abs=1e-4)
        assert c["finish_reason"] == "length" and c["text"].startswith("The quick brown" + gen["text"])
    # streamed: the prompt's entries come in the first chunk, before the output's
    with httpx.stream("POST", url + "/v1/completions", json={**body, "max_tokens": 2, "stream": True},
                      timeout=60) as r:
        events = sse_events(list(r.iter_lines()))
    tokens = [t for e in events for c in e["choices"] for t in c["logprobs"]["tokens"]]
    assert tokens[:n] == [f"token_id:{t}" for t in prompt_ids + out_ids] and len(tokens) == n + 2
    assert events[0]["choices"][0]["logprobs"]["token_logprobs"][0] is None
    # text prompts, as lm-eval sends them: the text echoed, offsets into it
    c = post(url, "/v1/completions", {**GREEDY, "prompt": "The quick brown", "echo": True, "logprobs": 1,
                                      "max_tokens": 1})["choices"][0]
    lp = c["logprobs"]
    assert c["text"].startswith("The quick brown") and lp["text_offset"][0] == 0
    assert "".join(lp["tokens"]) == c["text"]
    r = httpx.post(url + "/v1/completions", json={**GREEDY, "prompt": "hi", "echo": True, "max_tokens": 0}).json()
    assert r["choices"][0]["text"] == "hi" and r["usage"]["completion_tokens"] == 0


def test_prompt_logprobs_as_vllm_gives_them(server):
    """vLLM's prompt_logprobs (mirrors its entrypoint tests test_prompt_logprobs_completion / _chat): null unless
    asked; else per prompt, null for the first token, then a dict by token id holding the prompt's token and the
    k most likely, each with logprob, rank and decoded_token; negative values and streams refused (was 400)."""
    url, _ = server
    body = {**GREEDY, "prompt": ["A robot may not injure", "My name is"], "max_tokens": 2}
    assert [c["prompt_logprobs"] for c in post(url, "/v1/completions", body)["choices"]] == [None, None]
    for k in (0, 1, 5):
        got = post(url, "/v1/completions", {**body, "prompt_logprobs": k, "return_token_ids": True})["choices"]
        echo = post(url, "/v1/completions", {**body, "echo": True, "logprobs": 0, "max_tokens": 0})["choices"]
        for c, e in zip(got, echo):
            ids, lps = c["prompt_token_ids"], c["prompt_logprobs"]
            assert len(lps) == len(ids) and lps[0] is None
            for t, entry, scored in zip(ids[1:], lps[1:], e["logprobs"]["token_logprobs"][1:]):
                assert str(t) in entry and len(entry) <= k + 1
                assert entry[str(t)]["logprob"] == pytest.approx(scored, abs=1e-9)
                for v in entry.values():  # a rank counts the tokens more likely: at least those listed
                    above = sum(u["logprob"] > v["logprob"] for u in entry.values())
                    assert v["logprob"] <= 0 and isinstance(v["decoded_token"], str) and v["rank"] >= 1 + above
                    assert k == 0 or v is entry[str(t)] or v["rank"] == 1 + above  # the k best: exactly
    # vLLM's test_comparison_with_prompt_logprobs_and_logprobs: echo's tokens are the prompt's and the output's
    c = post(url, "/v1/completions", {**GREEDY, "prompt": "Hello, world! How are you today?", "max_tokens": 6,
                                      "echo": True, "logprobs": 1, "prompt_logprobs": 1, "return_token_ids": True,
                                      "return_tokens_as_token_ids": True})["choices"][0]
    assert len(c["prompt_logprobs"]) == len(c["prompt_token_ids"]) and c["prompt_logprobs"][0] is None
    assert [int(t.removeprefix("token_id:")) for t in c["logprobs"]["tokens"]] == \
        c["prompt_token_ids"] + c["token_ids"]
    for bad in (-1, 21, "1"):
        r = httpx.post(url + "/v1/completions", json={**body, "prompt_logprobs": bad})
        assert r.status_code == 400 and r.json()["error"]["param"] == "prompt_logprobs"
    r = httpx.post(url + "/v1/completions", json={**body, "prompt_logprobs": 1, "stream": True})
    assert r.status_code == 400 and r.json()["error"]["param"] == "prompt_logprobs"
    chat = {**GREEDY, "messages": [{"role": "user", "content": "Beijing and Shanghai"}], "max_tokens": 2}
    assert post(url, "/v1/chat/completions", chat)["prompt_logprobs"] is None
    lps = post(url, "/v1/chat/completions", {**chat, "prompt_logprobs": 1})["prompt_logprobs"]
    assert lps[0] is None and len(lps) > 1 and all(1 <= len(e) <= 2 for e in lps[1:])


def test_a_request_id_names_the_answer_and_whole_vocabulary_logprobs_are_refused_as_vllm(server):
    url = server[0]
    with openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=60) as client:
        ask = dict(model="test", max_tokens=1, extra_body={"request_id": "mine-1"})
        assert client.completions.create(prompt="Hi", **ask).id == "cmpl-mine-1"
        r = client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}], stream=True, **ask)
        assert {c.id for c in r} == {"chatcmpl-mine-1"}
        r = client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}],
                                           extra_headers={"X-Request-Id": "trace.7"}, **ask)
        assert r.id == "chatcmpl-trace.7"  # the header wins, as in vLLM
    for body, headers, field in (({"request_id": "a b"}, {}, "request_id"), ({"request_id": 5}, {}, "request_id"),
                                 ({"request_id": "x" * 257}, {}, "request_id"), ({}, {"X-Request-Id": ""}, "X-Request-Id"),
                                 ({"logprobs": True, "top_logprobs": -1}, {}, "top_logprobs"),
                                 ({"logprobs": True, "top_logprobs": -2}, {}, "top_logprobs"),
                                 ({"prompt_logprobs": -1}, {}, "prompt_logprobs")):
        r = httpx.post(url + "/v1/chat/completions", headers=headers, timeout=60,
                       json={"model": "test", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, **body})
        assert (r.status_code, r.json()["error"]["param"]) == (400, field), (body, r.text)
    assert "whole vocabulary (512 tokens)" in r.json()["error"]["message"]
