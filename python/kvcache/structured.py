"""Structured outputs: a grammar (a JSON schema, any JSON object, a regular
expression, a list of choices, or a context-free grammar in Lark or GBNF) that every generated token must keep the
output inside, through llguidance (PyPI `llguidance`, one of vLLM's
backends), which builds its token tables from tokenizer.json alone. kvcache.Engine fills a request's allowed-token
mask from its Matcher before every token it samples and advances the
Matcher with the token (kvc_engine_set_allowed_tokens; docs/serve.md,
"Structured outputs"). No JSON, regex or GBNF parser is written here.
"""
import json
import threading

import numpy as np

from ._lib import invalid
from .schema_bounds import checked_schema

# No whitespace between JSON tokens beyond what strings hold (as vLLM's disable_any_whitespace, which vLLM leaves
# off): a model free to add blanks may pad for ever, an untrained or unsure one most of all.
_JSON_OPTIONS = {"whitespace_flexible": False}


def _llguidance():
    try:
        import llguidance
    except ImportError:
        raise invalid("structured outputs need the llguidance package (pip install 'kvcache[serve]')") from None
    return llguidance


# characters of a grammar's source: a context-free grammar's text, a regular expression, the Lark source of the
# choices (a bound on the compile and first-mask work a request queues on the grammar threads that every
# structured request shares: 20,000 guided_choice options, 120,004 characters, took 2 s and more)
MAX_GRAMMAR_CHARS = 65536


def json_grammar(schema):
    """The llguidance grammar of a JSON schema (a dict; {"type": "object"} for any JSON object); raises
    InvalidArgument with llguidance's reason for a schema it cannot compile, or the bound of schema_bounds.py it
    passes."""
    text = checked_schema(schema)
    return _checked(lambda lg: lg.LLMatcher.grammar_from_json_schema(text, defaults=_JSON_OPTIONS), "the JSON schema")


def regex_grammar(regex):
    """The llguidance grammar of outputs matching a regular expression (llguidance's syntax, Rust's regex
    crate: the whole output matches); raises InvalidArgument with llguidance's reason for one it cannot
    compile."""
    if not isinstance(regex, str):
        raise invalid(f"a regular expression must be a string, not {type(regex).__name__}")
    if len(regex) > MAX_GRAMMAR_CHARS:
        raise invalid(f"a regular expression of {len(regex)} characters: at most {MAX_GRAMMAR_CHARS}")
    return _checked(lambda lg: lg.LLMatcher.grammar_from_regex(regex), "the regular expression")


def choice_grammar(choices):
    """The llguidance grammar of outputs that are exactly one of choices (a non-empty list of strings), each
    written as a Lark string literal (JSON's escapes, which Lark reads)."""
    if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
        raise invalid("the choices must be a non-empty list of strings")
    source = "start: " + " | ".join(json.dumps(c, ensure_ascii=False) for c in choices)
    if len(source) > MAX_GRAMMAR_CHARS:
        raise invalid(f"{len(choices)} choices written as a grammar of {len(source)} characters: at most "
                      f"{MAX_GRAMMAR_CHARS}")
    return _checked(lambda lg: lg.LLMatcher.grammar_from_lark(source), "the choices")


def cfg_grammar(text):
    """The llguidance grammar of a context-free grammar's text: Lark (llguidance's syntax, `start:` its first
    rule) or GBNF, llama.cpp's EBNF that vLLM's xgrammar backend reads (`root ::= ...`), which llguidance converts
    to Lark; raises InvalidArgument with the reason for one that does not compile."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_GRAMMAR_CHARS:
        raise invalid(f"a grammar must be a non-empty string of at most {MAX_GRAMMAR_CHARS} characters")
    return _checked(lambda lg: lg.grammar_from("grammar", text), "the grammar")


MAX_STRUCTURES = 64  # structures of a structural tag


def structural_tag_grammar(spec):
    """The llguidance grammar of vLLM's structural tag {"structures": [{"begin", "schema", "end"}, ...],
    "triggers": [...]} (an object or its JSON text): free text, in which each structure's `begin` (which starts
    with one of the triggers) is followed by JSON following its schema (no whitespace between its tokens, as the
    other JSON grammars), then its `end`. InvalidArgument with the reason for one that is malformed or does not
    compile."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except (ValueError, RecursionError):
            raise invalid("a structural tag must be an object or its JSON text") from None
    structures = spec.get("structures") if isinstance(spec, dict) else None
    triggers = spec.get("triggers") if isinstance(spec, dict) else None
    if not isinstance(structures, list) or not 0 < len(structures) <= MAX_STRUCTURES or \
            not isinstance(triggers, list) or not triggers or not all(isinstance(t, str) and t for t in triggers):
        raise invalid(f"a structural tag needs structures (a list of 1 to {MAX_STRUCTURES}) and triggers (a "
                      "non-empty list of non-empty strings)")
    tags = []
    for i, s in enumerate(structures):
        if not isinstance(s, dict) or not isinstance(s.get("begin"), str) or not isinstance(s.get("end"), str) or \
                not isinstance(s.get("schema"), dict):
            raise invalid(f"structures[{i}] must be {{\"begin\": a string, \"schema\": a JSON schema, \"end\": a "
                          "string}")
        trigger = next((t for t in triggers if s["begin"].startswith(t)), None)
        if trigger is None:
            raise invalid(f"structures[{i}].begin {s['begin'][:64]!r} starts with none of the triggers")
        checked_schema(s["schema"], f"structures[{i}].schema")
        tags.append((trigger, s["begin"], {**s["schema"], "x-guidance": _JSON_OPTIONS}, s["end"]))
    return _checked(lambda lg: lg.StructTag.to_grammar([lg.StructTag(trigger=t, begin=b, grammar=g, end=e)
                                                        for t, b, g, e in tags]), "the structural tag")


def _checked(make, what):
    lg = _llguidance()
    try:
        grammar = make(lg)
    except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: GBNF's converter on a deep nesting
        raise invalid(f"{what} is not valid: {exc}") from None
    error = lg.LLMatcher.validate_grammar(grammar)
    if error:
        raise invalid(f"{what} is not valid: {error}")
    return grammar


class Vocabulary:
    """llguidance's view of a tokenizer.json (its text) for a model of vocab_size ids (masks have
    cdiv(vocab_size, 32) words); eos_token_ids end a generation. Built once (a pass over the vocabulary),
    shared by every Grammar of the model."""

    def __init__(self, tokenizer_json, vocab_size, eos_token_ids):
        lg = _llguidance()
        try:
            self.ll = lg.LLTokenizer(tokenizer_json, n_vocab=vocab_size, eos_token=list(eos_token_ids) or None)
        except (ValueError, TypeError, RuntimeError) as exc:
            raise invalid(f"structured outputs: llguidance cannot read the tokenizer: {exc}") from None
        self.vocab_size = vocab_size
        self.eos = np.asarray(list(eos_token_ids), dtype=np.int64)


class Lazy:
    """A Vocabulary made on first use (under a lock: request threads may ask at once); its refusal is kept."""

    def __init__(self, make):
        self._make, self._lock, self._value, self._error = make, threading.Lock(), None, None

    def get(self):
        with self._lock:
            if self._value is None and self._error is None:
                try:
                    self._value = self._make()
                except Exception as exc:  # told to every request that asks, not retried
                    self._error = exc
            if self._error is not None:
                raise self._error
            return self._value


class Grammar:
    """A compiled grammar for one vocabulary; matcher() gives each request (each choice) its own state."""

    def __init__(self, vocabulary, grammar):
        self.vocabulary, self.grammar = vocabulary, grammar
        self._first, self._lock = None, threading.Lock()  # the matcher compiled on first use, never advanced

    def matcher(self):
        """A matcher at the grammar's start: a copy of the one compiled on first use. Compiling takes seconds for a
        large grammar (20,000 guided_choice options: 3 s) and ran for each choice on the engine's thread, which every
        request waits for; check() on a worker thread compiles it, a copy takes nothing."""
        with self._lock:
            if self._first is None:
                self._first = _llguidance().LLMatcher(self.vocabulary.ll, self.grammar, log_level=0)
            return Matcher(self._first.deep_copy(), self.vocabulary.eos)

    def check(self):
        """Makes a matcher and its first mask; InvalidArgument with the reason when either fails."""
        m = self.matcher()
        m.fill(np.zeros((self.vocabulary.vocab_size + 31) // 32, dtype=np.uint32))
        if m.error:
            raise invalid(f"structured outputs: {m.error.splitlines()[0]}")


class Matcher:
    """One request's place in its grammar."""

    def __init__(self, m, eos):
        self._m, self._eos = m, eos
        if m.is_error():  # its first line: a panic's message goes on with a backtrace
            raise invalid(f"structured outputs: {m.get_error().splitlines()[0]}")

    def fill(self, words):
        """Writes the tokens the grammar allows next into words (uint32 [cdiv(vocab, 32)], bit t % 32 of word
        t / 32), the model's end-of-sequence ids left out: which tokens end the output is the request's choice
        (its stop tokens; none with ignore_eos), allowed where `accepting`."""
        self._m.unsafe_compute_mask_ptr(words.ctypes.data, words.nbytes)
        set_bits(words, self._eos, False)

    def accept(self, token):
        """Advances past a sampled token; False when the grammar refuses it (the matcher is then in error)."""
        return self._m.consume_token(int(token))

    @property
    def accepting(self):
        """The output so far is complete (an end-of-sequence token may come)."""
        return self._m.is_accepting()

    @property
    def stopped(self):
        """Nothing but an end-of-sequence token may come."""
        return self._m.is_stopped()

    @property
    def error(self):
        return self._m.get_error() if self._m.is_error() else None


def set_bits(words, ids, on):
    """Sets (on) or clears the bits of token ids [n] in a mask words [cdiv(vocab, 32)]."""
    at, bits = ids // 32, np.uint32(1) << (ids % 32).astype(np.uint32)
    if on:
        np.bitwise_or.at(words, at, bits)
    else:
        np.bitwise_and.at(words, at, ~bits)
