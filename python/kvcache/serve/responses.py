"""OpenAI's Responses API (POST /v1/responses, GET /v1/responses/{id}) over the chat machinery: a request's
`input` (after its `instructions`, and after the conversation of a stored `previous_response_id`) becomes a chat
body, its function tools chat's tools; the reply becomes a Response object (a message item, function_call
items), or its stream of typed events. docs/serve.md, "Responses"."""
import collections
import dataclasses
import json
import re
import threading
import time
import uuid

from .protocol import MAX_LOGPROBS, MAX_MESSAGES, MAX_TOOLS, ApiError, bad

MAX_STORED = 1024  # responses kept for previous_response_id and GET; beyond, the oldest are dropped
MAX_STORED_CHARS = 64 << 20  # characters of the stored conversations and answers together; beyond, the oldest go
MAX_METADATA = 16  # metadata pairs (OpenAI's limits: 16 keys of at most 64 characters, values of at most 512)
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
LOGPROBS = "message.output_text.logprobs"  # the one `include` value taken
# vLLM's sampling fields a Responses body may carry too (extra_body), passed on to the chat request as they are
PASSED = ("seed", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "stop",
          "stop_token_ids", "ignore_eos", "min_tokens", "logit_bias", "priority", "cache_salt",
          "skip_special_tokens", "chat_template_kwargs", "bad_words", "allowed_token_ids")
# chat field -> the Responses field a refusal names
FIELDS = {"messages": "input", "max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
          "response_format": "text", "top_logprobs": "top_logprobs", "n": "input"}
# chat's names in a refusal's message -> the Responses ones (its tools are flat: no "function" object)
_MESSAGE_NAMES = ((re.compile(r"\bmax_(completion_)?tokens\b"), "max_output_tokens"),
                  (re.compile(r"\bresponse_format: json_schema\b"), "text.format"),
                  (re.compile(r"\bresponse_format\b"), "text.format"),
                  (re.compile(r"\b(tools\[\d+\])\.function\."), r"\1."))


@dataclasses.dataclass
class Asked:
    """What a Responses request asked beside the chat request it became."""
    id: str
    conversation: list  # the chat messages of previous turns and this input (no instructions), for the store
    store: bool
    logprobs: bool  # include message.output_text.logprobs
    echoed: dict  # the request's fields the Response object repeats
    items: list  # the request's input as OpenAI's input items (GET /v1/responses/{id}/input_items)


def _text_part(part, where):
    if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text", "text") or \
            not isinstance(part.get("text"), str):
        raise bad(f"{where} must be a text part {{\"type\": \"input_text\", \"text\": ...}} (only text is "
                  "supported)", "input")
    return part["text"]


def _input(value):
    """The chat messages of `input`: a text (a user message) or a list of message items."""
    if isinstance(value, str):
        if not value:
            raise bad("input must be a non-empty text or a list of messages", "input")
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not 0 < len(value) <= MAX_MESSAGES:
        raise bad(f"input must be a non-empty text or a list of 1 to {MAX_MESSAGES} messages", "input")
    out = []
    for i, item in enumerate(value):
        kind = item.get("type", "message") if isinstance(item, dict) else type(item).__name__
        if kind in ("function_call", "function_call_output"):
            _call_item(item, i, out)
            continue
        if kind != "message":
            raise bad(f"input[{i}]: only message, function_call and function_call_output items are supported, not "
                      f"{str(kind)[:64]!r}", "input")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise bad(f"input[{i}].role must be one of {', '.join(ROLES)}", "input")
        if isinstance(content, list):
            content = "\n".join(_text_part(p, f"input[{i}].content[{j}]") for j, p in enumerate(content))
        elif not isinstance(content, str):
            raise bad(f"input[{i}].content must be a text or a list of text parts", "input")
        out.append({"role": ROLES[role], "content": content})
    return out


def _input_items(value):
    """A checked `input` as OpenAI lists input items: each with a new id and status "completed", a message's
    content as text parts."""
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    out = []
    for item in value:
        kind = item.get("type", "message")
        if kind == "message":
            part = "output_text" if item["role"] == "assistant" else "input_text"
            content = item["content"] if isinstance(item["content"], list) else [{"text": item["content"]}]
            out.append({"id": f"msg_{uuid.uuid4().hex}", "type": "message", "role": item["role"],
                        "content": [{"type": part, "text": p["text"]} for p in content], "status": "completed"})
        else:
            keep = ("call_id", "name", "arguments") if kind == "function_call" else ("call_id", "output")
            out.append({"id": f"{'fc' if kind == 'function_call' else 'fco'}_{uuid.uuid4().hex}", "type": kind,
                        **{k: item[k] for k in keep}, "status": "completed"})
    return out


def page(items, query):
    """OpenAI's list of input items (a page of them: query's limit 1 to 100, default 20; order "desc", the
    default, or "asc"; after: the id of the item the page follows)."""
    limit, order, after = query.get("limit", "20"), query.get("order", "desc"), query.get("after")
    if not limit.isdigit() or not 1 <= int(limit) <= 100:
        raise bad("limit must be an integer in [1, 100]", "limit")
    if order not in ("asc", "desc"):
        raise bad('order must be "asc" or "desc"', "order")
    items = items if order == "asc" else items[::-1]
    if after is not None:
        at = next((i for i, item in enumerate(items) if item["id"] == after), None)
        if at is None:
            raise bad(f"after {after[:80]!r} is no input item of this response", "after")
        items = items[at + 1:]
    data = items[:int(limit)]
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": len(items) > len(data)}


def _call_item(item, i, out):
    """A function_call input item as a call of an assistant message (joining the one before it), or a
    function_call_output as a tool message, appended to out (chat messages)."""
    for key in ("call_id", "name", "arguments") if item["type"] == "function_call" else ("call_id", "output"):
        if not isinstance(item.get(key), str):
            raise bad(f"input[{i}].{key} must be a string", "input")
    if item["type"] == "function_call_output":
        out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        return
    if item["arguments"]:  # checked here, as chat checks it, to name the Responses field (not chat's)
        try:
            json.loads(item["arguments"])
        except (ValueError, RecursionError) as exc:
            raise bad(f"input[{i}].arguments is not JSON: {exc}", "input") from None
    call = {"id": item["call_id"], "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]}}
    if out and out[-1]["role"] == "assistant":
        out[-1]["tool_calls"] = out[-1].get("tool_calls", []) + [call]
    else:
        out.append({"role": "assistant", "content": "", "tool_calls": [call]})


def _tools(tools):
    """The chat tools of Responses function tools ({"type": "function", "name", "description"?, "parameters"?,
    "strict"?}); chat's checks follow."""
    if tools is None:
        return None
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise bad(f"tools must be a list of at most {MAX_TOOLS} tools", "tools")
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise bad(f"tools[{i}]: only function tools are supported", "tools")
        out.append({"type": "function", "function": {k: tool[k] for k in ("name", "description", "parameters")
                                                      if tool.get(k) is not None}})
    return out


def _tool_choice(choice):
    """Chat's tool_choice of a Responses one: "auto", "none", "required" or {"type": "function", "name"}."""
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise bad('tool_choice must be "auto", "none", "required" or {"type": "function", "name": ...}', "tool_choice")


def _format(text):
    """The chat response_format of `text` ({"format": {"type": "text" | "json_object" | "json_schema", ...}})."""
    if text is not None and not isinstance(text, dict):
        raise bad("text must be an object {\"format\": {...}}", "text")
    fmt = None if text is None else text.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        raise bad("text.format must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": "
                  "\"json_schema\", \"name\": ..., \"schema\": {...}}", "text")
    if fmt["type"] != "json_schema":
        return {"type": fmt["type"]}
    return {"type": "json_schema", "json_schema": {k: fmt[k] for k in ("name", "schema", "strict") if k in fmt}}


def _metadata(v):
    if v is None:
        return None
    if not isinstance(v, dict) or len(v) > MAX_METADATA or \
            not all(isinstance(k, str) and len(k) <= 64 and isinstance(s, str) and len(s) <= 512
                    for k, s in v.items()):
        raise bad(f"metadata must be an object of at most {MAX_METADATA} strings (keys of at most 64 characters, "
                  "values of at most 512)", "metadata")
    return v


def _refused(body):
    """A 400 naming the first field asked for that the server does not have: reasoning settings, background runs,
    stored prompts and conversations, truncation "auto"."""
    for name in ("background", "prompt", "conversation", "reasoning"):
        v = body.get(name)
        if not (v is None or v is False or (name == "reasoning" and isinstance(v, dict)
                                             and all(x is None for x in v.values()))):
            raise bad(f"{name} is not supported", name)
    if body.get("truncation") not in (None, "disabled"):
        raise bad("truncation must be \"disabled\" (a conversation too long for the model is refused)", "truncation")
    for name in ("parallel_tool_calls", "store", "stream"):
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise bad(f"{name} must be true or false", name)
    for name in ("instructions", "previous_response_id", "user", "safety_identifier", "prompt_cache_key"):
        if body.get(name) is not None and not isinstance(body[name], str):
            raise bad(f"{name} must be a string", name)
    include = body.get("include")
    if include is not None and (not isinstance(include, list) or any(v != LOGPROBS for v in include)):
        raise bad(f"include may name only {LOGPROBS!r}", "include")


def request(body, store, tenant):
    """(the chat body, Asked) of a /v1/responses body; a stored previous_response_id (of this tenant) puts its
    conversation first (its instructions are not carried over, as OpenAI documents)."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    _refused(body)
    messages = _input(body.get("input"))  # checks the input (_input_items reads it so checked)
    previous = body.get("previous_response_id")
    if previous is not None:
        messages = store.conversation(previous, tenant) + messages
        if len(messages) > MAX_MESSAGES:
            raise bad(f"the conversation holds more than {MAX_MESSAGES} messages", "input")
    instructions = body.get("instructions")
    first = [{"role": "system", "content": instructions}] if instructions else []
    logprobs = LOGPROBS in (body.get("include") or [])
    top = body.get("top_logprobs")
    if top is not None and not logprobs:
        raise bad(f"top_logprobs needs include [{LOGPROBS!r}]", "top_logprobs")
    chat = {k: body[k] for k in PASSED if k in body}
    chat.update(messages=first + messages, model=body.get("model"), stream=body.get("stream", False),
                max_completion_tokens=body.get("max_output_tokens"), temperature=body.get("temperature"),
                top_p=body.get("top_p"), response_format=_format(body.get("text")), logprobs=logprobs,
                top_logprobs=top if logprobs else None, tools=_tools(body.get("tools")),
                tool_choice=_tool_choice(body.get("tool_choice")), parallel_tool_calls=body.get("parallel_tool_calls"))
    if chat["tool_choice"] == "auto" and chat["tools"] is None:  # the Responses default, unlike chat's, needs no tools
        chat["tool_choice"] = None
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_LOGPROBS):
        raise bad(f"top_logprobs must be an integer in [0, {MAX_LOGPROBS}]", "top_logprobs")
    echoed = {"instructions": instructions, "max_output_tokens": body.get("max_output_tokens"),
              "metadata": _metadata(body.get("metadata")), "previous_response_id": previous,
              "temperature": body.get("temperature"), "top_p": body.get("top_p"), "top_logprobs": top,
              "parallel_tool_calls": body.get("parallel_tool_calls") is not False, "tool_choice": body.get("tool_choice")
              or "auto", "tools": body.get("tools") or [],
              "text": {"format": (body.get("text") or {}).get("format") or {"type": "text"}},
              "truncation": "disabled", "user": body.get("user"), "store": body.get("store") is not False,
              "background": False, "reasoning": None, "service_tier": "default"}
    return chat, Asked(f"resp_{uuid.uuid4().hex}", messages, echoed["store"], logprobs, echoed,
                       _input_items(body["input"]))


def renamed(exc):
    """A chat refusal of a Responses request, naming the Responses fields (input for messages, ...), in its param
    and its message."""
    if not isinstance(exc, ApiError):
        return exc
    exc.param = FIELDS.get(exc.param, exc.param)
    for pattern, name in _MESSAGE_NAMES:
        exc.message = pattern.sub(name, exc.message)
    return exc


class Store:
    """The stored responses, by id: (tenant, the conversation with the answer, the Response object, its size,
    its input items), the oldest dropped beyond MAX_STORED of them or MAX_STORED_CHARS characters. The lock:
    requests are parsed on worker threads."""

    def __init__(self, max_items=MAX_STORED, max_chars=MAX_STORED_CHARS):
        self.items, self.chars, self.lock = collections.OrderedDict(), 0, threading.Lock()
        self.max_items, self.max_chars = max_items, max_chars

    def put(self, rid, tenant, conversation, response, items=()):
        size = len(json.dumps(conversation)) + len(json.dumps(response)) + len(json.dumps(items))
        with self.lock:
            self.items[rid] = (tenant, conversation, response, size, list(items))
            self.chars += size
            while self.items and (len(self.items) > self.max_items or self.chars > self.max_chars):
                self.chars -= self.items.popitem(last=False)[1][3]

    def _get(self, rid, tenant, param):
        with self.lock:
            item = self.items.get(rid)
        if item is None or item[0] != tenant:  # another tenant's response is not there for this one
            raise ApiError(404, f"no stored response {rid[:80]!r} (never stored, store false, or dropped as the "
                           "oldest)", param=param, code="response_not_found")
        return item

    def conversation(self, rid, tenant):
        return list(self._get(rid, tenant, "previous_response_id")[1])

    def response(self, rid, tenant):
        return self._get(rid, tenant, "response_id")[2]

    def input_items(self, rid, tenant):
        return self._get(rid, tenant, "response_id")[4]

    def delete(self, rid, tenant):
        self._get(rid, tenant, "response_id")
        with self.lock:
            item = self.items.pop(rid, None)
            self.chars -= item[3] if item else 0


def usage(u, cached):
    """A chat usage as the Responses API counts it."""
    return {"input_tokens": u["prompt_tokens"], "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": u["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u["total_tokens"]}


def message(mid, text, logprobs, status):
    """The output message item of a reply's text (logprobs: the chat's content logprobs entries)."""
    return {"id": mid, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs}]}


def function_call(call, status="completed"):
    """The function_call output item of a chat tool call."""
    return {"id": f"fc_{uuid.uuid4().hex}", "type": "function_call", "status": status, "call_id": call["id"],
            "name": call["function"]["name"], "arguments": call["function"]["arguments"]}


def thought(rid, text, status):
    """The reasoning output item of a reply's reasoning (a reasoning parser's)."""
    return {"id": rid, "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": text}],
            "encrypted_content": None, "status": status}


def output(content, calls, logprobs, reason, reasoning=None):
    """The output items of a whole reply: a reasoning item of its reasoning (if any), a message of its text,
    unless the reply is calls, or reasoning, and only whitespace around them (content None), then a function_call
    item per call."""
    status = "incomplete" if reason == "length" else "completed"
    items = [thought(f"rs_{uuid.uuid4().hex}", reasoning, status)] if reasoning else []
    if content is not None or not (calls or items):
        items.append(message(f"msg_{uuid.uuid4().hex}", content or "", logprobs, status))
    return items + [function_call(c) for c in calls]


def assistant(content, calls):
    """The chat message of a reply, as the store keeps it for the next turn."""
    return {"role": "assistant", "content": content or "", **({"tool_calls": calls} if calls else {})}


def response(asked, model, created, status, output, use=None, reason=None):
    """The Response object. reason: the generation's finish reason ("length": status incomplete)."""
    if status == "completed" and reason == "length":
        status = "incomplete"
    return {"id": asked.id, "object": "response", "created_at": created, "model": model, "status": status,
            "error": None, "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "output": output, "usage": use, **asked.echoed}


class Events:
    """The typed events of a streamed Response, numbered (sequence_number) as they go out. The output items open
    as the reply brings them: the message at its first text that is not only whitespace (or at the end, when
    the reply has no calls), a function_call item at each call's name."""

    def __init__(self, asked, model):
        self.asked, self.model, self.created = asked, model, int(time.time())
        self.seq, self.items, self.calls = 0, [], {}  # output items in order; call index -> its item's index
        self.msg, self.held, self.text, self.logprobs = None, "", [], []  # the message item's index, its pieces
        self.thought = None  # the reasoning item's index

    def _event(self, kind, **fields):
        out = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return f"event: {kind}\ndata: {json.dumps(out, ensure_ascii=False)}\n\n"

    def start(self):
        running = response(self.asked, self.model, self.created, "in_progress", [])
        return self._event("response.created", response=running) + self._event("response.in_progress",
                                                                                response=running)

    def _open(self, item):
        self.items.append(item)
        return self._event("response.output_item.added", output_index=len(self.items) - 1,
                           item={**item, "status": "in_progress"})

    def _where(self):
        return {"item_id": self.items[self.msg]["id"], "output_index": self.msg, "content_index": 0}

    def delta(self, text, logprobs, force=False):
        """A piece of the reply's text (and its tokens' logprobs); force: open the message item now."""
        self.logprobs += logprobs
        out = ""
        if self.msg is None:
            self.held += text
            if not force and not self.held.strip() and not logprobs:
                return ""
            text, self.held, self.msg = self.held, "", len(self.items)
            out = self._open({**message(f"msg_{uuid.uuid4().hex}", "", None, "in_progress"), "content": []}) + \
                self._event("response.content_part.added", **self._where(),
                            part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})
        self.text.append(text)
        return out + self._event("response.output_text.delta", **self._where(), delta=text, logprobs=logprobs)

    def reasoning(self, text):
        """A piece of the reply's reasoning: the reasoning item opens at the first."""
        out = ""
        if self.thought is None:
            self.thought = len(self.items)
            out = self._open(thought(f"rs_{uuid.uuid4().hex}", "", "in_progress"))
        item = self.items[self.thought]
        item["content"][0]["text"] += text
        return out + self._event("response.reasoning_text.delta", item_id=item["id"], output_index=self.thought,
                                 content_index=0, delta=text)

    def parsed(self, events):
        """The events of a tool-call parser (tool_calls.Events): content, a call's start, its arguments."""
        out = []
        for e in events:
            if e[0] == "content":
                out.append(self.delta(e[1], []))
            elif e[0] == "call":
                self.calls[e[1]] = len(self.items)
                out.append(self._open(function_call({"id": e[2], "function": {"name": e[3], "arguments": ""}})))
            else:
                item = self.calls[e[1]]
                self.items[item]["arguments"] += e[2]
                out.append(self._event("response.function_call_arguments.delta", item_id=self.items[item]["id"],
                                       output_index=item, delta=e[2]))
        return "".join(out)

    def finish(self, reason, use):
        """The closing events and (the final Response object, the reply as a chat message)."""
        out = [self.delta("", [], True)] if self.msg is None and not self.calls and self.thought is None else []
        status = "incomplete" if reason == "length" else "completed"
        calls = []
        for i, item in enumerate(self.items):
            if i == self.thought:
                item["status"] = status
                out.append(self._event("response.reasoning_text.done", item_id=item["id"], output_index=i,
                                       content_index=0, text=item["content"][0]["text"]))
            elif i == self.msg:
                text = "".join(self.text)
                item.update(message(item["id"], text, self.logprobs if self.asked.logprobs else None, status))
                out += [self._event("response.output_text.done", **self._where(), text=text, logprobs=self.logprobs),
                        self._event("response.content_part.done", **self._where(), part=item["content"][0])]
            else:
                calls.append({"id": item["call_id"], "type": "function",
                              "function": {"name": item["name"], "arguments": item["arguments"]}})
                out.append(self._event("response.function_call_arguments.done", item_id=item["id"], output_index=i,
                                       name=item["name"], arguments=item["arguments"]))
            out.append(self._event("response.output_item.done", output_index=i, item=item))
        final = response(self.asked, self.model, self.created, "completed", self.items, use, reason)
        content = "".join(self.text) if self.msg is not None else None
        return "".join(out) + self._event("response.completed", response=final), (final, assistant(content, calls))

    def failed(self, exc):
        return self._event("error", code="server_error", message=f"the engine failed: {exc}", param=None)
