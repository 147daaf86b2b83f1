"""Tool-call readers of the formats that are not JSON objects (tool_calls.py reads those), as vLLM's parsers of
the same names take them; each call is sent whole once it is read (docs/serve.md, "Tool calling"):

* pythonic (Llama 3.2, Llama 4): the reply is a Python list of calls, `[get_weather(city="Paris", days=3)]`,
  keyword arguments whose values are literals (strings, numbers, True / False / None, lists, dicts). Read with
  Python's ast (never evaluated); anything else is content.
* qwen3_coder (Qwen3-Coder): blocks `<tool_call><function=NAME><parameter=P>value</parameter>...</function>
  </tool_call>`; each value is text, turned into the type the tool's parameter schema names.

FORMATS holds every --tool-call-parser: these and tool_calls.FORMATS."""
import ast
import json
import math
import re

from . import tool_calls


def _literal(node):
    """The JSON value of an ast literal: str, int, float (finite), bool, None, lists / tuples and dicts with
    string keys of them, a sign before a number. ValueError for anything else (a name, a call, an operation)."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, bool, int, float))):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ValueError("not a finite number")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
        v = _literal(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        keys = [_literal(k) if k is not None else None for k in node.keys]
        if not all(isinstance(k, str) for k in keys):
            raise ValueError("a dict key that is not a string")
        return dict(zip(keys, (_literal(v) for v in node.values)))
    raise ValueError(f"not a literal: {type(node).__name__}")


def _python_value(text):
    """The JSON value of a Python literal's text, or ValueError."""
    try:
        return _literal(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, RecursionError, MemoryError) as exc:
        raise ValueError(str(exc)) from None


def _calls_of_list(text):
    """[(name, arguments JSON text)] of a Python list of calls `[f(a=1), g()]`, or None when text is not one."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        if not isinstance(tree, ast.List) or not tree.elts:
            return None
        calls = []
        for call in tree.elts:
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args or \
                    any(k.arg is None for k in call.keywords):  # positional or **arguments name no parameter
                return None
            args = {k.arg: _literal(k.value) for k in call.keywords}
            calls.append((call.func.id, json.dumps(args, ensure_ascii=False)))
        return calls
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class PythonicParser(tool_calls.Events):
    """A reply that begins (after blanks) with "[" is held to its end, then read as a list of calls (content
    none) or, when it is not one, given as content; any other reply is content as it comes."""

    def __init__(self):
        super().__init__()
        self.held = None  # the reply so far while it may be calls (None: content)
        self.decided = False

    def feed(self, text):
        out = []
        if self.decided:
            if self.held is None:
                self._content(text, out)
            else:
                self.held += text
            return out
        self._content(text, out)  # blanks only are held by Events until something else comes
        if self.started:
            first = out[0][1] if out else ""
            self.decided = True
            if first.lstrip().startswith("["):
                self.held, self.started = first, False
                out.clear()
        return out

    def finish(self):
        out = []
        if self.held is not None:
            calls = _calls_of_list(self.held)
            if calls is None:
                self._content(self.held, out)
            for name, args in calls or ():
                out.append(("arguments", self._new_call(name, out), args))
        self._held_ws(out)
        return out


_FUNCTION = re.compile(r"\s*<function=([^>\n]*)>(.*?)</function>\s*\Z", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_TEXT_TYPES = ("string", "str", "text", "varchar", "char", "enum")
_INT_TYPES = ("int", "uint", "long", "short", "unsigned")


def _typed(value, schema):
    """A qwen3_coder parameter's text as the type its schema names (vLLM's rules): "null" is null; string types
    and parameters the tool does not describe stay text; integer and number types, booleans ("true" / "false")
    and other types (objects, arrays: JSON, else a Python literal) are converted, a text that does not convert
    staying text."""
    if value.lower() == "null":
        return None
    kind = str(schema.get("type", "string")).strip().lower() if isinstance(schema, dict) else None
    try:
        if kind is None or kind in _TEXT_TYPES:
            return value
        if kind.startswith(_INT_TYPES):
            return int(value)
        if kind.startswith(("num", "float")):
            number = float(value)
            if not math.isfinite(number):  # "inf", "nan": no JSON number
                return value
            return int(number) if number.is_integer() else number
        if kind in ("boolean", "bool", "binary"):
            return {"true": True, "false": False}.get(value.lower(), value)
        try:
            return json.loads(value, parse_constant=tool_calls._no_constant)
        except (ValueError, RecursionError):
            return _python_value(value)
    except (ValueError, OverflowError):
        return value


class _Tools:
    """The parameters' schemas of a request's tools, by function name."""

    def __init__(self, tools):
        self.schemas = {}
        for tool in tools or ():
            f = tool["function"]
            params = f.get("parameters") or {}
            props = params.get("properties")
            self.schemas.setdefault(f["name"], props if isinstance(props, dict) else {})


def _xml_call(block, tools):
    """(name, arguments JSON text) of a qwen3_coder block's text (between its markers), or None."""
    m = _FUNCTION.match(block)
    if m is None or not m.group(1).strip():
        return None
    name = m.group(1).strip()
    schemas = tools.schemas.get(name, {})
    args = {}
    for p in _PARAMETER.finditer(m.group(2)):
        value = p.group(2)
        value = value[1:] if value.startswith("\n") else value  # the newline after the tag and before the next one
        value = value[:-1] if value.endswith("\n") else value
        key = p.group(1).strip()
        args[key] = _typed(value, schemas.get(key))  # a parameter the tool does not describe: text (or null)
    return name, json.dumps(args, ensure_ascii=False)


class XmlBlockParser(tool_calls.Scanner):
    """Blocks between START and END markers anywhere in the reply, each a call read by _xml_call when it closes
    (or at the reply's end, unclosed); the text outside them is content, a block that is no call content as
    written, markers included."""
    START, END = "<tool_call>", "</tool_call>"

    def __init__(self, tools):
        super().__init__()
        self.tools = _Tools(tools)  # self.block: the open block's text

    def _run(self, out, final):
        while True:
            if self.block is None:
                at = self.buf.find(self.START)
                if at < 0:
                    n = len(self.buf) - (0 if final else tool_calls._held(self.buf, self.START))
                    self._content(self.buf[:n], out)
                    self.buf = self.buf[n:]
                    return
                self._content(self.buf[:at], out)
                self.block, self.buf = "", self.buf[at + len(self.START):]
            at = self.buf.find(self.END)
            if at < 0:
                n = len(self.buf) - (0 if final else tool_calls._held(self.buf, self.END))
                self.block, self.buf = self.block + self.buf[:n], self.buf[n:]
                return
            self.block, self.buf = self.block + self.buf[:at], self.buf[at + len(self.END):]
            self._close(out, closed=True)

    def _close(self, out, closed):
        block, self.block = self.block, None
        call = _xml_call(block, self.tools)
        if call is None:
            self._content(self.START + block + (self.END if closed else ""), out)
        else:
            out.append(("arguments", self._new_call(call[0], out), call[1]))


class _Reader:
    """A --tool-call-parser of this module: parser(stream, tools) makes a reader of one reply."""
    special = False

    def __init__(self, make):
        self.parser = lambda stream, tools=None: make(tools)


FORMATS = {**tool_calls.FORMATS, "pythonic": _Reader(lambda tools: PythonicParser()),
           "qwen3_coder": _Reader(XmlBlockParser)}
PARSERS = tuple(FORMATS)  # the --tool-call-parser names
