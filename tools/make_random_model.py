#!/usr/bin/env python3
"""Writes a random bf16 Qwen3 model of real shape (config.json + safetensors
shards + model.safetensors.index.json, as save_pretrained does) for
`kvcache bench model` and tools/torch_model_compare.py. Standard library only
(no numpy, no torch): the bf16 values come from os.urandom, their high bytes
(sign and exponent) mapped through a table, so 1.5 GB take seconds.

Default shape: Qwen3-0.6B (28 layers, hidden 1,024, 16 query / 8 KV heads of
128, intermediate 3,072, vocabulary 151,936; lm_head untied as in issue 29's
1.5 GB model, --tied shares the embedding). Values: every matrix [out, in]
has magnitudes log-spread below about 2/sqrt(in) (a geometric ladder of
binades, random sign and mantissa); norm weights lie in [1, 1.06).
The tensor names and shapes follow tests/data/bad/make_bad.py's tensors(),
for every layer. Not a trained model: the tokens it produces mean nothing.

usage: make_random_model.py OUT_DIR [--layers N] [--tied] [--shard-gb G] [--seed S]
"""
import argparse
import json
import math
import os
import random

QWEN3_06B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "num_hidden_layers": 28, "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu",
    "torch_dtype": "bfloat16", "use_sliding_window": False, "sliding_window": None, "bos_token_id": None,
    "eos_token_id": None, "pad_token_id": None,
}


def tensors(c):
    """(name, shape, fan_in or 0 for a norm) of every tensor, in checkpoint order."""
    h, i, d, L = c["hidden_size"], c["intermediate_size"], c["head_dim"], c["num_hidden_layers"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", [c["vocab_size"], h], h)]
    for l in range(L):
        p = "model.layers.%d." % l
        out += [(p + "input_layernorm.weight", [h], 0), (p + "post_attention_layernorm.weight", [h], 0),
                (p + "self_attn.q_proj.weight", [q, h], h), (p + "self_attn.k_proj.weight", [kv, h], h),
                (p + "self_attn.v_proj.weight", [kv, h], h), (p + "self_attn.o_proj.weight", [h, q], q),
                (p + "self_attn.q_norm.weight", [d], 0), (p + "self_attn.k_norm.weight", [d], 0),
                (p + "mlp.gate_proj.weight", [i, h], h), (p + "mlp.up_proj.weight", [i, h], h),
                (p + "mlp.down_proj.weight", [h, i], i)]
    out.append(("model.norm.weight", [h], 0))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", [c["vocab_size"], h], h))
    return out


def high_byte_table(fan_in, rng):
    """256 high bytes (sign + 7 exponent bits) for a uniformly random byte: the top pair of
    binades [2^(e-1), 2^(e+1)) with e = log2(2/sqrt(fan_in)) half the time, the pair below a
    quarter, ... (a geometric ladder), random sign. The low byte (last exponent bit, mantissa)
    stays the random one."""
    top = int(math.floor((127 + math.log2(2.0 / math.sqrt(fan_in)) - 1) / 2))
    table = bytearray()
    for r in range(256):
        step = 0
        while step < 7 and (r >> step) & 1:
            step += 1
        table.append((0x80 if rng.random() < 0.5 else 0) | max(1, top - step))
    return bytes(table)


NORM_HIGH = bytes([0x3F] * 256)            # exponent 127 (with the low byte's top bit set below)
NORM_LOW = bytes([0x80 | (b & 0x07) for b in range(256)])  # 1 + m/128, m < 8


def tensor_bytes(shape, fan_in, rng):
    n = 1
    for s in shape:
        n *= s
    data = bytearray(os.urandom(2 * n))  # little-endian bf16: low byte first
    if fan_in:
        data[1::2] = data[1::2].translate(high_byte_table(fan_in, rng))
    else:
        data[0::2] = data[0::2].translate(NORM_LOW)
        data[1::2] = data[1::2].translate(NORM_HIGH)
    return data


def write_shard(path, entries):
    header, offset = {}, 0
    for name, shape, data in entries:
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _, _, data in entries:
            f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=28, help="decoder layers (default 28)")
    ap.add_argument("--tied", action="store_true", help="lm_head shares the embedding")
    ap.add_argument("--shard-gb", type=float, default=1.0, help="bytes per shard, GB (default 1)")
    ap.add_argument("--seed", type=int, default=29, help="seed of the sign/exponent tables (values: os.urandom)")
    a = ap.parse_args()
    if a.layers < 1 or a.layers > 28 * 8:
        ap.error("--layers must be in 1 .. 224")
    if a.shard_gb <= 0:
        ap.error("--shard-gb must be > 0")
    cfg = dict(QWEN3_06B, num_hidden_layers=a.layers, tie_word_embeddings=a.tied)
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    shards, cur, cur_bytes, limit = [], [], 0, int(a.shard_gb * 1e9)
    for name, shape, fan_in in tensors(cfg):
        data = tensor_bytes(shape, fan_in, rng)
        if cur and cur_bytes + len(data) > limit:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append((name, shape, data))
        cur_bytes += len(data)
    shards.append(cur)
    weight_map, total = {}, 0
    for s, entries in enumerate(shards):
        fn = "model.safetensors" if len(shards) == 1 else "model-%05d-of-%05d.safetensors" % (s + 1, len(shards))
        write_shard(os.path.join(a.out, fn), entries)
        for name, _, data in entries:
            weight_map[name] = fn
            total += len(data)
    if len(shards) > 1:
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    print("%s: %d layers, %d tensors, %.2f GB of bf16 in %d file(s)" %
          (a.out, a.layers, len(weight_map), total / 1e9, len(shards)))


if __name__ == "__main__":
    main()
