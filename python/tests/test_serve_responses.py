"""kvcache.serve's /v1/responses (OpenAI's Responses API) through the real `openai` client: text in and out equal
to the chat reply of the same conversation, streamed events, instructions, max_output_tokens, logprobs,
text.format json_schema, previous_response_id with store (and tenants), retrieve, and every refusal
(function tools: test_serve_tools.py)."""
import json
import re

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402
import openai  # noqa: E402

from serve_fixture import running  # noqa: E402
from text_model import make_model_dir  # noqa: E402

KEYS = ["key-a", "key-b"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running(make_model_dir(tmp_path_factory.mktemp("model")), api_keys=KEYS) as (url, srv):
        yield url, srv


def make_client(server, key=KEYS[0]):
    return openai.OpenAI(base_url=server[0] + "/v1", api_key=key, max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def client(server):
    with make_client(server) as c:
        yield c


def chat_text(client, messages, **kw):
    r = client.chat.completions.create(model="test", messages=messages, temperature=0, **kw)
    return r.choices[0].message.content, r.choices[0].finish_reason, r.usage


def test_text_in_and_out_is_the_chat_reply(client):
    r = client.responses.create(model="test", input="Hello there", instructions="Be brief.", max_output_tokens=6,
                                temperature=0)
    text, reason, use = chat_text(client, [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": "Hello there"}], max_completion_tokens=6)
    assert r.object == "response" and r.id.startswith("resp_") and r.model == "test"
    assert r.output_text == text and r.output[0].role == "assistant" and r.output[0].type == "message"
    assert (r.status, r.incomplete_details and r.incomplete_details.reason) == \
        (("incomplete", "max_output_tokens") if reason == "length" else ("completed", None))
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens) == \
        (use.prompt_tokens, use.completion_tokens, use.total_tokens)
    assert r.instructions == "Be brief." and r.max_output_tokens == 6
    # message items with text parts (one per line, as chat's and vLLM's) and the developer role (a system message
    # to the template)
    items = [{"role": "developer", "content": "Be brief."},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"},
                                                               {"type": "input_text", "text": "there"}]}]
    r = client.responses.create(model="test", input=items, max_output_tokens=6, temperature=0, store=False)
    text, _, use = chat_text(client, [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Hello\nthere"}], max_completion_tokens=6)
    assert (r.output_text, r.usage.input_tokens) == (text, use.prompt_tokens)


def test_streamed_events_add_up_to_the_whole(client):
    whole = client.responses.create(model="test", input="Numbers 0 1 2", max_output_tokens=8, temperature=0,
                                    store=False)
    events = list(client.responses.create(model="test", input="Numbers 0 1 2", max_output_tokens=8, temperature=0,
                                          store=False, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]  # also when incomplete, as the SDK's stream helper needs it
    assert events[-1].response.status == whole.status
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == whole.output_text == events[-4].text
    assert events[-1].response.output_text == whole.output_text
    assert events[-1].response.usage.output_tokens == whole.usage.output_tokens


def test_previous_response_id_continues_the_stored_conversation(server, client):
    first = client.responses.create(model="test", input="The quick brown fox", max_output_tokens=6, temperature=0,
                                    instructions="Ignored later.")
    second = client.responses.create(model="test", input="And then?", previous_response_id=first.id,
                                     max_output_tokens=6, temperature=0)
    text, _, _ = chat_text(client, [{"role": "user", "content": "The quick brown fox"},
                                    {"role": "assistant", "content": first.output_text},
                                    {"role": "user", "content": "And then?"}], max_completion_tokens=6)
    assert second.output_text == text and second.previous_response_id == first.id
    assert client.responses.retrieve(second.id).output_text == second.output_text
    # another tenant sees neither; store false keeps nothing
    with make_client(server, KEYS[1]) as other:
        with pytest.raises(openai.NotFoundError):
            other.responses.retrieve(first.id)
        with pytest.raises(openai.NotFoundError) as err:
            other.responses.create(model="test", input="x", previous_response_id=first.id, max_output_tokens=2)
        assert err.value.body["param"] == "previous_response_id"
    nulled = httpx.post(server[0] + "/v1/responses", headers={"Authorization": f"Bearer {KEYS[0]}"}, timeout=60,
                        json={"model": "test", "input": "x", "max_output_tokens": 1, "store": None}).json()
    assert client.responses.retrieve(nulled["id"]).id == nulled["id"] and nulled["store"] is True  # null: default
    unstored = client.responses.create(model="test", input="x", max_output_tokens=1, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)
    with client.responses.stream(model="test", input="x", max_output_tokens=2, previous_response_id=second.id) as s:
        streamed = s.get_final_response()  # the SDK's stream helper, stored too
    assert client.responses.retrieve(streamed.id).output_text == streamed.output_text
    client.responses.delete(streamed.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(streamed.id)


def test_input_items_list_a_stored_input(server, client):
    items = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "What is it?"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
             {"role": "assistant", "content": "42"},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "So?"}]}]
    r = client.responses.create(model="test", input=items, max_output_tokens=1)
    listed = client.responses.input_items.list(r.id, order="asc")  # the SDK's pages follow `after` themselves
    got = [(i.type, getattr(i, "role", None), getattr(i, "call_id", None)) for i in listed]
    assert got == [("message", "developer", None), ("message", "user", None), ("function_call", None, "c1"),
                   ("message", "assistant", None), ("message", "user", None)]
    first = client.responses.input_items.list(r.id, limit=2)  # desc by default, as OpenAI's
    assert first.has_more and first.data[0].content[0].text == "So?" and first.data[1].content[0].text == "42"
    assert first.data[1].content[0].type == "output_text"
    assert [i.id for i in client.responses.input_items.list(r.id, after=first.last_id).data] == \
        [i.id for i in listed.data][::-1][2:]
    assert client.responses.input_items.list(client.responses.create(model="test", input="Hi", max_output_tokens=1)
                                             .id).data[0].content[0].text == "Hi"
    for query, field in (("limit=0", "limit"), ("order=up", "order"), ("after=nope", "after")):
        bad = httpx.get(f"{server[0]}/v1/responses/{r.id}/input_items?{query}", timeout=60,
                        headers={"Authorization": f"Bearer {KEYS[0]}"})
        assert (bad.status_code, bad.json()["error"]["param"]) == (400, field)
    with make_client(server, KEYS[1]) as other, pytest.raises(openai.NotFoundError):
        other.responses.input_items.list(r.id)  # per API key, as the store


def test_store_drops_the_oldest_beyond_its_bounds():
    from kvcache.serve.responses import Store

    store = Store(max_items=2, max_chars=10**6)
    for i in range(3):
        store.put(f"r{i}", None, [{"role": "user", "content": "x"}], {"id": f"r{i}"})
    with pytest.raises(Exception):
        store.response("r0", None)
    assert store.response("r2", None) == {"id": "r2"} and store.conversation("r1", None)[0]["content"] == "x"
    small = Store(max_items=10, max_chars=200)
    for i in range(5):
        small.put(f"r{i}", None, [{"role": "user", "content": "y" * 60}], {})
    assert len(small.items) == 2 and small.chars <= 200


def test_logprobs_and_json_schema(client):
    r = client.responses.create(model="test", input="Hi", max_output_tokens=4, temperature=0, store=False,
                                include=["message.output_text.logprobs"], top_logprobs=2)
    lps = r.output[0].content[0].logprobs
    assert len(lps) == r.usage.output_tokens - (r.status == "completed")  # the end-of-sequence id is no text
    assert all(len(lp.top_logprobs) == 2 and lp.logprob <= 0 for lp in lps)
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["a"], "additionalProperties": False}
    r = client.responses.create(model="test", input="Give JSON", max_output_tokens=32, temperature=0, store=False,
                                text={"format": {"type": "json_schema", "name": "x", "schema": schema}})
    assert set(json.loads(r.output_text)) == {"a"}


REFUSED = [
    ({"input": ""}, "input"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}]}, "input"),  # named chat's
    ({"min_tokens": 9}, "min_tokens"),  # its message named max_tokens
    ({"tools": [{"type": "function", "name": "f", "parameters": 5}]}, "tools"),  # named tools[0].function.parameters
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "bogus"}}}}, "text"),  # named
    ({"input": [{"type": "reasoning", "summary": []}]}, "input"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input"),
    ({"tools": [{"type": "web_search"}]}, "tools"),
    ({"tools": [{"type": "function", "name": ""}]}, "tools"),
    ({"tools": [{"type": "function", "name": "f"}]}, "tool_choice"),  # auto: the server has no parser
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tool_choice": {"type": "file_search"}}, "tool_choice"),
    ({"background": True}, "background"),
    ({"reasoning": {"effort": "high"}}, "reasoning"),
    ({"truncation": "auto"}, "truncation"),
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"include": [{}]}, "include"),  # was a 500 (a set of unhashable values)
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"max_output_tokens": 10**6}, "max_output_tokens"),
    ({"max_output_tokens": -1}, "max_output_tokens"),  # its message named max_completion_tokens
    ({"text": {"format": {"type": "yaml"}}}, "text"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": 5}}}, "text"),
    ({"metadata": {str(i): "v" for i in range(17)}}, "metadata"),
    ({"store": "yes"}, "store"),
    ({"instructions": 5}, "instructions"),
    ({"previous_response_id": "resp_nothing"}, "previous_response_id"),
]


def test_refusals_name_the_field(server):
    with httpx.Client(base_url=server[0], headers={"Authorization": f"Bearer {KEYS[0]}"}, timeout=60) as http:
        for fields, param in REFUSED:
            r = http.post("/v1/responses", json={"model": "test", "input": "Hi", "max_output_tokens": 4, **fields})
            assert r.status_code == (404 if param == "previous_response_id" else 400), r.text
            assert r.json()["error"]["param"] == param, (fields, r.text)
            message = r.json()["error"]["message"]
            assert not re.search(r"max_(completion_)?tokens|messages\[|response_format|\.function\.", message), r.text
        # the Responses API's default tool_choice "auto" needs no tools there (chat's 400 is not passed on)
        r = http.post("/v1/responses", json={"model": "test", "input": "Hi", "max_output_tokens": 4, "store": False,
                                             "tool_choice": "auto"})
        assert r.status_code == 200, r.text
