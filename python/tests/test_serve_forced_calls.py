"""tool_choice "required" and a named function (vLLM's): a JSON schema forces the output, so even the random-weight
test model replies with calls whose arguments parse and follow the tool's parameters, on a server without
--enable-auto-tool-choice; streamed (the call announced, then its arguments as they come) equals not streamed,
n choices each get their own; the finish reason stays the generation's; bad tool_choice refused by name."""
import json

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx", "llguidance"):
    pytest.importorskip(module)

import httpx  # noqa: E402

from serve_fixture import running, sse_events  # noqa: E402
from text_model import make_model_dir  # noqa: E402

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5},
                                            "days": {"type": "integer", "minimum": 0, "maximum": 9}},
           "required": ["city", "days"], "additionalProperties": False}
ADD = {"type": "object", "properties": {"a": {"type": "integer", "minimum": -9, "maximum": 9},
                                        "b": {"type": "boolean"}},
       "required": ["a", "b"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "description": "sums", "parameters": ADD}},
         {"type": "function", "function": {"name": "ping"}}]  # no parameters: any object
ASK = [{"role": "user", "content": "weather in Paris?"}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    # the llama template leaves the tools out of the prompt: the grammar alone makes the calls
    with running(make_model_dir(tmp_path_factory.mktemp("model"), template="llama")) as (url, _):
        yield url


def follows(name, arguments):
    """arguments (a JSON text) is an object following the parameters of the tool `name`."""
    v = json.loads(arguments)
    assert isinstance(v, dict), arguments
    if name == "get_weather":
        assert set(v) == {"city", "days"} and isinstance(v["city"], str) and len(v["city"]) <= 5
        assert isinstance(v["days"], int) and not isinstance(v["days"], bool) and 0 <= v["days"] <= 9
    elif name == "add":
        assert set(v) == {"a", "b"} and isinstance(v["b"], bool)
        assert isinstance(v["a"], int) and not isinstance(v["a"], bool) and -9 <= v["a"] <= 9
    else:
        assert name == "ping", name
    return v


def chat(base, **kw):
    body = {"model": "test", "messages": ASK, "max_tokens": 200, "tools": TOOLS, "temperature": 1.0, **kw}
    r = httpx.post(base + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["choices"]


def streamed(base, **kw):
    """([[(name, arguments)] by choice], [finish_reason by choice], [content by choice]) of a streamed answer;
    checks that each call begins with its id, type and name, then only arguments come."""
    body = {"model": "test", "messages": ASK, "max_tokens": 200, "tools": TOOLS, "temperature": 1.0,
            "stream": True, **kw}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        events = sse_events(r.iter_lines())
    calls, reasons, content, pieces = {}, {}, {}, 0
    for e in events:
        for c in e["choices"]:
            i = c["index"]
            content[i] = content.get(i, "") + (c["delta"].get("content") or "")
            for entry in c["delta"].get("tool_calls") or []:
                mine = calls.setdefault(i, [])
                if entry["index"] == len(mine):
                    assert entry["id"].startswith("call_") and entry["type"] == "function"
                    mine.append([entry["function"]["name"], ""])
                else:
                    assert entry["index"] == len(mine) - 1 and set(entry) == {"index", "function"}
                    assert set(entry["function"]) == {"arguments"}
                mine[-1][1] += entry["function"]["arguments"]
                pieces += 1
            if c["finish_reason"] is not None:
                reasons[i] = c["finish_reason"]
    n = len(reasons)
    return [[tuple(x) for x in calls.get(i, [])] for i in range(n)], [reasons[i] for i in range(n)], \
        [content[i] for i in range(n)], pieces


def whole_calls(choice):
    m = choice["message"]
    assert not m["content"], m
    assert all(c["type"] == "function" and c["id"].startswith("call_") for c in m["tool_calls"])
    return [(c["function"]["name"], c["function"]["arguments"]) for c in m["tool_calls"]]


def test_named_function_streamed_and_not(base):
    seen = set()
    for seed in (1, 2):
        choices = chat(base, tool_choice=NAMED, seed=seed, n=3)
        assert len(choices) == 3
        for choice in choices:
            (name, arguments), = whole_calls(choice)
            assert name == "get_weather" and choice["finish_reason"] == "stop"  # vLLM's, not "tool_calls"
            seen.add(json.dumps(follows(name, arguments), sort_keys=True))
        calls, reasons, content, pieces = streamed(base, tool_choice=NAMED, seed=seed, n=3)
        assert calls == [whole_calls(c) for c in choices] and reasons == ["stop"] * 3 and content == [""] * 3
        assert pieces > 3  # the arguments came a piece at a time
    assert len(seen) > 1  # each choice samples its own arguments
    # parameters without a type are held to objects
    loose = [{"type": "function", "function": {"name": "loose", "parameters": {"properties": {"k": {"const": 1}},
                                                                                 "required": ["k"]}}}]
    (name, arguments), = whole_calls(chat(base, tools=loose, tool_choice={"type": "function", "function": {
        "name": "loose"}}, seed=5)[0])
    assert name == "loose" and json.loads(arguments)["k"] == 1
    # a function without parameters takes any object
    (name, arguments), = whole_calls(chat(base, tool_choice={"type": "function", "function": {"name": "ping"}},
                                          seed=3)[0])
    assert name == "ping" and isinstance(json.loads(arguments), dict)


def test_required_streamed_and_not(base):
    names = set()
    for seed in range(4):
        choices = chat(base, tool_choice="required", seed=seed, n=2, tools=TOOLS[:2])
        for choice in choices:
            calls = whole_calls(choice)
            assert calls and choice["finish_reason"] == "stop"
            for name, arguments in calls:
                follows(name, arguments)
                names.add(name)
        calls, reasons, content, _ = streamed(base, tool_choice="required", seed=seed, n=2, tools=TOOLS[:2])
        assert calls == [whole_calls(c) for c in choices] and reasons == ["stop"] * 2 and content == [""] * 2
    assert len(names) > 1  # the calls pick among the tools


def test_cut_short_keeps_the_generation_finish_reason(base):
    choice = chat(base, tool_choice=NAMED, seed=4, max_tokens=3)[0]
    (name, arguments), = whole_calls(choice)
    assert name == "get_weather" and choice["finish_reason"] == "length" and arguments.startswith("{")
    calls, reasons, _, _ = streamed(base, tool_choice=NAMED, seed=4, max_tokens=3)
    assert calls == [[(name, arguments)]] and reasons == ["length"]
    # "required": a call whose arguments began stays a call, streamed or not
    choice = chat(base, tool_choice="required", seed=4, max_tokens=30)[0]
    (name, arguments), = whole_calls(choice)
    assert name in ("get_weather", "add", "ping") and choice["finish_reason"] == "length"
    assert arguments.startswith("{")
    calls, reasons, _, _ = streamed(base, tool_choice="required", seed=4, max_tokens=30)
    assert calls == [[(name, arguments)]] and reasons == ["length"]


def test_bad_tool_choice_is_refused_by_name(base):
    url = base + "/v1/chat/completions"
    ok = {"model": "test", "messages": ASK, "max_tokens": 2, "tools": TOOLS}
    cases = [({"tool_choice": {"type": "function", "function": {"name": "nowhere"}}}, "not one of the tools"),
             ({"tool_choice": "required", "tools": None}, "needs tools"),
             ({"tool_choice": "auto", "tools": None}, "needs tools"),
             ({"tool_choice": NAMED, "tools": []}, "needs tools"),
             ({"tool_choice": "always"}, "must be"), ({"tool_choice": 5}, "must be"),
             ({"tool_choice": {"type": "function"}}, "must be"),
             ({"tool_choice": {"type": "function", "function": {"name": ""}}}, "must be"),
             ({"tool_choice": {"type": "tool", "function": {"name": "add"}}}, "must be"),
             ({"tool_choice": "required", "response_format": {"type": "json_object"}}, "response_format"),
             ({"tool_choice": NAMED, "guided_json": {"type": "object"}}, "guided_json"),
             ({"tool_choice": NAMED, "tools": [{"type": "function", "function": {
                 "name": "get_weather", "parameters": {"type": "nonsense"}}}]}, "allow no object"),
             ({"tool_choice": "required", "tools": TOOLS + [{"type": "function", "function": {
                 "name": "s", "parameters": {"type": "string"}}}]}, "'s' allow no object"),
             ({"tool_choice": "required", "tools": [{"type": "function", "function": {
                 "name": "s", "parameters": {"$ref": "#/nowhere"}}}]}, "not valid")]
    for extra, words in cases:
        r = httpx.post(url, json={**ok, **extra})
        assert r.status_code == 400, (extra, r.text)
        err = r.json()["error"]
        assert err["param"] == "tool_choice" and words in err["message"], (extra, err)
