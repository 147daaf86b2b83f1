"""Tool calls a chat request forces with tool_choice, as vLLM forces them: the output is held by a JSON schema
(structured outputs, docs/serve.md "Tool calling"), so it is calls whatever the model, with or without
--enable-auto-tool-choice.

* a named function ({"type": "function", "function": {"name"}}): the output is that function's arguments
  object (the schema its parameters, any object when it has none); the reply is one call of it.
* "required": the output is a list of at least one {"name": a tool's name, "parameters": its arguments}
  (each item one of the tools' shapes); the reply is those calls.

The finish reason stays the generation's ("stop", or "length" when max_tokens cut it), as vLLM answers."""
from .tool_calls import Format, call_id

ANY_OBJECT = {"type": "object"}
# "required": the list the schema forces, read by the tool call parser as a calls section
REQUIRED = Format("[", keys=("parameters",))


def parameters(tool):
    """The schema of a tool's arguments: its parameters held to objects (a call's arguments are an object, in
    OpenAI's API and for the parser), any object when it has none; None when they allow no object."""
    schema = tool["function"].get("parameters") or ANY_OBJECT
    if "type" not in schema:
        return {**schema, "type": "object"}
    return schema if schema["type"] == "object" else None


def required_schema(tools):
    """The JSON schema of tool_choice "required": [{"name", "parameters"}, ...], at least one, in that key order
    (the parser announces a call once its name and the start of its arguments are read)."""
    shapes = [{"type": "object", "properties": {"name": {"type": "string", "enum": [t["function"]["name"]]},
                                                "parameters": p},
               "required": ["name", "parameters"], "additionalProperties": False}
              for t, p in zip(tools, map(parameters, tools))]
    return {"type": "array", "minItems": 1, "items": {"anyOf": shapes}}


class NamedCall:
    """The events (tool_calls.ToolCallParser's) of a reply that is the arguments of one named call: the call
    when the first text comes (at the end at the latest), then the text as its arguments."""

    def __init__(self, name):
        self.name = name
        self.n_calls = 0

    def _announce(self, out):
        if not self.n_calls:
            self.n_calls = 1
            out.append(("call", 0, call_id(), self.name))

    def feed(self, text):
        out = []
        if text:
            self._announce(out)
            out.append(("arguments", 0, text))
        return out

    def finish(self):
        out = []
        self._announce(out)
        return out
