"""kvcache.serve's structured outputs: response_format json_object and json_schema (and vLLM's guided_json /
structured_outputs) make even the random-weight test model write JSON that parses and follows the schema
(nested object, enum, array, bounded strings and integers), streamed or not, n choices each on their own
grammar, on both endpoints; a schema that does not compile is refused with 400 naming response_format."""
import json
import re

import numpy as np
import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx", "llguidance"):
    pytest.importorskip(module)

import httpx  # noqa: E402

import kvcache  # noqa: E402
import kvcache.structured  # noqa: E402
from serve_fixture import running, sse_events  # noqa: E402
from text_model import make_model_dir  # noqa: E402

COLORS = ["red", "green", "blue"]
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "color": {"enum": COLORS},
        "size": {"type": "integer", "minimum": 0, "maximum": 99},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
        "box": {"type": "object", "properties": {"w": {"type": "integer", "minimum": 0, "maximum": 9},
                                                 "ok": {"type": "boolean"}},
                "required": ["w", "ok"], "additionalProperties": False},
    },
    "required": ["name", "color", "size", "tags", "box"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "thing", "schema": SCHEMA, "strict": True}}
MESSAGES = [{"role": "user", "content": "Describe a thing as JSON."}]
EOS = 2  # one of the test model's end-of-sequence ids (generation_config: 2 and 0)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running(make_model_dir(tmp_path_factory.mktemp("model"))) as (base, srv):
        yield base, srv


def follows_schema(text):
    """text is one JSON value following SCHEMA (checked by hand: each property's type and bounds)."""
    v = json.loads(text)
    assert isinstance(v, dict) and set(v) == set(SCHEMA["required"]), v
    assert isinstance(v["name"], str) and len(v["name"]) <= 6
    assert v["color"] in COLORS
    assert isinstance(v["size"], int) and not isinstance(v["size"], bool) and 0 <= v["size"] <= 99
    assert isinstance(v["tags"], list) and len(v["tags"]) <= 3
    assert all(isinstance(t, str) and len(t) <= 3 for t in v["tags"])
    assert isinstance(v["box"], dict) and set(v["box"]) == {"w", "ok"}
    assert isinstance(v["box"]["w"], int) and 0 <= v["box"]["w"] <= 9 and isinstance(v["box"]["ok"], bool)
    return v


def chat(base, **kw):
    body = {"model": "test", "messages": MESSAGES, "max_tokens": 120, "response_format": FORMAT, **kw}
    return httpx.post(base + "/v1/chat/completions", json=body, timeout=60)


def test_json_schema_chat_n_choices(server):
    base, _ = server
    for extra in ({"temperature": 0}, {"temperature": 1.0, "seed": 7, "n": 4}, {"temperature": 2.0, "seed": 3}):
        r = chat(base, **extra)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["choices"]) == extra.get("n", 1)
        for choice in body["choices"]:
            follows_schema(choice["message"]["content"])
            assert choice["finish_reason"] == "stop"  # the grammar ends the output, not max_tokens
    seen = {json.dumps(json.loads(c["message"]["content"]), sort_keys=True)
            for c in chat(base, temperature=1.0, seed=11, n=4).json()["choices"]}
    assert len(seen) > 1  # each choice samples on its own grammar: the mask does not tie them together


def test_json_schema_streamed_and_completions(server):
    base, _ = server
    with httpx.stream("POST", base + "/v1/chat/completions", timeout=60,
                      json={"model": "test", "messages": MESSAGES, "max_tokens": 120, "response_format": FORMAT,
                            "stream": True, "n": 2, "temperature": 1.0, "seed": 5}) as r:
        assert r.status_code == 200
        events = sse_events(r.iter_lines())
    texts, reasons = ["", ""], [None, None]
    for e in events:
        for c in e["choices"]:
            texts[c["index"]] += c["delta"].get("content") or ""
            reasons[c["index"]] = c["finish_reason"] or reasons[c["index"]]
    assert reasons == ["stop", "stop"]
    for t in texts:
        follows_schema(t)
    body = {"model": "test", "prompt": "A thing:", "max_tokens": 120, "temperature": 0, "response_format": FORMAT}
    r = httpx.post(base + "/v1/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    follows_schema(r.json()["choices"][0]["text"])
    with httpx.stream("POST", base + "/v1/completions", json={**body, "stream": True}, timeout=60) as r:
        events = sse_events(r.iter_lines())
    assert follows_schema("".join(c["text"] for e in events for c in e["choices"])) == \
        json.loads(httpx.post(base + "/v1/completions", json=body, timeout=60).json()["choices"][0]["text"])


def test_json_object_and_vllm_fields(server):
    base, srv = server
    # any JSON object: the random model writes a key for ever (its greedy choice inside a string never closes
    # it), so biases steer it: '"' (+100) before '}' (+50) before anything else. The mask comes first, so each is
    # taken only where the grammar allows it: '{' (neither is allowed first), '""' (a key), ':', '""' (a value),
    # then '}' over ','
    (quote,), (close,) = srv.tokenizer.encode('"', False), srv.tokenizer.encode("}", False)
    r = chat(base, response_format={"type": "json_object"}, temperature=0, logit_bias={quote: 100, close: 50})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == '{"":""}'
    assert r.json()["choices"][0]["finish_reason"] == "stop"
    r = chat(base, response_format={"type": "json_object"}, temperature=0, max_tokens=40)  # unsteered
    assert r.json()["choices"][0]["finish_reason"] == "length"  # as vLLM: the JSON is cut, not closed
    assert r.json()["choices"][0]["message"]["content"].startswith('{"')
    # vLLM's spellings of a schema
    for extra in ({"guided_json": SCHEMA}, {"guided_json": json.dumps(SCHEMA)}, {"structured_outputs": {"json": SCHEMA}},
                  {"structured_outputs": {"json": json.dumps(SCHEMA)}}):
        r = chat(base, response_format=None, temperature=0, **extra)
        assert r.status_code == 200, r.text
        follows_schema(r.json()["choices"][0]["message"]["content"])


def test_end_of_sequence_only_where_the_json_is_complete(server):
    base, srv = server
    # a top-level integer is complete after its first digit yet may go on: a +100 bias on the end-of-sequence
    # id takes it at the first place the grammar allows it, never before (an empty text is no JSON)
    number = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "integer"}}}
    r = chat(base, temperature=0, response_format=number, logit_bias={EOS: 100}, return_token_ids=True).json()
    choice = r["choices"][0]
    assert isinstance(json.loads(choice["message"]["content"]), int) and choice["finish_reason"] == "stop"
    assert len(choice["token_ids"]) == 2 and choice["token_ids"][-1] == EOS
    # so does a stop_token_ids id, even one the grammar would take as text: here the digit 5 (biased +100),
    # which is only allowed once a digit stands
    (five,) = srv.tokenizer.encode("5", False)
    r = chat(base, temperature=0, response_format=number, logit_bias={five: 100}, stop_token_ids=[five],
             return_token_ids=True).json()
    choice = r["choices"][0]
    assert choice["token_ids"][-1] == five and choice["stop_reason"] == five and len(choice["token_ids"]) == 2
    assert isinstance(json.loads(choice["message"]["content"]), int)
    # ignore_eos: the end-of-sequence ids are never sampled, not even where the grammar would end
    r = chat(base, temperature=0, response_format=number, logit_bias={EOS: 100}, ignore_eos=True, max_tokens=4,
             return_token_ids=True).json()
    choice = r["choices"][0]
    assert choice["finish_reason"] == "length" and not {0, EOS} & set(choice["token_ids"])
    assert isinstance(json.loads(choice["message"]["content"]), int)
    # with no stop token at all (ignore_eos) the choice still ends where the grammar ends
    r = chat(base, temperature=0, ignore_eos=True).json()
    assert r["choices"][0]["finish_reason"] == "stop"
    follows_schema(r["choices"][0]["message"]["content"])


def test_logprobs_are_of_the_masked_distribution(server):
    base, _ = server
    r = chat(base, temperature=0, logprobs=True, top_logprobs=5)
    assert r.status_code == 200, r.text
    entries = r.json()["choices"][0]["logprobs"]["content"]
    follows_schema("".join(e["token"] for e in entries))
    for e in entries:  # greedy: the sampled token is the most likely allowed one, every alternative allowed
        assert e["top_logprobs"][0]["logprob"] == e["logprob"] <= 0
        assert all(-1e9 < t["logprob"] <= e["logprob"] for t in e["top_logprobs"])
    # where the grammar allows one token (a property name's letters, '":', a closing brace) it has probability
    # 1 and no alternative; unconstrained, the random model's greedy tokens have logprobs near -1
    forced = [e for e in entries if len(e["top_logprobs"]) == 1]
    assert len(forced) > 10 and all(abs(e["logprob"]) < 1e-5 for e in forced)
    raw = chat(base, temperature=0, logprobs=True, top_logprobs=1, response_format=None, max_tokens=8).json()
    assert all(e["logprob"] < -0.5 for e in raw["choices"][0]["logprobs"]["content"])


def test_refusals_name_the_field(server):
    base, _ = server
    url = base + "/v1/chat/completions"
    ok = {"model": "test", "messages": MESSAGES, "max_tokens": 4}
    for fmt in ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}},
                {"type": "json_schema", "json_schema": {"schema": SCHEMA}},  # no name
                {"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}},
                {"type": "json_schema"}, {"type": "xml"}, "json_object",
                {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}}):
        r = httpx.post(url, json={**ok, "response_format": fmt}, timeout=60)
        assert r.status_code == 400, (fmt, r.text)
        assert r.json()["error"]["param"] == "response_format", r.text
    r = httpx.post(url, json={**ok, "response_format": {"type": "json_object"}, "guided_json": SCHEMA}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_json"
    # JSON text nested past the parser's depth was a 500 (RecursionError); json_object "yes" or 1 was taken as true
    r = httpx.post(url, json={**ok, "guided_json": "[" * 5000}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_json", r.text
    for outputs in ({"structural_tag": "{}"}, {"grammar": "root ::= foo"}, {"json": "{not json"}, {"json": {"type": 5}}, {"regex": "a("},
                    {"choice": []}, {"regex": "a", "choice": ["a"]}, {"json": "[" * 5000}, {"json_object": "yes"},
                    {"json_object": 1}):
        r = httpx.post(url, json={**ok, "structured_outputs": outputs}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "structured_outputs", r.text
    for field, value, words in (("guided_regex", "a(", "unclosed group"), ("guided_regex", 5, "must be a string"),
                                ("guided_regex", ["a"], "must be a string"), ("guided_choice", [], "non-empty list"),
                                ("guided_choice", "red", "non-empty list"), ("guided_choice", ["a", 1], "non-empty")):
        r = httpx.post(url, json={**ok, field: value}, timeout=60)
        assert r.status_code == 400, (field, value, r.text)
        err = r.json()["error"]
        assert err["param"] == field and words in err["message"], (field, value, err)
    r = httpx.post(url, json={**ok, "guided_choice": ["a"], "guided_regex": "a"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_choice", r.text
    # choices or a regular expression whose grammar source passes MAX_GRAMMAR_CHARS: refused before any compile
    # (70,000 choices were compiled for seconds, then refused by llguidance for their symbols)
    for field, value in (("guided_choice", ["x"] * 70000), ("guided_choice", ["y" * 40] * 1560),
                         ("guided_regex", "a" * 65537)):
        r = httpx.post(url, json={**ok, field: value}, timeout=60)
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["param"] == field and "at most 65536" in err["message"] and "\n" not in err["message"], err


CHOICES = ["red", "say \"hi\"", "back\\slash", "two\nlines", "café 🙂", "r"]
REGEX = r"[a-c]{2,4}-[0-9]{1,3}(x|yz)?"


def test_guided_choice_and_regex(server):
    """vLLM's guided_choice / guided_regex and structured_outputs' choice / regex: each choice's text is one of the
    choices exactly (quotes, backslashes, newlines and emoji kept), or matches the regex whole; streamed equals
    not streamed; completions too."""
    base, _ = server
    chat_url, seen = base + "/v1/chat/completions", set()
    for field, value, check in (("guided_choice", CHOICES, CHOICES.__contains__),
                                ("guided_regex", REGEX, lambda t: re.fullmatch(REGEX, t) is not None)):
        for body in ({field: value}, {"structured_outputs": {field.split("_")[1]: value}}):
            for seed in (1, 2, 3):
                ask = {"model": "test", "messages": MESSAGES, "max_tokens": 40, "temperature": 2.0, "seed": seed,
                       "n": 3, **body}
                r = httpx.post(chat_url, json=ask, timeout=60)
                assert r.status_code == 200, r.text
                texts = [c["message"]["content"] for c in r.json()["choices"]]
                assert all(check(t) for t in texts), (body, texts)
                assert {c["finish_reason"] for c in r.json()["choices"]} == {"stop"}
                seen.update((field, t) for t in texts)
                with httpx.stream("POST", chat_url, json={**ask, "stream": True}, timeout=60) as s:
                    events = sse_events(s.iter_lines())
                streamed = ["", "", ""]
                for e in events:
                    for c in e["choices"]:
                        streamed[c["index"]] += c["delta"].get("content") or ""
                assert streamed == texts
        r = httpx.post(base + "/v1/completions", json={"model": "test", "prompt": "A colour:", "max_tokens": 40,
                                                        "temperature": 0, field: value}, timeout=60)
        assert r.status_code == 200 and check(r.json()["choices"][0]["text"]), r.text
    for field in ("guided_choice", "guided_regex"):  # the choices differ: each samples on its own grammar
        assert len({t for f, t in seen if f == field}) > 1


GBNF = 'root ::= animal " " [0-9] [0-9]? "."\nanimal ::= "cat" | "dog" | "émeu"'
GBNF_TEXT = r"(cat|dog|émeu) [0-9][0-9]?\."
LARK = 'start: "<" item ("," item)* ">"\nitem: /[a-c]{1,3}/ | NUMBER\nNUMBER: /[0-9]/'
LARK_TEXT = r"<([a-c]{1,3}|[0-9])(,([a-c]{1,3}|[0-9]))*>"


def test_guided_grammar_gbnf_and_lark(server):
    """vLLM's guided_grammar and structured_outputs' grammar: a GBNF grammar (llama.cpp's EBNF, what vLLM's
    xgrammar reads) or a Lark one; every choice's text is in the grammar's language, both endpoints; a grammar
    that does not compile is a 400 naming the field."""
    base, _ = server
    chat_url = base + "/v1/chat/completions"
    for body, pattern in (({"guided_grammar": GBNF}, GBNF_TEXT),
                          ({"structured_outputs": {"grammar": LARK}}, LARK_TEXT)):
        ask = {"model": "test", "messages": MESSAGES, "max_tokens": 30, "temperature": 1.5, "seed": 4, "n": 2, **body}
        r = httpx.post(chat_url, json=ask, timeout=60)
        assert r.status_code == 200, r.text
        texts = [c["message"]["content"] for c in r.json()["choices"]]
        assert all(re.fullmatch(pattern, t) for t in texts), (body, texts)
        r = httpx.post(base + "/v1/completions", json={"model": "test", "prompt": "An animal:", "max_tokens": 30,
                                                        "temperature": 0, **body}, timeout=60)
        assert r.status_code == 200 and re.fullmatch(pattern, r.json()["choices"][0]["text"]), r.text
    ok = {"model": "test", "messages": MESSAGES, "max_tokens": 4}
    for value, words in (("root ::= foo", "not found"), ('root ::= ("a"', "Expected"), ("", "non-empty"),
                         (5, "non-empty string"), ("x" * 70000, "at most"),
                         ("root ::= " + "(" * 5000 + '"a"' + ")" * 5000, "grammar"), ("start: nope", "grammar")):
        r = httpx.post(chat_url, json={**ok, "guided_grammar": value}, timeout=60)
        assert r.status_code == 400, (value[:40] if isinstance(value, str) else value, r.text)
        err = r.json()["error"]
        assert err["param"] == "guided_grammar" and words in err["message"], err
    r = httpx.post(chat_url, json={**ok, "guided_grammar": GBNF, "guided_regex": "a"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_grammar", r.text


def test_structural_tag(server):
    """A structural tag leaves the text free until a trigger, then holds it to begin + JSON of the schema + end:
    with "<" favoured by logit_bias the random model writes tags one after another, each well formed."""
    base, srv = server
    lt = srv.tokenizer.encode("<", False)
    assert len(lt) == 1
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["n"], "additionalProperties": False}
    tag = {"type": "structural_tag", "triggers": ["<"], "structures": [{"begin": "<f>", "schema": schema,
                                                                         "end": "</f>"}]}
    for body in ({"response_format": tag}, {"structured_outputs": {"structural_tag": json.dumps(tag)}}):
        r = httpx.post(base + "/v1/completions", json={"model": "test", "prompt": "Tags:", "max_tokens": 24,
                                                        "temperature": 0, "logit_bias": {str(lt[0]): 30}, **body},
                       timeout=60)
        assert r.status_code == 200, r.text
        text = r.json()["choices"][0]["text"]
        tags = re.findall(r"<f>(.*?)</f>", text, re.DOTALL)
        assert tags and all(json.loads(t)["n"] in range(10) for t in tags), text
        rest = re.sub(r"<f>.*?</f>", "", text, flags=re.DOTALL)
        cut = rest[rest.find("<"):] if "<" in rest else ""  # a tag max_tokens cut: the start of a whole one
        assert any(f'<f>{{"n":{d}}}</f>'.startswith(cut) for d in range(10)), text
    ok = {"model": "test", "messages": MESSAGES, "max_tokens": 4}
    for value in ({"type": "structural_tag"}, {**tag, "triggers": []}, {**tag, "triggers": ["{"]},
                  {**tag, "structures": [{"begin": "<f>", "end": "</f>"}]}, {**tag, "structures": []},
                  {**tag, "structures": [{"begin": "<f>", "schema": {"type": "nonsense"}, "end": ""}]}):
        r = httpx.post(base + "/v1/chat/completions", json={**ok, "response_format": value}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "response_format", (value, r.text)
    for value in ("{not json", "[]", 5):
        r = httpx.post(base + "/v1/chat/completions", json={**ok, "structured_outputs": {"structural_tag": value}},
                       timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "structured_outputs", (value, r.text)


def test_a_matcher_error_is_told_by_its_first_line():
    """llguidance's panics (a grammar of too many symbols: 100,000 choices) carry a backtrace, which the client's
    400 showed whole."""
    class Failed:
        def is_error(self):
            return True

        def get_error(self):
            return "panic: assertion failed: grammar.symbols.len() < u16::MAX\n<backtrace>\n   0: <unknown>"

    with pytest.raises(kvcache.InvalidArgument) as info:
        kvcache.structured.Matcher(Failed(), None)
    assert info.value.message == "structured outputs: panic: assertion failed: grammar.symbols.len() < u16::MAX"


def test_a_grammar_compiles_once_and_each_matcher_is_a_copy(server, monkeypatch):
    """Each choice's matcher compiled the grammar again, on the engine's thread: one request of n 8 and 20,000
    guided_choice options held every request's steps for over two minutes. Now check() (on a worker thread)
    compiles it and the engine's thread copies it; a copy starts where a fresh matcher does."""
    import llguidance

    grammar = kvcache.structured.Grammar(server[1]._vocabulary.get(),
                                         kvcache.structured.choice_grammar(["yes", "no"]))
    made, original = [], llguidance.LLMatcher
    monkeypatch.setattr(llguidance, "LLMatcher", lambda *a, **k: made.append(1) or original(*a, **k))
    grammar.check()
    first, second = grammar.matcher(), grammar.matcher()
    assert len(made) == 1
    words = np.zeros((server[1].vocab_size + 31) // 32, dtype=np.uint32)
    first.fill(words)
    token = int(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0])
    assert first.accept(token)
    again = np.zeros_like(words)
    second.fill(again)  # the copy did not move with the first
    assert (again == words).all()


def _wide(n):
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}


def _nested(levels):  # objects nested `levels` deep: 2 JSON levels each, 1 for the innermost
    s = {"type": "integer"}
    for _ in range(levels):
        s = {"type": "object", "properties": {"a": s}}
    return s


def _all_of(pairs):  # an allOf of `pairs` anyOf pairs: 2**pairs schemas once merged
    return {"allOf": [{"anyOf": [{"properties": {f"a{i}": {}}}, {"properties": {f"b{i}": {}}}]} for i in range(pairs)]}


# (at the bound, one past it, words of the refusal); the bounds of kvcache.schema_bounds
SCHEMA_BOUNDS = [(_wide(256), _wide(257), "257 properties: at most 256"),
                 ({"properties": {f"o{j}": _wide(200) for j in range(5)}},
                  {"properties": {f"o{j}": _wide(204) for j in range(5)}}, "more than 1024 properties"),
                 ({"enum": list(range(1024))}, {"enum": list(range(1025))}, "enum of 1025 values: at most 1024"),
                 (_nested(31), _nested(32), "deeper than 64 levels"),
                 (_all_of(6), _all_of(7), "more than 64 schemas once merged"),
                 ({"$defs": {"A": _all_of(1)["allOf"][0]}, "allOf": [{"$ref": "#/$defs/A"}] * 6},
                  {"$defs": {"A": _all_of(1)["allOf"][0]}, "allOf": [{"$ref": "#/$defs/A"}] * 7}, "64 schemas"),
                 ({"description": "x" * 65000}, {"description": "x" * 65536}, "at most 65536")]


def test_schema_bounds():
    """Each bound on a JSON schema's compile work (unbounded but by the body's size, 5,000 optional properties
    took 47 s, an allOf of 11 anyOf pairs 13 s): a schema at it passes, one past it is refused saying which; a
    recursive $ref is counted once."""
    from kvcache.schema_bounds import checked_schema

    for at, past, words in SCHEMA_BOUNDS:
        checked_schema(at)
        with pytest.raises(kvcache.InvalidArgument, match=words):
            checked_schema(past)
    checked_schema({"$defs": {"n": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}},
                    "allOf": [{"$ref": "#/$defs/n"}] * 6})


def test_schema_past_a_bound_is_400_naming_its_field(server):
    base, _ = server
    past, words = SCHEMA_BOUNDS[0][1], SCHEMA_BOUNDS[0][2]
    chat = {"model": "test", "messages": MESSAGES, "max_tokens": 2}
    tool = {"type": "function", "function": {"name": "f", "parameters": past}}
    for path, body, field in (
            ("/v1/chat/completions", {**chat, "response_format": {"type": "json_schema", "json_schema": {
                "name": "x", "schema": past, "strict": True}}}, "response_format"),
            ("/v1/completions", {"model": "test", "prompt": "hi", "guided_json": past}, "guided_json"),
            ("/v1/completions", {"model": "test", "prompt": "hi", "guided_json": json.dumps(past)}, "guided_json"),
            ("/v1/chat/completions", {**chat, "structured_outputs": {"json": past}}, "structured_outputs"),
            ("/v1/chat/completions", {**chat, "tools": [tool], "tool_choice": "required"}, "tools"),
            ("/v1/chat/completions", {**chat, "tools": [tool], "tool_choice": {"type": "function",
                                                                                "function": {"name": "f"}}}, "tools"),
            ("/v1/chat/completions", {**chat, "response_format": {"type": "structural_tag", "triggers": ["<f"],
                                                                  "structures": [{"begin": "<f>", "schema": past,
                                                                                  "end": "</f>"}]}},
             "response_format"),
            ("/v1/responses", {"model": "test", "input": "hi", "max_output_tokens": 2, "text": {"format": {
                "type": "json_schema", "name": "x", "schema": past}}}, "text")):
        r = httpx.post(base + path, json=body, timeout=60)
        assert r.status_code == 400, (path, field, r.text)
        err = r.json()["error"]
        assert err["param"] == field and words in err["message"], (path, field, err)
