"""Tool calls parsed out of a chat reply's text, as `vllm serve --enable-auto-tool-choice --tool-call-parser
NAME` parses them. Three ways models write their calls (FORMATS):

* hermes (Hermes 2 Pro, Qwen 2.5 and 3, their fine-tunes): each call a block
  `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`; the text outside the blocks is content.
* mistral (Mistral 7B Instruct v0.3 and kin with a Hugging Face tokenizer): `[TOOL_CALLS]` then a list
  `[{"name": ..., "arguments": {...}}, ...]`; the text before the marker is content.
* llama3_json (Llama 3.1 to 3.3 with JSON tool calling): the reply is `{"name": ..., "parameters": {...}}`
  objects separated by `;`, after `<|python_tag|>` or from the reply's first character.

One machine (ToolCallParser) reads the text piece by piece, for the streamed answer (stream=True: a call is
announced, then its arguments sent as they come) and for the whole one (stream=False: fed all the text at once,
each call decided when its object closes), so the two give the same calls and content (docs/serve.md: Tool
calling). An object that is not a call (not JSON, no name, arguments not an object, a key twice) is content
as it was written."""
import dataclasses
import functools
import json
import re
import uuid


@dataclasses.dataclass(frozen=True)
class Format:
    start: str  # the marker a call (with an end marker) or the calls (without: to the reply's end) come after
    end: str = None  # hermes: the marker that ends each call
    keys: tuple = ("arguments",)  # the name of a call's arguments object (one of them)
    at_start: bool = False  # a reply whose first character (after whitespace) is "{" is calls too
    special: bool = False  # the start marker is a special token: the reply's text keeps special tokens

    def parser(self, stream, tools=None):
        """A new reader of one reply's calls (tools: the request's, unused by the JSON formats)."""
        return ToolCallParser(stream, self)


FORMATS = {"hermes": Format("<tool_call>", "</tool_call>"),
           "llama3_json": Format("<|python_tag|>", keys=("arguments", "parameters"), at_start=True),
           "mistral": Format("[TOOL_CALLS]", special=True)}
PARSERS = tuple(FORMATS)  # the --tool-call-parser names
_SEPARATORS = " \t\r\n[],;"  # between the objects of a calls section (a list, or objects joined by ";")


@functools.lru_cache(maxsize=None)
def _head(keys):
    """A call's beginning in the usual key order, up to its arguments object's "{": its arguments are streamed
    as they come (a call in another key order is sent whole when its object closes)."""
    return re.compile(r'\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"(?:' + "|".join(keys) + r')"\s*:\s*',
                      re.DOTALL)


def call_id():
    """A new call's id (OpenAI's form)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _held(text, marker):
    """How many characters at the end of text may begin marker (they wait for the next piece)."""
    for n in range(min(len(text), len(marker) - 1), 0, -1):
        if marker.startswith(text[-n:]):
            return n
    return 0


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


class _Block:
    """The text of one call: after hermes' start marker, scanned for the end marker outside JSON strings (a
    string may hold "</tool_call>"); in a calls section, one object, ended by its closing brace. Scanned for
    where its first nested value (the arguments object) begins and ends."""

    def __init__(self, fmt, head):
        self.end, self.keys, self.head = fmt.end, fmt.keys, head
        self.body = ""
        self.pos = 0  # body[:pos] is scanned
        self.in_string = self.escaped = False
        self.depth = 0
        self.first_open = self.first_close = None  # body[first_open:first_close]: the first value at depth 2
        self.index = None  # the call's index once it is announced (streaming)
        self.sent = 0  # body[first_open:sent] went out as arguments
        self.settled = False  # the head was looked at: it is announced, or it will be decided at the close

    def advance(self, final):
        """Scans what arrived; returns the text after the block when it closed, else None (with final, a
        possible start of the end marker at the end is body text: nothing more comes)."""
        body, end = self.body, self.end
        while self.pos < len(body):
            c = body[self.pos]
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif c == "\\":
                    self.escaped = True
                elif c == '"':
                    self.in_string = False
            elif end is not None and body.startswith(end, self.pos):
                rest, self.body = body[self.pos + len(end):], body[:self.pos]
                return rest
            elif end is not None and not final and len(body) - self.pos < len(end) and \
                    end.startswith(body[self.pos:]):
                return None  # perhaps the marker: wait for the next piece
            elif c == '"':
                self.in_string = True
            elif c in "{[":
                self.depth += 1
                if self.depth == 2 and self.first_open is None:
                    self.first_open = self.pos
            elif c in "}]":
                self.depth -= 1
                if self.depth == 1 and self.first_open is not None and self.first_close is None:
                    self.first_close = self.pos + 1
                if self.depth == 0 and end is None:  # a section's object is whole
                    rest, self.body = body[self.pos + 1:], body[:self.pos + 1]
                    return rest
            self.pos += 1
        return None

    def head_name(self):
        """The function's name when the block begins `{"name": "...", "arguments": {`, else None."""
        m = self.head.match(self.body)
        if m is None or m.end() != self.first_open or self.body[self.first_open] != "{":
            return None
        try:
            name = json.loads(m.group(1))
        except ValueError:
            return None
        return name or None

    def call(self):
        """(name, arguments text) when the whole body is a call, else None. The arguments are the model's own
        text of the object when the block is in the usual key order (what streaming sent), else the object
        written again as JSON."""
        try:
            obj = json.loads(self.body, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict):
            return None
        args = [obj[k] for k in self.keys if k in obj]
        if not isinstance(obj.get("name"), str) or not obj["name"] or len(args) != 1 or not isinstance(args[0], dict):
            return None
        if self.head_name() is not None and self.first_close is not None:
            return obj["name"], self.body[self.first_open:self.first_close]
        return obj["name"], json.dumps(args[0], ensure_ascii=False)


class Events:
    """What every reader of calls shares: its events, ("content", text), ("call", index, id, name) once per
    call, then ("arguments", index, text) pieces. The content is the text outside the calls as it is, or none
    when that is only whitespace (the newlines around blocks) and there are calls."""

    def __init__(self):
        self.ws = ""  # the content so far while it is only whitespace: held, it is none if calls come
        self.started = False  # content other than whitespace went out
        self.n_calls = 0

    def _content(self, text, out):
        if not self.started:
            self.ws += text
            if not self.ws.strip():
                return
            text, self.ws, self.started = self.ws, "", True
        if text:
            out.append(("content", text))

    def _held_ws(self, out):
        """At the reply's end: whitespace held is content when no call came."""
        if self.ws and not self.n_calls:
            out.append(("content", self.ws))
        self.ws = ""

    def _new_call(self, name, out):
        index, self.n_calls = self.n_calls, self.n_calls + 1
        out.append(("call", index, call_id(), name))
        return index


class Scanner(Events):
    """A reader of calls in blocks, fed piece by piece: _run(out, final) reads self.buf, _close(out, closed) decides
    the block self.block; feed() and finish() return Events' events."""

    def __init__(self):
        super().__init__()
        self.buf = ""  # text not yet read
        self.block = None  # the open block, None outside blocks

    def feed(self, text):
        out = []
        self.buf += text
        self._run(out, final=False)
        return out

    def finish(self):
        """The events of the text's end: a block still open is decided as it is (vLLM takes an unclosed block
        too), held text goes out."""
        out = []
        self._run(out, final=True)
        if self.block is not None:
            self._close(out, closed=False)
        self._held_ws(out)
        return out


class ToolCallParser(Scanner):
    """The calls and content of one reply's text, fed piece by piece. A reply without calls is its text
    unchanged. fmt: a FORMATS entry."""

    def __init__(self, stream, fmt):
        super().__init__()
        self.stream, self.fmt, self.head = stream, fmt, _head(fmt.keys)
        self.section = False  # in a calls section (a format without an end marker): objects and separators

    def _run(self, out, final):
        fmt = self.fmt
        while True:
            if self.block is None and self.section:
                rest = self.buf.lstrip(_SEPARATORS)
                if not rest:
                    self.buf = ""
                    return
                if rest[0] == "{":
                    self.buf, self.block = rest, _Block(fmt, self.head)
                else:  # not a call: the section is over, what follows is text
                    self.buf, self.section = rest, False
                    continue
            elif self.block is None:
                lead = self.buf.lstrip() if fmt.at_start and not self.started and not self.n_calls else ""
                if lead.startswith("{"):  # llama3_json: the reply begins with a call
                    self._content(self.buf[:len(self.buf) - len(lead)], out)
                    self.buf, self.section = lead, True
                    continue
                at = self.buf.find(fmt.start)
                if at < 0:
                    n = len(self.buf) - (0 if final else _held(self.buf, fmt.start))
                    self._content(self.buf[:n], out)
                    self.buf = self.buf[n:]
                    return
                self._content(self.buf[:at], out)
                self.buf = self.buf[at + len(fmt.start):]
                if fmt.end is None:
                    self.section = True
                    continue
                self.block = _Block(fmt, self.head)
            block = self.block
            block.body += self.buf
            self.buf = ""
            rest = block.advance(final)
            if self.stream:
                self._announce(block, out)
            if rest is None:
                return
            self._close(out, closed=True)
            self.buf = rest

    def _announce(self, block, out):
        """Streaming: the call once its name and the start of its arguments are read, then its arguments."""
        if not block.settled and block.first_open is not None:
            block.settled = True
            name = block.head_name()
            if name is not None:
                block.index, block.sent = self._new_call(name, out), block.first_open
        if block.index is not None:
            upto = block.first_close if block.first_close is not None else block.pos
            if upto > block.sent:
                out.append(("arguments", block.index, block.body[block.sent:upto]))
                block.sent = upto

    def _close(self, out, closed):
        block, self.block = self.block, None
        if block.index is not None:  # announced while streaming: it stands, whatever its end turned out to be
            return
        call = block.call()
        if call is not None:
            index = self._new_call(call[0], out)
            out.append(("arguments", index, call[1]))
        elif self.fmt.end is None:  # a section's object that is not a call
            self._content(block.body, out)
        else:
            self._content(self.fmt.start + block.body + (self.fmt.end if closed else ""), out)


def kept(events, first_only):
    """events, or with first_only (parallel_tool_calls false) the content and call 0's events alone."""
    return [e for e in events if e[0] == "content" or e[1] == 0] if first_only else events


def delta(events, first_only=False):
    """The OpenAI message delta of events: content, and tool_calls entries ({"index", "id", "type",
    "function": {"name", "arguments": ""}} when a call begins, {"index", "function": {"arguments"}} for more of
    its arguments; a call's pieces in one delta make one entry). first_only: the entries of call 0 alone
    (parallel_tool_calls false)."""
    events = kept(events, first_only)
    content = "".join(e[1] for e in events if e[0] == "content")
    out = {"content": content} if content else {}
    calls = []
    for e in events:
        if e[0] == "call":
            calls.append({"index": e[1], "id": e[2], "type": "function", "function": {"name": e[3], "arguments": ""}})
        elif e[0] == "arguments":
            if calls and calls[-1]["index"] == e[1]:
                calls[-1]["function"]["arguments"] += e[2]
            else:
                calls.append({"index": e[1], "function": {"arguments": e[2]}})
    if calls:
        out["tool_calls"] = calls
    return out


def parse(text, reader):
    """(content or None, [{"id", "type", "function": {"name", "arguments"}}]) of a whole reply. reader: a FORMATS
    entry (a ToolCallParser with stream=False reads it), or a new parser (anything with its feed and finish)."""
    parser = reader.parser(False) if isinstance(reader, Format) else reader
    whole = delta(parser.feed(text) + parser.finish())
    calls = [{k: v for k, v in c.items() if k != "index"} for c in whole.get("tool_calls", [])]
    return whole.get("content"), calls
