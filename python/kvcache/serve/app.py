"""The OpenAI-compatible HTTP application (Starlette) over an AsyncEngine:
/v1/completions, /v1/chat/completions, /v1/responses (server-sent events or
one JSON answer), /v1/models, /tokenize, /detokenize, /health, /ping, /version,
/metrics. docs/serve.md describes the API."""
import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import pathlib
import threading
import time
import uuid

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import __version__, structured
from ..async_engine import AsyncEngine
from ..chat_template import GLOBALS as TEMPLATE_GLOBALS, TemplateError
from ..detokenize import TextPlace, TextStream, prompt_text
from ..engine import SamplingParams, TokenLogprob
from .._lib import flag, invalid
from ..errors import InvalidArgument, OutOfMemory, QueueFull
from ..tokenizer import Tokenizer
from . import (choices, forced_calls, http, prompt_cuts, protocol, reasoning, responses, sampling_defaults, tool_calls,
               tool_parsers)
from .metrics import Metrics
from .protocol import ApiError, bad

# threads that build and check structured-output grammars at once; more wait their turn: a grammar can take seconds,
# and on anyio's default threads, which parse every request, enough of them held those all and stalled every client
GRAMMAR_THREADS = 4
_RESERVED_TEMPLATE_ARGS = {"messages", "tools", "documents", "add_generation_prompt", "special_tokens",
                           "bos_token", "eos_token", "unk_token", "pad_token"} | TEMPLATE_GLOBALS


def _error_response(exc):
    return JSONResponse(exc.body(), status_code=exc.status)


def _ids(gen, **fields):
    """fields (lists of token ids) when the request asked for them (vLLM's return_token_ids), else none."""
    return {k: list(v) for k, v in fields.items()} if gen.token_ids else {}


def _reasoning_fields(text):
    """A message's reasoning: vLLM's field `reasoning`, and `reasoning_content` (DeepSeek's name, vLLM's until 2026,
    which many clients read)."""
    return {"reasoning": text, "reasoning_content": text}


def _joined(a, b):
    """Two (reasoning, content) pairs as one."""
    return a[0] + b[0], a[1] + b[1]


def _sse(obj):
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


async def _events_or_error(events):
    """The SSE text of events, then [DONE]; an engine failure midway becomes an error event."""
    try:
        async for event in events:
            yield event
    except Exception as exc:  # the engine failed (no progress, a failed forward): tell the client
        yield _sse(ApiError(500, f"the engine failed: {exc}", type="server_error").body())
    yield "data: [DONE]\n\n"


def _shutting_down():
    """The answer of a request the server stops before it ends: uvicorn cancels the requests still running
    when its shutdown timeout is over. The cancellation is taken (the handler returns this answer instead of
    a traceback in the log)."""
    task = asyncio.current_task()
    if hasattr(task, "uncancel"):  # Python 3.11+
        task.uncancel()
    return ApiError(503, "the server is shutting down", type="server_error", code="shutting_down")


def _stoppable(handler):
    """A request handler that answers 503 shutting_down when the server stops it (before its response starts:
    checking, tokenizing, queueing, or waiting for a non-streamed answer)."""
    @functools.wraps(handler)
    async def run(self, request):
        try:
            return await handler(self, request)
        except asyncio.CancelledError:
            return _error_response(_shutting_down())

    return run


class _EventStream(StreamingResponse):
    """Server-sent events that stop, and so abort their request, as soon as
    the client disconnects (listened for beside the stream, whatever the
    server's ASGI version), not only at the next failed write. A server
    shutting down ends the stream with an error event and [DONE]."""

    def __init__(self, content):
        super().__init__(content, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def __call__(self, scope, receive, send):
        started = []

        async def sending(message):
            started.append(True)
            # the loop's turn first: events queued while it was behind were written back to back, so a lost
            # connection went unnoticed (each write past the fifth an asyncio warning) until they were all written
            await asyncio.sleep(0)
            await send(message)

        try:
            async with anyio.create_task_group() as group:
                async def run(func):
                    with contextlib.suppress(OSError):
                        await func()
                    group.cancel_scope.cancel()

                group.start_soon(run, functools.partial(self.stream_response, sending))
                await run(functools.partial(self.listen_for_disconnect, receive))
        except asyncio.CancelledError:
            end = (_sse(_shutting_down().body()) + "data: [DONE]\n\n").encode()
            with contextlib.suppress(OSError):  # the client may be gone too
                if not started:
                    await send({"type": "http.response.start", "status": self.status_code,
                                "headers": self.raw_headers})
                await send({"type": "http.response.body", "body": end, "more_body": False})


async def _disconnected(request):
    while (await request.receive())["type"] != "http.disconnect":
        pass


class Server:
    """The application of one model directory. engine_kwargs go to
    kvcache.Engine; api_keys (none: no authentication) are the bearer
    tokens /v1/ accepts, each one its own prefix-cache tenant. enable_auto_tool_choice: chat replies to requests
    with tools (tool_choice auto) are parsed for calls by tool_call_parser (one of tool_parsers.PARSERS).
    reasoning_parser (one of reasoning.PARSERS): chat replies' reasoning is split from their content."""

    def __init__(self, model_dir, *, served_model_name=None, api_keys=(), max_body_bytes=1 << 20, read_timeout=30.0,
                 write_timeout=30.0, max_connections=256, enable_prompt_tokens_details=False,
                 enable_auto_tool_choice=False, tool_call_parser=None, reasoning_parser=None, **engine_kwargs):
        if reasoning_parser is not None and reasoning_parser not in reasoning.PARSERS:
            raise invalid(f"reasoning parser {reasoning_parser!r} is not one of the parsers: "
                          f"{', '.join(reasoning.PARSERS)}")
        if tool_call_parser is not None and tool_call_parser not in tool_parsers.PARSERS:
            raise invalid(f"tool call parser {tool_call_parser!r} is not one of the parsers: "
                          f"{', '.join(tool_parsers.PARSERS)}")
        if enable_auto_tool_choice and tool_call_parser is None:  # vLLM refuses it too
            raise invalid("enable_auto_tool_choice needs a tool call parser (--tool-call-parser, one of: "
                          f"{', '.join(tool_parsers.PARSERS)})")
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise invalid(f"max_body_bytes {max_body_bytes!r} must be an integer of at least 1 byte")
        if isinstance(api_keys, (str, bytes)) or not isinstance(api_keys, (list, tuple)):  # "secret": 6 keys of 1 char
            raise invalid(f"api_keys must be a list of keys, not {type(api_keys).__name__}")
        for key in api_keys:  # an empty key let in every "Authorization: Bearer " (with nothing after it)
            if not isinstance(key, str) or not key or not all("!" <= c <= "~" for c in key):
                raise invalid(f"API key {key!r} must be 1 or more visible ASCII characters (no spaces)")
        for name, value in (("read_timeout", read_timeout), ("write_timeout", write_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
                raise invalid(f"{name} {value!r} must be a number of seconds above 0")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise invalid(f"max_connections {max_connections!r} must be an integer of at least 1")
        if served_model_name is not None and (not isinstance(served_model_name, str) or not served_model_name):
            raise invalid(f"served_model_name {served_model_name!r} must be a non-empty string (\"\" fell back to the "
                          "directory's name)")
        self.tokenizer = Tokenizer(model_dir)
        # generation_config.json's temperature, top_p, ...: the defaults of a request's fields (vLLM's); read before
        # the engine starts, so a refusal leaves nothing running
        self.sampling_defaults = sampling_defaults.read(pathlib.Path(model_dir), self.tokenizer.vocab_size)
        self.engine = AsyncEngine(model_dir, **engine_kwargs)
        self.model_name = served_model_name or str(model_dir).rstrip("/").rsplit("/", 1)[-1]
        self.api_keys = [k.encode() for k in api_keys]
        self.max_body_bytes = max_body_bytes
        # usage's cached tokens (vLLM: off)
        self.prompt_tokens_details = flag(enable_prompt_tokens_details, "enable_prompt_tokens_details")
        self.auto_tools = flag(enable_auto_tool_choice, "enable_auto_tool_choice")
        self.tool_format = tool_parsers.FORMATS.get(tool_call_parser)
        self.reasoning_parser = reasoning_parser
        self.read_timeout = read_timeout  # seconds a request's body may take to arrive (its headers: http.py)
        # uvicorn's `http` setting for this app: the header and write deadlines, the cap on connections
        self.http_protocol = http.protocol(read_timeout, write_timeout, max_connections)
        self.metrics = Metrics(self.engine, self.model_name, self.engine.engine.max_model_len)
        self.stored = responses.Store()  # /v1/responses' answers kept for previous_response_id and GET
        self.created = int(time.time())
        self.vocab_size = self.engine.engine.vocab_size
        self.max_model_len = self.engine.engine.max_model_len
        self._grammar_threads = None  # the anyio.CapacityLimiter of GRAMMAR_THREADS, made on the event loop
        self._vocabulary = structured.Lazy(lambda: structured.Vocabulary(self.tokenizer.json(), self.vocab_size,
                                                                         self.tokenizer.eos_token_ids))
        routes = [Route("/v1/completions", self.completions, methods=["POST"]),
                  Route("/v1/chat/completions", self.chat, methods=["POST"]),
                  Route("/v1/responses", self.respond, methods=["POST"]),
                  Route("/v1/responses/{response_id}", self.stored_response, methods=["GET", "DELETE"]),
                  Route("/v1/responses/{response_id}/input_items", self.input_items, methods=["GET"]),
                  Route("/v1/models", self.models, methods=["GET"]),
                  Route("/v1/models/{model:path}", self.model, methods=["GET"]),
                  Route("/invocations", self.invocations, methods=["POST"]),
                  Route("/tokenize", self.tokenize, methods=["POST"]),
                  Route("/detokenize", self.detokenize, methods=["POST"]),
                  Route("/health", self.health, methods=["GET"]),
                  Route("/ping", self.health, methods=["GET", "POST"]),
                  Route("/version", self.version, methods=["GET"]),
                  Route("/metrics", self.prometheus, methods=["GET"])]
        self.app = Starlette(routes=routes, lifespan=self._lifespan,
                             exception_handlers={ApiError: lambda request, exc: _error_response(exc),
                                                 404: self._not_found, 405: self._not_allowed,
                                                 Exception: self._failed})

    @contextlib.asynccontextmanager
    async def _lifespan(self, app):
        yield
        self.engine.close()

    async def _not_found(self, request, exc):
        return _error_response(ApiError(404, f"no route {request.url.path}", code="not_found"))

    async def _failed(self, request, exc):
        return _error_response(ApiError(500, f"the server failed: {type(exc).__name__}: {exc}", type="server_error"))

    async def _not_allowed(self, request, exc):
        return _error_response(ApiError(405, f"{request.method} is not allowed on {request.url.path}"))

    # ---- the checks every /v1 request passes ----

    def _tenant(self, request):
        """The caller's API key (None without keys); 401 for a missing or wrong one."""
        if not self.api_keys:
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip().encode()
        for key in self.api_keys:
            if scheme.lower() == "bearer" and hmac.compare_digest(token, key):
                return key
        raise ApiError(401, "a valid API key is required: Authorization: Bearer <key>", code="invalid_api_key")

    async def _body(self, request):
        """The request's JSON body, read once (/invocations reads it before the endpoint it picks)."""
        if hasattr(request.state, "body"):
            return request.state.body
        request.state.body = await self._read_body(request)
        return request.state.body

    async def _read_body(self, request):
        protocol.check_content_type(request.headers.get("content-type"))
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            raise ApiError(413, f"the request body is larger than {self.max_body_bytes} bytes")
        data = bytearray()
        try:  # a client that sends its body slowly, or stops halfway, holds its connection no longer than this
            with anyio.fail_after(self.read_timeout):
                async for chunk in request.stream():
                    data += chunk
                    if len(data) > self.max_body_bytes:
                        raise ApiError(413, f"the request body is larger than {self.max_body_bytes} bytes")
        except TimeoutError:
            raise ApiError(408, f"the request body did not arrive within {self.read_timeout:g} s (--read-timeout)",
                           code="request_timeout") from None
        except ClientDisconnect:  # nobody to answer: no traceback in the log
            raise ApiError(499, "the client left before its request body arrived") from None
        return protocol.parse_body(data)

    def _check_model(self, name):
        if name != self.model_name:
            raise ApiError(404, f"the model `{name}` does not exist; this server serves `{self.model_name}`",
                           param="model", code="model_not_found")

    def _salt(self, tenant, salt):
        """The prefix-cache salt: each API key its own tenant, the request's cache_salt within it."""
        if tenant is None:
            return salt
        return hashlib.sha256(b"kvcache-tenant\0" + tenant + b"\0" + (salt or "").encode()).digest()

    def _params(self, gen, n_prompt, what, grammar):
        """The SamplingParams of a prompt of n_prompt tokens (grammar: its structured.Grammar or None); 400 naming `what` (the prompt's field) or
        max_tokens when the prompt and the tokens asked for do not fit the model's length."""
        max_tokens = gen.max_tokens
        if n_prompt >= self.max_model_len:
            raise bad(f"this model's maximum context length is {self.max_model_len} tokens; the {what} has "
                      f"{n_prompt}, which leaves no room to generate", what, "context_length_exceeded")
        if max_tokens is None:
            max_tokens = self.max_model_len - n_prompt
        if n_prompt + max_tokens > self.max_model_len:
            raise bad(f"this model's maximum context length is {self.max_model_len} tokens; the request asks for "
                      f"{n_prompt + max_tokens} ({n_prompt} in the {what}, {max_tokens} to generate)", "max_tokens",
                      "context_length_exceeded")
        if gen.min_tokens > max_tokens:
            raise bad(f"min_tokens {gen.min_tokens} is more than max_tokens {max_tokens}", "min_tokens")
        stop_ids = tuple(dict.fromkeys(gen.stop_token_ids + (() if gen.ignore_eos else self.tokenizer.eos_token_ids)))
        if gen.min_tokens > 0 and len(stop_ids) > protocol.MAX_MIN_TOKENS_STOPS:
            raise bad(f"min_tokens holds back at most {protocol.MAX_MIN_TOKENS_STOPS} stop tokens (stop_token_ids and "
                      f"the model's end-of-sequence ids), {len(stop_ids)} given", "stop_token_ids")
        return SamplingParams(max_tokens=max_tokens, temperature=gen.temperature, top_p=gen.top_p,
                              top_k=gen.top_k, seed=gen.seed, stop_token_ids=stop_ids, logprobs=gen.logprobs,
                              min_p=gen.min_p, presence_penalty=gen.presence_penalty,
                              frequency_penalty=gen.frequency_penalty, repetition_penalty=gen.repetition_penalty,
                              min_tokens=gen.min_tokens, logit_bias=gen.logit_bias, structured=grammar,
                              allowed_token_ids=gen.allowed_token_ids, bad_words=gen.bad_word_ids)

    async def _grammar(self, gen, request):
        """The structured.Grammar of a request asking for a structured output (None for free text), built on a
        grammar thread (the model's llguidance vocabulary by the first one). A client that leaves meanwhile is
        answered 499 at once: waiting for a thread, its grammar is never built; on one, the build stops at its next
        stage (llguidance cannot interrupt a compile), so the requests behind it wait for no gone client's work."""
        if gen.grammar is None:
            return None
        if self._grammar_threads is None:
            self._grammar_threads = anyio.CapacityLimiter(GRAMMAR_THREADS)
        gone, scope = threading.Event(), anyio.CancelScope()

        async def build():
            with scope:  # anyio's cancel: out of the threads' queue, or (its thread shielded) at its end
                return await anyio.to_thread.run_sync(self._build_grammar, gen, gone, limiter=self._grammar_threads)

        work, left = asyncio.ensure_future(build()), asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({work, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            left.cancel()
            if not work.done():  # the client left (or the server stops this handler)
                gone.set()
                scope.cancel()
                work.add_done_callback(lambda w: w.cancelled() or w.exception())  # nobody to tell
        if not work.done():
            raise ApiError(499, "the client left before its structured output's grammar was built")
        return work.result()

    def _build_grammar(self, gen, gone):
        """gen's structured.Grammar (on a grammar thread): compiled, given the vocabulary, and a matcher and its
        first mask made here too (one that fails, a lexer out of fuel or too many symbols, is refused before the
        engine's thread, which every request shares, spends seconds on it); None once gone is set (checked before
        each stage). 400 naming the field that asked for one that fails."""
        if gone.is_set():
            return None
        text = protocol.compile_grammar(gen)
        try:
            if gone.is_set():
                return None
            grammar = structured.Grammar(self._vocabulary.get(), text)
            if gone.is_set():
                return None
            grammar.check()
        except InvalidArgument as exc:
            raise bad(exc.message, gen.grammar_field) from None
        return grammar

    async def _start(self, request, parse, what):
        """Checks, tokenizes and queues a request, n choices of each of its prompts:
        (Generation, [choices.Choice] in choice order: prompt by prompt, n each)."""
        arrival = time.monotonic()
        tenant = self._tenant(request)
        # on a worker thread: tokenizing a long prompt (or rendering a long conversation) takes a while
        gen, prompts = await anyio.to_thread.run_sync(parse, await self._body(request))
        if gen.model:  # a request naming no model (none, or "") asks for the served one, as vLLM takes it
            self._check_model(gen.model)
        header = request.headers.get("x-request-id")
        if header is not None:  # vLLM's: the header wins over the body's request_id
            gen.request_id = protocol.request_id(header, "X-Request-Id")
        if len(prompts) * gen.n > self.engine.engine.max_requests:  # could never be queued at once: not a retry
            raise bad(f"{len(prompts)} prompt(s) x n {gen.n} choices exceed the {self.engine.engine.max_requests} "
                      "requests the server holds at once (--max-requests)", "n")
        grammar = await self._grammar(gen, request)
        params = [self._params(gen, len(p.ids), what, grammar) for p in prompts]
        salt = self._salt(tenant, gen.cache_salt)
        wanted = [(prompt, dataclasses.replace(p, seed=choices.seed_of(p.seed, j)))
                  for prompt, p in zip(prompts, params) for j in range(gen.n)]
        echoed = gen.logprobs if what == "prompt" and gen.echo else None  # completions' echo with logprobs
        if echoed is not None or gen.prompt_logprobs is not None:  # once per prompt, for both uses
            k = max(k for k in (echoed, gen.prompt_logprobs) if k is not None)
            for prompt in prompts:
                prompt.scored = await self._prompt_logprobs(prompt.ids, k)
                if echoed is not None:
                    prompt.logprobs = [dataclasses.replace(lp, top=lp.top if lp.top is None else lp.top[:echoed])
                                       for lp in prompt.scored]

        async def queued(prompt, p):
            if p.max_tokens == 0:
                return choices.NothingToGenerate(len(prompt.ids))
            return await self.engine.add_request(prompt.ids, p, priority=gen.priority, cache_salt=salt)

        # every choice queued at once (one wait for the engine thread, not one per choice)
        added = await asyncio.gather(*(queued(prompt, p) for prompt, p in wanted), return_exceptions=True)
        refused = [a for a in added if isinstance(a, BaseException)]
        if refused:  # none of the choices runs
            for a in added:
                if not isinstance(a, BaseException):
                    a.abort()
            raise self._refusal(refused[0]) from None
        reqs = []
        for (prompt, p), stream in zip(wanted, added):
            text = TextStream(self.tokenizer, prompt.ids, gen.stop, gen.skip_special_tokens, gen.include_stop,
                              gen.min_tokens)
            reqs.append(choices.Choice(self, stream, text, p, arrival, prompt, gen.n))
            self.metrics.prompt_tokens.inc(len(prompt.ids))
        return gen, reqs

    def _refusal(self, exc):
        """What the client is told of the engine's refusal exc: 503 queue_full, 400 for a request it cannot take,
        503 engine_dead once its thread has ended; anything else as it is (a 500)."""
        if isinstance(exc, QueueFull):
            return ApiError(503, f"the server is full, retry later ({exc.message})", type="server_error",
                            code="queue_full")
        if isinstance(exc, (InvalidArgument, OutOfMemory)):
            return bad(exc.message)
        if not self.engine.alive:
            return ApiError(503, str(exc), type="server_error", code="engine_dead")
        return exc

    async def _prompt_logprobs(self, ids, k):
        """The TokenLogprobs of a prompt's tokens (the first one's logprob and top None: it has no context)."""
        try:
            lps = await self.engine.prompt_logprobs(ids, k)
        except Exception as exc:
            raise self._refusal(exc) from None
        return [TokenLogprob(ids[0], None, None)] + lps[1:]

    async def _finish(self, request, reqs, collect):
        """The non-streamed answer: collect() unless the client leaves first, or this handler is cancelled
        (a server shutting down): then every request is aborted."""
        work = asyncio.ensure_future(collect())
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not work.done():
                work.cancel()
                for req in reqs:
                    req.stream.abort()
        if work not in done:
            return Response(status_code=499)
        return JSONResponse(work.result())

    # ---- /v1/completions ----

    def _parse_completion(self, body):
        body = sampling_defaults.applied(self.sampling_defaults, body)
        gen, texts = protocol.completion_request(body, self.vocab_size)
        gen.bad_word_ids = prompt_cuts.bad_word_ids(self.tokenizer, gen.bad_words)
        keep = prompt_cuts.kept(gen.truncate, self.max_model_len)
        prompts = []
        for t in texts:
            ids = prompt_cuts.encode(self.tokenizer, t, gen.add_special_tokens, keep, gen.truncate_right) \
                if isinstance(t, str) else prompt_cuts.cut(t, keep, gen.truncate_right)
            # a truncated prompt's echo is the text of the ids kept
            prompts.append(choices.Prompt(ids, t if isinstance(t, str) and keep is None else None))
        if not all(p.ids for p in prompts):
            raise bad("the prompt has no tokens", "prompt")
        return gen, prompts

    def _echo(self, gen, req):
        """The text a choice begins with: its prompt's with echo (chat: a final assistant message's), else
        nothing. Of token ids that end inside a character, the text up to it: the character comes with the
        choice's text (TextStream)."""
        if not gen.echo:
            return ""
        p = req.prompt
        return p.text if p.text is not None else prompt_text(self.tokenizer, p.ids)

    def _token_name(self, gen):
        """How logprobs name a token: its text, or "token_id:ID" with return_tokens_as_token_ids."""
        return (lambda t: f"token_id:{t}") if gen.tokens_as_ids else self._token_text

    def _completion_logprobs(self, lps, place, gen):
        """The legacy logprobs object; each top_logprobs entry holds the sampled token beside the `logprobs`
        most likely ones (so up to logprobs + 1 entries, as OpenAI documents and vLLM does). place: the choice's
        TextPlace, moved past lps (a token inside a character is at that character's offset). An echoed prompt's
        first token has no log-probability: null in token_logprobs and top_logprobs, as OpenAI and vLLM give it."""
        name = self._token_name(gen) if gen.tokens_as_ids else self._token_key
        offsets = [place.advance(self._token_bytes(lp.token_id)) for lp in lps]
        return {"tokens": [name(lp.token_id) for lp in lps], "token_logprobs": [lp.logprob for lp in lps],
                "top_logprobs": [None if lp.top is None else {**{name(t): v for t, v in lp.top},
                                                              name(lp.token_id): lp.logprob} for lp in lps],
                "text_offset": offsets}

    def _prompt_logprobs_field(self, gen, prompt):
        """vLLM's prompt_logprobs of a prompt: None unless asked; else null for the first token, then per token a
        dict by token id of the token itself and the prompt_logprobs most likely, each with its logprob, rank
        (1 + the tokens more likely) and decoded_token."""
        if gen.prompt_logprobs is None:
            return None
        name, out = self._token_name(gen), [None]
        for lp in prompt.scored[1:]:
            top = lp.top[:gen.prompt_logprobs]
            entry = {str(t): {"logprob": v, "rank": 1 + next(i for i, (_, u) in enumerate(top) if u == v),
                              "decoded_token": name(t)} for t, v in top}
            entry[str(lp.token_id)] = {"logprob": lp.logprob, "rank": lp.rank, "decoded_token": name(lp.token_id)}
            out.append(entry)
        return out

    def _echo_place(self, req, echo):
        """Where a choice's offsets start: after its echo, or at 0 when the echo's own tokens come with
        logprobs (their offsets then run through the prompt into the output)."""
        return TextPlace(0) if req.prompt.logprobs else TextPlace(len(echo), req.text.lent)

    @functools.lru_cache(maxsize=4096)
    def _token_text(self, token_id):
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    @functools.lru_cache(maxsize=4096)
    def _token_key(self, token_id):
        """A token's name in the legacy logprobs (its top_logprobs are a dict by name): its text, or, when its
        bytes are part of a character, "bytes:\\xNN..." as OpenAI writes them (as U+FFFD every such token had the
        same key, and fewer alternatives than asked for came back)."""
        data = self._token_bytes(token_id)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return "bytes:" + "".join(f"\\x{b:02x}" for b in data)
        return self._token_text(token_id)

    @functools.lru_cache(maxsize=4096)
    def _token_bytes(self, token_id):
        return self.tokenizer.token_bytes(token_id)

    def _reply(self, kind, prefix, gen, every_chunk=None):
        """The envelope of one answer's chunks: chunk(choices, usage=None, **top-level fields); its id the
        request's own (gen.request_id) or a new one after prefix. every_chunk: None, or what a chunk without usage
        carries as its usage (choices.chunk_usage)."""
        rid, created = f"{prefix}-{gen.request_id or uuid.uuid4().hex}", int(time.time())

        def chunk(items, usage=None, **top):
            out = {"id": rid, "object": kind, "created": created, "model": self.model_name, **top, "choices": items}
            if usage is not None:
                out["usage"] = usage
            elif every_chunk is not None:
                out["usage"] = every_chunk()
            return out

        return chunk

    @_stoppable
    async def completions(self, request):
        gen, reqs = await self._start(request, self._parse_completion, "prompt")
        chunk = self._reply("text_completion", "cmpl", gen, choices.chunk_usage(gen, reqs, self.prompt_tokens_details))
        if gen.stream:
            async def sse():
                places = [None] * len(reqs)  # per choice; None: nothing sent yet (the echo goes first)
                async for i, delta, lps, reason, ids in choices.merged(reqs):
                    prompt_ids = {}
                    lps = lps or []
                    if places[i] is None:
                        echo = self._echo(gen, reqs[i])
                        delta, places[i] = echo + delta, self._echo_place(reqs[i], echo)
                        prompt_ids = _ids(gen, prompt_token_ids=reqs[i].prompt.ids)
                        lps = reqs[i].prompt.logprobs + lps
                    logprobs = self._completion_logprobs(lps, places[i], gen) if gen.logprobs is not None else None
                    yield _sse(chunk([{"index": i, "text": delta, "logprobs": logprobs, **reqs[i].ending(reason),
                                       **prompt_ids, **_ids(gen, token_ids=ids)}]))
                if gen.include_usage:
                    yield _sse(chunk([], choices.usage(reqs, self.prompt_tokens_details)))

            return _EventStream(_events_or_error(sse()))

        async def collect():
            texts, lps, ids = await choices.whole(reqs)
            echoes = [self._echo(gen, req) for req in reqs]
            return chunk([{"index": i, "text": echo + text,
                           "logprobs": self._completion_logprobs(req.prompt.logprobs + lp,
                                                                 self._echo_place(req, echo), gen)
                           if gen.logprobs is not None else None,
                           **req.ending(req.finish_reason), **_ids(gen, prompt_token_ids=req.prompt.ids, token_ids=t),
                           "prompt_logprobs": self._prompt_logprobs_field(gen, req.prompt)}
                          for i, (req, echo, text, lp, t) in enumerate(zip(reqs, echoes, texts, lps, ids))], choices.usage(reqs, self.prompt_tokens_details))

        return await self._finish(request, reqs, collect)

    # ---- /v1/chat/completions ----

    def _render(self, messages, kwargs, add_special_tokens, keep=None):
        """The token ids of a conversation rendered by the chat template (kwargs: the template's extra arguments)."""
        return prompt_cuts.encode(self.tokenizer, self._template(messages, kwargs), add_special_tokens, keep)

    def _template(self, messages, kwargs):
        """The text of a conversation rendered by the chat template."""
        extra = {k: v for k, v in kwargs.items()
                 if k not in ("add_generation_prompt", "continue_final_message", "tools", "documents")}
        if any(not isinstance(k, str) or not k.isidentifier() or k in _RESERVED_TEMPLATE_ARGS for k in extra):
            raise bad(f"chat_template_kwargs may not set {', '.join(sorted(_RESERVED_TEMPLATE_ARGS))}",
                      "chat_template_kwargs")
        try:
            return self.tokenizer.apply_chat_template(messages, **kwargs)
        except TemplateError as exc:
            raise bad(str(exc), "messages") from None

    def _parse_chat(self, body):
        body = sampling_defaults.applied(self.sampling_defaults, body)
        gen, messages, kwargs = protocol.chat_request(body, self.vocab_size, self.auto_tools)
        if gen.tool_calls and self.tool_format.special:  # the marker the calls follow is a special token (vLLM's)
            gen.skip_special_tokens = False
        gen.bad_word_ids = prompt_cuts.bad_word_ids(self.tokenizer, gen.bad_words)
        keep = prompt_cuts.kept(gen.truncate, self.max_model_len)
        text = self._template(messages, kwargs)
        if self.reasoning_parser is not None:
            gen.thinking = reasoning.thinking(self.reasoning_parser, text, kwargs)
        ids = prompt_cuts.encode(self.tokenizer, text, gen.add_special_tokens, keep, gen.truncate_right)
        if not ids:
            raise bad("the conversation renders to no tokens", "messages")
        # what echo repeats (vLLM's): the final message's text when it is the assistant's, the reply continuing it
        return gen, [choices.Prompt(ids, messages[-1]["content"] if messages[-1]["role"] == "assistant" else "")]

    def _chat_logprobs(self, lps, gen):
        name = self._token_name(gen)

        def entry(token_id, logprob):
            text = name(token_id)
            return {"token": text, "logprob": logprob, "bytes": list(self._token_bytes(token_id))}

        return {"content": [{**entry(lp.token_id, lp.logprob), "top_logprobs": [entry(t, v) for t, v in lp.top]}
                            for lp in lps]}

    def _chat_message(self, gen, req, text):
        """A whole choice's message and ending: its text (after an echo), or, parsed for tool calls, the text
        outside them (null when none) and the calls, finish_reason "tool_calls" when there are some. With a
        reasoning parser the reasoning goes apart first (null when none; the calls are read in the content)."""
        echo = self._echo(gen, req)
        thought = {}
        if gen.thinking is not None:
            r, text = reasoning.split(self.reasoning_parser, text, gen.thinking)
            thought = _reasoning_fields(r if gen.include_reasoning else None)
            if text is None and self._call_parser(gen, False) is None:
                return {"message": {"role": "assistant", "content": echo or None, **thought},
                        **req.ending(req.finish_reason)}
            text = text or ""
        parser = self._call_parser(gen, False)
        if parser is None:
            return {"message": {"role": "assistant", "content": echo + text, **thought},
                    **req.ending(req.finish_reason)}
        content, calls = tool_calls.parse(text, parser)
        calls = calls[:1] if gen.first_call_only else calls
        content = echo + (content or "") or None
        return {"message": {"role": "assistant", "content": content, "tool_calls": calls, **thought},
                **req.ending(self._call_reason(gen, req.finish_reason, len(calls)))}

    def _splitter(self, gen):
        """What reads a chat reply's reasoning apart, piece by piece (None: no reasoning parser)."""
        return None if gen.thinking is None else reasoning.Splitter(self.reasoning_parser, gen.thinking)

    def _call_parser(self, gen, stream):
        """What reads a chat reply's calls (None: the reply is text): tool_choice auto's parser, or the calls
        tool_choice "required" / a named function forces."""
        if gen.named_call is not None:
            return forced_calls.NamedCall(gen.named_call)
        if gen.required_calls:  # read as streamed either way: a call cut by max_tokens stays a call
            return tool_calls.ToolCallParser(True, forced_calls.REQUIRED)
        return self.tool_format.parser(stream, gen.tools) if gen.tool_calls else None

    @staticmethod
    def _call_reason(gen, reason, n_calls):
        """A finished reply's finish_reason: "tool_calls" when tool_choice auto found calls; a forced call keeps
        the generation's, as vLLM answers it."""
        return "tool_calls" if gen.tool_calls and reason and n_calls else reason

    @_stoppable
    async def chat(self, request):
        gen, reqs = await self._start(request, self._parse_chat, "messages")
        if gen.stream:
            chunk = self._reply("chat.completion.chunk", "chatcmpl", gen, choices.chunk_usage(gen, reqs, self.prompt_tokens_details))

            async def sse():
                for i in range(len(reqs)):  # the prompt's ids (one prompt) in the first chunk only
                    role = {"role": "assistant", "content": self._echo(gen, reqs[i])}
                    yield _sse(chunk([{"index": i, "delta": role, "logprobs": None, **reqs[i].ending(None)}],
                                     **(_ids(gen, prompt_token_ids=reqs[0].prompt.ids) if i == 0 else {})))
                parsers = [self._call_parser(gen, True) for _ in reqs]
                splitters = [self._splitter(gen) for _ in reqs]
                async for i, delta, lps, reason, ids in choices.merged(reqs):
                    logprobs = self._chat_logprobs(lps or [], gen) if gen.logprobs is not None else None
                    parser, thought = parsers[i], {}
                    if splitters[i] is not None:  # the reasoning apart, the content on to the calls' parser
                        r, delta = _joined(splitters[i].feed(delta), splitters[i].finish() if reason else ("", ""))
                        thought = _reasoning_fields(r) if r and gen.include_reasoning else {}
                    if parser is None:
                        message = {"content": delta} if delta else {}
                    else:  # content outside the calls, the calls' beginnings and arguments
                        message = tool_calls.delta(parser.feed(delta) + (parser.finish() if reason else []),
                                                   gen.first_call_only)
                        reason = self._call_reason(gen, reason, parser.n_calls)
                    message = {**thought, **message}
                    choice = {"index": i, "delta": message, "logprobs": logprobs,
                              **reqs[i].ending(reason), **_ids(gen, token_ids=ids)}
                    yield _sse(chunk([choice]))
                if gen.include_usage:
                    yield _sse(chunk([], choices.usage(reqs, self.prompt_tokens_details)))

            return _EventStream(_events_or_error(sse()))

        async def collect():
            texts, lps, ids = await choices.whole(reqs)
            answer = [{"index": i, **self._chat_message(gen, req, text),
                       "logprobs": self._chat_logprobs(lp, gen) if gen.logprobs is not None else None,
                       **_ids(gen, token_ids=t)}
                      for i, (req, text, lp, t) in enumerate(zip(reqs, texts, lps, ids))]
            return self._reply("chat.completion", "chatcmpl", gen)(answer, choices.usage(reqs, self.prompt_tokens_details),
                                                              **_ids(gen, prompt_token_ids=reqs[0].prompt.ids),
                                                              prompt_logprobs=self._prompt_logprobs_field(
                                                                  gen, reqs[0].prompt))

        return await self._finish(request, reqs, collect)

    # ---- /v1/responses (OpenAI's Responses API: responses.py) ----

    @_stoppable
    async def respond(self, request):
        """A chat reply as a Response object (or its events), stored for previous_response_id unless store false."""
        tenant, asked = self._tenant(request), []

        def parse(body):
            chat, a = responses.request(body, self.stored, tenant)
            asked.append(a)
            return self._parse_chat(chat)

        try:
            gen, reqs = await self._start(request, parse, "messages")
        except ApiError as exc:
            raise responses.renamed(exc) from None
        asked, req = asked[0], reqs[0]

        def logprobs(lps):
            return self._chat_logprobs(lps or [], gen)["content"] if asked.logprobs else []

        def finished(final, reply):
            if asked.store:
                self.stored.put(asked.id, tenant, asked.conversation + [reply], final, asked.items)
            return final

        def use():
            return responses.usage(choices.usage(reqs, False), req.n_cached)

        if gen.stream:
            events, parser = responses.Events(asked, self.model_name), self._call_parser(gen, True)
            splitter = self._splitter(gen)

            async def sse():
                yield events.start()
                try:
                    async for _, delta, lps, reason, _ in choices.merged(reqs):
                        if splitter is not None:  # the reasoning apart, the content on
                            r, delta = _joined(splitter.feed(delta), splitter.finish() if reason else ("", ""))
                            if r and gen.include_reasoning:
                                yield events.reasoning(r)
                            if not delta and not reason:
                                continue
                        if parser is None:
                            yield events.delta(delta, logprobs(lps))
                        else:  # the text outside the calls, each call's start and arguments
                            parsed = parser.feed(delta) + (parser.finish() if reason else [])
                            yield events.parsed(tool_calls.kept(parsed, gen.first_call_only))
                except Exception as exc:  # the engine failed: the stream's last event says so
                    yield events.failed(exc)
                    return
                done, (final, reply) = events.finish(req.finish_reason, use())
                finished(final, reply)
                yield done

            return _EventStream(sse())

        async def collect():
            texts, lps, _ = await choices.whole(reqs)
            msg = self._chat_message(gen, req, texts[0])["message"]
            calls = msg.get("tool_calls") or []
            items = responses.output(msg["content"], calls, logprobs(lps[0]) if asked.logprobs else None,
                                     req.finish_reason, msg.get("reasoning"))
            return finished(responses.response(asked, self.model_name, int(time.time()), "completed", items, use(),
                                               req.finish_reason), responses.assistant(msg["content"], calls))

        return await self._finish(request, reqs, collect)

    async def stored_response(self, request):
        """GET /v1/responses/{id} (the SDK's responses.retrieve): a stored Response of the caller's tenant; DELETE
        (responses.delete) drops it."""
        rid, tenant = request.path_params["response_id"], self._tenant(request)
        if request.method == "GET":
            return JSONResponse(self.stored.response(rid, tenant))
        self.stored.delete(rid, tenant)
        return JSONResponse({"id": rid, "object": "response.deleted", "deleted": True})

    async def input_items(self, request):
        """GET /v1/responses/{id}/input_items (the SDK's responses.input_items.list): a page of a stored response's
        input items, of the caller's tenant."""
        items = self.stored.input_items(request.path_params["response_id"], self._tenant(request))
        return JSONResponse(responses.page(items, request.query_params))

    async def invocations(self, request):
        """vLLM's SageMaker entry: a body with messages is a chat request, one with prompt a completion."""
        self._tenant(request)
        body = await self._body(request)
        for key, endpoint in (("messages", self.chat), ("prompt", self.completions)):
            if isinstance(body, dict) and key in body:
                return await endpoint(request)
        raise bad("an /invocations body holds messages (a chat request) or prompt (a completion)")

    # ---- /tokenize, /detokenize (vLLM's) ----

    def _tokenize(self, body):
        """(model asked for, token ids, token_strs wanted) of a /tokenize body."""
        req = protocol.tokenize_request(body)
        if req.text is not None:
            ids = self.tokenizer.encode(req.text, req.add_special_tokens)
        else:
            ids = self._render(req.messages, req.template_kwargs, req.add_special_tokens)
        return req.model, ids, req.token_strs

    async def tokenize(self, request):
        """The token ids of a text or of a conversation, as the completions and chat endpoints make them."""
        self._tenant(request)
        model, ids, strs = await anyio.to_thread.run_sync(self._tokenize, await self._body(request))
        if model:
            self._check_model(model)
        return JSONResponse({"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids,
                             "token_strs": [self.tokenizer.token_piece(t) for t in ids] if strs else None})

    async def detokenize(self, request):
        """The text of token ids, special tokens included."""
        self._tenant(request)
        model, ids = protocol.detokenize_request(await self._body(request), self.vocab_size)
        if model:
            self._check_model(model)
        text = await anyio.to_thread.run_sync(functools.partial(self.tokenizer.decode, ids, skip_special_tokens=False))
        return JSONResponse({"prompt": text})

    # ---- the rest ----

    def _model_card(self):
        return {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "kvcache",
                "root": self.model_name, "parent": None, "max_model_len": self.max_model_len}

    async def models(self, request):
        self._tenant(request)
        return JSONResponse({"object": "list", "data": [self._model_card()]})

    async def model(self, request):
        """GET /v1/models/{model} (the SDK's models.retrieve)."""
        self._tenant(request)
        self._check_model(request.path_params["model"])
        return JSONResponse(self._model_card())

    async def health(self, request):
        """200 while the engine takes requests; 503 once its thread has ended (vLLM's answer for a dead engine)."""
        return Response(status_code=200 if self.engine.alive else 503)

    async def version(self, request):
        """vLLM's /version: the package's version."""
        return JSONResponse({"version": __version__})

    async def prometheus(self, request):
        data, content_type = self.metrics.exposition()
        return Response(data, media_type=content_type)
