"""Bounds on the JSON schemas of structured outputs (docs/serve.md, "Structured outputs"): the compile work a
request queues on the grammar threads every structured request shares. Before them only the body's size bounded
it, and llguidance's time grows fast with some shapes (measured with the test model's tokenizer: 5,000 optional
properties of one object, 150 KB, 47 s; an allOf of 11 anyOf pairs, 1.5 KB, 13 s and a panic). Each bound is an
InvalidArgument naming what passed it; the server makes it a 400 naming the request's field."""
import json

from ._lib import invalid

MAX_SCHEMA_CHARS = 65536  # the schema's JSON text, as a grammar's source (structured.MAX_GRAMMAR_CHARS)
MAX_SCHEMA_DEPTH = 64  # nesting of its JSON objects and arrays, and of the $ref chains it follows
MAX_OBJECT_PROPERTIES = 256  # `properties` of one object schema (1,000 optional ones compile in 1.6 s)
MAX_PROPERTIES = 1024  # `properties` of all its object schemas together
MAX_ENUM_VALUES = 1024  # values of one `enum`
# the schemas an allOf stands for once merged: the product of its items' alternatives (an item's anyOf / oneOf
# branches, summed; its own allOf's, multiplied); an allOf of 8 anyOf pairs (256) took 0.9 s, of 6 (64) 0.1 s
MAX_ALLOF_COMBINATIONS = 64


def checked_schema(schema, what="the JSON schema"):
    """schema's JSON text once it passes the bounds above; InvalidArgument naming `what` and the bound otherwise."""
    if not isinstance(schema, dict):
        raise invalid(f"{what} must be an object, not {type(schema).__name__}")
    try:
        text = json.dumps(schema)
    except (ValueError, RecursionError):  # NaN passes the body's parser; a nesting past Python's recursion
        raise invalid(f"{what} is not JSON a schema can be") from None
    if len(text) > MAX_SCHEMA_CHARS:
        raise invalid(f"{what} has {len(text)} characters as JSON: at most {MAX_SCHEMA_CHARS}")
    total = 0
    alternatives = _Alternatives(schema, what)
    stack = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise invalid(f"{what} nests deeper than {MAX_SCHEMA_DEPTH} levels of objects and arrays")
        if isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
            continue
        if not isinstance(node, dict):
            continue
        props, enum = node.get("properties"), node.get("enum")
        if isinstance(props, dict):
            if len(props) > MAX_OBJECT_PROPERTIES:
                raise invalid(f"{what} has an object of {len(props)} properties: at most {MAX_OBJECT_PROPERTIES}")
            total += len(props)
            if total > MAX_PROPERTIES:
                raise invalid(f"{what} has more than {MAX_PROPERTIES} properties in all")
        if isinstance(enum, list) and len(enum) > MAX_ENUM_VALUES:
            raise invalid(f"{what} has an enum of {len(enum)} values: at most {MAX_ENUM_VALUES}")
        if isinstance(node.get("allOf"), list):
            alternatives.of_all(node["allOf"])
        stack.extend((v, depth + 1) for v in node.values())
    return text


class _Alternatives:
    """How many schemas a schema node stands for once its allOf items are merged (llguidance merges an allOf into
    one schema per combination of its items' branches): 1 for a plain schema, the sum of its anyOf / oneOf
    branches', times the product of its allOf items', times its local $ref's target's. Memoized per node, so a
    schema whose $refs share a definition is walked once."""

    def __init__(self, root, what):
        self.root, self.what, self.memo, self.resolving = root, what, {}, []

    def of_all(self, items):
        n = 1
        for item in items:
            n *= self.of(item)
            if n > MAX_ALLOF_COMBINATIONS:
                raise invalid(f"{self.what} has an allOf that stands for more than {MAX_ALLOF_COMBINATIONS} "
                              "schemas once merged (the product of its items' anyOf / oneOf branches)")
        return n

    def of(self, node):
        if not isinstance(node, dict):
            return 1
        if id(node) in self.memo:
            return self.memo[id(node)]
        if id(node) in self.resolving:  # a recursive $ref: counted once
            return 1
        if len(self.resolving) > MAX_SCHEMA_DEPTH:
            raise invalid(f"{self.what} nests its anyOf / oneOf / allOf / $ref deeper than {MAX_SCHEMA_DEPTH}")
        self.resolving.append(id(node))
        branches = [b for key in ("anyOf", "oneOf") if isinstance(node.get(key), list) for b in node[key]]
        n = sum(self.of(b) for b in branches) if branches else 1
        if isinstance(node.get("allOf"), list):
            n *= self.of_all(node["allOf"])
        target = self._target(node.get("$ref"))
        if target is not None:
            n *= self.of(target)
        self.resolving.pop()
        self.memo[id(node)] = n
        return n

    def _target(self, ref):
        """The node a local $ref ("#", "#/$defs/a") points to; None for another (llguidance's to refuse)."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node
