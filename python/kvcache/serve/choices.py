"""The choices of one request: each an engine request streamed to text
(Choice), n of them per prompt (Prompt), merged into one sequence of
events, and their usage together."""
import asyncio
import time

from ..engine import RequestOutput


class Choice:
    """One generation (one choice): its engine stream, text, counts and latencies."""

    def __init__(self, server, stream, text, params, arrival, prompt, n):
        """params: its SamplingParams; n: the choices of its request's body (for the metrics)."""
        self.server, self.stream, self.text, self.stop_ids = server, stream, text, params.stop_token_ids
        self.max_tokens, self.n = params.max_tokens, n
        self.arrival = self.last = arrival
        self.prompt = prompt  # the Prompt it continues
        self.n_generated = 0
        self.n_sent = 0  # of those, the ones merged() has handed on (a stream's chunks so far)
        self.n_cached = 0
        self.finish_reason = None
        self.stop_reason = None  # what stopped it (vLLM's field): the stop string, a stop_token_ids id, or None

    def ending(self, reason):
        """A choice's finish_reason and stop_reason fields (both null while it runs)."""
        return {"finish_reason": reason, "stop_reason": self.stop_reason if reason is not None else None}

    async def events(self):
        """(text delta, [TokenLogprob] or None, finish reason or None, the step's token ids), a step at a time
        (the ids as sampled: an end-of-sequence or stop token among them, which is not text)."""
        m = self.server.metrics
        async for out in self.stream:
            now = time.monotonic()
            if out.new_token_ids:
                (m.ttft if self.n_generated == 0 else m.itl).observe(now - self.last)
                self.last = now
            self.n_generated += len(out.new_token_ids)
            self.n_cached = out.num_cached_tokens
            ids = sampled = out.new_token_ids
            if out.finish_reason == "stop" and ids and ids[-1] in self.stop_ids:
                if ids[-1] not in self.server.tokenizer.eos_token_ids:
                    self.stop_reason = ids[-1]
                ids = ids[:-1]  # the end-of-sequence / stop token is not text
            delta = self.text.add(ids)
            reason = out.finish_reason
            if self.text.stopped is not None:
                reason, self.stop_reason = "stop", self.text.stopped
                self.stream.abort()
            if reason is not None:
                delta += self.text.finish()
                self.finish_reason = reason
                m.e2e.observe(now - self.arrival)
                m.generation_tokens.inc(self.n_generated)
                m.requests.labels(reason).inc()
                m.ended(len(self.prompt.ids), self.n_generated, self.n, self.max_tokens, self.n_cached, out.times)
            yield delta, out.logprobs, reason, sampled
            if reason is not None:
                return


class Prompt:
    """One prompt of a request: its token ids and, for completions, its text as given (None: decode the ids);
    scored: with echo and logprobs or with prompt_logprobs, a TokenLogprob per token (the first's logprob and top
    None: no context); logprobs: those an echo shows (their top cut to the request's logprobs), else none."""

    def __init__(self, ids, text=None):
        self.ids, self.text = ids, text
        self.scored, self.logprobs = [], []


class NothingToGenerate:
    """The stream of a choice that asks for no tokens (completions' max_tokens 0 with echo): it ends at once,
    with finish_reason "length", without an engine request."""

    def __init__(self, n_prompt):
        self.n_prompt = n_prompt

    def abort(self):
        pass

    async def __aiter__(self):
        yield RequestOutput(-1, [], "length", None, self.n_prompt, 0)


async def merged(reqs):
    """(choice index, text delta, [TokenLogprob] or None, finish reason or None, token ids) of every request, in the
    order their steps come. Leaving early (a client gone) or a failure of one aborts them all."""
    queue = asyncio.Queue()

    async def pump(i, req):
        try:
            async for event in req.events():
                queue.put_nowait((i, event))
        except Exception as exc:  # the engine failed: the consumer raises it
            queue.put_nowait((i, exc))
        finally:
            queue.put_nowait((i, None))

    tasks = [asyncio.ensure_future(pump(i, req)) for i, req in enumerate(reqs)]
    try:
        running = len(tasks)
        while running:
            i, event = await queue.get()
            if event is None:
                running -= 1
            elif isinstance(event, Exception):
                raise event
            else:
                reqs[i].n_sent += len(event[3])
                yield (i, *event)
    finally:
        for task in tasks:
            task.cancel()
        for req in reqs:
            req.stream.abort()


async def whole(reqs):
    """Every request's whole text, TokenLogprobs and token ids (the non-streamed answer):
    ([text], [[TokenLogprob]], [[id]])."""
    texts, lps, ids = [[] for _ in reqs], [[] for _ in reqs], [[] for _ in reqs]
    async for i, delta, step_lps, _, step_ids in merged(reqs):
        texts[i].append(delta)
        lps[i].extend(step_lps or [])
        ids[i].extend(step_ids)
    return ["".join(t) for t in texts], lps, ids


def usage(reqs, details, sent=False):
    """usage over every choice: each prompt counted once, every generated token (sent: those of the chunks sent so
    far, not the steps already waiting behind them); with details (vLLM's --enable-prompt-tokens-details) also
    prompt_tokens_details, the first choice of each prompt's cached tokens (without, the field is left out, as
    vLLM leaves it)."""
    firsts = {id(r.prompt): r for r in reversed(reqs)}.values()
    n_prompt = sum(len(r.prompt.ids) for r in firsts)
    n_generated = sum(r.n_sent if sent else r.n_generated for r in reqs)
    out = {"prompt_tokens": n_prompt, "completion_tokens": n_generated, "total_tokens": n_prompt + n_generated}
    if details:
        out["prompt_tokens_details"] = {"cached_tokens": sum(r.n_cached for r in firsts)}
    return out


def chunk_usage(gen, reqs, details):
    """The usage of a stream's chunks (but the last one's): none; with include_usage null (OpenAI documents the
    field in every chunk); with vLLM's continuous_usage_stats too, the usage of the chunks up to this one."""
    if not gen.stream or not gen.include_usage:
        return None
    return (lambda: usage(reqs, details, sent=True)) if gen.continuous_usage else (lambda: None)


def seed_of(seed, j):
    """The seed of choice j: seed + j as the engine's int64 (the same 64 bits), None stays None (vLLM: seed + index)."""
    if seed is None:
        return None
    v = (seed + j) % 2**64
    return v - 2**64 if v >= 2**63 else v
