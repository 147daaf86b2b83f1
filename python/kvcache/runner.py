"""kvcache.run: a Hugging Face model directory through the standalone runner."""
import numpy as np

from ._lib import c_path, check, choice, ffi, int64, invalid, lib

_MODES = {"recompute": "KVC_RUNNER_RECOMPUTE", "contiguous": "KVC_RUNNER_CONTIGUOUS", "paged": "KVC_RUNNER_PAGED",
          "mla_latent": "KVC_RUNNER_MLA_LATENT"}


def run(model_dir, prompts, max_new_tokens=8, *, mode="paged", block_size=16, mla_paged=True, logits=False,
        max_positions=0):
    """Greedy generation of max_new_tokens tokens for every prompt (lists of
    token ids; no tokenizer here) in one static batch. mode: "paged"
    (default), "contiguous", "mla_latent" (DeepSeek-V3 latent caches) or
    "recompute" (no cache). The longest prompt plus max_new_tokens must fit
    in the model's max_position_embeddings, or in max_positions when it is
    given (at most 2^20): the C runner checks this as for `kvcache run` and
    raises InvalidArgument. Returns int32 ids [n_prompts, max_new_tokens],
    or (ids, logits) with logits=True: f32 [n_prompts, max_new_tokens, vocab],
    the logits each token was chosen from. Logits that are not finite (NaN or
    Inf from the model's weights or inputs) raise OutOfRange naming the step,
    the prompt and the position."""
    c_mode = choice(_MODES, mode, "mode")
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
    ids = np.ascontiguousarray(np.concatenate(rows))
    lens = np.array([len(r) for r in rows], dtype=np.int64)

    model = ffi.new("kvc_model **")
    check(lib.kvc_model_load(c_path(model_dir, "model_dir"), model))
    model = ffi.gc(model[0], lib.kvc_model_destroy)
    p = ffi.new("kvc_runner_params *", lib.kvc_runner_default_params())
    p.mode = getattr(lib, c_mode)
    p.block_size = int64(block_size, "block_size")
    p.mla_paged = bool(mla_paged)
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
