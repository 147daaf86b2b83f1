"""kvcache.serve.tool_calls, the hermes tool-call parser, on text alone: calls and content of whole replies
(several calls, text around them, nested braces, strings holding the markers, unicode, malformed blocks) and
the same reply streamed in pieces cut at every position."""
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvcache.serve.tool_calls import FORMATS, ToolCallParser, delta, parse

HERMES, MISTRAL, LLAMA = FORMATS["hermes"], FORMATS["mistral"], FORMATS["llama3_json"]

WEATHER = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich"}}\n</tool_call>'
TRICKY = ('<tool_call>{"name": "run", "arguments": {"code": "if (a) { b(\\"</tool_call>\\") }", '
          '"nested": {"a": [1, {"b": "<tool_call>"}], "c": {}}, "emoji": "🙂 \\u00e9\\n"}}</tool_call>')


def calls_of(text, fmt=HERMES):
    content, calls = parse(text, fmt)
    return content, [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


def streamed(pieces, fmt=HERMES):
    """(content or None, [(name, arguments)], [delta]) of a reply fed in pieces, as the server streams it; checks
    each call's first entry names it (id, type, name) before any of its arguments come."""
    parser, deltas = ToolCallParser(True, fmt), []
    for i, piece in enumerate(pieces):
        deltas.append(delta(parser.feed(piece) + (parser.finish() if i == len(pieces) - 1 else [])))
    content, calls = "", {}
    for d in deltas:
        content += d.get("content", "")
        for entry in d.get("tool_calls", []):
            if entry["index"] not in calls:
                assert entry["id"].startswith("call_") and entry["type"] == "function", entry
                assert entry["index"] == len(calls)
                calls[entry["index"]] = [entry["function"]["name"], ""]
            calls[entry["index"]][1] += entry["function"]["arguments"]
    return content or None, [tuple(c) for c in calls.values()], deltas


def test_a_reply_without_calls_is_its_text():
    for text in ("", "hello", "  two\n\nlines \n", "a < b and <tool", "no </tool_call> opened", "<tool_call"):
        assert calls_of(text) == (text or None, [])
        assert streamed(list(text) or [""])[:2] == (text or None, [])


def test_calls_and_the_text_around_them():
    text = "Let me check.\n" + WEATHER + "\n" + WEATHER.replace("Zürich", "Paris") + "\nDone."
    content, calls = parse(text, HERMES)
    assert content == "Let me check.\n\n\nDone."
    assert [c["function"] for c in calls] == [{"name": "get_weather", "arguments": '{"city": "Zürich"}'},
                                              {"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert all(c["type"] == "function" and c["id"].startswith("call_") and len(c["id"]) == 29 for c in calls)
    assert len({c["id"] for c in calls}) == 2
    # only whitespace outside the calls: no content
    assert calls_of("\n" + WEATHER + "\n\n" + WEATHER + "\n") == (None, [("get_weather", '{"city": "Zürich"}')] * 2)


def test_braces_strings_markers_and_unicode_inside_the_arguments():
    content, calls = calls_of(TRICKY + " after")
    assert content == " after"
    assert calls[0][0] == "run"
    args = json.loads(calls[0][1])
    assert args["code"] == 'if (a) { b("</tool_call>") }' and args["nested"]["a"][1]["b"] == "<tool_call>"
    assert args["emoji"] == "🙂 é\n"
    assert calls[0][1] == TRICKY[len('<tool_call>{"name": "run", "arguments": '):-len("}</tool_call>")]


def test_the_arguments_are_the_models_text_or_written_again_in_another_key_order():
    assert calls_of('<tool_call>{"name":"f","arguments":{"a":1,"b":[2, 3]}}</tool_call>')[1] == \
        [("f", '{"a":1,"b":[2, 3]}')]
    text = '<tool_call>\n{"name": "temp",\n"arguments": {"where":\n"San Francisco", "unit": "C"}}\n</tool_call>'
    assert calls_of(text)[1] == [("temp", '{"where":\n"San Francisco", "unit": "C"}')] == streamed(list(text))[1]
    assert calls_of('<tool_call>{"arguments": {"a": "é"}, "name": "f", "id": 3}</tool_call>')[1] == \
        [("f", '{"a": "é"}')]


@pytest.mark.parametrize("block", [
    "{not json}", '{"name": "f", "arguments": {"a": 1}', '{"name": "f"}', '{"name": "", "arguments": {}}',
    '{"name": "f", "arguments": "{}"}', '{"name": 3, "arguments": {}}', '["f", {}]',
    '{"name": "f", "arguments": {"a": NaN}}', '{"name": "f", "name": "g", "arguments": {}}',
    '{"name": "f", "arguments": {"a": 1, "a": 2}}', '{"name": "f", "arguments": {}} trailing',
])
def test_a_malformed_block_is_content_as_written(block):
    text = "before " + WEATHER + " <tool_call>" + block + "</tool_call> after"
    content, calls = calls_of(text)
    assert calls == [("get_weather", '{"city": "Zürich"}')]  # a good block beside it is still a call
    assert content == "before  <tool_call>" + block + "</tool_call> after"


def test_a_block_the_reply_leaves_open():
    assert calls_of('ok <tool_call>{"name": "f", "arguments": {"x": "y"}}\n') == ("ok ", [("f", '{"x": "y"}')])
    text = 'ok <tool_call>{"name": "f", "arguments": {"x": "y'
    assert calls_of(text) == (text, [])


CUTS = ["Let me check.\n" + WEATHER + "\n" + TRICKY + "\nDone.", WEATHER + WEATHER,
        '<tool_call>{"arguments": {"a": "</tool_call>"}, "name": "f"}</tool_call>x',
        "a <tool_call>{bad}</tool_call> b <tool_call>" + WEATHER[11:], "<tool<tool_call>" + WEATHER[11:] + "</tool"]


@pytest.mark.parametrize("text", CUTS)
def test_a_reply_cut_in_two_at_every_position_streams_what_the_whole_gives(text):
    whole = calls_of(text)
    for at in range(len(text) + 1):
        assert streamed([text[:at], text[at:]])[:2] == whole, at
    assert streamed(list(text))[:2] == whole


def test_markers_never_go_out_as_content_and_arguments_come_as_they_are_written():
    text = "Hi " + WEATHER
    content, calls, deltas = streamed(list(text))
    assert all("<" not in d.get("content", "") for d in deltas)
    pieces = [e["function"]["arguments"] for d in deltas for e in d.get("tool_calls", [])]
    assert len(pieces) > 5 and "".join(pieces) == '{"city": "Zürich"}'  # piece by piece, not at the end


def test_a_streamed_call_stands_once_announced():
    """Streaming cannot take back a call it announced: a block that turns out malformed after its name and the
    start of its arguments keeps its call (the whole answer gives the block as content)."""
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}, oops</tool_call>'
    assert calls_of(text) == (text, [])
    assert streamed(list(text))[:2] == (None, [("f", '{"a": 1}')])


MISTRAL_REPLY = ('Sure.[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Zürich", "s": "}]"}}, '
                 '{"arguments": {}, "name": "now"}]')
LLAMA_REPLY = (' {"name": "get_weather", "parameters": {"city": "Zürich", "s": "};{"}}; '
               '{"name": "now", "arguments": {}}')


def test_mistral_calls_follow_their_marker():
    assert calls_of(MISTRAL_REPLY, MISTRAL) == ("Sure.", [("get_weather", '{"city": "Zürich", "s": "}]"}'),
                                                          ("now", "{}")])
    for text in ("no marker: [{\"name\": \"f\", \"arguments\": {}}]", "", "[TOOL_CALLS"):
        assert calls_of(text, MISTRAL) == (text or None, [])
    # what follows the marker that is not a call is content as written (the list's brackets and commas are not)
    assert calls_of('[TOOL_CALLS] [{"name": "f"}, {"name": "g", "arguments": {}}] done', MISTRAL) == \
        ('{"name": "f"}done', [("g", "{}")])


def test_llama3_json_calls_are_the_reply():
    assert calls_of(LLAMA_REPLY, LLAMA) == (None, [("get_weather", '{"city": "Zürich", "s": "};{"}'), ("now", "{}")])
    assert calls_of('<|python_tag|>{"name": "f", "parameters": {"x": [1]}}', LLAMA) == (None, [("f", '{"x": [1]}')])
    for text in ('Sure: {"name": "f", "parameters": {}}', '{"answer": 42}', '{"name": "f", "parameters": {}, '
                 '"arguments": {}}', "plain"):  # calls only from the reply's start; not a call: content
        assert calls_of(text, LLAMA) == (text, [])


@pytest.mark.parametrize("fmt,text", [(MISTRAL, MISTRAL_REPLY), (LLAMA, LLAMA_REPLY),
                                      (LLAMA, '<|python_tag|>{"name": "f", "parameters": {}};{"bad": 1}x')])
def test_mistral_and_llama3_json_cut_at_every_position_stream_what_the_whole_gives(fmt, text):
    whole = calls_of(text, fmt)
    for at in range(len(text) + 1):
        assert streamed([text[:at], text[at:]], fmt)[:2] == whole, at


# replies made of text pieces without markers and well-formed calls
_TEXT = st.text(st.sampled_from(list("ab {}\"\\<>/\n é🙂")), max_size=12).filter(lambda s: "<tool_call>" not in s)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                      lambda v: st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=4), v, max_size=3),
                      max_leaves=8)
_CALL = st.builds(lambda name, args, sep: (name, json.dumps(args, ensure_ascii=False, separators=sep)),
                  st.text(st.sampled_from(list("fg_é</>")), min_size=1, max_size=6),
                  st.dictionaries(st.text(max_size=5), _VALUE, max_size=3), st.sampled_from([(",", ":"), None]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_TEXT, _CALL), max_size=5), st.lists(st.integers(1, 7), min_size=1, max_size=6))
def test_streamed_in_any_pieces_equals_the_whole(parts, sizes):
    runs = "".join(p if isinstance(p, str) else "\0" for p in parts)  # text pieces side by side join
    assume(all("<tool_call>" not in run for run in runs.split("\0")))
    text = "".join(p if isinstance(p, str) else
                   "<tool_call>" + json.dumps({"name": p[0]}, ensure_ascii=False)[:-1] + ', "arguments": ' + p[1] +
                   "}</tool_call>" for p in parts)
    content, calls = calls_of(text)
    assert calls == [p for p in parts if not isinstance(p, str)]
    outside = "".join(p for p in parts if isinstance(p, str))
    assert content == ((outside if outside.strip() or not calls else "") or None)
    pieces, at, k = [], 0, 0
    while at < len(text):
        pieces.append(text[at:at + sizes[k % len(sizes)]])
        at, k = at + sizes[k % len(sizes)], k + 1
    assert streamed(pieces or [""])[:2] == (content, calls)
