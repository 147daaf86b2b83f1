"""The reasoning parsers: qwen3 through the server with the official `openai` client (the engine's stream gives
the token ids of a chosen reply, test_serve_tools' script), so a reply's reasoning and content, streamed (pieces
of 1 and 3 tokens) and not, its tool calls (read in the content only), enable_thinking false, include_reasoning
false and the Responses API's reasoning item can be checked; every parser's markers, switch and splitter rules
at the module's level."""
import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import openai  # noqa: E402

from kvcache.errors import InvalidArgument  # noqa: E402
from kvcache.serve import Server, reasoning  # noqa: E402
from kvcache.tokenizer import Tokenizer  # noqa: E402
from serve_fixture import running  # noqa: E402
from test_serve_tools import TOOLS, calls_of, gather, script  # noqa: E402
from text_model import make_model_dir  # noqa: E402

ASK = [{"role": "user", "content": "weather in Paris?"}]
THOUGHT = "I might write <tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call> here, <think> too."
REPLY = THOUGHT + "</think>\n\nSure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n" \
    "</tool_call>"


CASES = [
    ("a</think>b", True, ("a", "b")), (" <think>a</think>b", True, ("a", "b")), ("a", True, ("a", None)),
    ("a", False, (None, "a")), ("a</think>b", False, (None, "a</think>b")), ("</think>", True, (None, None)),
    ("x<think>a</think>", True, ("x<think>a", None))]


def _marked(text, p):  # a case written with <think> / </think> in parser p's markers
    return None if text is None else text.replace("</think>", "\0").replace("<think>", p.open).replace("\0", p.close)


@pytest.mark.parametrize("name", sorted(reasoning.PARSERS))
@pytest.mark.parametrize("text, inside, want", CASES)
def test_the_splitter_and_its_pieces(name, text, inside, want):
    p = reasoning.PARSERS[name]
    text, want = _marked(text, p), tuple(_marked(w, p) for w in want)
    assert reasoning.split(name, text, inside) == want
    for step in (1, 2, 5):  # the pieces join into the whole split, a marker cut anywhere
        s, got = reasoning.Splitter(name, inside), ["", ""]
        for piece in [text[i:i + step] for i in range(0, len(text), step)] + [None]:
            r, c = s.finish() if piece is None else s.feed(piece)
            got = [got[0] + r, got[1] + c]
        assert (got[0] or None, got[1] or None) == want


def test_a_parser_reads_its_own_markers_only():
    assert reasoning.split("seed_oss", "a</think>b", True) == ("a</think>b", None)
    assert reasoning.split("seed_oss", "<seed:think>a</seed:think>b", True) == ("a", "b")
    assert reasoning.split("qwen3", "a</seed:think>b", True) == ("a</seed:think>b", None)


def test_where_a_reply_begins():
    assert reasoning.thinking("deepseek_r1", "<|User|>hi<|Assistant|><think>\n", {})
    assert reasoning.thinking("qwen3", "<|im_start|>assistant\n", {})  # no marker: inside (vLLM's qwen3 today)
    assert not reasoning.thinking("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n", {})  # closed by it
    assert not reasoning.thinking("qwen3", "<|im_start|>assistant\n", {"enable_thinking": False})
    assert reasoning.thinking("qwen3", "<|im_start|>assistant\n", {"enable_thinking": None})  # `is false` only
    assert reasoning.thinking("deepseek_r1", "<|im_start|>assistant\n", {"enable_thinking": False})
    assert not reasoning.thinking("glm45", "<|assistant|>", {"enable_thinking": False})
    assert reasoning.thinking("glm45", "<|assistant|>", {})
    # DeepSeek V3.1's switch is `thinking`, off unless a true value asks for it
    assert not reasoning.thinking("deepseek_v3", "<｜Assistant｜><think>", {})
    assert not reasoning.thinking("deepseek_v3", "<｜Assistant｜><think>", {"thinking": 0})
    assert reasoning.thinking("deepseek_v3", "<｜Assistant｜><think>", {"thinking": True})
    assert not reasoning.thinking("deepseek_v3", "<｜Assistant｜></think>", {"thinking": True})
    # Seed-OSS's markers: the prompt's <think> does not count
    assert reasoning.thinking("seed_oss", "<seed:bos>assistant\n", {})
    assert not reasoning.thinking("seed_oss", "<seed:think></seed:think>", {})
    assert reasoning.thinking("seed_oss", "</think>", {})
    assert reasoning.thinking("minimax_m2", "]~b]ai\n<think>\n", {})


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(tmp_path_factory.mktemp("model"), template="hermes")


@pytest.fixture(scope="module")
def server(model_dir):
    with running(model_dir, enable_auto_tool_choice=True, tool_call_parser="hermes",
                 reasoning_parser="qwen3") as (url, srv):
        yield url, srv


@pytest.fixture(scope="module")
def client(server):
    with openai.OpenAI(base_url=server[0] + "/v1", api_key="none", max_retries=0, timeout=60) as c:
        yield c


def streamed(client, step_fields, **kw):
    parts = {"reasoning": "", "reasoning_content": "", "content": ""}
    for chunk in client.chat.completions.create(model="test", messages=ASK, stream=True, **kw):
        for choice in chunk.choices:
            for name in parts:
                parts[name] += getattr(choice.delta, name, None) or ""
    return parts


@pytest.mark.parametrize("step", [1, 3])
def test_reasoning_apart_from_content_streamed_and_not(server, client, model_dir, monkeypatch, step):
    tok = Tokenizer(model_dir)
    script(monkeypatch, server[1], tok, REPLY.split("<tool_call>\n")[0], step)
    m = client.chat.completions.create(model="test", messages=ASK).choices[0].message
    assert (m.reasoning, m.reasoning_content, m.content) == (THOUGHT, THOUGHT, "\n\nSure.\n")
    assert streamed(client, step) == {"reasoning": THOUGHT, "reasoning_content": THOUGHT, "content": "\n\nSure.\n"}
    # tool calls are read in the content only (the reasoning's block is no call)
    script(monkeypatch, server[1], tok, REPLY, step)
    r = client.chat.completions.create(model="test", messages=ASK, tools=TOOLS).choices[0]
    assert (r.message.reasoning, r.message.content, r.finish_reason) == (THOUGHT, "\n\nSure.\n", "tool_calls")
    assert calls_of(r.message.tool_calls) == [("get_weather", {"city": "Paris"})]
    chunks = list(client.chat.completions.create(model="test", messages=ASK, tools=TOOLS, stream=True))
    assert gather(chunks) == ({0: "\n\nSure.\n"}, {0: [("get_weather", '{"city": "Paris"}')]}, {0: "tool_calls"})
    assert "".join(getattr(c.choices[0].delta, "reasoning", None) or "" for c in chunks if c.choices) == THOUGHT
    # thinking off: all content; include_reasoning false: the reasoning left out
    m = client.chat.completions.create(model="test", messages=ASK,
                                       extra_body={"chat_template_kwargs": {"enable_thinking": False}}).choices[0]
    assert (m.message.reasoning, m.message.content) == (None, REPLY)
    m = client.chat.completions.create(model="test", messages=ASK, extra_body={"include_reasoning": False})
    assert (m.choices[0].message.reasoning, m.choices[0].message.content) == (None, REPLY.split("</think>", 1)[1])
    assert streamed(client, step, extra_body={"include_reasoning": False})["reasoning"] == ""


def test_responses_give_a_reasoning_item(server, client, model_dir, monkeypatch):
    script(monkeypatch, server[1], Tokenizer(model_dir), THOUGHT + "</think>Sure.", 2)
    r = client.responses.create(model="test", input="weather?", store=False)
    assert [i.type for i in r.output] == ["reasoning", "message"] and r.output_text == "Sure."
    assert r.output[0].content[0].text == THOUGHT and r.output[0].content[0].type == "reasoning_text"
    events = list(client.responses.create(model="test", input="weather?", store=False, stream=True))
    assert "".join(e.delta for e in events if e.type == "response.reasoning_text.delta") == THOUGHT
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Sure."
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert [i.type for i in final.output] == ["reasoning", "message"] and final.output[0].content[0].text == THOUGHT
    # with function tools: the calls are read after the reasoning, streamed and not
    script(monkeypatch, server[1], Tokenizer(model_dir), REPLY, 3)
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    whole = client.responses.create(model="test", input="weather?", tools=tools, store=False)
    final = [e for e in client.responses.create(model="test", input="weather?", tools=tools, store=False,
                                                stream=True)][-1].response
    for r in (whole, final):
        assert [i.type for i in r.output] == ["reasoning", "message", "function_call"]
        assert (r.output[0].content[0].text, r.output_text, r.output[2].arguments) == \
            (THOUGHT, "\n\nSure.\n", '{"city": "Paris"}')


def test_an_unknown_parser_is_refused_by_name(model_dir, capsys):
    with pytest.raises(InvalidArgument, match="parsers: deepseek_r1, deepseek_v3, glm45, minimax_m2, qwen3, seed_oss"):
        Server(model_dir, reasoning_parser="nope")
    from kvcache.serve.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([str(model_dir), "--reasoning-parser", "nope"])
    assert exit_.value.code == 2 and "invalid choice: 'nope' (choose from" in capsys.readouterr().err
