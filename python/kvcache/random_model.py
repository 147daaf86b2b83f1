"""python -m kvcache.random_model CONFIG OUT_DIR: a model directory with
random weights in a config's real shapes, and text files to serve it.

For benchmarks and smoke tests where the hubs are out of reach: OUT_DIR gets
config.json (the given one, its dtype set), model.safetensors (normal weights
of standard deviation 0.02, norms 1; bf16, f16 or f32), a tokenizer.json (a
byte-level BPE trained on a few lines of built-in text, filled up to the
config's vocab_size with placeholder tokens so every id decodes),
tokenizer_config.json with a ChatML chat template, and generation_config.json
naming the end-of-sequence id. Dense Llama-shaped families only (llama,
qwen2, qwen3, mistral); the text it generates is noise.
"""
import argparse
import json
import pathlib
import sys

import numpy as np

from ._lib import invalid, read_regular
from .errors import Error
from .plan import plan

_FAMILIES = ("llama", "qwen2", "qwen3", "mistral")
_DTYPES = {"bf16": ("BF16", "bfloat16"), "f16": ("F16", "float16"), "f32": ("F32", "float32")}
_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_CORPUS = ("The quick brown fox jumps over the lazy dog. Hello, world! How are you today? "
           "A key-value cache keeps the keys and values attention has read. 0123456789 café 日本語 🙂\n")
_CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
           "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def tensor_shapes(c):
    """{name: shape} of a dense Llama-shaped checkpoint (Hugging Face names)."""
    h, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"] or c["num_attention_heads"]
    hd = c.get("head_dim") or h // heads
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,)}
    if not c.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = (v, h)
    bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (heads * hd, h), p + "self_attn.k_proj.weight": (kv * hd, h),
                       p + "self_attn.v_proj.weight": (kv * hd, h), p + "self_attn.o_proj.weight": (h, heads * hd),
                       p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
                       p + "mlp.down_proj.weight": (h, inter)})
        if bias:
            shapes.update({p + "self_attn.q_proj.bias": (heads * hd,), p + "self_attn.k_proj.bias": (kv * hd,),
                           p + "self_attn.v_proj.bias": (kv * hd,)})
        if c["model_type"] == "qwen3":
            shapes.update({p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,)})
    return shapes


def _values(rng, name, shape, dtype):
    if name.endswith("norm.weight"):
        x = np.ones(shape, np.float32)
    elif name.endswith(".bias"):
        x = np.zeros(shape, np.float32)
    else:
        x = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
    if dtype == "BF16":
        return ((x.view(np.uint32) + 0x8000) >> 16).astype(np.uint16)  # round to nearest (no NaN here)
    return x.astype(np.float16 if dtype == "F16" else np.float32)


def write_safetensors(path, shapes, dtype, seed):
    """Writes random tensors of shapes into one safetensors file, one tensor in memory at a time."""
    size = {"BF16": 2, "F16": 2, "F32": 4}[dtype]
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little") + raw)
        for name, shape in shapes.items():
            f.write(_values(rng, name, shape, dtype).tobytes())


def tokenizer_json(vocab_size):
    """A byte-level BPE with the specials first, filled with placeholder tokens up to vocab_size ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=min(vocab_size, 1000), special_tokens=_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_CORPUS] * 8, trainer)
    filler = vocab_size - tok.get_vocab_size()
    if filler > 0:
        tok.add_tokens([AddedToken(f"<|t{i}|>", normalized=False) for i in range(filler)])
    return tok.to_str()


def _read_config(path):
    """config.json as a dict (a missing file or another JSON value was a traceback)."""
    try:
        config = json.loads(read_regular(path).decode("utf-8"))  # a FIFO blocked for ever
    except (OSError, ValueError) as exc:
        raise invalid(f"{path}: {exc}") from None
    except RecursionError:
        raise invalid(f"{path}: nested too deeply") from None
    if not isinstance(config, dict):
        raise invalid(f"{path}: a JSON object is expected, not {type(config).__name__}")
    return config


def _check_shapes(config, path):
    """The shapes the library's config reader takes (plan), and the MLP and vocabulary sizes tensor_shapes also
    reads as integers (a key missing or of another type was a KeyError, or numpy's UFuncNoLoopError)."""
    plan(config)
    for key in ("hidden_size", "intermediate_size", "vocab_size", "num_hidden_layers", "num_attention_heads"):
        v = config.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise invalid(f"{path}: {key} must be an integer of at least 1, got {v!r}")


def make(config_path, out_dir, dtype="bf16", seed=0):
    config = _read_config(config_path)
    if config.get("model_type") not in _FAMILIES:
        raise SystemExit(f"{config_path}: model_type {config.get('model_type')!r} is not one of "
                         f"{', '.join(_FAMILIES)} (dense Llama-shaped models only)")
    _check_shapes(config, config_path)
    st_dtype, torch_dtype = _DTYPES[dtype]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config.pop("dtype", None)
    config["torch_dtype"] = torch_dtype
    if "num_key_value_heads" not in config:  # the config class's default (Qwen2Config's 32, ...), as the loader reads it
        config["num_key_value_heads"] = plan(config)["heads"]["num_key_value_heads"]
    eos = config.get("eos_token_id")
    if not isinstance(eos, int) or eos >= config["vocab_size"]:
        eos = config["eos_token_id"] = 2  # <|im_end|>
    (out / "config.json").write_text(json.dumps(config, indent=1))
    write_safetensors(out / "model.safetensors", tensor_shapes(config), st_dtype, seed)
    (out / "tokenizer.json").write_text(tokenizer_json(config["vocab_size"]))
    (out / "tokenizer_config.json").write_text(json.dumps({"chat_template": _CHATML, "eos_token": "<|im_end|>",
                                                           "tokenizer_class": "PreTrainedTokenizerFast"}))
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kvcache.random_model", description=__doc__.split("\n\n")[0])
    p.add_argument("config", help="a Hugging Face config.json (e.g. tests/data/configs/Qwen3-0.6B.json)")
    p.add_argument("out_dir", help="the model directory to write")
    p.add_argument("--dtype", choices=sorted(_DTYPES), default="bf16", help="weight dtype (default bf16)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        out = make(args.config, args.out_dir, args.dtype, args.seed)
    except Error as exc:  # a config the library refuses: a usage error naming it, not a traceback
        p.error(str(exc))
    print(f"wrote {out}: {sum(f.stat().st_size for f in out.iterdir()) / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
