"""The OpenAI request bodies the server accepts, checked field by field, and
the error shape it answers with (docs/serve.md lists both)."""
import dataclasses
import json

from .. import schema_bounds, structured
from . import forced_calls
from ..errors import InvalidArgument

MAX_LOGPROBS = 20
MAX_REQUEST_ID = 256  # characters of a client's request id
MAX_STOP = 16  # stop strings per request
MAX_STOP_LEN = 256  # characters of one stop string
MAX_MESSAGES = 1024
MAX_CHOICES = 128  # choices per request: n x the prompts of a batch (OpenAI's limit of n)
MAX_LOGIT_BIAS = 300  # logit_bias entries (the engine's KVC_SAMPLING_MAX_LOGIT_BIAS)
MAX_MIN_TOKENS_STOPS = 64  # stop tokens min_tokens holds back (the engine's KVC_SAMPLING_MAX_STOP_IDS)
MAX_TOOLS = 128  # tools per request (OpenAI's limit)
# stop_token_ids per request: each choice's are checked when it is queued and looked up for each token it generates,
# on the engine's thread every request shares (120k ids of a 152k vocabulary: 55 ms a choice queued, 2 ms a token)
MAX_STOP_TOKEN_IDS = 1024
MAX_BAD_WORDS = 128  # bad_words per request; each is 1 or 2 token sequences (token_masks.MAX_BAD_WORDS: 256)
MAX_BAD_WORD_LEN = 256  # characters of one bad word


class ApiError(Exception):
    """An answer in the OpenAI error shape:
    {"error": {"message", "type", "param", "code"}} with the HTTP status."""

    def __init__(self, status, message, *, param=None, code=None, type="invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type

    def body(self):
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(message, param=None, code=None):
    return ApiError(400, message, param=param, code=code)


def check_content_type(value):
    """A request body must be declared JSON (vLLM refuses any other media type with 400 too); a request that
    declares none is read as JSON."""
    media = (value or "application/json").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise bad(f"the request body must be JSON (Content-Type: application/json), not {value!r}")


def parse_body(data):
    """The JSON value of a request body, or a 400 naming what is wrong: not JSON, nested deeper than the
    parser goes, or holding a string that is not Unicode text (a lone surrogate escape such as "\\ud800",
    which JSON's grammar allows but no tokenizer or UTF-8 encoder takes)."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise bad("the request body is not valid JSON: nested too deeply") from None
    pending = [body]
    while pending:  # every key and string value, without recursion
        v = pending.pop()
        if isinstance(v, dict):
            pending.extend(v.keys())
            pending.extend(v.values())
        elif isinstance(v, list):
            pending.extend(v)
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise bad(f"the request body holds a string that is not Unicode text ({exc.reason} "
                          f"{v[exc.start:exc.end]!a})") from None
    return body


@dataclasses.dataclass
class Generation:
    """What one completion or chat request asks of the engine, after the checks."""
    model: str  # None or "": the served model (vLLM's default)
    stream: bool
    include_usage: bool
    continuous_usage: bool  # with include_usage: every chunk has the usage so far (vLLM's continuous_usage_stats)
    max_tokens: int  # None: up to the model's length
    temperature: float
    top_p: float
    top_k: int
    seed: int
    stop: tuple
    stop_token_ids: tuple
    ignore_eos: bool
    logprobs: int  # None: none; else the number of alternatives per token
    priority: int
    cache_salt: str
    tokens_as_ids: bool  # logprobs name tokens "token_id:ID" (vLLM's return_tokens_as_token_ids)
    token_ids: bool  # choices carry their token ids, and the prompt's (vLLM's return_token_ids)
    n: int  # choices per prompt
    skip_special_tokens: bool  # special tokens left out of the text (vLLM's field, default true)
    include_stop: bool  # the stop string that ended the text kept at its end (vLLM's include_stop_str_in_output)
    echo: bool  # the prompt's text before each choice's (chat: a final assistant message's, vLLM's)
    add_special_tokens: bool  # the tokenizer adds its special tokens (BOS) to the prompt (vLLM's field)
    prompt_logprobs: int = None  # vLLM's: None, or the alternatives per prompt token in each prompt_logprobs entry
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_tokens: int = 0  # stop tokens and stop strings wait for that many generated tokens
    logit_bias: dict = None  # {token id: bias}
    tool_calls: bool = False  # chat: the reply's text is parsed for tool calls (tools with tool_choice auto)
    required_calls: bool = False  # chat: tool_choice "required", the reply is a list of calls (forced_calls)
    named_call: str = None  # chat: tool_choice names this function, the reply is its arguments (forced_calls)
    grammar: tuple = None  # structured outputs: (structured.*_grammar, its argument), compile_grammar's (None: free)
    allowed_token_ids: tuple = None  # vLLM's: the only tokens sampled (None: all)
    bad_words: tuple = ()  # vLLM's: words never generated (the server tokenizes them: bad_word_ids)
    bad_word_ids: tuple = ()  # the token sequences of bad_words
    tools: list = None  # chat: the request's tools (a parser converts a call's arguments by their schemas)
    truncate: int = None  # vLLM's truncate_prompt_tokens: the prompt's last this many tokens (-1: max_model_len)
    truncate_right: bool = False  # vLLM's truncation_side "right": truncate keeps the prompt's first tokens
    grammar_field: str = None  # the field that asked for it
    first_call_only: bool = False  # chat: parallel_tool_calls false, a reply keeps its first call (vLLM's)
    include_reasoning: bool = True  # chat: a reasoning parser's reasoning is in the reply (vLLM's field)
    thinking: bool = None  # chat with a reasoning parser: the reply begins inside the think block (None: no parser)
    request_id: str = None  # vLLM's request_id (or the X-Request-Id header): the answer's id after its prefix


def request_id(value, name):
    """A client's request id (vLLM's request_id field or X-Request-Id header): 1 to MAX_REQUEST_ID visible ASCII
    characters, no spaces (it becomes the answer's id)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_REQUEST_ID or not all("!" <= c <= "~" for c in value):
        raise bad(f"{name} must be 1 to {MAX_REQUEST_ID} visible ASCII characters (no spaces)", name)
    return value


def _logprob_count(body, name, default, vocab_size):
    """top_logprobs / prompt_logprobs: 0 to MAX_LOGPROBS, or -1 (vLLM's: the whole vocabulary), which vLLM's
    default --max-logprobs 20 refuses unless the vocabulary is that small."""
    v = _int(body, name, default, -1, MAX_LOGPROBS)
    if v == -1:
        if vocab_size > MAX_LOGPROBS:
            raise bad(f"{name} -1 asks for the whole vocabulary ({vocab_size} tokens), more than the {MAX_LOGPROBS} "
                      "the server gives (vLLM's default --max-logprobs)", name)
        v = vocab_size
    return v


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _number(body, name, default, lo, hi):
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise bad(f"{name} must be a number in [{lo}, {hi}], got {v!r}", name)
    return float(v)


def _int(body, name, default, lo, hi):
    """An integer field; a float with no fraction (5.0, as JSON encoders of doubles write it) is that integer,
    as vLLM's (pydantic's) parsing takes it."""
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not _is_int(v):
        raise bad(f"{name} must be an integer in [{lo}, {hi}], got {v!r}", name)
    if not lo <= v <= hi:  # pydantic's names of the two bounds, which vLLM's clients and tests look for
        bound = f"greater_than_equal {lo}" if v < lo else f"less_than_equal {hi}"
        raise bad(f"{name} must be an integer in [{lo}, {hi}] ({bound}), got {v!r}", name)
    return v


def _bool(body, name, default=False, parent=None):
    """A boolean field of body (parent: the field body is, named by a refusal as OpenAI's param does)."""
    v = body.get(name, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        field = f"{parent}.{name}" if parent else name
        raise bad(f"{field} must be true or false, got {v!r}", parent or name)
    return v


def _stop(body):
    v = body.get("stop")
    if v is None:
        return ()
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or len(items) > MAX_STOP or \
            not all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_LEN for s in items):
        raise bad(f"stop must be a string or a list of at most {MAX_STOP} non-empty strings of at most "
                  f"{MAX_STOP_LEN} characters", "stop")
    return tuple(items)


def _logit_bias(body, vocab_size):
    """{token id: bias} of logit_bias: an object whose keys are token ids (decimal strings, as JSON writes
    them) and whose values are numbers in [-100, 100] (OpenAI's range), at most MAX_LOGIT_BIAS entries."""
    v = body.get("logit_bias")
    if v is None:
        return None
    if not isinstance(v, dict) or len(v) > MAX_LOGIT_BIAS:
        raise bad(f"logit_bias must be an object of at most {MAX_LOGIT_BIAS} token ids and biases", "logit_bias")
    def is_id(key):  # a key of thousands of digits is no id (and past int()'s 4300-digit limit)
        digits = key.lstrip("0") or "0"
        return key.isascii() and key.isdigit() and len(digits) <= len(str(vocab_size)) and int(digits) < vocab_size

    wrong = [key for key in v if not is_id(key)]
    if wrong:  # every one named, as vLLM names them
        raise bad(f"logit_bias: {', '.join(repr(k[:32]) for k in wrong[:16])}{' ...' if len(wrong) > 16 else ''} "
                  f"{'is not a token id' if len(wrong) == 1 else 'are not token ids'} in [0, {vocab_size})",
                  "logit_bias")
    out = {}
    for key, b in v.items():
        digits = key.lstrip("0") or "0"
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not -100 <= b <= 100:
            raise bad(f"logit_bias: the bias of token {digits} must be a number in [-100, 100], got {b!r}",
                      "logit_bias")
        out[int(digits)] = out.get(int(digits), 0.0) + float(b)  # "7" and "07" name one token: the biases add (as C)
    return out or None


def _allowed_token_ids(body, vocab_size):
    """vLLM's allowed_token_ids: a non-empty list of token ids (at most the vocabulary's size of them)."""
    v = body.get("allowed_token_ids")
    if v is None:
        return None
    if not isinstance(v, list) or not 0 < len(v) <= vocab_size or \
            not all(_is_int(t) and 0 <= t < vocab_size for t in v):
        raise bad(f"allowed_token_ids must be a non-empty list of at most {vocab_size} token ids in "
                  f"[0, {vocab_size})", "allowed_token_ids")
    return tuple(v)


def _bad_words(body):
    """vLLM's bad_words: a list of at most MAX_BAD_WORDS strings, each with text beside leading blanks."""
    v = body.get("bad_words")
    if v is None:
        return ()
    if not isinstance(v, list) or len(v) > MAX_BAD_WORDS or \
            not all(isinstance(w, str) and w.strip() and len(w) <= MAX_BAD_WORD_LEN for w in v):
        raise bad(f"bad_words must be a list of at most {MAX_BAD_WORDS} strings of 1 to {MAX_BAD_WORD_LEN} characters "
                  "(not only whitespace)", "bad_words")
    return tuple(v)


def _repetition_penalty(body):
    v = _number(body, "repetition_penalty", 1.0, 0.0, 2.0)
    if v == 0.0:
        raise bad("repetition_penalty must be a number in (0, 2], got 0", "repetition_penalty")
    return v


def _unsupported(body, n):
    best_of = _int(body, "best_of", n, 1, MAX_CHOICES)
    if best_of != n:
        raise bad(f"best_of must equal n ({n}): candidates are not ranked", "best_of")
    # asked-for behaviour the sampler or the server does not have: refused by name, never silently dropped
    for name in ("suffix", "guided_whitespace_pattern", "logits_processors", "use_beam_search", "chat_template",
                 "guided_decoding_backend", "reasoning_effort", "thinking_token_budget", "vllm_xargs",
                 "logprob_token_ids", "prompt_embeds"):
        v = body.get(name)
        if not (v is None or v is False or v == ""):  # 0 is a value asked for (prompt_logprobs 0 asks for them)
            raise bad(f"{name} is not supported", name)


_FORMATS = ('{"type": "text"}, {"type": "json_object"}, {"type": "json_schema", "json_schema": {"name", "schema"}} '
            'or {"type": "structural_tag", "structures": [...], "triggers": [...]}')


def _schema_text(schema, field):
    """A schema vLLM takes as an object or as its JSON text."""
    if not isinstance(schema, str):
        return schema
    try:
        return json.loads(schema)
    except (ValueError, RecursionError):  # text nested past the parser's depth was a 500
        raise bad(f"{field} must be a JSON schema (an object or its JSON text)", field) from None


def _response_format(fmt):
    """The JSON schema of an OpenAI response_format (None for none or text)."""
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise bad(f"response_format must be {_FORMATS}", "response_format")
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
        raise bad("response_format: json_schema must be an object with a name (a string) and a schema",
                  "response_format")
    if not isinstance(spec.get("schema"), dict):
        raise bad("response_format: json_schema.schema must be a JSON schema (an object)", "response_format")
    if not isinstance(spec.get("strict", False), (bool, type(None))):
        raise bad("response_format: json_schema.strict must be a boolean", "response_format")
    return spec["schema"]


def _asked(body):
    """(the structured.*_grammar maker, its argument, the field that asked), or None: OpenAI's response_format,
    or vLLM's guided_json / guided_regex / guided_choice / guided_grammar / structured_outputs {"json": schema},
    {"json_object": true}, {"regex": ...}, {"choice": [...]}, {"grammar": ...} or {"structural_tag": ...}; at most
    one of them."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "structural_tag":
        asked = [(structured.structural_tag_grammar, fmt, "response_format")]
    else:
        fmt = _response_format(fmt)
        asked = [] if fmt is None else [(structured.json_grammar, fmt, "response_format")]
    if body.get("guided_json") is not None:
        asked.append((structured.json_grammar, _schema_text(body["guided_json"], "guided_json"), "guided_json"))
    for name, make in (("guided_regex", structured.regex_grammar), ("guided_choice", structured.choice_grammar),
                       ("guided_grammar", structured.cfg_grammar)):
        if body.get(name) is not None:
            asked.append((make, body[name], name))
    outputs = body.get("structured_outputs")
    if outputs is not None:
        kinds = {"json", "json_object", "regex", "choice", "grammar", "structural_tag"}
        if not isinstance(outputs, dict) or not outputs.keys() <= kinds:
            raise bad(f"structured_outputs must be an object of one of {', '.join(sorted(kinds))}",
                      "structured_outputs")
        if outputs.get("json") is not None:
            asked.append((structured.json_grammar, _schema_text(outputs["json"], "structured_outputs"),
                          "structured_outputs"))
        if not isinstance(outputs.get("json_object"), (bool, type(None))):  # "yes" or 1 was taken as true
            raise bad("structured_outputs: json_object must be true or false", "structured_outputs")
        if outputs.get("json_object"):
            asked.append((structured.json_grammar, {"type": "object"}, "structured_outputs"))
        for key, make in (("regex", structured.regex_grammar), ("choice", structured.choice_grammar),
                          ("grammar", structured.cfg_grammar), ("structural_tag", structured.structural_tag_grammar)):
            if outputs.get(key) is not None:
                asked.append((make, outputs[key], "structured_outputs"))
    if len(asked) > 1:
        raise bad(f"{' and '.join(name for _, _, name in asked)} each ask for a structured output: give one",
                  asked[1][2])
    return asked[0] if asked else None


def _grammar(body):
    """((the structured.*_grammar maker, its argument) of the structured output a body asks for (None: free
    text), the field that asked); compile_grammar compiles it."""
    asked = _asked(body)
    return (None, None) if asked is None else (asked[:2], asked[2])


def compile_grammar(gen):
    """The llguidance grammar of gen.grammar; 400 naming the field for one that does not compile. Seconds for a
    large one (20,000 guided_choice options: 2 s): app.py runs it on the grammar threads, not on those that parse
    every request."""
    return _compiled(*gen.grammar, gen.grammar_field)


def _compiled(make, value, field):
    """The llguidance grammar make(value) (a structured.*_grammar); 400 naming field for one that does not
    compile."""
    try:
        return make(value)
    except InvalidArgument as exc:
        raise bad(f"{field}: {exc.message}", field) from None


def _truncation_side(body):
    """vLLM's truncation_side: "left" (the default: truncate_prompt_tokens keeps the last tokens) or "right"."""
    side = body.get("truncation_side")
    if side not in (None, "left", "right"):
        raise bad('truncation_side must be "left" or "right"', "truncation_side")
    return side


def sampling_fields(body, vocab_size):
    """temperature, top_p, top_k (-1 and 0: all), min_p and repetition_penalty of a body, each checked (400 naming
    it); also what a model's generation_config.json may set as their defaults (sampling_defaults.py)."""
    return {"temperature": _number(body, "temperature", 1.0, 0.0, 2.0), "top_p": _number(body, "top_p", 1.0, 1e-9, 1.0),
            "top_k": max(_int(body, "top_k", 0, -1, vocab_size), 0), "min_p": _number(body, "min_p", 0.0, 0.0, 1.0),
            "repetition_penalty": _repetition_penalty(body)}


def _common(body, vocab_size, max_tokens_names, logprobs, least_tokens=1):
    model = _model(body)
    n = _int(body, "n", 1, 1, MAX_CHOICES)
    _unsupported(body, n)
    stream = _bool(body, "stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict) or not stream):
        raise bad("stream_options must be an object, and only with stream: true", "stream_options")
    max_tokens = None
    for name in max_tokens_names:
        max_tokens = _int(body, name, max_tokens, least_tokens, 2**31 - 1)
    stop_ids = body.get("stop_token_ids")
    stop_ids = [] if stop_ids is None else stop_ids  # 0, "", false or {} are no list (were taken as none)
    wrong = [t for t in stop_ids if not (_is_int(t) and 0 <= t < vocab_size)][:1] if isinstance(stop_ids, list) else []
    if not isinstance(stop_ids, list) or len(stop_ids) > MAX_STOP_TOKEN_IDS or wrong:
        raise bad(f"stop_token_ids must be a list of at most {MAX_STOP_TOKEN_IDS} token ids in [0, {vocab_size})"
                  + "".join(f": {json.dumps(t)[:32]} is not one" for t in wrong),
                  "stop_token_ids")
    salt = body.get("cache_salt")
    if salt is not None and (not isinstance(salt, str) or not 0 < len(salt.encode()) <= 64):
        raise bad("cache_salt must be a string of 1 to 64 bytes", "cache_salt")
    if body.get("user") is not None and not isinstance(body["user"], str):  # unused, but typed as vLLM's
        raise bad("user must be a string", "user")
    prompt_logprobs = _logprob_count(body, "prompt_logprobs", None, vocab_size)
    if prompt_logprobs is not None and stream:  # vLLM refuses them streamed too
        raise bad("prompt_logprobs are not available with stream: true", "prompt_logprobs")
    return Generation(model=model, stream=stream, include_usage=bool(options and _bool(options, "include_usage", parent="stream_options")),
                      continuous_usage=bool(options and _bool(options, "continuous_usage_stats",
                                                              parent="stream_options")),
                      max_tokens=max_tokens, **sampling_fields(body, vocab_size),
                      seed=_int(body, "seed", None, -(2**63), 2**63 - 1), stop=_stop(body),
                      stop_token_ids=tuple(stop_ids), ignore_eos=_bool(body, "ignore_eos"), logprobs=logprobs,
                      priority=_int(body, "priority", 0, -(2**31), 2**31 - 1), cache_salt=salt,
                      tokens_as_ids=_bool(body, "return_tokens_as_token_ids"),
                      token_ids=_bool(body, "return_token_ids"), n=n, echo=False, add_special_tokens=True,
                      skip_special_tokens=_bool(body, "skip_special_tokens", True),
                      include_stop=_bool(body, "include_stop_str_in_output"), prompt_logprobs=prompt_logprobs,
                      presence_penalty=_number(body, "presence_penalty", 0.0, -2.0, 2.0),
                      frequency_penalty=_number(body, "frequency_penalty", 0.0, -2.0, 2.0),
                      min_tokens=_int(body, "min_tokens", 0, 0, 2**31 - 1),
                      logit_bias=_logit_bias(body, vocab_size), grammar=(asked := _grammar(body))[0],
                      grammar_field=asked[1], allowed_token_ids=_allowed_token_ids(body, vocab_size),
                      bad_words=_bad_words(body), truncate=_int(body, "truncate_prompt_tokens", None, -1, 2**31 - 1),
                      truncate_right=_truncation_side(body) == "right",
                      request_id=None if body.get("request_id") is None else request_id(body["request_id"],
                                                                                         "request_id"))


def _one_prompt(prompt, vocab_size, what):
    if isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt):
        out = next((t for t in prompt if not 0 <= t < vocab_size), None)
        if out is not None:  # vLLM's words, which its clients and tests look for
            raise bad(f"{what}: token id {out} is out of vocabulary (ids lie in [0, {vocab_size}))", "prompt")
    elif not isinstance(prompt, str) or not prompt:
        raise bad(f"{what} must be a non-empty string or a non-empty list of token ids", "prompt")
    return prompt


def _prompts(prompt, vocab_size):
    """The prompts of a completions body: a string, a list of token ids, or a batch (a list) of either."""
    if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        return [_one_prompt(p, vocab_size, f"prompt[{i}]") for i, p in enumerate(prompt)]
    return [_one_prompt(prompt, vocab_size, "prompt")]


def completion_request(body, vocab_size):
    """(Generation, prompts) of a /v1/completions body; each prompt a str or a list of token ids."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    prompts = _prompts(body.get("prompt"), vocab_size)
    logprobs = _int(body, "logprobs", None, 0, MAX_LOGPROBS)
    gen = _common(body, vocab_size, ("max_tokens",), logprobs, least_tokens=0)
    if len(prompts) * gen.n > MAX_CHOICES:
        raise bad(f"{len(prompts)} prompts x n {gen.n} is more than {MAX_CHOICES} choices", "n")
    gen.echo = _bool(body, "echo")
    gen.add_special_tokens = _bool(body, "add_special_tokens", True)
    if body.get("tool_choice") not in (None, "auto", "none"):
        raise bad("tool_choice \"required\" or naming a function is for chat (a completion has no tools)",
                  "tool_choice")
    if _bool(body, "continue_final_message"):
        raise bad("continue_final_message is for chat (a completion's prompt is continued as it is)",
                  "continue_final_message")
    if gen.max_tokens == 0 and not gen.echo:
        raise bad("max_tokens 0 asks for nothing: it is taken only with echo (the prompt, scored with logprobs)",
                  "max_tokens")
    if gen.max_tokens is None:
        gen.max_tokens = 16  # the OpenAI default of completions
    return gen, prompts


def _message(m, i):
    if not isinstance(m, dict) or not isinstance(m.get("role"), str):
        raise bad(f"messages[{i}] must be an object with a string role", "messages")
    content = m.get("content")
    if isinstance(content, list):  # content parts: text only, one per line, as vLLM joins them for a template
        if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                   for p in content):
            raise bad(f"messages[{i}].content: only text parts are supported", "messages")
        content = "\n".join(p["text"] for p in content)
    elif content is not None and not isinstance(content, str):
        raise bad(f"messages[{i}].content must be a string, a list of text parts or null", "messages")
    for key in ("name", "tool_call_id", "reasoning_content"):  # text a template writes (vLLM's types: str)
        if m.get(key) is not None and not isinstance(m[key], str):
            raise bad(f"messages[{i}].{key} must be a string", "messages")
    out = {**m, "content": content if content is not None else ""}
    if m.get("tool_calls") is not None:
        out["tool_calls"] = _tool_calls(m["tool_calls"], f"messages[{i}].tool_calls")
    return out


def _tool_calls(calls, where):
    """An assistant message's tool_calls for the chat template: each call's arguments, a JSON text in the OpenAI
    API, as the value it holds (Hugging Face templates write arguments with tojson; vLLM converts them too);
    none or empty: {}."""
    if not isinstance(calls, list):
        raise bad(f"{where} must be a list", "messages")
    out = []
    for j, call in enumerate(calls):
        f = call.get("function") if isinstance(call, dict) else None
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or call.get("type", "function") != "function":
            raise bad(f"{where}[{j}] must be {{\"id\": ..., \"type\": \"function\", \"function\": {{\"name\": ..., "
                      f"\"arguments\": ...}}}}", "messages")
        args = f.get("arguments")
        if not args:
            args = {}
        elif isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError) as exc:
                raise bad(f"{where}[{j}].function.arguments is not JSON: {exc}", "messages") from None
        elif not isinstance(args, (dict, list)):
            raise bad(f"{where}[{j}].function.arguments must be a JSON text or an object", "messages")
        out.append({**call, "function": {**f, "arguments": args}})
    return out


def _messages(body):
    messages = body.get("messages")
    if not isinstance(messages, list) or not 0 < len(messages) <= MAX_MESSAGES:
        raise bad(f"messages must be a list of 1 to {MAX_MESSAGES} messages", "messages")
    return [_message(m, i) for i, m in enumerate(messages)]


def _tools(body):
    """The tools of a chat body, each {"type": "function", "function": {"name", "description"?, "parameters"?}}
    (given to the chat template as they came)."""
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise bad(f"tools must be a list of at most {MAX_TOOLS} tools", "tools")
    for i, tool in enumerate(tools):
        f = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(f, dict) or tool.get("type") != "function":
            raise bad(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ..., "
                      f"\"parameters\": ...}}}}", "tools")
        if not isinstance(f.get("name"), str) or not f["name"]:
            raise bad(f"tools[{i}].function.name must be a non-empty string", "tools")
        for field, kind, what in (("description", str, "a string"), ("parameters", dict, "an object (a JSON schema)")):
            if f.get(field) is not None and not isinstance(f[field], kind):
                raise bad(f"tools[{i}].function.{field} must be {what}", "tools")
    return tools


def _documents(body):
    """vLLM's documents (for a retrieval template): a list of objects of strings, given to the chat template."""
    docs = body.get("documents")
    if docs is not None and (not isinstance(docs, list) or len(docs) > MAX_MESSAGES or not all(
            isinstance(d, dict) and all(isinstance(v, str) for v in d.values()) for d in docs)):
        raise bad(f"documents must be a list of at most {MAX_MESSAGES} objects whose values are strings",
                  "documents")
    return docs


def _template_kwargs(body):
    """What the chat template gets beside the messages: chat_template_kwargs, add_generation_prompt, tools,
    documents."""
    tools = _tools(body)
    kwargs = body.get("chat_template_kwargs")
    kwargs = {} if kwargs is None else kwargs  # [], "", 0 or false are no object (were taken as none)
    if not isinstance(kwargs, dict):
        raise bad("chat_template_kwargs must be an object", "chat_template_kwargs")
    generation, cont = _bool(body, "add_generation_prompt", True), _bool(body, "continue_final_message")
    if generation and cont:
        raise bad("continue_final_message needs add_generation_prompt: false (the reply continues the final "
                  "message instead of starting a new one)", "continue_final_message")
    return {**kwargs, "add_generation_prompt": generation, "continue_final_message": cont, "tools": tools,
            "documents": _documents(body)}


def _forced_calls(body, tools, gen):
    """tool_choice "required" or a named function: the calls the output is forced to be (vLLM's), its grammar in
    gen; "auto" / "none" / none force nothing."""
    choice = body.get("tool_choice")
    if choice in (None, "auto", "none"):
        return
    named = isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict)
    name = choice["function"].get("name") if named else None
    if choice != "required" and (not isinstance(name, str) or not name):
        raise bad("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                  "\"function\": {\"name\": ...}}", "tool_choice")
    if not tools:
        raise bad("tool_choice \"required\" or naming a function needs tools", "tool_choice")
    if gen.grammar is not None:
        raise bad("tool_choice \"required\" or naming a function forces the output's shape: give no "
                  "response_format, guided_json, guided_regex, guided_choice, guided_grammar or structured_outputs "
                  "with it",
                  "tool_choice")
    if choice != "required":
        tools = [t for t in tools if t["function"]["name"] == name][:1]
        if not tools:
            raise bad(f"tool_choice names the function {name!r}, which is not one of the tools", "tool_choice")
    for t in tools:
        if forced_calls.parameters(t) is None:
            raise bad(f"tool_choice: the parameters of {t['function']['name']!r} allow no object (a call's "
                      "arguments are an object)", "tool_choice")
        try:  # the schema's bounds (docs/serve.md, "Structured outputs"), naming the tool's field
            schema_bounds.checked_schema(forced_calls.parameters(t), f"the parameters of {t['function']['name']!r}")
        except InvalidArgument as exc:
            raise bad(f"tools: {exc.message}", "tools") from None
    if choice == "required":
        gen.required_calls, schema = True, forced_calls.required_schema(tools)
    else:
        gen.named_call, schema = name, forced_calls.parameters(tools[0])
    gen.grammar, gen.grammar_field = (structured.json_grammar, schema), "tool_choice"


def chat_request(body, vocab_size, auto_tools=False):
    """(Generation, messages, template kwargs) of a /v1/chat/completions body. auto_tools: the server parses
    tool calls out of replies (--enable-auto-tool-choice)."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    messages = _messages(body)
    logprobs = None
    if _bool(body, "logprobs"):
        logprobs = _logprob_count(body, "top_logprobs", 0, vocab_size)
    elif _int(body, "top_logprobs", 0, -1, MAX_LOGPROBS) != 0:  # 0 asks for none: taken without logprobs (vLLM's)
        raise bad("top_logprobs needs logprobs: true", "top_logprobs")
    gen = _common(body, vocab_size, ("max_tokens", "max_completion_tokens"), logprobs)
    gen.echo = _bool(body, "echo")  # vLLM's: a final assistant message's text before the reply's
    gen.add_special_tokens = _bool(body, "add_special_tokens", False)  # the template writes them
    kwargs = _template_kwargs(body)
    if body.get("tool_choice") == "auto" and body.get("tools") is None:  # as vLLM and OpenAI
        raise bad("tool_choice \"auto\" needs tools (when tool_choice is given, tools must be set)", "tool_choice")
    if kwargs["tools"] and body.get("tool_choice") in (None, "auto"):
        if not auto_tools:  # as vLLM without --enable-auto-tool-choice
            raise bad("tool_choice \"auto\" (the default with tools) needs a server started with "
                      "--enable-auto-tool-choice --tool-call-parser NAME; tool_choice \"none\" shows the tools to "
                      "the model without parsing calls", "tool_choice")
        gen.tool_calls, gen.tools = True, kwargs["tools"]
    _forced_calls(body, kwargs["tools"], gen)
    gen.first_call_only = not _bool(body, "parallel_tool_calls", True)
    gen.include_reasoning = _bool(body, "include_reasoning", True)
    # what a client asks for that the server does not have: the deprecated function calling, audio output
    if body.get("functions") or body.get("function_call") not in (None, "none"):
        raise bad("functions and function_call are not supported", "functions" if body.get("functions") else
                  "function_call")
    modalities = body.get("modalities")
    if modalities not in (None, ["text"]) or body.get("audio") is not None:
        raise bad("only text output is supported (modalities [\"text\"], no audio)",
                  "modalities" if modalities not in (None, ["text"]) else "audio")
    return gen, messages, kwargs


@dataclasses.dataclass
class Tokenize:
    """What a /tokenize body asks: the ids of a text, or of a conversation rendered by the chat template."""
    model: str  # None or "": the served model
    text: str  # None with messages
    messages: list  # None with text
    template_kwargs: dict  # with messages
    add_special_tokens: bool  # default true for a text, false for a conversation (its template writes them)
    token_strs: bool  # the answer names each token's vocabulary entry too (vLLM's return_token_strs)


def _model(body):
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("model must be a string", "model")
    return model


def tokenize_request(body):
    """The Tokenize of a /tokenize body: {"prompt": text} or {"messages": [...]} (vLLM's two forms)."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    if ("prompt" in body) == ("messages" in body):
        raise bad("give either prompt (a text) or messages (a conversation)", "prompt")
    model, strs = _model(body), _bool(body, "return_token_strs")
    if "prompt" in body:
        if not isinstance(body["prompt"], str):
            raise bad("prompt must be a string", "prompt")
        return Tokenize(model, body["prompt"], None, None, _bool(body, "add_special_tokens", True), strs)
    return Tokenize(model, None, _messages(body), _template_kwargs(body), _bool(body, "add_special_tokens", False),
                    strs)


def detokenize_request(body, vocab_size):
    """(model, token ids) of a /detokenize body {"tokens": [...]}."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object")
    ids = body.get("tokens")
    if not isinstance(ids, list) or not all(_is_int(t) and 0 <= t < vocab_size for t in ids):
        raise bad(f"tokens must be a list of token ids in [0, {vocab_size})", "tokens")
    return _model(body), ids
