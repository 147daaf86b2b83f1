#!/usr/bin/env python3
"""Writes the seeds of fuzz/fuzz_model_dir.c into fuzz/corpus/fuzz_model_dir/: tiny random models
of the families the runtime runs (qwen3, llama in two shards, with and without an index, qwen3_moe,
gpt_oss, gemma3_text, deepseek_v3, stablelm with per-head q/k norms saved and reloaded), each one fuzz
input: [flags] [config.json] NUL [index NUL] [weights] (fuzz_model_dir.c's layout). Standard library
only; the values are random BF16 or F32 of magnitude below 1. With KVCACHE (the kvcache command) also
saved quantized copies (`kvcache run --save-weights`: qwen3 and gemma3_text in q8_0, qwen3_moe in
q4_0) as seeds loaded as they are, so the fuzzer edits the packed format too.

usage: make_fuzz_model_seeds.py [OUT_DIR [KVCACHE]]
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

H, I, V, NH, NKV, D = 32, 32, 32, 2, 1, 16


def base(model_type, **kw):
    c = {"model_type": model_type, "hidden_size": H, "intermediate_size": I, "vocab_size": V,
         "num_hidden_layers": 1, "num_attention_heads": NH, "num_key_value_heads": NKV, "head_dim": D,
         "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "tie_word_embeddings": False}
    c.update(kw)
    return c


def attn(p, c, qk_norm=False, bias=False):
    q, kv = c["num_attention_heads"] * D, c["num_key_value_heads"] * D
    t = [(p + "self_attn.q_proj.weight", [q, H]), (p + "self_attn.k_proj.weight", [kv, H]),
         (p + "self_attn.v_proj.weight", [kv, H]), (p + "self_attn.o_proj.weight", [H, q])]
    if bias:
        t += [(p + "self_attn.q_proj.bias", [q]), (p + "self_attn.k_proj.bias", [kv]),
              (p + "self_attn.v_proj.bias", [kv]), (p + "self_attn.o_proj.bias", [H])]
    if qk_norm:
        t += [(p + "self_attn.q_norm.weight", [D]), (p + "self_attn.k_norm.weight", [D])]
    return t


def mlp(p, i=I):
    return [(p + "gate_proj.weight", [i, H]), (p + "up_proj.weight", [i, H]), (p + "down_proj.weight", [H, i])]


def norms(p, gemma=False):
    t = [(p + "input_layernorm.weight", [H]), (p + "post_attention_layernorm.weight", [H])]
    if gemma:
        t += [(p + "pre_feedforward_layernorm.weight", [H]), (p + "post_feedforward_layernorm.weight", [H])]
    return t


def ends(c, layers):
    t = [("model.embed_tokens.weight", [V, H])] + layers + [("model.norm.weight", [H])]
    return t if c["tie_word_embeddings"] else t + [("lm_head.weight", [V, H])]


def qwen3():
    c = base("qwen3")
    return c, ends(c, norms("model.layers.0.") + attn("model.layers.0.", c, qk_norm=True) + mlp("model.layers.0.mlp."))


def llama():
    c = base("llama", num_key_value_heads=2)
    return c, ends(c, norms("model.layers.0.") + attn("model.layers.0.", c) + mlp("model.layers.0.mlp."))


def qwen3_moe():
    c = base("qwen3_moe", moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
             mlp_only_layers=[])
    p = "model.layers.0."
    experts = [t for e in range(4) for t in mlp("%smlp.experts.%d." % (p, e), 16)]
    return c, ends(c, norms(p) + attn(p, c, qk_norm=True) + [(p + "mlp.gate.weight", [4, H])] + experts)


def gpt_oss():
    c = base("gpt_oss", num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2, sliding_window=4,
             layer_types=["sliding_attention", "full_attention"], attention_bias=True)
    t = []
    for l in range(2):
        p = "model.layers.%d." % l
        t += norms(p) + attn(p, c, bias=True) + [
            (p + "self_attn.sinks", [NH]), (p + "mlp.router.weight", [4, H]), (p + "mlp.router.bias", [4]),
            (p + "mlp.experts.gate_up_proj", [4, H, 2 * I]), (p + "mlp.experts.gate_up_proj_bias", [4, 2 * I]),
            (p + "mlp.experts.down_proj", [4, I, H]), (p + "mlp.experts.down_proj_bias", [4, H])]
    return c, ends(c, t)


def gemma3():
    c = base("gemma3_text", num_hidden_layers=2, sliding_window=4, query_pre_attn_scalar=16,
             layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=True,
             hidden_activation="gelu_pytorch_tanh")
    t = []
    for l in range(2):
        p = "model.layers.%d." % l
        t += norms(p, gemma=True) + attn(p, c, qk_norm=True) + mlp(p + "mlp.")
    return c, ends(c, t)


def deepseek_v3():
    c = base("deepseek_v3", num_key_value_heads=NH, head_dim=8, qk_rope_head_dim=8, qk_nope_head_dim=8,
             v_head_dim=8, q_lora_rank=None, kv_lora_rank=8, n_routed_experts=4, num_experts_per_tok=2,
             n_group=1, topk_group=1, moe_intermediate_size=16, n_shared_experts=1, first_k_dense_replace=1,
             num_hidden_layers=2)
    t = []
    for l in range(2):
        p = "model.layers.%d." % l
        t += norms(p) + [(p + "self_attn.q_proj.weight", [NH * 16, H]),
                         (p + "self_attn.kv_a_proj_with_mqa.weight", [8 + 8, H]),
                         (p + "self_attn.kv_a_layernorm.weight", [8]),
                         (p + "self_attn.kv_b_proj.weight", [NH * 16, 8]),
                         (p + "self_attn.o_proj.weight", [H, NH * 8])]
        if l == 0:
            t += mlp(p + "mlp.")
        else:
            t += [(p + "mlp.gate.weight", [4, H]), (p + "mlp.gate.e_score_correction_bias", [4])]
            t += [x for e in range(4) for x in mlp("%smlp.experts.%d." % (p, e), 16)] + mlp(p + "mlp.shared_experts.", 16)
    return c, ends(c, t)


def stablelm():
    """LayerNorms with biases; q / k LayerNorms of one module per head (norms.{h}), stacked by the loader."""
    c = base("stablelm", qk_layernorm=True, layer_norm_eps=1e-5, partial_rotary_factor=0.25)
    p = "model.layers.0."
    ln = [(p + n + "." + w, [H]) for n in ("input_layernorm", "post_attention_layernorm") for w in ("weight", "bias")]
    qk = [(p + "self_attn.%s_layernorm.norms.%d.weight" % (x, h), [D]) for x, n in (("q", NH), ("k", NKV))
          for h in range(n)]
    return c, ends(c, ln + attn(p, c) + qk + mlp(p + "mlp.")) + [("model.norm.bias", [H])]


def safetensors(tensors, dtype, rng, meta=None):
    es = 2 if dtype == "BF16" else 4
    header, data = {}, bytearray()
    if meta:
        header["__metadata__"] = meta
    for name, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n * es]}
        for _ in range(n):
            v = struct.pack("<f", rng.uniform(-0.9, 0.9) if "norm" not in name else rng.uniform(0.9, 1.1))
            data += v[2:] if es == 2 else v
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def seed(flags, config, files, index=None):
    out = bytes([flags]) + json.dumps(config).encode() + b"\0"
    if flags & 16:
        out += json.dumps(index).encode() + b"\0"
    if len(files) == 1:
        return out + files[0]
    return out + struct.pack("<I", len(files[0])) + files[0] + files[1]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "fuzz", "corpus",
                                                            "fuzz_model_dir")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    # flags: bits 0-1 weights (checkpoint, bf16, q8_0, q4_0), bit 2 two shards, bit 3 save and reload,
    # bit 4 model.safetensors.index.json
    cases = [("qwen3", qwen3, "BF16", 0), ("qwen3_q8_save", qwen3, "BF16", 2 | 8),
             ("llama_shards", llama, "F32", 4 | 1), ("llama_index", llama, "BF16", 16 | 4), ("qwen3_moe_q4_save", qwen3_moe, "BF16", 3 | 8),
             ("gpt_oss", gpt_oss, "BF16", 0), ("gemma3_q8_save", gemma3, "F32", 2 | 8),
             ("deepseek_v3", deepseek_v3, "BF16", 0), ("stablelm_qk_q8_save", stablelm, "F32", 2 | 8)]
    for name, make, dtype, flags in cases:
        config, tensors = make()
        index = None
        if flags & 4:
            half = len(tensors) // 2
            files = [safetensors(tensors[:half], dtype, rng), safetensors(tensors[half:], dtype, rng)]
            shard = ["model-%05d-of-00002.safetensors" % (i + 1) for i in range(2)]
            index = {"metadata": {}, "weight_map": {t[0]: shard[i >= half] for i, t in enumerate(tensors)}}
        else:
            files = [safetensors(tensors, dtype, rng)]
        with open(os.path.join(out, name), "wb") as f:
            f.write(seed(flags, config, files, index))
        if len(sys.argv) > 2 and flags & 8:
            saved_copy(sys.argv[2], name, config, files[0], ["checkpoint", "bf16", "q8_0", "q4_0"][flags & 3], out)


def saved_copy(kvcache, name, config, weights, dtype, out):
    """The seed of `kvcache run --save-weights`' copy of the model (config, weights) in `dtype`."""
    tmp = tempfile.mkdtemp()
    try:
        src, dst = os.path.join(tmp, "src"), os.path.join(tmp, "dst")
        os.mkdir(src)
        with open(os.path.join(src, "config.json"), "w") as f:
            json.dump(config, f)
        with open(os.path.join(src, "model.safetensors"), "wb") as f:
            f.write(weights)
        subprocess.run([kvcache, "run", src, "--weights", dtype, "--save-weights", dst], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(dst, "model.safetensors"), "rb") as f:
            packed = f.read()
        with open(os.path.join(out, name.replace("_save", "_copy")), "wb") as f:
            f.write(seed(0, config, [packed]))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
