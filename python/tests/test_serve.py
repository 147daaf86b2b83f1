"""kvcache.serve against the real `openai` client and raw HTTP: completions
and chat, streamed and not, usage, concurrency, disconnects, bad requests,
API keys and tenant isolation, metrics."""
import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402
import openai  # noqa: E402

import kvcache  # noqa: E402
from kvcache.serve import Server  # noqa: E402
from kvcache.tokenizer import Tokenizer  # noqa: E402
from serve_fixture import command_url, metric, running, slow_steps, sse_events  # noqa: E402
from text_model import MODEL, make_model_dir  # noqa: E402

EOS = (2, 0)
PROMPTS = ["The quick brown fox", "Unicode: café 日本語 🙂", "Blocks of sixteen tokens, a pool of blocks",
           "Numbers 0 1 2 3"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="module")
def tok(model_dir):
    return Tokenizer(model_dir)


@pytest.fixture(scope="module")
def server(model_dir):
    with running(model_dir) as (url, srv):
        yield url, srv


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server[0] + "/v1", api_key="none", max_retries=0, timeout=60) as c:
        yield c


def greedy(ids, max_tokens, model=MODEL):
    """The reference: the static runner's greedy ids, cut after the first end-of-sequence id."""
    out = kvcache.run(model, [ids], max_tokens)[0].tolist()
    for i, t in enumerate(out):
        if t in EOS:
            return out[:i + 1], "stop"
    return out, "length"


def test_completion_is_the_greedy_text_with_its_usage(client, tok):
    for prompt in PROMPTS:
        ids = tok.encode(prompt)
        ref, reason = greedy(ids, 12)
        r = client.completions.create(model="test", prompt=prompt, max_tokens=12, temperature=0)
        text = tok.decode([t for t in ref if t not in EOS])
        assert r.choices[0].text == text and r.choices[0].finish_reason == reason
        assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (len(ids), len(ref))
        assert r.usage.total_tokens == len(ids) + len(ref)
        assert r.object == "text_completion" and r.model == "test"


def test_streamed_completion_concatenates_to_the_whole(client):
    for prompt in PROMPTS:
        whole = client.completions.create(model="test", prompt=prompt, max_tokens=20, temperature=0)
        chunks = list(client.completions.create(model="test", prompt=prompt, max_tokens=20, temperature=0,
                                                stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        assert text == whole.choices[0].text
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason
        assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
        assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens


def test_chat_streamed_and_not_with_usage(client, tok):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Héllo, wörld 🙂"}]
    ids = tok.encode(tok.apply_chat_template(messages), add_special_tokens=False)
    ref, reason = greedy(ids, 16)
    whole = client.chat.completions.create(model="test", messages=messages, max_tokens=16, temperature=0)
    msg = whole.choices[0].message
    assert msg.role == "assistant" and msg.content == tok.decode([t for t in ref if t not in EOS])
    assert whole.choices[0].finish_reason == reason
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (len(ids), len(ref))
    chunks = list(client.chat.completions.create(model="test", messages=messages, max_tokens=16, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == msg.content
    assert chunks[-1].usage.completion_tokens == len(ref)


def test_sampling_is_seeded_and_stop_strings_cut(client):
    kw = dict(model="test", prompt="The quick", max_tokens=24, temperature=1.0, top_p=0.9, extra_body={"top_k": 50})
    a = client.completions.create(seed=7, **kw).choices[0].text
    assert a == client.completions.create(seed=7, **kw).choices[0].text
    texts = {client.completions.create(seed=s, **kw).choices[0].text for s in range(4)}
    assert len(texts) > 1
    full = client.completions.create(model="test", prompt="The quick", max_tokens=24, temperature=0,
                                     extra_body={"ignore_eos": True})
    text = full.choices[0].text
    stop = text[5:8]
    cut = client.completions.create(model="test", prompt="The quick", max_tokens=24, temperature=0, stop=[stop],
                                    extra_body={"ignore_eos": True})
    assert cut.choices[0].text == text[:text.index(stop)] and cut.choices[0].finish_reason == "stop"


def test_logprobs_of_completions_and_chat(client):
    r = client.completions.create(model="test", prompt="The quick", max_tokens=5, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == r.usage.completion_tokens
    for tok_text, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert value <= 0 and len(top) <= 3 and max(top.values()) == pytest.approx(value)
    # the sampled token is always in top_logprobs (OpenAI: up to logprobs + 1 entries): logprobs 0 gives it alone
    for k, temperature in ((0, 0), (1, 1.5)):
        r = client.completions.create(model="test", prompt="The quick", max_tokens=8, temperature=temperature,
                                      seed=3, logprobs=k, extra_body={"return_tokens_as_token_ids": True})
        lp = r.choices[0].logprobs
        assert all(top[t] == v and len(top) <= k + 1 for t, v, top in zip(lp.tokens, lp.token_logprobs,
                                                                         lp.top_logprobs))
        assert k == 1 or all(len(top) == 1 for top in lp.top_logprobs)
    # tokens that are part of a character are named by their bytes (OpenAI's "bytes:\\xNN"), each its own key:
    # as U+FFFD they were one, and top_logprobs held fewer entries than asked for (4 of 5 at the first token here)
    r = client.completions.create(model="test", prompt="hi", max_tokens=6, temperature=0, logprobs=5)
    lp = r.choices[0].logprobs
    assert lp.tokens[0] == "bytes:\\xcf" and all(len(top) == 5 for top in lp.top_logprobs)
    c = client.chat.completions.create(model="test", messages=[{"role": "user", "content": "hi"}], max_tokens=4,
                                       temperature=0, logprobs=True, top_logprobs=2)
    content = c.choices[0].logprobs.content
    assert len(content) == c.usage.completion_tokens
    assert all(len(e.top_logprobs) == 2 and e.top_logprobs[0].logprob == pytest.approx(e.logprob) for e in content)


def test_return_token_ids(client, tok):
    """vLLM's return_token_ids (mirrors vLLM's tests/entrypoints/openai/basic/test_return_token_ids.py:
    test_basic_completion_with_emoji, test_comparison_with_prompt_logprobs_and_logprobs,
    test_chat_completion_with_emoji_and_token_ids): it was ignored, no ids came back."""
    prompt, ids = PROMPTS[1], tok.encode(PROMPTS[1])
    ref, _ = greedy(ids, 12)  # the sampled ids, an end-of-sequence id included
    extra = {"return_token_ids": True, "return_tokens_as_token_ids": True}
    r = client.completions.create(model="test", prompt=prompt, max_tokens=12, temperature=0, logprobs=1,
                                  extra_body=extra).choices[0]
    assert r.prompt_token_ids == ids and r.token_ids == ref
    assert [int(t.removeprefix("token_id:")) for t in r.logprobs.tokens] == ref
    streamed, prompt_ids = [], []
    for chunk in client.completions.create(model="test", prompt=prompt, max_tokens=12, temperature=0, logprobs=1,
                                           stream=True, extra_body=extra):
        prompt_ids.append(chunk.choices[0].model_extra.get("prompt_token_ids"))
        streamed += chunk.choices[0].token_ids
    assert streamed == ref and prompt_ids[0] == ids and prompt_ids[1:] == [None] * (len(prompt_ids) - 1)
    plain = client.completions.create(model="test", prompt=prompt, max_tokens=2).model_dump()
    assert "token_ids" not in plain["choices"][0] and "prompt_token_ids" not in plain["choices"][0]
    messages = [{"role": "user", "content": "I love cats 🐱"}]
    chat_ids = tok.encode(tok.apply_chat_template(messages), add_special_tokens=False)
    ref, _ = greedy(chat_ids, 6)
    c = client.chat.completions.create(model="test", messages=messages, max_tokens=6, temperature=0,
                                       extra_body={"return_token_ids": True})
    assert c.prompt_token_ids == chat_ids and c.choices[0].token_ids == ref
    chunks = list(client.chat.completions.create(model="test", messages=messages, max_tokens=6, temperature=0,
                                                 stream=True, extra_body={"return_token_ids": True}))
    assert chunks[0].prompt_token_ids == chat_ids and all("prompt_token_ids" not in c.model_extra for c in chunks[1:])
    assert sum((c.choices[0].model_extra.get("token_ids", []) for c in chunks), []) == ref


def test_chat_continue_final_message_and_echo(client, tok):
    """vLLM's continue_final_message and chat echo (mirrors vLLM's tests/entrypoints/openai/basic/test_chat_echo.py:
    test_chat_session_with_echo_and_continue_final_message): both were 400 not supported."""
    saying = "An apple a day, keeps"
    messages = [{"role": "user", "content": "tell me a saying"}, {"role": "assistant", "content": saying}]
    text = tok.apply_chat_template(messages, add_generation_prompt=False)
    prompt = text[:text.rindex(saying) + len(saying)]  # the final message left open, its end-of-turn cut off
    ref, _ = greedy(tok.encode(prompt, add_special_tokens=False), 5)
    reply = tok.decode([t for t in ref if t not in EOS])
    body = dict(model="test", messages=messages, max_tokens=5, temperature=0)
    extra = {"continue_final_message": True, "add_generation_prompt": False}
    for echo in (False, True):
        c = client.chat.completions.create(**body, extra_body={**extra, "echo": echo})
        assert c.choices[0].message.content == (saying if echo else "") + reply
        chunks = client.chat.completions.create(**body, stream=True, extra_body={**extra, "echo": echo})
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == (saying if echo else "") + reply
    with pytest.raises(openai.BadRequestError, match="add_generation_prompt"):  # the default true: refused
        client.chat.completions.create(**body, extra_body={"continue_final_message": True})


def test_chat_logprob_bytes_are_the_tokens_own(client, tok):
    """OpenAI's `bytes`: a token's own UTF-8 bytes, also when they are part of a character (its text is U+FFFD),
    so that the bytes of a run of tokens join to its text."""
    text = "日本語 🙂 café"
    assert b"".join(tok.token_bytes(t) for t in tok.encode(text)) == text.encode()
    c = client.chat.completions.create(model="test", messages=[{"role": "user", "content": text}], max_tokens=24,
                                       temperature=0, logprobs=True, top_logprobs=3,
                                       extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
    entries = [x for e in c.choices[0].logprobs.content for x in (e, *e.top_logprobs)]
    ids = [int(e.token.split(":")[1]) for e in entries]
    assert any(tok.decode([t]) == "\ufffd" for t in ids)  # a token that is part of a character
    assert [bytes(e.bytes) for e in entries] == [tok.token_bytes(t) for t in ids]


def test_prompts_are_tokenized_off_the_event_loop(server, monkeypatch):
    """A long prompt takes a while to tokenize (about a second per MiB here): a worker thread does it, so the
    streams running meanwhile go on."""
    url, srv = server
    where, encode = [], srv.tokenizer.encode

    def spy(*args, **kwargs):
        try:
            asyncio.get_running_loop()
            where.append("event loop")
        except RuntimeError:
            where.append("worker")
        return encode(*args, **kwargs)

    monkeypatch.setattr(srv.tokenizer, "encode", spy)
    assert httpx.post(url + "/v1/completions", json={"model": "test", "prompt": "hi", "max_tokens": 1}).status_code \
        == 200
    assert httpx.post(url + "/v1/chat/completions", json={"model": "test", "max_tokens": 1, "messages": [
        {"role": "user", "content": "hi"}]}).status_code == 200
    assert where == ["worker", "worker"]


def test_32_concurrent_greedy_streams_equal_each_alone(server, client):
    prompts = [f"{PROMPTS[i % 4]} {i}" for i in range(32)]
    kw = dict(model="test", max_tokens=16, temperature=0, logprobs=0,
              extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
    alone = [client.completions.create(prompt=p, **kw).choices[0].logprobs.tokens for p in prompts]

    async def together():
        async with openai.AsyncOpenAI(base_url=server[0] + "/v1", api_key="none", max_retries=0, timeout=120) as ac:
            async def one(p):
                tokens = []
                async for chunk in await ac.completions.create(prompt=p, stream=True, **kw):
                    tokens += chunk.choices[0].logprobs.tokens if chunk.choices[0].logprobs else []
                return tokens

            return await asyncio.gather(*(one(p) for p in prompts))

    assert asyncio.run(together()) == alone
    assert all(len(t) == 16 and t[0].startswith("token_id:") for t in alone)


def wait_kv_free(url, timeout=2):
    deadline = time.monotonic() + timeout
    while True:
        text = httpx.get(url + "/metrics").text
        if metric(text, "kvcache_kv_cache_blocks_in_use") == 0 and metric(text, "kvcache_num_requests_running") == 0:
            return text
        assert time.monotonic() < deadline, "the KV of a disconnected client was not freed"
        time.sleep(0.02)


def test_a_client_that_disconnects_frees_its_kv(server, monkeypatch):
    url = server[0]
    slow_steps(monkeypatch, server[1])  # 400 tokens take 8 s: far longer than wait_kv_free waits
    body = {"model": "test", "prompt": "The quick brown fox " * 10, "max_tokens": 400, "temperature": 0,
            "ignore_eos": True, "stream": True}
    with httpx.Client(timeout=30) as h:
        with h.stream("POST", url + "/v1/completions", json=body) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            for _ in range(3):
                next(lines)
            assert metric(h.get(url + "/metrics").text, "kvcache_kv_cache_blocks_in_use") > 0
    wait_kv_free(url)
    with pytest.raises(httpx.ReadTimeout):  # not streamed: the client gives up waiting
        httpx.post(url + "/v1/completions", json={**body, "stream": False}, timeout=0.5)
    wait_kv_free(url)


def error_of(r, status):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    return err


def test_bad_requests_get_their_status_and_the_server_keeps_serving(server, client):
    url = server[0] + "/v1/completions"
    ok = {"model": "test", "prompt": "hi", "max_tokens": 2}
    error_of(httpx.post(url, content=b"{not json", headers={"content-type": "application/json"}), 400)
    error_of(httpx.post(url, json=[1, 2]), 400)
    assert error_of(httpx.post(url, json={**ok, "temperature": -1}), 400)["param"] == "temperature"
    assert error_of(httpx.post(url, json={**ok, "max_tokens": 0}), 400)["param"] == "max_tokens"
    assert error_of(httpx.post(url, json={**ok, "max_tokens": 600}), 400)["param"] == "max_tokens"
    assert "maximum context length" in error_of(httpx.post(url, json={**ok, "prompt": "x " * 600}), 400)["message"]
    err = error_of(httpx.post(url, json={**ok, "prompt": [1, 99999]}), 400)  # vLLM's words, which its tests match
    assert err["param"] == "prompt" and "99999 is out of vocabulary" in err["message"], err
    assert error_of(httpx.post(url, json={**ok, "n": 129}), 400)["param"] == "n"
    assert error_of(httpx.post(url, json={**ok, "n": 2, "best_of": 3}), 400)["param"] == "best_of"
    assert error_of(httpx.post(url, json={**ok, "max_tokens": 0}), 400)["param"] == "max_tokens"  # not without echo
    assert error_of(httpx.post(url, json={**ok, "stop": 5}), 400)["param"] == "stop"
    assert error_of(httpx.post(url, json={**ok, "model": "other"}), 404)["code"] == "model_not_found"
    assert error_of(httpx.post(url, json={**ok, "model": 5}), 400)["param"] == "model"
    for unnamed in ({"prompt": "hi", "max_tokens": 2}, {**ok, "model": ""}):  # the served model, as vLLM (was 400)
        assert httpx.post(url, json=unnamed).json()["model"] == "test"
    error_of(httpx.post(url, json={**ok, "prompt": "x" * (2 << 20)}), 413)
    chat = server[0] + "/v1/chat/completions"
    assert error_of(httpx.post(chat, json={"model": "test", "messages": []}), 400)["param"] == "messages"
    err = error_of(httpx.post(chat, json={"model": "test", "messages": [{"role": "tool", "content": "x"}]}), 400)
    assert "Unknown role" in err["message"]
    error_of(httpx.get(server[0] + "/v1/nothing"), 404)
    # JSON the grammar allows but no text is: lone surrogates (in a prompt, a message, a salt) and deep nesting
    raw = {"content-type": "application/json"}
    for path, body in (("/v1/completions", b'{"model": "test", "prompt": "a\\ud800b", "max_tokens": 2}'),
                       ("/v1/completions", b'{"model": "test", "prompt": "hi", "cache_salt": "\\udfff"}'),
                       ("/v1/chat/completions", b'{"model": "test", "messages": [{"role": "user", "content": '
                                                b'"\\ud83d"}], "max_tokens": 2}')):
        assert "not Unicode text" in error_of(httpx.post(server[0] + path, content=body, headers=raw), 400)["message"]
    # behaviour the server does not have is refused by name, never dropped (a neutral value passes)
    for field, value in (("suffix", "x"), ("response_format", {"type": "xml"}), ("tool_choice", "required"),
                         ("guided_whitespace_pattern", " "), ("continue_final_message", True),  # chat's only
                         ("use_beam_search", True), ("logits_processors", ["x"]),
                         ("chat_template", "{{ messages }}"), ("reasoning_effort", "low"),
                         ("thinking_token_budget", 8), ("vllm_xargs", {"a": 1}),
                         ("logprob_token_ids", [5]), ("prompt_embeds", "AAAA")):  # vLLM's; both were ignored
        assert error_of(httpx.post(url, json={**ok, field: value}), 400)["param"] == field
    neutral = {"min_p": 0, "repetition_penalty": 1, "response_format": {"type": "text"}, "tool_choice": "auto"}
    assert httpx.post(url, json={**ok, **neutral}).status_code == 200
    # tools the model may call (tool_choice auto, the default with tools) were accepted and the calls left in the
    # text: refused, as vLLM without a tool-call parser refuses them; so are the deprecated functions and audio
    chat_ok = {"model": "test", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for extra, param in (({"tools": tools}, "tool_choice"), ({"tools": tools, "tool_choice": "auto"}, "tool_choice"),
                         ({"functions": [{"name": "f"}]}, "functions"),
                         ({"function_call": "auto"}, "function_call"),  # named functions, a field not given
                         ({"audio": {"voice": "alloy"}}, "audio"),  # named modalities
                         ({"modalities": ["text", "audio"]}, "modalities")):
        assert error_of(httpx.post(chat, json={**chat_ok, **extra}), 400)["param"] == param
    shown = {"tools": tools, "tool_choice": "none", "modalities": ["text"], "function_call": "none"}
    assert httpx.post(chat, json={**chat_ok, **shown}).status_code == 200
    # a body declared as anything but JSON is refused (as vLLM does); one declared JSON, or not declared, is read
    raw_ok = json.dumps(ok).encode()
    for media in ("text/plain", "application/x-www-form-urlencoded"):  # the latter: curl -d without -H
        assert "Content-Type" in error_of(httpx.post(url, content=raw_ok, headers={"content-type": media}), 400)[
            "message"]
    for headers in ({"content-type": "Application/JSON; charset=utf-8"}, {}):
        assert httpx.post(url, content=raw_ok, headers=headers).status_code == 200
    deep = b"[" * 100_000 + b"]" * 100_000
    assert "nested too deeply" in error_of(httpx.post(url, content=deep, headers=raw), 400)["message"]
    # numbers no field takes (Python's JSON reads NaN and Infinity, and refuses integers of over 4300 digits) and
    # bytes that are not UTF-8
    head = b'{"model": "test", "prompt": "hi", '
    for body, param in ((head + b'"max_tokens": ' + b"9" * 5000 + b"}", None),
                        (head + b'"temperature": NaN}', "temperature"), (head + b'"seed": Infinity}', "seed"),
                        (head + b'"max_tokens": 1e400}', "max_tokens"),
                        (b'{"model": "test", "prompt": "\xff"}', None)):
        assert error_of(httpx.post(url, content=body, headers=raw), 400)["param"] == param
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="test", prompt="hi", max_tokens=2, top_p=0)
    assert client.completions.create(**ok).usage.completion_tokens >= 1


def test_hostile_field_values_are_400_naming_the_field(server):
    """Values that failed the server (500) or were taken silently as if left out; the server serves on."""
    ok = {"model": "test", "prompt": "hi", "max_tokens": 2}
    chat = {"model": "test", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    tool = [{"role": "tool", "content": "x"}]  # the template calls raise_exception for this role
    for path, body, param in (
            ("/v1/completions", {**ok, "stop_token_ids": 0}, "stop_token_ids"),  # 0, {}, false: were taken as none
            ("/v1/completions", {**ok, "stop_token_ids": {}}, "stop_token_ids"),
            ("/v1/completions", {**ok, "stop_token_ids": [1] * 1025}, "stop_token_ids"),  # engine-thread time per id
            ("/v1/chat/completions", {**chat, "chat_template_kwargs": []}, "chat_template_kwargs"),  # was none
            ("/v1/chat/completions", {**chat, "messages": tool, "chat_template_kwargs": {"raise_exception": 1}},
             "chat_template_kwargs"),  # was 500: 'int' object is not callable
            ("/tokenize", {"messages": chat["messages"], "chat_template_kwargs": {"strftime_now": "x"}},
             "chat_template_kwargs"),
            # named include_usage, which is no field of the request: stream_options is
            ("/v1/completions", {**ok, "stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options"),
            ("/v1/chat/completions", {**chat, "stream": True, "stream_options": {"continuous_usage_stats": 1}},
             "stream_options"),
            ("/v1/chat/completions", {**chat, "documents": 5}, "documents"),  # documents: were ignored, whatever
            ("/v1/chat/completions", {**chat, "documents": [{"text": 5}]}, "documents"),  # they were
            ("/tokenize", {"messages": chat["messages"], "documents": [[]]}, "documents"),
            ("/v1/completions", {**ok, "user": 5}, "user"), ("/v1/chat/completions", {**chat, "user": {}}, "user"),
            ("/v1/chat/completions", {**chat, "top_logprobs": 2}, "top_logprobs"),
            ("/v1/chat/completions", {**chat, "logprobs": False, "top_logprobs": -1}, "top_logprobs")):
        assert error_of(httpx.post(server[0] + path, json=body), 400)["param"] == param, (path, body)
    for logprobs in (False, None):  # top_logprobs 0 asks for none: taken without logprobs, as vLLM (was a 400)
        r = httpx.post(server[0] + "/v1/chat/completions", json={**chat, "logprobs": logprobs, "top_logprobs": 0})
        assert r.status_code == 200 and r.json()["choices"][0]["logprobs"] is None, r.text
    for key, value in (("name", {"a": 1}), ("name", 5), ("reasoning_content", [1])):  # were written by the template
        messages = [{"role": "user" if key == "name" else "assistant", "content": "hi", key: value}]
        err = error_of(httpx.post(server[0] + "/v1/chat/completions", json={**chat, "messages": messages}), 400)
        assert err["param"] == "messages" and f"messages[0].{key} must be a string" in err["message"], err
    assert httpx.post(server[0] + "/v1/completions", json=ok).status_code == 200


def test_documents_reach_the_chat_template(server, monkeypatch):
    """vLLM's documents (a retrieval template's) go to the chat template beside the messages (they were dropped)."""
    tok, seen = server[1].tokenizer, []
    render = tok.apply_chat_template
    monkeypatch.setattr(tok, "apply_chat_template", lambda m, **kw: seen.append(kw["documents"]) or render(m, **kw))
    docs = [{"title": "Foxes", "text": "The quick brown fox"}]
    chat = {"model": "test", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert httpx.post(server[0] + "/v1/chat/completions", json={**chat, "documents": docs}).status_code == 200
    assert httpx.post(server[0] + "/v1/chat/completions", json=chat).status_code == 200
    assert seen == [docs, None]


def test_models_health_metrics(server, client):
    assert [m.id for m in client.models.list().data] == ["test"]
    assert client.models.retrieve("test").id == "test"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("org/other")
    assert httpx.get(server[0] + "/health").status_code == 200
    assert httpx.get(server[0] + "/version").json() == {"version": kvcache.__version__}
    client.completions.create(model="test", prompt="x", max_tokens=2, extra_body={"ignore_eos": True})  # "length"
    text = httpx.get(server[0] + "/metrics").text
    for name in ("kvcache_num_requests_running", "kvcache_num_requests_waiting", "kvcache_kv_cache_usage_perc",
                 "kvcache_prefix_cache_queries_total", "kvcache_prefix_cache_hits_total",
                 "kvcache_num_preemptions_total"):
        metric(text, name)
    assert "kvcache_time_to_first_token_seconds_bucket" in text
    assert "kvcache_inter_token_latency_seconds_bucket" in text
    # vLLM's names of the same values, labelled with the served model (what vLLM's dashboards and routers read)
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    for name in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "prefix_cache_queries_total",
                 "prefix_cache_hits_total", "num_preemptions_total", "prompt_tokens_total",
                 "generation_tokens_total"):
        assert lines[f'vllm:{name}{{model_name="test"}}'] == lines[f"kvcache_{name}"], name
    for name in ("time_to_first_token", "inter_token_latency", "time_per_output_token", "e2e_request_latency"):
        assert float(lines[f'vllm:{name}_seconds_count{{model_name="test"}}']) > 0
    assert 'vllm:request_success_total{finished_reason="length",model_name="test"}' in lines
    # vLLM's per-request histograms (tests/entrypoints/openai/test_metrics.py's counts): one observation a choice
    def per_request():
        lines = dict(line.rsplit(" ", 1) for line in httpx.get(server[0] + "/metrics").text.splitlines()
                     if line and not line.startswith("#"))
        return [float(lines[f'vllm:request_{name}_{part}{{model_name="test"}}'])
                for name in ("prompt_tokens", "generation_tokens", "params_n", "params_max_tokens")
                for part in ("count", "sum")]
    before = per_request()
    client.completions.create(model="test", prompt=[5, 6, 7], max_tokens=4, n=2, extra_body={"ignore_eos": True})
    assert [a - b for a, b in zip(per_request(), before)] == [2, 6, 2, 8, 2, 4, 2, 8]


def histogram_totals(text, name):
    """(count, sum) of an unlabelled histogram in Prometheus text."""
    return metric(text, name + "_count"), metric(text, name + "_sum")


def test_request_phase_histograms(tmp_path, monkeypatch):
    """vLLM's per-request phase histograms (queue, prefill, decode, inference, time per output token), one
    observation a choice, from the engine's own times: with one request running at a time, the requests behind the
    first wait in the queue; queue + prefill + decode is the e2e latency less the server's own share."""
    with running(make_model_dir(tmp_path / "m"), max_num_seqs=1) as (url, srv):
        slow_steps(monkeypatch, srv, 0.02)
        phases = ["kvcache_request_" + p + "_seconds" for p in ("queue_time", "prefill_time", "decode_time",
                                                                 "inference_time", "time_per_output_token")]
        names = phases + ["kvcache_e2e_request_latency_seconds", "kvcache_request_prefill_kv_computed_tokens"]

        async def main():
            async with httpx.AsyncClient(timeout=30) as h:
                body = {"model": "test", "prompt": "The quick brown fox", "max_tokens": 5, "ignore_eos": True}
                return await asyncio.gather(*(h.post(url + "/v1/completions", json={**body, "n": 1 + i})
                                              for i in range(2)))

        replies = asyncio.run(main())
        assert [r.status_code for r in replies] == [200, 200]
        n_prompt = sum((1 + i) * r.json()["usage"]["prompt_tokens"] for i, r in enumerate(replies))  # per choice
        text = httpx.get(url + "/metrics").text
        (nq, queue), (_, prefill), (_, decode), (_, inference), (_, tpot), (ne, e2e), (_, computed) = \
            [histogram_totals(text, name) for name in names]
        assert [histogram_totals(text, name)[0] for name in names] == [3] * len(names)  # one a choice
        assert inference == pytest.approx(prefill + decode) and tpot == pytest.approx(decode / 4)
        # the second choice of the n=2 request waited for the whole first (5 slowed steps), maybe for more
        assert queue >= 5 * 0.02 and decode >= 3 * 4 * 0.02 and prefill > 0  # (the slowing is outside the steps)
        assert queue + prefill + decode <= e2e < queue + prefill + decode + 3 * 0.05, (queue, prefill, decode, e2e)
        assert computed == n_prompt - metric(text, "kvcache_prefix_cache_hits_total")
        lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
        for name in phases:  # under vLLM's names too
            vllm = name.replace("kvcache_", "vllm:") + '_count{model_name="test"}'
            assert float(lines[vllm]) == 3, vllm
        # a choice that runs no engine request (max_tokens 0 with echo) has an e2e latency but no phases
        assert httpx.post(url + "/v1/completions", json={"prompt": "hi", "max_tokens": 0, "echo": True}).status_code \
            == 200
        text = httpx.get(url + "/metrics").text
        assert [histogram_totals(text, name)[0] for name in names] == [3] * 5 + [4, 3]


def test_tokenize_detokenize_and_ping(server, tok):
    """vLLM's /tokenize and /detokenize (mirrors vLLM's tests/entrypoints/serve/tokenize/test_tokenization.py:
    test_tokenize_completions, test_tokenize_chat, test_tokenize_with_return_token_strs, test_detokenize) and
    /ping (vLLM's SageMaker health check, GET and POST): all were 404 no route."""
    url = server[0]
    for special in (False, True):
        r = httpx.post(url + "/tokenize", json={"model": "test", "prompt": PROMPTS[1], "add_special_tokens": special})
        ids = tok.encode(PROMPTS[1], special)
        assert r.json() == {"count": len(ids), "max_model_len": 512, "tokens": ids, "token_strs": None}
    r = httpx.post(url + "/tokenize", json={"prompt": PROMPTS[0], "return_token_strs": True}).json()
    assert r["token_strs"] == [tok._tok.id_to_token(t) for t in tok.encode(PROMPTS[0])]
    conversation = [{"role": "user", "content": "Hi there!"}, {"role": "assistant", "content": "Nice to meet you!"},
                    {"role": "user", "content": "Can I ask a question?"}]
    for generation in (False, True):  # the ids a chat request with these messages would run
        r = httpx.post(url + "/tokenize", json={"model": "test", "messages": conversation,
                                                "add_generation_prompt": generation}).json()
        text = tok.apply_chat_template(conversation, add_generation_prompt=generation)
        assert r["tokens"] == tok.encode(text, add_special_tokens=False) and r["count"] == len(r["tokens"])
    # text parts go to the template one per line, as vLLM joins them (they were joined with nothing)
    parts = [{"role": "user", "content": [{"type": "text", "text": "Weather data:"}, {"type": "text", "text": "sunny"}]}]
    joined = [{"role": "user", "content": "Weather data:\nsunny"}]
    assert httpx.post(url + "/tokenize", json={"messages": parts}).json() == \
        httpx.post(url + "/tokenize", json={"messages": joined}).json()
    ids = tok.encode(PROMPTS[1], add_special_tokens=False)
    assert httpx.post(url + "/detokenize", json={"model": "test", "tokens": ids}).json() == {"prompt": PROMPTS[1]}
    for path, body, param in (("/tokenize", {"prompt": 5}, "prompt"), ("/tokenize", {}, "prompt"),
                              ("/tokenize", {"prompt": "a", "messages": []}, "prompt"),
                              ("/detokenize", {"tokens": [10**6]}, "tokens"), ("/detokenize", {}, "tokens")):
        assert error_of(httpx.post(url + path, json=body), 400)["param"] == param
    assert error_of(httpx.post(url + "/tokenize", json={"model": "other", "prompt": "a"}), 404)["code"] == \
        "model_not_found"
    assert httpx.get(url + "/ping").status_code == 200 and httpx.post(url + "/ping").status_code == 200
    # vLLM's SageMaker /invocations: the body's messages or prompt picks the endpoint
    r = httpx.post(url + "/invocations", json={"messages": conversation, "max_tokens": 2}).json()
    assert r["object"] == "chat.completion"
    r = httpx.post(url + "/invocations", json={"prompt": [5, 6], "max_tokens": 2, "return_token_ids": True}).json()
    assert r["object"] == "text_completion" and r["choices"][0]["prompt_token_ids"] == [5, 6]
    assert error_of(httpx.post(url + "/invocations", json={"input": "x"}), 400)["message"].startswith("an /invoc")


def test_full_queue_is_503(model_dir, monkeypatch):
    with running(model_dir, max_num_seqs=1, max_requests=1) as (url, srv):
        slow_steps(monkeypatch, srv)
        body = {"model": "test", "prompt": "The quick", "max_tokens": 300, "ignore_eos": True, "stream": True}
        with httpx.Client(timeout=30) as h:
            with h.stream("POST", url + "/v1/completions", json=body) as r:
                lines = r.iter_lines()  # kept: a dropped iterator closes the connection, aborting the request
                next(lines)
                assert error_of(h.post(url + "/v1/completions", json={**body, "stream": False}), 503)["code"] \
                    == "queue_full"
        wait_kv_free(url)
        assert httpx.post(url + "/v1/completions", json={**body, "stream": False, "max_tokens": 2}).status_code == 200


def test_api_keys_and_tenant_isolation(model_dir):
    with running(model_dir, api_keys=["key-a", "key-b"], enable_prompt_tokens_details=True) as (url, _):
        body = {"model": "test", "prompt": "Prefix caching shares the blocks of a prompt " * 3, "max_tokens": 2}

        def cached(key):
            r = httpx.post(url + "/v1/completions", json=body, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
            return r.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

        assert error_of(httpx.post(url + "/v1/completions", json=body), 401)["code"] == "invalid_api_key"
        error_of(httpx.post(url + "/v1/completions", json=body, headers={"Authorization": "Bearer nope"}), 401)
        error_of(httpx.get(url + "/v1/models"), 401)
        error_of(httpx.post(url + "/tokenize", json={"prompt": "a"}), 401)
        assert httpx.get(url + "/health").status_code == 200
        assert cached("key-a") == 0
        assert cached("key-a") > 0  # its own prompt, cached
        assert cached("key-b") == 0  # never another tenant's
        with openai.OpenAI(base_url=url + "/v1", api_key="key-b", max_retries=0) as c:
            assert c.completions.create(**body).usage.prompt_tokens_details.cached_tokens > 0


def test_api_keys_given_as_one_string_are_refused(model_dir):
    """Server(api_keys="secret") made each character a key: "Authorization: Bearer s" was let in."""
    for keys in ("secret", b"secret", {"secret"}):
        with pytest.raises(kvcache.InvalidArgument, match="api_keys must be a list of keys"):
            Server(model_dir, api_keys=keys)


def test_usage_leaves_out_prompt_tokens_details_unless_asked(model_dir):
    """vLLM's default (mirrors test_chat.py's single-session check, which compares usage with a
    CompletionUsage of the three counts only): prompt_tokens_details only with --enable-prompt-tokens-details."""
    body = {"model": "test", "messages": [{"role": "user", "content": "what is 1+1?"}], "max_tokens": 3,
            "temperature": 0}
    with running(model_dir) as (url, _):
        with openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0) as c:
            u = c.chat.completions.create(**body).usage
            assert u == openai.types.CompletionUsage(completion_tokens=u.completion_tokens,
                                                     prompt_tokens=u.prompt_tokens, total_tokens=u.total_tokens)
            assert u.prompt_tokens_details is None and u.completion_tokens == 3
    with running(model_dir, enable_prompt_tokens_details=True) as (url, _):
        r = httpx.post(url + "/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}


def test_kvcache_serve_names_what_is_missing(model_dir, kvcache_cmd, tmp_path):
    """`kvcache serve` with a Python that lacks the package, or one of its serve extra's libraries, says which
    and for which Python (it printed a bare "No module named ...")."""
    bare = tmp_path / "bare-python"  # site-packages off: the kvcache package is not found
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    fake = tmp_path / "fake" / "starlette"  # a serve-extra library that cannot be imported
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'starlette'\", name='starlette')\n")
    for python, extra, words in ((bare, {}, "the kvcache Python package is not installed"),
                                 (sys.executable, {"PYTHONPATH": str(tmp_path / "fake")},
                                  "starlette, a library of the package's serve extra, is missing")):
        env = {**os.environ, "KVC_PYTHON": str(python), **extra}
        r = subprocess.run([str(kvcache_cmd), "serve", str(model_dir), "--port", "0"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert r.returncode == 1 and words in r.stderr and "pip install" in r.stderr, r.stderr


@pytest.mark.parametrize("how", ["python -m", "kvcache serve"])
def test_the_command_line_serves_on_127_0_0_1(model_dir, how, request):
    """python -m kvcache.serve, and `kvcache serve` that forwards to it ($KVC_PYTHON)."""
    head = [sys.executable, "-m", "kvcache.serve"]
    if how == "kvcache serve":
        head = [str(request.getfixturevalue("kvcache_cmd")), "serve"]
    env = {**os.environ, "KVC_PYTHON": sys.executable}
    proc = subprocess.Popen(head + [str(model_dir), "--port", "0", "--kv-memory", "8MiB", "--served-model-name",
                                    "cli"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        url = command_url(proc)
        assert url is not None and url.startswith("http://127.0.0.1:")
        r = httpx.post(url + "/v1/completions", json={"model": "cli", "prompt": "hi", "max_tokens": 3})
        assert r.status_code == 200 and r.json()["model"] == "cli"
    finally:
        proc.terminate()
        proc.wait(30)


def test_bench_serve_reports_latencies_and_hits(server):
    from kvcache import bench_serve

    args = bench_serve.parser().parse_args(["--url", server[0], "--model", "test", "--num-requests", "8",
                                            "--input-len", "8", "--prefix-len", "32", "--shared-prefix", "1",
                                            "--output-len", "4", "--rate", "50"])
    rng = __import__("random").Random(0)
    report = asyncio.run(bench_serve.run_rate(args, 50.0, bench_serve.make_prompts(args, rng), rng))
    assert report["failed"] == 0 and report["requests"] == 8
    assert report["ttft_ms"]["p50"] > 0 and report["tpot_ms"]["p99"] >= report["tpot_ms"]["p50"] > 0
    assert 0 < report["prefix_cache_hit_rate"] < 1  # every prompt but the first finds the prefix
    assert bench_serve.percentiles([1, 2, 3, 4]) == {"p50": 2, "p90": 4, "p99": 4}


def test_bench_serve_refuses_bad_values_and_counts_a_dead_server_as_failures():
    from kvcache import bench_serve

    dead = ["--url", "http://127.0.0.1:1", "--model", "m"]  # nothing listens on port 1
    for args, needle in ((["--rate", "nan"], "--rate"), (["--vocab", "0"], "--vocab must be at least 1"),  # passed;
                         (["--input-len", "-1"], "--input-len must be at least 1")):  # ValueError of randrange
        with pytest.raises(SystemExit) as exit_:
            bench_serve.main(dead + args)
        assert needle in str(exit_.value.code)
    args = bench_serve.parser().parse_args(dead)
    report = asyncio.run(bench_serve.run_rate(args, float("inf"), [[1, 2], [3]], None))  # was a ConnectError trace
    assert report["failed"] == 2 and "ConnectError" in report["errors"][0]


def test_an_engine_failure_is_an_error_answer_and_the_server_recovers(server, monkeypatch):
    url, srv = server
    engine = srv.engine.engine

    def broken():
        raise kvcache.InternalError(-7, "KVC_EINTERNAL", "a forward failed")

    body = {"model": "test", "prompt": "hi", "max_tokens": 4}
    monkeypatch.setattr(engine, "step", broken)
    err = error_of(httpx.post(url + "/v1/completions", json=body), 500)
    assert err["type"] == "server_error" and "a forward failed" in err["message"]
    with httpx.stream("POST", url + "/v1/completions", json={**body, "stream": True}) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert "a forward failed" in lines[-2] and lines[-1] == "data: [DONE]"
    monkeypatch.undo()
    wait_kv_free(url)
    assert httpx.post(url + "/v1/completions", json=body).status_code == 200


def test_an_engine_that_also_refuses_the_release_still_fails_its_requests(server, monkeypatch):
    """A failed step whose requests the engine cannot release either: the waiters still get the failure and the
    stepping thread goes on (it used to end, and every later request waited forever)."""
    url, srv = server
    engine, release = srv.engine.engine, srv.engine.engine.abort

    def broken(*args):
        raise kvcache.InternalError(-7, "KVC_EINTERNAL", "the engine is broken")

    def refused(rid):
        release(rid)  # freed all the same, so the KV check after is meaningful
        broken()

    body = {"model": "test", "prompt": "hi", "max_tokens": 4}
    monkeypatch.setattr(engine, "step", broken)
    monkeypatch.setattr(engine, "abort", refused)
    assert "the engine is broken" in error_of(httpx.post(url + "/v1/completions", json=body, timeout=10), 500)[
        "message"]
    monkeypatch.undo()
    assert httpx.post(url + "/v1/completions", json=body, timeout=10).status_code == 200
    wait_kv_free(url)


def test_bench_serve_static_batch_sends_lock_step_waves(server, monkeypatch):
    from kvcache import bench_serve

    in_flight, peaks, real = [0], [], bench_serve.one_request

    async def counted(client, args, prompt):
        in_flight[0] += 1
        peaks.append(in_flight[0])
        try:
            return await real(client, args, prompt)
        finally:
            in_flight[0] -= 1

    monkeypatch.setattr(bench_serve, "one_request", counted)
    args = bench_serve.parser().parse_args(["--url", server[0], "--model", "test", "--num-requests", "7",
                                            "--input-len", "8", "--output-len", "3", "--static-batch", "3"])
    rng = __import__("random").Random(0)
    report = asyncio.run(bench_serve.run_rate(args, float("inf"), bench_serve.make_prompts(args, rng), rng))
    assert report["failed"] == 0 and report["requests"] == 7
    assert peaks == [1, 2, 3, 1, 2, 3, 1]  # waves of 3, 3 and 1, each after the previous one ended


@pytest.mark.parametrize("args,needle", [
    (["--port", "99999"], "is not a TCP port"),
    (["--host", "no such host.invalid"], "argument --host: 'no such host.invalid' is not an address to listen on"),
    (["--host", ""], "argument --host: '' is not an address to listen on"),  # uvicorn exited 3 after the load
    (["--max-body-bytes", "0"], "at least 1 byte"),
    (["--served-model-name", ""], "served_model_name '' must be a non-empty string"),  # was the directory's name
    (["--max-body-bytes", "5x"], "--max-body-bytes \"5x\" is not a size"),  # was named kv_memory
    (["--max-body-bytes", "1e300TiB"], "--max-body-bytes \"1e300TiB\" is not a size"),  # was an OverflowError trace
    (["--kv-memory", "1e300TiB"], "kv_memory \"1e300TiB\" is not a size"),
    (["--kv-memory", "-1"], "kv_memory \"-1\" is not a size"),
    (["--max-model-len", "0"], "max_model_len 0"),
    (["--log-level", "loud"], "invalid choice"),
    (["--shutdown-timeout", "-1"], "is not a number of seconds"),
    (["--read-timeout", "1_0"], "'1_0' is not a number of seconds"),  # float() took these
    (["--write-timeout", " 5"], "' 5' is not a number of seconds"),
    (["--shutdown-timeout", "+5"], "'+5' is not a number of seconds"),
    (["--read-timeout", "0"], "read_timeout 0.0 must be a number of seconds above 0"),
    (["--write-timeout", "0"], "write_timeout 0.0 must be a number of seconds above 0"),
    (["--max-connections", "0"], "max_connections 0 must be an integer of at least 1"),
    (["--api-key", ""], "API key '' must be 1 or more visible ASCII characters"),
    (["--api-key", "k\u00e9y"], "must be 1 or more visible ASCII characters"),
    # integers are digits (int() took ' 16', '+4' and '1_000'), and an option given twice is refused
    (["--block-size", " 16"], "argument --block-size: ' 16' is not an integer"),
    (["--max-num-seqs", "+4"], "argument --max-num-seqs: '+4' is not an integer"),
    (["--seed", "1_000"], "argument --seed: '1_000' is not an integer"),
    (["--port", "8_000"], "is not a TCP port"),
    (["--port", "8000", "--port", "8001"], "--port given twice"),
    (["--block-size", "16", "--block-size", "32"], "--block-size given twice"),
    (["--weights", "q8_0", "--weights", "q4_0"], "--weights given twice"),
])
def test_the_command_line_names_a_bad_option_without_a_traceback(model_dir, capsys, args, needle):
    from kvcache.serve.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([str(model_dir), *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_a_gemma3_text_model_serves_its_greedy_text(tmp_path):
    """Gemma 3 (sliding and full layers with their own ropes, GeGLU) through the server: the runner's text."""
    gemma = make_model_dir(tmp_path / "gemma3", model=MODEL.parent / "gemma3")
    tok = Tokenizer(gemma)
    with running(gemma) as (url, _), openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0) as c:
        for prompt in PROMPTS[:2]:
            ref, reason = greedy(tok.encode(prompt), 10, model=gemma)
            r = c.completions.create(model="test", prompt=prompt, max_tokens=10, temperature=0)
            assert r.choices[0].text == tok.decode([t for t in ref if t not in EOS])
            assert r.choices[0].finish_reason == reason
