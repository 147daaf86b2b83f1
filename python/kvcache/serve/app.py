"""The OpenAI-compatible HTTP application (Starlette) over an AsyncEngine:
/v1/completions, /v1/chat/completions (server-sent events or one JSON
answer), /v1/models, /health, /metrics. docs/serve.md describes the API."""
import asyncio
import contextlib
import functools
import hashlib
import hmac
import json
import time
import uuid

import anyio
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..async_engine import AsyncEngine
from ..chat_template import TemplateError
from ..detokenize import TextStream
from ..engine import SamplingParams
from .._lib import invalid
from ..errors import InvalidArgument, OutOfMemory, QueueFull
from ..tokenizer import Tokenizer
from . import protocol
from .metrics import Metrics
from .protocol import ApiError, bad

_RESERVED_TEMPLATE_ARGS = {"messages", "tools", "documents", "add_generation_prompt", "special_tokens",
                           "bos_token", "eos_token", "unk_token", "pad_token"}


def _error_response(exc):
    return JSONResponse(exc.body(), status_code=exc.status)


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


class _EventStream(StreamingResponse):
    """Server-sent events that stop, and so abort their request, as soon as
    the client disconnects (listened for beside the stream, whatever the
    server's ASGI version), not only at the next failed write."""

    def __init__(self, content):
        super().__init__(content, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def __call__(self, scope, receive, send):
        async with anyio.create_task_group() as group:
            async def run(func):
                with contextlib.suppress(OSError):
                    await func()
                group.cancel_scope.cancel()

            group.start_soon(run, functools.partial(self.stream_response, send))
            await run(functools.partial(self.listen_for_disconnect, receive))


async def _disconnected(request):
    while (await request.receive())["type"] != "http.disconnect":
        pass


class _Request:
    """One generation: its engine stream, text, counts and latencies."""

    def __init__(self, server, stream, text, stop_ids, arrival):
        self.server, self.stream, self.text, self.stop_ids = server, stream, text, stop_ids
        self.arrival = self.last = arrival
        self.n_generated = 0
        self.n_cached = 0
        self.finish_reason = None

    async def events(self):
        """(text delta, [TokenLogprob] or None, finish reason or None), a step at a time."""
        m = self.server.metrics
        async for out in self.stream:
            now = time.monotonic()
            if out.new_token_ids:
                (m.ttft if self.n_generated == 0 else m.itl).observe(now - self.last)
                self.last = now
            self.n_generated += len(out.new_token_ids)
            self.n_cached = out.num_cached_tokens
            ids = out.new_token_ids
            if out.finish_reason == "stop" and ids and ids[-1] in self.stop_ids:
                ids = ids[:-1]  # the end-of-sequence / stop token is not text
            delta = self.text.add(ids)
            reason = out.finish_reason
            if self.text.stopped is not None:
                reason = "stop"
                self.stream.abort()
            if reason is not None:
                delta += self.text.finish()
                self.finish_reason = reason
                m.e2e.observe(now - self.arrival)
                m.generation_tokens.inc(self.n_generated)
                m.requests.labels(reason).inc()
            yield delta, out.logprobs, reason
            if reason is not None:
                return

    async def whole(self):
        """The whole text and every TokenLogprob (the non-streamed answer)."""
        text, lps = [], []
        async for delta, step_lps, _ in self.events():
            text.append(delta)
            lps.extend(step_lps or [])
        return "".join(text), lps

    def usage(self, n_prompt):
        return {"prompt_tokens": n_prompt, "completion_tokens": self.n_generated,
                "total_tokens": n_prompt + self.n_generated, "prompt_tokens_details": {"cached_tokens": self.n_cached}}


class Server:
    """The application of one model directory. engine_kwargs go to
    kvcache.Engine; api_keys (none: no authentication) are the bearer
    tokens /v1/ accepts, each one its own prefix-cache tenant."""

    def __init__(self, model_dir, *, served_model_name=None, api_keys=(), max_body_bytes=1 << 20, **engine_kwargs):
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise invalid(f"max_body_bytes {max_body_bytes!r} must be an integer of at least 1 byte")
        self.tokenizer = Tokenizer(model_dir)
        self.engine = AsyncEngine(model_dir, **engine_kwargs)
        self.model_name = served_model_name or str(model_dir).rstrip("/").rsplit("/", 1)[-1]
        self.api_keys = [k.encode() for k in api_keys]
        self.max_body_bytes = max_body_bytes
        self.metrics = Metrics(self.engine)
        self.created = int(time.time())
        self.vocab_size = self.engine.engine.vocab_size
        self.max_model_len = self.engine.engine.max_model_len
        routes = [Route("/v1/completions", self.completions, methods=["POST"]),
                  Route("/v1/chat/completions", self.chat, methods=["POST"]),
                  Route("/v1/models", self.models, methods=["GET"]),
                  Route("/health", self.health, methods=["GET"]),
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
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            raise ApiError(413, f"the request body is larger than {self.max_body_bytes} bytes")
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > self.max_body_bytes:
                raise ApiError(413, f"the request body is larger than {self.max_body_bytes} bytes")
        return protocol.parse_body(data)

    def _salt(self, tenant, salt):
        """The prefix-cache salt: each API key its own tenant, the request's cache_salt within it."""
        if tenant is None:
            return salt
        return hashlib.sha256(b"kvcache-tenant\0" + tenant + b"\0" + (salt or "").encode()).digest()

    def _params(self, gen, n_prompt):
        if gen.max_tokens is None:
            gen.max_tokens = self.max_model_len - n_prompt
        if n_prompt + gen.max_tokens > self.max_model_len:
            raise bad(f"this model's maximum context length is {self.max_model_len} tokens; the request asks for "
                      f"{n_prompt + gen.max_tokens} ({n_prompt} in the prompt, {gen.max_tokens} to generate)",
                      "max_tokens" if n_prompt < self.max_model_len else "prompt")
        stop_ids = gen.stop_token_ids + (() if gen.ignore_eos else self.tokenizer.eos_token_ids)
        return SamplingParams(max_tokens=gen.max_tokens, temperature=gen.temperature, top_p=gen.top_p,
                              top_k=gen.top_k, seed=gen.seed, stop_token_ids=tuple(dict.fromkeys(stop_ids)),
                              logprobs=gen.logprobs)

    async def _start(self, request, parse):
        """Checks, tokenizes and queues a request: (Generation, prompt ids, _Request)."""
        arrival = time.monotonic()
        tenant = self._tenant(request)
        gen, ids = parse(await self._body(request))
        if gen.model != self.model_name:
            raise ApiError(404, f"the model `{gen.model}` does not exist; this server serves `{self.model_name}`",
                           param="model", code="model_not_found")
        params = self._params(gen, len(ids))
        try:
            stream = await self.engine.add_request(ids, params, priority=gen.priority,
                                                   cache_salt=self._salt(tenant, gen.cache_salt))
        except QueueFull as exc:
            raise ApiError(503, f"the server is full, retry later ({exc.message})", type="server_error",
                           code="queue_full") from None
        except (InvalidArgument, OutOfMemory) as exc:
            raise bad(exc.message) from None
        self.metrics.prompt_tokens.inc(len(ids))
        return gen, ids, _Request(self, stream, TextStream(self.tokenizer, ids, gen.stop), params.stop_token_ids,
                                  arrival)

    async def _finish(self, request, req, collect):
        """The non-streamed answer: collect(req) unless the client leaves first (then the request is aborted)."""
        work = asyncio.ensure_future(collect(req))
        gone = asyncio.ensure_future(_disconnected(request))
        done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:
            work.cancel()
            req.stream.abort()
            return Response(status_code=499)
        gone.cancel()
        return JSONResponse(work.result())

    # ---- /v1/completions ----

    def _parse_completion(self, body):
        gen, prompt = protocol.completion_request(body, self.vocab_size)
        ids = self.tokenizer.encode(prompt) if isinstance(prompt, str) else prompt
        if not ids:
            raise bad("the prompt has no tokens", "prompt")
        return gen, ids

    def _token_name(self, gen):
        """How logprobs name a token: its text, or "token_id:ID" with return_tokens_as_token_ids."""
        return (lambda t: f"token_id:{t}") if gen.tokens_as_ids else self._token_text

    def _completion_logprobs(self, lps, offset, gen):
        name = self._token_name(gen)
        offsets = []
        for lp in lps:
            offsets.append(offset)
            offset += len(self._token_text(lp.token_id))
        return {"tokens": [name(lp.token_id) for lp in lps], "token_logprobs": [lp.logprob for lp in lps],
                "top_logprobs": [{name(t): v for t, v in lp.top} for lp in lps], "text_offset": offsets}

    @functools.lru_cache(maxsize=4096)
    def _token_text(self, token_id):
        return self.tokenizer.decode([token_id], skip_special_tokens=False)

    def _reply(self, kind, prefix):
        """The envelope of one answer's chunks: chunk(choices, usage=None)."""
        rid, created = f"{prefix}-{uuid.uuid4().hex}", int(time.time())

        def chunk(choices, usage=None):
            out = {"id": rid, "object": kind, "created": created, "model": self.model_name, "choices": choices}
            if usage is not None:
                out["usage"] = usage
            return out

        return chunk

    async def completions(self, request):
        gen, ids, req = await self._start(request, self._parse_completion)
        chunk = self._reply("text_completion", "cmpl")
        if gen.stream:
            async def sse():
                offset = 0
                async for delta, lps, reason in req.events():
                    logprobs = self._completion_logprobs(lps or [], offset, gen) if gen.logprobs is not None else None
                    offset += len(delta)
                    yield _sse(chunk([{"index": 0, "text": delta, "logprobs": logprobs, "finish_reason": reason}]))
                if gen.include_usage:
                    yield _sse(chunk([], req.usage(len(ids))))

            return _EventStream(_events_or_error(sse()))

        async def collect(req):
            text, lps = await req.whole()
            logprobs = self._completion_logprobs(lps, 0, gen) if gen.logprobs is not None else None
            return chunk([{"index": 0, "text": text, "logprobs": logprobs, "finish_reason": req.finish_reason}],
                         req.usage(len(ids)))

        return await self._finish(request, req, collect)

    # ---- /v1/chat/completions ----

    def _parse_chat(self, body):
        gen, messages, kwargs = protocol.chat_request(body, self.vocab_size)
        extra = {k: v for k, v in kwargs.items() if k not in ("add_generation_prompt", "tools")}
        if any(not isinstance(k, str) or not k.isidentifier() or k in _RESERVED_TEMPLATE_ARGS for k in extra):
            raise bad(f"chat_template_kwargs may not set {', '.join(sorted(_RESERVED_TEMPLATE_ARGS))}",
                      "chat_template_kwargs")
        try:
            prompt = self.tokenizer.apply_chat_template(messages, **kwargs)
        except TemplateError as exc:
            raise bad(str(exc), "messages") from None
        ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        if not ids:
            raise bad("the conversation renders to no tokens", "messages")
        return gen, ids

    def _chat_logprobs(self, lps, gen):
        name = self._token_name(gen)

        def entry(token_id, logprob):
            text = name(token_id)
            return {"token": text, "logprob": logprob, "bytes": list(self._token_text(token_id).encode())}

        return {"content": [{**entry(lp.token_id, lp.logprob), "top_logprobs": [entry(t, v) for t, v in lp.top]}
                            for lp in lps]}

    async def chat(self, request):
        gen, ids, req = await self._start(request, self._parse_chat)
        if gen.stream:
            chunk = self._reply("chat.completion.chunk", "chatcmpl")

            async def sse():
                first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                         "finish_reason": None}
                yield _sse(chunk([first]))
                async for delta, lps, reason in req.events():
                    logprobs = self._chat_logprobs(lps or [], gen) if gen.logprobs is not None else None
                    choice = {"index": 0, "delta": {"content": delta} if delta else {}, "logprobs": logprobs,
                              "finish_reason": reason}
                    yield _sse(chunk([choice]))
                if gen.include_usage:
                    yield _sse(chunk([], req.usage(len(ids))))

            return _EventStream(_events_or_error(sse()))

        async def collect(req):
            text, lps = await req.whole()
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "logprobs": self._chat_logprobs(lps, gen) if gen.logprobs is not None else None,
                      "finish_reason": req.finish_reason}
            return self._reply("chat.completion", "chatcmpl")([choice], req.usage(len(ids)))

        return await self._finish(request, req, collect)

    # ---- the rest ----

    async def models(self, request):
        self._tenant(request)
        return JSONResponse({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": self.created, "owned_by": "kvcache",
             "max_model_len": self.max_model_len}]})

    async def health(self, request):
        return Response(status_code=200)

    async def prometheus(self, request):
        data, content_type = self.metrics.exposition()
        return Response(data, media_type=content_type)
