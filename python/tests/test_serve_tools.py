"""Tool calling through the server (--enable-auto-tool-choice --tool-call-parser hermes) with the official
`openai` client and raw HTTP: the engine's stream is replaced by one that gives the token ids of a chosen reply
(the test model's own text holds no calls), so each reply's calls, content and finish reason, streamed and not,
can be checked; conversations with calls and tool results render as transformers renders them; bad tools,
tool_choice and tool_calls are refused by name."""
import json

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402
import openai  # noqa: E402

from kvcache.engine import RequestOutput  # noqa: E402
from kvcache.errors import InvalidArgument  # noqa: E402
from kvcache.serve import Server  # noqa: E402
from kvcache.tokenizer import Tokenizer  # noqa: E402
from serve_fixture import running, sse_events  # noqa: E402
from text_model import TEMPLATES, make_model_dir  # noqa: E402

EOS = 2
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Météo d'une ville",
                                           "parameters": {"type": "object",
                                                          "properties": {"city": {"type": "string"}}}}}]
ASK = [{"role": "user", "content": "weather in Zürich and Paris?"}]
REPLY = ("Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", "
         "\"when\": {\"day\": \"today\", \"note\": \"}</tool_call>{\"}}}\n</tool_call>\n"
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris 🙂\"}}\n</tool_call>")
CALLS = [("get_weather", {"city": "Zürich", "when": {"day": "today", "note": "}</tool_call>{"}}),
         ("get_weather", {"city": "Paris 🙂"})]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("model"), template="hermes")


@pytest.fixture(scope="module")
def tok(model_dir):
    return Tokenizer(model_dir)


@pytest.fixture(scope="module")
def server(model_dir):
    with running(model_dir, enable_auto_tool_choice=True, tool_call_parser="hermes") as (url, srv):
        yield url, srv


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server[0] + "/v1", api_key="none", max_retries=0, timeout=60) as c:
        yield c


class Scripted:
    """A request stream giving the ids of a chosen reply, `step` ids per step, then an end-of-sequence id."""

    def __init__(self, ids, n_prompt, step):
        self.ids, self.n_prompt, self.step = ids, n_prompt, step

    def abort(self):
        pass

    async def __aiter__(self):
        for at in range(0, len(self.ids), self.step):
            yield RequestOutput(-1, self.ids[at:at + self.step], None, None, self.n_prompt, 0)
        yield RequestOutput(-1, [EOS], "stop", None, self.n_prompt, 0)


def script(monkeypatch, srv, tok, reply, step=1):
    """Every request of srv replies `reply`; returns the list the requests' prompt ids are put in."""
    ids = tok.encode(reply, add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=False) == reply
    prompts = []

    async def add_request(prompt_ids, params, **kwargs):
        prompts.append(list(prompt_ids))
        return Scripted(ids, len(prompt_ids), step)

    monkeypatch.setattr(srv.engine, "add_request", add_request)
    return prompts


def calls_of(tool_calls):
    return [(c.function.name, json.loads(c.function.arguments)) for c in tool_calls]


def gather(chunks):
    """(content, [(name, arguments text)], finish reasons by choice) of streamed chunks (the openai client's);
    checks that each call begins with its id, type and name, and that arguments come after."""
    content, calls, reasons = {}, {}, {}
    for chunk in chunks:
        for choice in chunk.choices:
            i = choice.index
            content[i] = content.get(i, "") + (choice.delta.content or "")
            for entry in choice.delta.tool_calls or []:
                mine = calls.setdefault(i, {})
                if entry.index not in mine:
                    assert entry.id.startswith("call_") and entry.type == "function" and entry.function.name
                    assert entry.index == len(mine)
                    mine[entry.index] = [entry.function.name, ""]
                else:
                    assert entry.id is None and entry.function.name is None
                mine[entry.index][1] += entry.function.arguments or ""
            if choice.finish_reason is not None:
                reasons[i] = choice.finish_reason
    return content, {i: [tuple(c) for c in mine.values()] for i, mine in calls.items()}, reasons


@pytest.mark.parametrize("step", [1, 3])
def test_calls_streamed_and_not(server, client, tok, monkeypatch, step):
    script(monkeypatch, server[1], tok, REPLY, step)
    whole = client.chat.completions.create(model="test", messages=ASK, tools=TOOLS)
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look.\n\n"
    assert calls_of(choice.message.tool_calls) == CALLS
    assert all(c.type == "function" and c.id.startswith("call_") for c in choice.message.tool_calls)
    assert whole.usage.completion_tokens == len(tok.encode(REPLY, add_special_tokens=False)) + 1
    content, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS,
                                                                    tool_choice="auto", stream=True))
    assert content == {0: choice.message.content} and reasons == {0: "tool_calls"}
    assert calls == {0: [(c.function.name, c.function.arguments) for c in choice.message.tool_calls]}


def test_n_choices_each_parse_their_calls(server, client, tok, monkeypatch):
    script(monkeypatch, server[1], tok, REPLY, 2)
    content, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS, n=2,
                                                                    stream=True))
    assert reasons == {0: "tool_calls", 1: "tool_calls"} and content[0] == content[1] == "Let me look.\n\n"
    assert [(n, json.loads(a)) for n, a in calls[0]] == [(n, json.loads(a)) for n, a in calls[1]] == CALLS


def test_parallel_tool_calls_false_keeps_the_first_call(server, client, tok, monkeypatch):
    # vLLM's reading of OpenAI's field: the reply's first call alone, streamed and not
    script(monkeypatch, server[1], tok, REPLY, 3)
    whole = client.chat.completions.create(model="test", messages=ASK, tools=TOOLS, parallel_tool_calls=False)
    assert calls_of(whole.choices[0].message.tool_calls) == CALLS[:1]
    assert whole.choices[0].finish_reason == "tool_calls"
    content, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS,
                                                                    parallel_tool_calls=False, stream=True))
    assert [(n, json.loads(a)) for n, a in calls[0]] == CALLS[:1] and reasons == {0: "tool_calls"}
    assert content == {0: whole.choices[0].message.content}


def test_responses_function_tools_are_chats(server, client, tok, monkeypatch):
    # /v1/responses with function tools: the calls of the chat reply as function_call items, streamed and not;
    # the calls and their outputs as input items render the prompt the chat conversation renders
    prompts = script(monkeypatch, server[1], tok, REPLY, 3)
    flat = [{"type": "function", **TOOLS[0]["function"]}]
    r = client.responses.create(model="test", input=ASK[0]["content"], tools=flat)
    assert [i.type for i in r.output] == ["message", "function_call", "function_call"]
    assert r.output[0].content[0].text == "Let me look.\n\n" and r.status == "completed"
    assert [(i.name, json.loads(i.arguments)) for i in r.output[1:]] == CALLS
    with client.responses.stream(model="test", input=ASK[0]["content"], tools=flat, store=False) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert [(i.type, getattr(i, "arguments", None)) for i in final.output] == \
        [(i.type, getattr(i, "arguments", None)) for i in r.output]
    assert kinds.count("response.function_call_arguments.done") == 2 and kinds[-1] == "response.completed"
    bare = [{"type": "function", "name": "get_weather"}]  # a short prompt: the model's length is 512 tokens
    one = client.responses.create(model="test", input=ASK[0]["content"], tools=bare, parallel_tool_calls=False)
    assert [i.type for i in one.output] == ["message", "function_call"]
    result = {"type": "function_call_output", "call_id": one.output[1].call_id, "output": "21 °C"}
    client.responses.create(model="test", input=[result], previous_response_id=one.id, tools=bare)
    call = {"id": one.output[1].call_id, "type": "function",
            "function": {"name": one.output[1].name, "arguments": one.output[1].arguments}}
    client.chat.completions.create(model="test", tools=[{"type": "function", "function": {"name": "get_weather"}}],
                                   messages=ASK + [{"role": "assistant", "content": "Let me look.\n\n",
                                                    "tool_calls": [call]},
                                                   {"role": "tool", "tool_call_id": call["id"], "content": "21 °C"}])
    assert prompts[-1] == prompts[-2]
    # the same turns given as input items (a message, a function_call joining it, its output) without the store
    client.responses.create(model="test", tools=bare, store=False, input=[
        ASK[0], {"role": "assistant", "content": "Let me look.\n\n"},
        {"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
         "arguments": call["function"]["arguments"]}, result])
    assert prompts[-1] == prompts[-2]
    # a reply of calls alone (whitespace around them) has no message item, streamed or not
    script(monkeypatch, server[1], tok, REPLY[len("Let me look."):], 2)
    assert [i.type for i in client.responses.create(model="test", input="x", tools=flat).output] == \
        ["function_call"] * 2
    with client.responses.stream(model="test", input="x", tools=flat) as stream:
        assert [i.type for i in stream.get_final_response().output] == ["function_call"] * 2


def test_a_named_function_is_its_arguments_beside_the_parser(server, client, tok, monkeypatch):
    # the reply (forced by the grammar, here scripted) is the arguments, whatever markers it holds: the hermes
    # parser of --enable-auto-tool-choice does not read it (test_serve_forced_calls.py checks the grammar)
    args = '{"city": "<tool_call>Zürich</tool_call>"}'
    script(monkeypatch, server[1], tok, args, 2)
    named = {"type": "function", "function": {"name": "get_weather"}}
    choice = client.chat.completions.create(model="test", messages=ASK, tools=TOOLS, tool_choice=named).choices[0]
    assert choice.finish_reason == "stop" and not choice.message.content
    assert [(c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [("get_weather", args)]
    content, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS,
                                                                    tool_choice=named, stream=True))
    assert calls == {0: [("get_weather", args)]} and reasons == {0: "stop"} and not content[0]


def test_replies_without_calls_and_malformed_blocks_are_content(server, client, tok, monkeypatch):
    for reply in ("Just text, no call.", "<tool_call>{\"name\": get_weather}</tool_call>"):
        script(monkeypatch, server[1], tok, reply)
        whole = client.chat.completions.create(model="test", messages=ASK, tools=TOOLS)
        assert (whole.choices[0].message.content, whole.choices[0].message.tool_calls) == (reply, [])
        assert whole.choices[0].finish_reason == "stop"
        content, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS,
                                                                        stream=True))
        assert (content, calls, reasons) == ({0: reply}, {}, {0: "stop"})
    # tool_choice none: the tools are shown, the reply is not parsed; without tools neither
    script(monkeypatch, server[1], tok, REPLY)
    for extra in ({"tools": TOOLS, "tool_choice": "none"}, {}):
        message = client.chat.completions.create(model="test", messages=ASK, **extra).choices[0].message
        assert (message.content, message.tool_calls) == (REPLY, None)


def test_a_conversation_with_calls_and_results_renders_as_transformers(server, client, tok, monkeypatch):
    """The OpenAI form (the assistant's content null, each call's arguments a JSON text) renders as
    transformers renders the same conversation with the arguments as values (chat_templates.json)."""
    case = next(c for c in json.loads(TEMPLATES.read_text())["cases"]
                if c["template"] == "hermes" and any(m["role"] == "tool" for m in c["messages"][1:]))
    messages = [dict(m) for m in case["messages"]]
    messages[2] = {**messages[2], "content": None, "tool_calls": [
        {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
        for c in messages[2]["tool_calls"]]}
    expected = tok.encode(case["expected"]["text"], add_special_tokens=False)
    r = httpx.post(server[0] + "/tokenize", json={"messages": messages, "tools": case["tools"]}).json()
    assert r["tokens"] == expected
    # a chat request renders them so too (without the tools: the whole is longer than the test model's 512)
    prompts = script(monkeypatch, server[1], tok, "It is 12 °C in Zürich.")
    reply = client.chat.completions.create(model="test", messages=messages)
    r = httpx.post(server[0] + "/tokenize", json={"messages": messages}).json()
    assert prompts == [r["tokens"]] and reply.choices[0].message.content == "It is 12 °C in Zürich."
    assert '"arguments": {"city": "Paris", "n": [1, 2]}}' in tok.decode(prompts[0])
    # empty arguments are {} (vLLM's); a call's arguments that are no JSON are refused by name
    messages[2]["tool_calls"][0]["function"]["arguments"] = ""
    r = httpx.post(server[0] + "/tokenize", json={"messages": messages, "tools": case["tools"]}).json()
    assert '"arguments": {}' in tok.decode(r["tokens"])


TYPED = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}}}}}]
TYPED_CALLS = [("get_weather", {"city": "Zürich", "days": 3, "metric": True}),
               ("get_weather", {"city": "Paris 🙂", "days": -1, "metric": False})]


@pytest.mark.parametrize("parser,reply,content,tools,want", [
    ("mistral", 'a<|im_start|>b[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Zürich", "when": '
                '{"day": "today", "note": "}</tool_call>{"}}}, {"name": "get_weather", "arguments": {"city": '
                '"Paris 🙂"}}]', "a<|im_start|>b", TOOLS, CALLS),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Zürich", "when": {"day": "today", "note": '
                    '"}</tool_call>{"}}}; {"name": "get_weather", "parameters": {"city": "Paris 🙂"}}', None, TOOLS,
     CALLS),
    ("pythonic", ' [get_weather(city="Zürich", days=3, metric=True), get_weather(city="Paris 🙂", days=-1, '
                 'metric=False)]\n', None, TYPED, TYPED_CALLS),
    ("qwen3_coder", "Voilà <tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</parameter>\n"
                    "<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n</function>\n"
                    "</tool_call><tool_call>\n<function=get_weather>\n<parameter=city>\nParis 🙂\n</parameter>\n"
                    "<parameter=days>\n-1\n</parameter>\n<parameter=metric>\nFalse\n</parameter>\n</function>\n"
                    "</tool_call>", "Voilà ", TYPED, TYPED_CALLS)])
def test_the_other_parsers(model_dir, tok, monkeypatch, parser, reply, content, tools, want):
    """The other formats end to end (qwen3_coder's values typed by the tool's schema); mistral's marker is a
    special token, so its replies keep special tokens (here <|im_start|>, which the default skip_special_tokens
    leaves out), as vLLM's parser asks."""
    with running(model_dir, enable_auto_tool_choice=True, tool_call_parser=parser) as (url, srv), \
            openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=60) as client:
        script(monkeypatch, srv, tok, reply, 2)
        whole = client.chat.completions.create(model="test", messages=ASK, tools=tools)
        message = whole.choices[0].message
        assert (message.content, calls_of(message.tool_calls), whole.choices[0].finish_reason) == \
            (content, want, "tool_calls")
        streamed, calls, reasons = gather(client.chat.completions.create(model="test", messages=ASK, tools=tools,
                                                                         stream=True))
        assert streamed == {0: content or ""} and reasons == {0: "tool_calls"}
        assert calls == {0: [(c.function.name, c.function.arguments) for c in message.tool_calls]}
        plain = client.chat.completions.create(model="test", messages=ASK).choices[0].message.content
        assert plain == (reply.replace("<|im_start|>", "") if parser == "mistral" else reply)  # no tools: no parsing


def error_of(r, status=400):
    assert r.status_code == status, r.text
    return r.json()["error"]


def test_bad_tools_tool_choice_and_tool_calls_are_refused_by_name(server):
    url = server[0] + "/v1/chat/completions"
    ok = {"model": "test", "messages": ASK, "max_tokens": 2, "tools": TOOLS}
    fn = TOOLS[0]["function"]
    for tools in ("f", [5], [{"type": "fn", "function": fn}], [{"type": "function"}],
                  [{"type": "function", "function": {**fn, "name": ""}}],
                  [{"type": "function", "function": {**fn, "name": 3}}],
                  [{"type": "function", "function": {"parameters": {}}}],
                  [{"type": "function", "function": {**fn, "parameters": "x"}}],
                  [{"type": "function", "function": {**fn, "description": 5}}], TOOLS * 129):
        assert error_of(httpx.post(url, json={**ok, "tools": tools}))["param"] == "tools", tools
    assert "tools[0].function.name" in error_of(httpx.post(url, json={**ok, "tools": [
        {"type": "function", "function": {**fn, "name": ""}}]}))["message"]
    for choice in ({"type": "function", "function": {"name": "nowhere"}}, "sometimes"):
        assert error_of(httpx.post(url, json={**ok, "tool_choice": choice}))["param"] == "tool_choice"
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    for bad in ({"tool_calls": "x"}, {"tool_calls": [{**call, "function": {"arguments": "{}"}}]},
                {"tool_calls": [{**call, "type": "other"}]},
                {"tool_calls": [{**call, "function": {"name": "f", "arguments": "{bad"}}]},
                {"tool_calls": [{**call, "function": {"name": "f", "arguments": 5}}]}):
        messages = ASK + [{"role": "assistant", "content": None, **bad}, {"role": "tool", "content": "1"}]
        assert error_of(httpx.post(url, json={**ok, "messages": messages}))["param"] == "messages", bad
    messages = ASK + [{"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "tool_call_id": 5, "content": "1"}]
    assert "tool_call_id" in error_of(httpx.post(url, json={**ok, "messages": messages}))["message"]


def test_a_server_without_the_parser_refuses_auto_and_an_unknown_parser_is_refused(model_dir, capsys):
    with pytest.raises(InvalidArgument, match="parsers: hermes, llama3_json, mistral, pythonic, qwen3_coder"):
        Server(model_dir, tool_call_parser="nope")  # the message lists them
    with pytest.raises(InvalidArgument, match="needs a tool call parser"):
        Server(model_dir, enable_auto_tool_choice=True)
    from kvcache.serve.cli import main

    for args, needle in ((["--tool-call-parser", "nope"], "invalid choice: 'nope' (choose from"),
                         (["--enable-auto-tool-choice"], "needs a tool call parser")):
        with pytest.raises(SystemExit) as exit_:
            main([str(model_dir), *args])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert needle in err and "hermes" in err and "Traceback" not in err
    with running(model_dir) as (url, _):  # no --enable-auto-tool-choice: auto refused, as vLLM does
        r = httpx.post(url + "/v1/chat/completions", json={"messages": ASK, "tools": TOOLS, "max_tokens": 2})
        assert "--enable-auto-tool-choice" in error_of(r)["message"]
        r = httpx.post(url + "/v1/chat/completions", json={"messages": ASK, "tools": TOOLS, "tool_choice": "none",
                                                           "max_tokens": 2, "stream": True})
        events = sse_events(list(r.iter_lines()))
        assert all("tool_calls" not in c["choices"][0]["delta"] for c in events if c["choices"])
