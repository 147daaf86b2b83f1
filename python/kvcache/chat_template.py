"""Chat templates (tokenizer_config.json's "chat_template") rendered with
jinja2 the way transformers' apply_chat_template renders them: a sandboxed
environment with trim_blocks and lstrip_blocks, the loopcontrols extension,
the `tojson` filter that keeps non-ASCII text, the raise_exception and
strftime_now globals, the `{% generation %}` block (rendered as its body),
and the special tokens (bos_token, eos_token, ...) as variables."""
import datetime
import functools
import json

import jinja2
import jinja2.defaults
import jinja2.ext
import jinja2.sandbox


# The names a template sees beside its arguments (jinja2's own and transformers'): an argument may not shadow one.
GLOBALS = frozenset(jinja2.defaults.DEFAULT_NAMESPACE) | {"raise_exception", "strftime_now"}
# What a template's own code raises on values it did not expect (a message field of another type, an argument
# that is no string): the client's conversation is refused (400), as vLLM takes them, not a server failure.
_EVALUATION_ERRORS = (TypeError, ValueError, LookupError, ArithmeticError, AttributeError, RecursionError)


class TemplateError(ValueError):
    """A template that does not compile, or that refused the conversation (raise_exception)."""


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


class _Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: transformers marks assistant
    tokens with it; rendering keeps the body as it is."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


@functools.lru_cache(maxsize=8)
def compile_template(source):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[_Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    try:
        return env.from_string(source)
    except jinja2.exceptions.TemplateError as exc:
        raise TemplateError(f"the chat template does not compile: {exc}") from None


def render(source, messages, *, add_generation_prompt=False, special_tokens=None, tools=None, documents=None,
           **kwargs):
    """The template's text for the conversation (a list of {"role", "content", ...} dicts)."""
    template = compile_template(source)
    try:
        return template.render(messages=messages, tools=tools, documents=documents,
                               add_generation_prompt=add_generation_prompt, **(special_tokens or {}), **kwargs)
    except jinja2.exceptions.TemplateError as exc:
        raise TemplateError(f"the chat template refused the conversation: {exc}") from None
    except _EVALUATION_ERRORS as exc:
        raise TemplateError(f"the chat template failed on the conversation: {type(exc).__name__}: {exc}") from None
