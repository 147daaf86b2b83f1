"""kvcache.serve.tool_parsers on text alone: pythonic (a Python list of calls, literals only, read with ast) and
qwen3_coder (XML blocks, values typed by the tool's parameter schema); whole replies, malformed ones as content,
and every cut of a reply in two streamed to what the whole gives."""
import json

import pytest

from kvcache.serve.tool_calls import delta, parse
from kvcache.serve.tool_parsers import FORMATS

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "s": {"type": "string"}, "i": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
    "o": {"type": "object"}, "a": {"type": "array"}, "e": {"enum": ["u", "v"]}}}}}]


def run(name, pieces, tools=TOOLS):
    """(content or None, [(name, arguments as a value)]) of a reply fed in pieces, checked equal, as text, to
    what the whole reply gives not streamed."""
    parser, events = FORMATS[name].parser(True, tools), []
    for piece in pieces:
        events += parser.feed(piece)
    d = delta(events + parser.finish())
    content, calls = parse("".join(pieces), FORMATS[name].parser(False, tools))
    assert d.get("content") == content
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in d.get("tool_calls", [])] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
    return content, [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]


PYTHONIC = '[get_weather(city="Zürich", days=3), f(a=[1, -2.5, True, None], b={"k": (1, "</x>")}), now()]'
PY_CALLS = [("get_weather", {"city": "Zürich", "days": 3}),
            ("f", {"a": [1, -2.5, True, None], "b": {"k": [1, "</x>"]}}), ("now", {})]


def test_pythonic_calls_and_content():
    assert run("pythonic", [" \n" + PYTHONIC + "\n"]) == (None, PY_CALLS)
    for text in ("Hello [not a call]", "[f(1)]", "[f(**k)]", "[a.b(c=1)]", "[f(a=g())]", "[f(a=x)]", "[f(a=1+2)]",
                 "[f(a=1e999)]", "[f(a={1: 2})]", "[]", "[f(a=1)] and text", "[f(a=1)", "[f(a=" + "[" * 3000 + "]",
                 "[" + "(" * 200000, "   ", "", "[f(a=1), 3]"):
        assert run("pythonic", [text]) == (text or None, []), text


@pytest.mark.parametrize("name, text", [("pythonic", PYTHONIC), ("pythonic", "no [calls] here"),
                                        ("qwen3_coder", "Sure.\n<tool_call>\n<function=f>\n<parameter=s>\n a\n"
                                                        "</parameter>\n</function>\n</tool_call>\n<tool_call>")])
def test_every_cut_in_two_streams_what_the_whole_gives(name, text):
    whole = run(name, [text])
    for cut in range(len(text) + 1):
        assert run(name, [text[:cut], text[cut:]]) == whole


QWEN = ("Let me see.\n<tool_call>\n<function=f>\n<parameter=s>\n0042\n</parameter>\n<parameter=i>\n-7\n</parameter>\n"
        "<parameter=x>\n2.0\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n<parameter=o>\n{\"k\": [1, 2]}\n"
        "</parameter>\n<parameter=a>\n[1, 'two']\n</parameter>\n<parameter=e>\nu\n</parameter>\n"
        "<parameter=other>\nnull\n</parameter>\n<parameter=z>\n<b>kept</b>\nmultiline\n</parameter>\n"
        "</function>\n</tool_call>\n<tool_call>\n<function=g>\n</function>\n</tool_call>")


def test_qwen3_coder_values_follow_the_schema():
    content, calls = run("qwen3_coder", [QWEN])
    assert content == "Let me see.\n\n"
    assert calls == [("f", {"s": "0042", "i": -7, "x": 2, "b": True, "o": {"k": [1, 2]}, "a": [1, "two"], "e": "u",
                            "other": None, "z": "<b>kept</b>\nmultiline"}), ("g", {})]
    # values that do not convert stay text; a parameter the tool lacks, or a tool not given, is text
    text = ("<tool_call><function=f><parameter=i>seven</parameter><parameter=x>nan</parameter><parameter=b>yes"
            "</parameter><parameter=o>{bad</parameter><parameter=i2>3</parameter></function></tool_call>")
    assert run("qwen3_coder", [text]) == (None, [("f", {"i": "seven", "x": "nan", "b": "yes", "o": "{bad",
                                                        "i2": "3"})])
    assert run("qwen3_coder", [text], tools=None)[1][0][1]["i"] == "seven"
    # an unclosed block at the end counts when its function is whole; a malformed block is content as written
    assert run("qwen3_coder", ["<tool_call><function=g></function>"]) == (None, [("g", {})])
    for bad in ("<tool_call><function=></function></tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>",
                "<tool_call><function=f><parameter=s>x</parameter>", "x <tool_call", "<tool_call>"):
        assert run("qwen3_coder", [bad]) == (bad, [])
