"""kvcache.run: a Hugging Face model directory through the standalone runner,
or through the engine when asked to stream, sample or stop at an end-of-sequence id."""
import json
import pathlib

import numpy as np

from ._lib import c_name, c_path, check, choice, ffi, flag, int64, invalid, lib, read_regular

_MODES = {"recompute": "KVC_RUNNER_RECOMPUTE", "contiguous": "KVC_RUNNER_CONTIGUOUS", "paged": "KVC_RUNNER_PAGED",
          "mla_latent": "KVC_RUNNER_MLA_LATENT"}


_ENGINE_ARGS = ("stream", "temperature", "top_k", "top_p", "seed", "eos")


def _config_eos(model_dir):
    """config.json's eos_token_id as a tuple of ids (`kvcache run` stops at the first one; the engine at any)."""
    try:  # a FIFO blocked here, deep nesting and a list were tracebacks: the engine's reader names what is wrong
        config = json.loads(read_regular(pathlib.Path(model_dir) / "config.json"))
    except (OSError, ValueError, RecursionError):
        return ()
    value = config.get("eos_token_id") if isinstance(config, dict) else None
    ids = value if isinstance(value, list) else [value]
    return tuple(v for v in ids if isinstance(v, int) and not isinstance(v, bool))


def _through_engine(model_dir, rows, max_new_tokens, block_size, weights, activations, opts):
    """The prompts as requests of one Engine (every prompt running at once, as `kvcache run --stream`
    does): a list of each prompt's ids, or with stream=True an iterator of (prompt index, token id)."""
    from .engine import Engine, SamplingParams

    eos = opts.get("eos")
    if eos is not None and not isinstance(eos, (int, list, tuple)):  # 1.5 was a TypeError, {1: 2} taken as (1,)
        raise invalid(f"eos: an id or a list of ids is expected, not {type(eos).__name__}")
    eos = _config_eos(model_dir) if eos is None else ((eos,) if isinstance(eos, int) else tuple(eos))
    params = SamplingParams(max_tokens=max_new_tokens, temperature=opts.get("temperature") or 0.0,
                            top_k=opts.get("top_k") or 0, top_p=1.0 if opts.get("top_p") is None else opts["top_p"],
                            seed=opts.get("seed") or 0, stop_token_ids=eos)
    engine = Engine(model_dir, weights=weights, activations=activations, block_size=block_size,
                    max_model_len=max(len(r) for r in rows) + max_new_tokens,
                    max_num_seqs=len(rows), max_requests=len(rows))
    index = {engine.add_request(r, params): i for i, r in enumerate(rows)}

    def tokens():
        while engine.has_unfinished():
            for out in engine.step():
                for t in out.new_token_ids:
                    yield index[out.request_id], t
        engine.close()

    if opts.get("stream"):
        return tokens()
    got = [[] for _ in rows]
    for i, t in tokens():
        got[i].append(t)
    return got


def _prompt_rows(prompts):
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__") or len(prompts) == 0:
        raise invalid("prompts: a non-empty list of token-id lists is expected")
    rows = []
    for i, p in enumerate(prompts):
        try:
            a = np.asarray(p)
        except Exception:
            raise invalid(f"prompt {i}: not a list of token ids") from None
        if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
            raise invalid(f"prompt {i}: a non-empty 1-D list of integer token ids is expected")
        if a.min() < -(2**31) or a.max() >= 2**31:
            raise invalid(f"prompt {i}: token ids outside int32")
        rows.append(a.astype(np.int32))
    return rows


def run(model_dir, prompts, max_new_tokens=8, *, mode="paged", block_size=16, mla_paged=True, logits=False,
        max_positions=0, stream=False, temperature=None, top_k=None, top_p=None, seed=None, eos=None,
        weights="checkpoint", activations="f32"):
    """Greedy generation of max_new_tokens tokens for every prompt (lists of
    token ids; no tokenizer here) in one static batch. mode: "paged"
    (default), "contiguous", "mla_latent" (DeepSeek-V3 / V2 latent caches) or
    "recompute" (no cache). The longest prompt plus max_new_tokens must fit
    in the model's max_position_embeddings, or in max_positions when it is
    given (at most 2^20): the C runner checks this as for `kvcache run` and
    raises InvalidArgument. Returns int32 ids [n_prompts, max_new_tokens],
    or (ids, logits) with logits=True: f32 [n_prompts, max_new_tokens, vocab],
    the logits each token was chosen from. Logits that are not finite (NaN or
    Inf from the model's weights or inputs) raise OutOfRange naming the step,
    the prompt and the position. weights: the dtype of the weight matrices at
    load, as `kvcache run --weights` ("checkpoint": as stored; "f32", "bf16",
    "q8_0", "q4_0"; docs/runtime.md); activations: as `kvcache run
    --activations` ("f32", default; "bf16": bf16 matrices round the activations
    to bf16, with the error docs/runtime.md measures).

    As `kvcache run --stream / --temperature / --top-k / --top-p / --seed /
    --eos` does, any of stream, temperature, top_k, top_p, seed and eos runs
    the prompts through the engine instead (kvcache.Engine, paged caches):
    sampling (temperature 0 = greedy; the draws depend on seed only), and
    each prompt's output ends at an end-of-sequence id (eos: an id or a list
    of ids; default config.json's eos_token_id; () = none), included. Returns
    a list of each prompt's ids, or with stream=True an iterator of
    (prompt index, token id) in the order the engine produces them. Those
    options do not combine with logits, max_positions or another mode."""
    logits, stream = flag(logits, "logits"), flag(stream, "stream")  # "no" was true
    engine_opts = {k: v for k, v in zip(_ENGINE_ARGS, (stream, temperature, top_k, top_p, seed, eos))
                   if v is not None and v is not False}
    if engine_opts:
        if logits or max_positions or mode != "paged":
            raise invalid(f"{', '.join(engine_opts)} run the prompts through the engine (paged caches), which "
                          "takes no logits, max_positions or mode")
        return _through_engine(model_dir, _prompt_rows(prompts), int64(max_new_tokens, "max_new_tokens"),
                               block_size, weights, activations, engine_opts)
    if not isinstance(weights, str):
        raise invalid(f"weights {weights!r} is not a string naming a weight dtype")
    c_mode = choice(_MODES, mode, "mode")
    rows = _prompt_rows(prompts)
    ids = np.ascontiguousarray(np.concatenate(rows))
    lens = np.array([len(r) for r in rows], dtype=np.int64)

    model = ffi.new("kvc_model **")
    check(lib.kvc_model_load_weights(c_path(model_dir, "model_dir"), c_name(weights, "weights"), model))
    model = ffi.gc(model[0], lib.kvc_model_destroy)
    check(lib.kvc_model_set_activations(model, c_name(activations, "activations")))
    p = ffi.new("kvc_runner_params *", lib.kvc_runner_default_params())
    p.mode = getattr(lib, c_mode)
    p.cache.block_size = int64(block_size, "block_size")
    p.mla_paged = flag(mla_paged, "mla_paged")
    p.max_new_tokens = int64(max_new_tokens, "max_new_tokens")
    p.max_positions = int64(max_positions, "max_positions")
    runner = ffi.new("kvc_runner **")
    check(lib.kvc_runner_create(model, p, len(rows), int(lens.max()), runner))
    runner = ffi.gc(runner[0], lambda r, m=model: lib.kvc_runner_destroy(r))  # the model outlives the runner
    n, steps = len(rows), p.max_new_tokens
    vocab = lib.kvc_model_config_of(model).vocab_size
    tokens = np.zeros((n, steps), dtype=np.int32)
    out_logits = np.zeros((steps, n, vocab), dtype=np.float32) if logits else None
    check(lib.kvc_runner_generate(runner, ffi.from_buffer("int32_t[]", ids), ffi.from_buffer("int64_t[]", lens), n,
                                  ffi.from_buffer("int32_t[]", tokens, require_writable=True),
                                  ffi.NULL if out_logits is None else
                                  ffi.from_buffer("float[]", out_logits, require_writable=True), ffi.NULL))
    if not logits:
        return tokens
    return tokens, np.ascontiguousarray(out_logits.transpose(1, 0, 2))
