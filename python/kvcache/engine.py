"""kvcache.Engine: the C engine (continuous batching, chunked prefill, prefix
caching, preemption by recomputation, priorities) over a Hugging Face model
directory, token ids in and token ids out (docs/python.md, "The engine").

One Engine owns a model (kvc_model_load), its engine adapter and a kvc_engine
made over them. add_request queues a prompt with its sampling parameters;
step() runs one scheduler step (the GIL is released while C works) and
returns what every request gained. Finished requests are released by step()
itself, so their request slot and KV are free at once; abort() drops a
request whatever its state. Every method runs under the object's lock
(@serialised): the engine is not thread-safe, several threads may share the
object. kvcache.AsyncEngine drives one from a background thread for asyncio.
"""
import dataclasses
import itertools
import os
import sys
import weakref

import numpy as np

from ._lib import c_path, check, dtype_code, dtype_name, ffi, flag, int32, int64, invalid, lib, real, status_name
from ._locking import serialised
from .errors import Error, QueueFull
from .plan import parse_bytes, plan
from . import token_masks
from .structured import Grammar, set_bits

WEIGHT_DTYPES = ("checkpoint", "f32", "bf16", "q8_0", "q4_0")  # Engine(weights=...): kvc_model_load_weights
ACTIVATIONS = ("f32", "bf16")  # Engine(activations=...): kvc_model_set_activations
_SCHEDULERS = {"budget": "KVC_ENGINE_SCHED_BUDGET", "prefill_alone": "KVC_ENGINE_SCHED_PREFILL_ALONE"}
_MAX_LOGPROBS = 20


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    """How one request generates. temperature 0 is greedy; top_k 0, top_p 1
    and min_p 0 cut nothing; seed None draws a fresh seed (sampling then
    differs between runs; greedy ignores it). Generation ends after
    max_tokens tokens, at the model's length, or at one of stop_token_ids
    (that token is the last of the output). logprobs: None, or the number k
    (0..20) of most likely alternatives to report beside each sampled token's
    log-probability (of the model's raw distribution, before logit_bias, the
    penalties, temperature and cuts: vLLM's default "raw_logprobs").

    As vLLM's (docs/engine.md, "Sampling", gives the order): logit_bias
    {token id: bias in [-100, 100]} (at most 300 entries) added to the
    logits; presence_penalty and frequency_penalty in [-2, 2] over the
    generated tokens (logit -= frequency x count + presence when count > 0);
    repetition_penalty in (0, 2] over prompt and generated tokens (1 = none;
    a positive logit divided by it, another multiplied); min_p in [0, 1]
    (tokens below min_p x the best token's probability dropped, after the
    temperature); min_tokens (<= max_tokens): stop_token_ids (at most 64
    with it) are never sampled before that many tokens were generated.

    structured: None, or a kvcache.structured.Grammar: every token is drawn
    from those the grammar allows next (the others get -inf before every
    step above), stop_token_ids only once the output is complete, and the
    request ends with "stop" as soon as the grammar takes nothing more. Its
    logprobs are then of the masked distribution, as vLLM's.

    allowed_token_ids: None, or the only token ids it may sample (vLLM's;
    an end-of-sequence id too only when listed). bad_words: token-id
    sequences it never completes: a sequence's last token is banned where
    the tokens generated just before are the rest of it (vLLM's rule, over
    the output only). Both mask tokens as the grammar does (-inf before
    every step above); logprobs stay raw without a grammar."""
    max_tokens: int = 16
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = None
    stop_token_ids: tuple = ()
    logprobs: int = None
    min_p: float = 0.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_tokens: int = 0
    logit_bias: dict = None
    structured: object = None
    allowed_token_ids: tuple = None
    bad_words: tuple = ()


@dataclasses.dataclass(frozen=True)
class TokenLogprob:
    """A sampled token, its log-probability and the top alternatives
    [(token id, log-probability)], most likely first; rank: 1 + the number
    of tokens more likely than it (vLLM's rank)."""
    token_id: int
    logprob: float
    top: tuple
    rank: int = None


@dataclasses.dataclass
class RequestTimes:
    """When a request reached each stage, in time.monotonic() seconds, read from the C engine's records
    (kvc_engine_request_times_get): queued (add_request), scheduled (the start of the first step that ran it; a
    preemption does not move it; None: never ran), first_token and last_token (the end of the steps that gave its
    first and its last token; a request that ends without a token: the end of that step)."""
    queued: float
    scheduled: float = None
    first_token: float = None
    last_token: float = None


@dataclasses.dataclass
class RequestOutput:
    """What one request gained in a step. finish_reason: None while it runs,
    "stop" (a stop token, the last of new_token_ids), "length" (max_tokens or
    the model's length) or "abort". logprobs: [TokenLogprob] matching
    new_token_ids when the request asked for them, else None.
    num_cached_tokens: prompt tokens its admission took from the prefix cache.
    times: its RequestTimes, on the output that ends the request (None before, and for a choice that ran no engine
    request)."""
    request_id: int
    new_token_ids: list
    finish_reason: str = None
    logprobs: list = None
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0
    times: RequestTimes = None

    @property
    def finished(self):
        return self.finish_reason is not None


@dataclasses.dataclass
class _Live:
    params: SamplingParams
    n_prompt: int
    n_seen: int = 0
    mask: token_masks.RequestMask = None  # a grammar, allowed_token_ids or bad_words: its next token's mask


def _checkpoint_kv_dtype(model_dir, max_positions):
    """The KV dtype `kvcache run` defaults to: the checkpoint's, as `kvcache plan` reads config.json, planned for
    the runtime's positions (a config without max_position_embeddings, Mamba2's, failed to plan without them)."""
    return dtype_name(plan(model_dir, max_model_len=max_positions)._handle.options.kv_dtype)


def _logit_bias(bias, what):
    """[(token id, bias)] of a {id: bias} mapping (or a sequence of pairs); ids and values checked by C."""
    try:  # an int, None or pairs of three were a TypeError / ValueError of their own
        items = list(bias.items()) if isinstance(bias, dict) else list(bias)
        if len(items) > lib.KVC_SAMPLING_MAX_LOGIT_BIAS:
            raise invalid(f"{what}: logit_bias has {len(items)} entries, more than {lib.KVC_SAMPLING_MAX_LOGIT_BIAS}")
        return [(int32(t, "logit_bias token"), real(b, "logit_bias bias")) for t, b in items]
    except (TypeError, ValueError) as exc:
        if isinstance(exc, Error):
            raise
        raise invalid(f"{what}: logit_bias must map token ids to numbers") from None


def _sampling(params, vocab, what):
    """The C sampling params of a SamplingParams, and the arrays they point to (alive until the engine
    has copied them: kvc_engine_add_request)."""
    if not isinstance(params, SamplingParams):
        raise invalid(f"{what}: a kvcache.SamplingParams is expected, not {type(params).__name__}")
    max_tokens = int64(params.max_tokens, "max_tokens")
    if max_tokens < 1:  # (a negative one was reported as "min_tokens 0 is more than max_tokens")
        raise invalid(f"{what}: max_tokens {max_tokens} must be >= 1")
    if not isinstance(params.stop_token_ids, (list, tuple)):  # None or an int was a TypeError
        raise invalid(f"{what}: stop_token_ids must be a list or tuple of token ids, not "
                      f"{type(params.stop_token_ids).__name__}")
    for t in params.stop_token_ids:
        if int64(t, "stop_token_ids") < 0 or t >= vocab:
            raise invalid(f"{what}: stop token {t} is outside the vocabulary [0, {vocab})")
    if params.logprobs is not None and not 0 <= int64(params.logprobs, "logprobs") <= _MAX_LOGPROBS:
        raise invalid(f"{what}: logprobs {params.logprobs} is outside [0, {_MAX_LOGPROBS}]")
    if params.bad_words is not None and not isinstance(params.bad_words, (list, tuple)):  # 5 was a TypeError
        raise invalid(f"{what}: bad_words must be a list or tuple of token-id sequences, not "
                      f"{type(params.bad_words).__name__}")
    g = params.structured  # another object was an AttributeError; another vocabulary's grammar a ValueError once queued
    if g is not None and not callable(getattr(g, "matcher", None)):
        raise invalid(f"{what}: structured must be a kvcache.structured.Grammar, not {type(g).__name__}")
    if isinstance(g, Grammar) and g.vocabulary.vocab_size != vocab:
        raise invalid(f"{what}: structured: the grammar is of a {g.vocabulary.vocab_size}-token vocabulary, the "
                      f"model's has {vocab}")
    s = ffi.new("kvc_sampling_params *", lib.kvc_sampling_default_params())
    s.temperature = real(params.temperature, "temperature")
    s.top_p = real(params.top_p, "top_p")
    s.top_k = int32(params.top_k, "top_k")
    seed = int.from_bytes(os.urandom(8), "little") if params.seed is None else int64(params.seed, "seed")
    s.seed = seed % 2**64
    s.min_p = real(params.min_p, "min_p")
    s.presence_penalty = real(params.presence_penalty, "presence_penalty")
    s.frequency_penalty = real(params.frequency_penalty, "frequency_penalty")
    s.repetition_penalty = real(params.repetition_penalty, "repetition_penalty")
    if params.repetition_penalty == 0:  # C reads 0 as none; vLLM's range is (0, 2]
        raise invalid(f"{what}: repetition_penalty 0 is outside (0, 2]")
    s.min_tokens = int64(params.min_tokens, "min_tokens")
    if s.min_tokens > max_tokens:
        raise invalid(f"{what}: min_tokens {s.min_tokens} is more than max_tokens {params.max_tokens}")
    keep = []
    stops = list(dict.fromkeys(params.stop_token_ids)) if s.min_tokens > 0 else []
    if len(stops) > lib.KVC_SAMPLING_MAX_STOP_IDS:
        raise invalid(f"{what}: min_tokens holds back at most {lib.KVC_SAMPLING_MAX_STOP_IDS} stop_token_ids, "
                      f"{len(stops)} given")
    if stops:
        keep.append(ffi.new("int32_t[]", stops))
        s.min_tokens_ids, s.n_min_tokens_ids = keep[-1], len(stops)
    bias = _logit_bias(params.logit_bias, what) if params.logit_bias else []
    if bias:
        keep.append(ffi.new("kvc_logit_bias[]", bias))
        s.logit_bias, s.n_logit_bias = keep[-1], len(bias)
    return s[0], keep


def _most_likely(row, k):
    """The ids of the k largest logits of row, largest first, the lower id first among equals (a full sort's
    order, from a partition: a 150k vocabulary is not sorted for 20 entries)."""
    if k == 0:
        return ()
    k = min(k, row.size)
    cut = row[np.argpartition(-row, k - 1)[:k]].min()
    above = np.flatnonzero(row > cut)
    ids = np.concatenate([above, np.flatnonzero(row == cut)[:k - above.size]])
    return ids[np.lexsort((ids, -row[ids]))]


def _top_logprobs(row, token, k):
    """TokenLogprob of `token` under logits `row` (log-softmax), with the k most likely."""
    m = float(row.max())
    lse = m + float(np.log(np.exp(row - m, dtype=np.float64).sum()))
    return TokenLogprob(int(token), float(row[token]) - lse,
                        tuple((int(t), float(row[t]) - lse) for t in _most_likely(row, k)),
                        int(np.count_nonzero(row > row[token])) + 1)


_SCORE_CHUNK = 32  # prompt tokens a scoring step feeds: [32, V] logits at a time (19 MiB for a 150k vocabulary)


_tp = {}  # this process's tensor-parallel session (one per process, as MPI): {"size": N, "rank": r}


def tensor_parallel_check(model_dir, size):
    """Refuses, naming --tensor-parallel-size, a size the model in model_dir does not split over (a head count or
    intermediate size it does not divide; docs/distributed.md) or a size above 1 without MPI in the package; no
    MPI is started."""
    size = int64(size, "tensor_parallel_size")
    _check_tp(lib.kvc_py_tp_check(c_path(model_dir, "model_dir"), size), size)


def _check_tp(status, size):
    """check(status), a refusal naming --tensor-parallel-size: the option that set the size refused."""
    try:
        check(status)
    except Error as exc:
        raise type(exc)(exc.status, exc.status_name, f"--tensor-parallel-size {size}: {exc.message}") from None


def tensor_parallel_start(size):
    """Starts this process's tensor-parallel session (MPI, under `mpirun -np size`) and returns its rank: rank 0
    serves (its Engine leads), the others follow (Engine.follow). Refused naming --tensor-parallel-size when the
    job has another number of ranks, or without MPI in the package."""
    size = int64(size, "tensor_parallel_size")
    if _tp:
        if _tp["size"] != size:
            raise invalid(f"tensor_parallel_size {size}: this process runs a session of {_tp['size']} ranks already")
        return _tp["rank"]
    rank = ffi.new("int32_t *")
    check(lib.kvc_py_tp_start(size, rank))
    _tp.update(size=size, rank=int(rank[0]))
    return _tp["rank"]


def tensor_parallel_end(status=0):
    """Ends this process's tensor-parallel session once its Engine is closed: status 0 waits for every rank
    (MPI_Finalize); another status ends the whole job at once (MPI_Abort), as a rank that failed must."""
    if _tp:
        _tp.clear()
        lib.kvc_py_tp_end(status)


def _destroy(engine, adapter, model):
    lib.kvc_engine_destroy(engine)
    lib.kvc_engine_adapter_destroy(adapter)
    lib.kvc_model_destroy(model)


@serialised
class Engine:
    """The C engine over the model in model_dir (config.json and
    *.safetensors, as kvcache.run loads it).

    kv_dtype: "f32", "f16", "bf16", "i8", "fp8_e4m3", "fp8_e5m2" (default: the
    checkpoint's); weights: the dtype of the weight matrices, "checkpoint"
    (default: as stored), "f32", "bf16", "q8_0" or "q4_0" (quantized at load,
    8 or 4 bits with an f16 scale per 32 weights; docs/runtime.md); activations:
    "f32" (default: f32-level results) or "bf16" (bf16 matrices round the
    activations to bf16, as PyTorch bf16 does: faster, with the error
    docs/runtime.md measures; refused for a model without bf16 matrices); block_size: tokens per KV block; kv_memory: the KV budget
    (bytes or "1GiB"); without it the pools hold max_num_seqs requests of
    max_model_len tokens. max_model_len: KV positions per request (default:
    the model's max_position_embeddings). max_num_seqs: requests running at
    once; max_num_batched_tokens: tokens per step (0: the engine's default);
    max_requests: requests held at once, waiting included (0: 4 x
    max_num_seqs; beyond it add_request raises QueueFull). prefix_caching:
    reuse cached KV of prompt prefixes (requests share only with requests of
    the same cache_salt; a model with state layers, LFM2, resumes its states
    from cached snapshots), and the prefix_caching attribute says what the
    engine runs with. scheduler: "budget" (chunked prefill beside
    decode) or "prefill_alone". seed: mixed into every request's seed.

    tensor_parallel_size N > 1: under `mpirun -np N`, each process loads its
    shard of the model (docs/distributed.md) and makes an engine over it with
    the same arguments; rank 0's is driven as any Engine and every call that
    changes it reaches the others at its next step, while their processes run
    follow() (docs/serve.md, "Tensor parallel"); prompt_logprobs's pass runs
    on every rank (kvc_engine_sync_score)."""

    def __init__(self, model_dir, *, kv_dtype=None, weights="checkpoint", activations="f32", block_size=16, kv_memory=None, max_model_len=None,
                 max_num_seqs=8, max_num_batched_tokens=0, max_requests=0, prefix_caching=True, scheduler="budget",
                 step_cost_ratio=None, long_prefill_token_threshold=0, seed=0, check_invariants=False,
                 tensor_parallel_size=1):
        path = c_path(model_dir, "model_dir")
        tp = int64(tensor_parallel_size, "tensor_parallel_size")
        if tp < 1:
            raise invalid(f"tensor_parallel_size {tp} must be >= 1")
        if not isinstance(weights, str) or weights not in WEIGHT_DTYPES:
            raise invalid(f"weights {weights!r} is not one of {', '.join(WEIGHT_DTYPES)}")
        if not isinstance(activations, str) or activations not in ACTIVATIONS:
            raise invalid(f"activations {activations!r} is not one of {', '.join(ACTIVATIONS)}")
        m = ffi.new("kvc_model **")
        if tp > 1:
            self.rank = tensor_parallel_start(tp)
            _check_tp(lib.kvc_py_tp_load(path, weights.encode(), m), tp)  # a size the ranks do not divide
        else:
            self.rank = 0
            check(lib.kvc_model_load_weights(path, weights.encode(), m))
        self.tensor_parallel_size = tp
        model = m[0]
        try:
            check(lib.kvc_model_set_activations(model, activations.encode()))
            cfg = lib.kvc_model_config_of(model)
            self.vocab_size = int(cfg.vocab_size)
            p = ffi.new("kvc_engine_params *", lib.kvc_engine_default_params())
            p.max_model_len = int64(cfg.max_position_embeddings if max_model_len is None else max_model_len,
                                    "max_model_len")
            p.max_num_seqs = int64(max_num_seqs, "max_num_seqs")
            p.max_num_batched_tokens = int64(max_num_batched_tokens, "max_num_batched_tokens")
            p.max_requests = int64(max_requests, "max_requests")
            p.long_prefill_token_threshold = int64(long_prefill_token_threshold, "long_prefill_token_threshold")
            if step_cost_ratio is not None:
                p.step_cost_ratio = real(step_cost_ratio, "step_cost_ratio")
            if scheduler not in _SCHEDULERS:
                raise invalid(f"scheduler \"{scheduler}\" is not one of {', '.join(_SCHEDULERS)}")
            p.scheduler = getattr(lib, _SCHEDULERS[scheduler])
            if kv_memory is not None:
                p.plan = lib.KVC_ENGINE_PLAN_BUDGET
                p.kv_memory_bytes = parse_bytes(kv_memory)
            p.prefix_caching = flag(prefix_caching, "prefix_caching")
            p.seed = int64(seed, "seed") % 2**64
            p.check = flag(check_invariants, "check_invariants")
            if tp > 1:
                lib.kvc_py_tp_set_sync(p)  # rank 0 leads, the others follow
            ap = ffi.new("kvc_engine_adapter_params *", lib.kvc_engine_adapter_default_params())
            if kv_dtype is None:
                kv_dtype = _checkpoint_kv_dtype(model_dir, cfg.max_position_embeddings)
            ap.cache.kv_dtype = dtype_code(kv_dtype, "kv_dtype")
            ap.cache.block_size = int64(block_size, "block_size")
            a = ffi.new("kvc_engine_adapter **")
            check(lib.kvc_engine_adapter_create(model, ap, p, a))
        except BaseException:
            lib.kvc_model_destroy(model)
            raise
        adapter = a[0]
        self._tap = ffi.new("kvc_py_logits_tap *")
        lib.kvc_py_logits_tap_init(self._tap, lib.kvc_engine_adapter_model(adapter))
        e = ffi.new("kvc_engine **")
        st = lib.kvc_engine_create(lib.kvc_py_logits_tap_model(self._tap), p, e)
        if st < 0:
            _destroy(ffi.NULL, adapter, model)
            check(st)
        self._e = e[0]
        self._model, self._kv_dtype_code = model, ap.cache.kv_dtype
        self._close = weakref.finalize(self, _destroy, self._e, adapter, model)
        self.max_model_len = int(p.max_model_len)
        self.max_num_seqs = int(p.max_num_seqs)
        self.max_requests = int(lib.kvc_engine_params_of(self._e).max_requests)  # 0 resolved by the engine
        # what the engine runs with (kvc_engine_params_of), state layers included (docs/runtime.md, "State layers")
        self.prefix_caching = bool(lib.kvc_engine_params_of(self._e).prefix_caching)
        self.kv_dtype = dtype_name(ap.cache.kv_dtype)
        self.weights = weights
        self.activations = activations
        self.block_size = int(ap.cache.block_size)
        self._live = {}
        self._all_tokens = np.zeros((self.vocab_size + 31) // 32, dtype=np.uint32)  # every token's bit, none past
        set_bits(self._all_tokens, np.arange(self.vocab_size), True)
        self._ids = itertools.count()
        self._out = ffi.new("int32_t[]", self.max_model_len + 1)
        self._info = ffi.new("kvc_engine_request_info *")
        self._token_ns = ffi.new("int64_t[]", self.max_model_len + 1)
        self._req_times = ffi.new("kvc_engine_request_times *")
        self._logits = None  # [max_num_seqs, vocab] f32 and request ids, lent to the tap on the first logprobs request
        self._row_ids = None

    def close(self):
        """Frees the engine, its KV caches and the model at once (also done when the object goes)."""
        self._live.clear()
        self._close()

    def _handle(self):
        if not self._close.alive:
            raise invalid("the engine is closed")
        return self._e

    def add_request(self, prompt_token_ids, params=SamplingParams(), *, priority=0, cache_salt=None):
        """Queues a prompt (token ids); returns the request's id. priority:
        lower is served first. cache_salt (str or bytes, at most 64 bytes):
        prefix-cache hits only among requests with the same salt. Raises
        InvalidArgument for bad ids or parameters, OutOfMemory when the
        request alone would not fit the KV pools, QueueFull when every request
        slot is held."""
        e = self._handle()
        ids = self._prompt_ids(prompt_token_ids)
        rid = next(self._ids)
        r = ffi.new("kvc_engine_request *", lib.kvc_engine_request_default())
        r.id = rid
        r.prompt = ffi.from_buffer("int32_t[]", ids)
        r.n_prompt = ids.size
        r.sampling, keep_arrays = _sampling(params, self.vocab_size, f"request {rid}")  # params checked first
        r.max_new_tokens = params.max_tokens
        r.priority = int32(priority, "priority")
        live = _Live(params, int(ids.size))
        if token_masks.wanted(params):  # before the engine holds the request: a refusal leaves nothing behind
            live.mask = token_masks.RequestMask(params, self.vocab_size, self._all_tokens)
            live.mask.fill()  # the first mask too: a matcher that fails leaves no request queued
        try:  # a lone surrogate ("\ud800") was a UnicodeEncodeError
            salt = cache_salt.encode() if isinstance(cache_salt, str) else cache_salt
        except UnicodeEncodeError:
            raise invalid("cache_salt: a str must be Unicode text (it is encoded as UTF-8)") from None
        if salt is not None:
            if not isinstance(salt, bytes) or not 1 <= len(salt) <= lib.KVC_ENGINE_SALT_MAX:
                raise invalid(f"cache_salt: 1 to {lib.KVC_ENGINE_SALT_MAX} bytes (str or bytes) are expected")
            keep = ffi.from_buffer("char[]", salt)
            r.cache_salt = keep
            r.cache_salt_len = len(salt)
        st = check(lib.kvc_engine_add_request(e, r))
        if st == lib.KVC_NO_SPACE:
            raise QueueFull(st, "KVC_NO_SPACE", ffi.string(lib.kvc_last_error()).decode(errors="replace"))
        self._live[rid] = live
        if live.mask is not None:
            self._set_mask(e, rid, live.mask.words)
        return rid

    @staticmethod
    def _set_mask(e, rid, words):
        check(lib.kvc_engine_set_allowed_tokens(e, rid, ffi.from_buffer("uint32_t[]", words), words.size))

    def _constrain(self, e, rid, live):
        """Sets the allowed tokens of a masked request's next sampled token (token_masks.RequestMask)."""
        self._set_mask(e, rid, live.mask.fill())

    def _prompt_ids(self, prompt_token_ids):
        try:
            ids = np.asarray(prompt_token_ids)
        except Exception:
            raise invalid("prompt_token_ids: not a list of token ids") from None
        if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
            raise invalid("prompt_token_ids: a non-empty 1-D list of integer token ids is expected")
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            raise invalid(f"prompt_token_ids: ids must lie in [0, {self.vocab_size})")
        return np.ascontiguousarray(ids, dtype=np.int32)

    def prompt_logprobs(self, prompt_token_ids, k=0):
        """What the model gives each token of a prompt after the tokens before it (vLLM's prompt_logprobs; an
        OpenAI completions request with echo and logprobs): [None] for the first token, which has no context,
        then a TokenLogprob per later token with the k (0..20) most likely in its place. Computed by a pass of
        its own over the prompt (a runner over the engine's model: contiguous caches in the engine's KV dtype,
        32 tokens a step), between the engine's steps; the engine's requests and caches are not touched.
        With tensor parallelism the other ranks run the same pass (kvc_engine_sync_score, follow())."""
        e = self._handle()  # the model lives as long as the engine
        ids = self._prompt_ids(prompt_token_ids)
        if not 0 <= int64(k, "k") <= _MAX_LOGPROBS:
            raise invalid(f"prompt_logprobs: k {k} is outside [0, {_MAX_LOGPROBS}]")
        if ids.size > self.max_model_len:
            raise invalid(f"prompt_token_ids: {ids.size} tokens exceed max_model_len {self.max_model_len}")
        if ids.size == 1:
            return [None]
        check(lib.kvc_engine_sync_score(e, ffi.from_buffer("int32_t[]", ids), ids.size))
        return self._score(ids, k)

    def _score(self, ids, k):
        """prompt_logprobs's pass over ids (int32 [n], n >= 2); k None: the logits are dropped (a follower)."""
        out = [None]
        chunk = min(_SCORE_CHUNK, int(ids.size))
        p = ffi.new("kvc_runner_params *", lib.kvc_runner_default_params())
        p.mode = lib.KVC_RUNNER_CONTIGUOUS
        p.max_new_tokens = 1
        p.max_seq_len = ids.size
        p.max_positions = max(self.max_model_len, chunk + 1)
        p.cache.kv_dtype = self._kv_dtype_code
        r = ffi.new("kvc_runner **")
        check(lib.kvc_runner_create(self._model, p, 1, chunk, r))
        try:
            logits = np.empty((chunk, self.vocab_size), dtype=np.float32)
            buf = ffi.from_buffer("float[]", logits, require_writable=True)
            for first in range(0, ids.size - 1, chunk):  # the last token predicts nothing asked for
                q = min(chunk, ids.size - 1 - first)
                check(lib.kvc_runner_score_chunk(r[0], ffi.from_buffer("int32_t[]", ids[first:]), first, q, buf))
                if k is not None:
                    out += [_top_logprobs(logits[i], ids[first + i + 1], k) for i in range(q)]
        finally:
            lib.kvc_runner_destroy(r[0])
        return out

    def abort(self, request_id):
        """Drops a request (waiting, running or finished): its KV blocks and
        slot are freed at once. False when the engine no longer holds it."""
        e = self._handle()
        if self._live.pop(int64(request_id, "request_id"), None) is None:
            return False
        check(lib.kvc_engine_request_release(e, request_id))
        return True

    def follow(self):
        """A rank > 0 of tensor_parallel_size: replays rank 0's engine calls and steps with it until rank 0's
        Engine closes (kvc_engine_follow); raises Error on a log it cannot replay (the job must then end:
        tensor_parallel_end with a status). Runs rank 0's prompt_logprobs passes too, where rank 0 runs them."""
        e = self._handle()
        ids, n = ffi.new("const int32_t **"), ffi.new("int64_t *")
        while True:
            check(lib.kvc_engine_follow(e))
            check(lib.kvc_engine_follow_score(e, ids, n))
            if n[0] == 0:
                return
            self._score(np.frombuffer(ffi.buffer(ids[0], 4 * n[0]), dtype=np.int32).copy(), None)

    def has_unfinished(self):
        return bool(self._live)

    def step(self):
        """One scheduler step; returns a RequestOutput for every request that
        gained tokens or finished. Finished requests are released. Raises
        Error when requests are held but none can run ("no progress")."""
        e = self._handle()
        self._lend_logits()
        res = ffi.new("kvc_engine_step_result *")
        st = lib.kvc_engine_step(e, res)
        if st < 0 and self.tensor_parallel_size > 1:  # a collective failed or timed out: the ranks no longer match
            print(f"kvcache: rank 0's step failed, ending the job: {status_name(st)}: "
                  f"{ffi.string(lib.kvc_last_error()).decode(errors='replace')}", file=sys.stderr, flush=True)
            tensor_parallel_end(1)
        check(st)
        if st == lib.KVC_NO_SPACE:
            raise Error(st, "KVC_NO_SPACE", ffi.string(lib.kvc_last_error()).decode(errors="replace"))
        outputs = []
        for rid, live in list(self._live.items()):
            out = self._collect(e, rid, live)
            if out is not None:
                outputs.append(out)
        return outputs

    def _lend_logits(self):
        wanted = any(live.params.logprobs is not None for live in self._live.values())
        if wanted and self._logits is None:
            self._logits = np.zeros((self.max_num_seqs, self.vocab_size), dtype=np.float32)
            self._row_ids = np.zeros(self.max_num_seqs, dtype=np.int64)
        t = self._tap
        t.logits = ffi.from_buffer("float[]", self._logits, require_writable=True) if wanted else ffi.NULL
        t.request_ids = ffi.from_buffer("int64_t[]", self._row_ids, require_writable=True) if wanted else ffi.NULL
        t.cap_rows = self.max_num_seqs if wanted else 0

    def _collect(self, e, rid, live):
        """The RequestOutput of request rid after a step (None: nothing new)."""
        info = self._info
        check(lib.kvc_engine_request_get(e, rid, info))
        finished = info.state == lib.KVC_REQ_FINISHED
        if info.n_generated == live.n_seen and not finished:
            return None
        n = ffi.new("int64_t *")
        check(lib.kvc_engine_request_output(e, rid, self._out, len(self._out), n))
        first, live.n_seen = live.n_seen, n[0]
        new = list(self._out[first:n[0]])
        reason = None
        if finished:  # an empty allowed-token mask ends a request without a token: aborted, as vLLM names it
            reason = "abort" if info.finish == lib.KVC_FINISH_NO_ALLOWED_TOKEN else "length"
        stops = live.params.stop_token_ids
        for i, t in enumerate(new):
            if t in stops:
                new, reason = new[:i + 1], "stop"
                break
        out = RequestOutput(rid, new, reason, self._logprobs(rid, live, new), live.n_prompt, int(info.n_prefix_hit))
        if live.mask is not None and out.finish_reason is None:
            out.finish_reason = live.mask.advance(new)
            if out.finish_reason is None:
                self._constrain(e, rid, live)
        if out.finish_reason is not None:
            out.times = self._times(e, rid, first + len(new))
            self.abort(rid)
        return out

    def _times(self, e, rid, n_tokens):
        """Request rid's RequestTimes from the engine's records (kvc_engine_now_ns reads CLOCK_MONOTONIC, the clock of
        time.monotonic); its last token is its n_tokens-th (none: the step that ended it)."""
        t = self._req_times
        check(lib.kvc_engine_request_times_get(e, rid, t))
        last = t.finish_ns
        if n_tokens > 0:
            n = ffi.new("int64_t *")
            check(lib.kvc_engine_request_token_times(e, rid, ffi.NULL, self._token_ns, n_tokens, n))
            last = self._token_ns[n_tokens - 1]
        first = t.first_token_ns if t.first_token_ns >= 0 else last
        return RequestTimes(*(None if ns < 0 else ns / 1e9 for ns in (t.arrival_ns, t.first_scheduled_ns, first, last)))

    def _logprobs(self, rid, live, new):
        k = live.params.logprobs
        if k is None or not new:
            return None
        rows = np.flatnonzero(self._row_ids[:self._tap.n_rows] == rid)
        if len(new) != 1 or rows.size != 1:
            raise Error(lib.KVC_EINTERNAL, "KVC_EINTERNAL", f"request {rid}: no logits row for its new token")
        row = self._logits[rows[0]]
        if live.mask is not None and live.mask.matcher is not None:  # of the grammar's masked distribution (vLLM's)
            allowed = live.mask.allowed(self.vocab_size)
            row, k = np.where(allowed, row, np.float32(-np.inf)), min(k, int(np.count_nonzero(allowed)))
        return [_top_logprobs(row, new[0], k)]

    def stats(self):
        """The engine's counters now: running / waiting requests, KV usage
        (the fullest pool's used fraction), prefix-cache query and hit tokens,
        preemptions, steps, generated tokens."""
        s = ffi.new("kvc_engine_stats *")
        check(lib.kvc_engine_get_stats(self._handle(), s))
        usage = max((s.blocks_in_use[k] / max(1, s.num_blocks[k] - 1) for k in range(s.n_keys)), default=0.0)
        return {"running": int(s.n_running), "waiting": int(s.n_waiting), "kv_usage": float(usage),
                "kv_blocks_in_use": sum(int(s.blocks_in_use[k]) for k in range(s.n_keys)),
                "prefix_query_tokens": int(s.prefix_query_tokens), "prefix_hit_tokens": int(s.prefix_hit_tokens),
                "preemptions": int(s.preemptions), "steps": int(s.steps),
                "generated_tokens": int(s.generated_tokens), "kv_bytes": int(s.kv_bytes)}

    def generate(self, prompts, params=SamplingParams()):
        """Runs prompts (lists of token ids) to the end; returns each one's
        generated ids, in order (a convenience over add_request and step). The
        engine must hold no other request (step's outputs of those would be
        lost); a prompt refused leaves none of the others queued."""
        if self._live:
            raise invalid(f"generate: the engine holds {len(self._live)} request(s) of add_request (their outputs "
                          "would be lost): step them to the end or abort them first")
        ids = []
        try:
            for p in prompts:
                ids.append(self.add_request(p, params))
        except BaseException:
            for rid in ids:
                self.abort(rid)
            raise
        got = {rid: [] for rid in ids}
        while any(rid in self._live for rid in ids):
            for out in self.step():
                got[out.request_id].extend(out.new_token_ids)
        return [got[rid] for rid in ids]
