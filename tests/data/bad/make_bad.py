#!/usr/bin/env python3
"""Writes the model directories of the bad-input corpus (cases.tsv): a tiny
qwen3 model that runs (run_ok) and copies of it broken in one way each,
and a shared library cut short (needs a C compiler). The trace files beside
them were written by hand (trace_loop_a/b.json are symlinks to each other;
trace_tokens_total.json holds 2,000 copies of one query op of [[0, 1048576]]).
Run from this folder."""
import json
import os
import shutil
import struct
import subprocess

CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 8,
    "intermediate_size": 16, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
    "num_hidden_layers": 1, "vocab_size": 16, "max_position_embeddings": 32, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "tie_word_embeddings": True, "attention_bias": False,
}


def tensors(c):
    h, i, d = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    p = "model.layers.0."
    return [("model.embed_tokens.weight", [c["vocab_size"], h]), (p + "input_layernorm.weight", [h]),
            (p + "post_attention_layernorm.weight", [h]), (p + "self_attn.q_proj.weight", [q, h]),
            (p + "self_attn.k_proj.weight", [kv, h]), (p + "self_attn.v_proj.weight", [kv, h]),
            (p + "self_attn.o_proj.weight", [h, q]), (p + "self_attn.q_norm.weight", [d]),
            (p + "self_attn.k_norm.weight", [d]), (p + "mlp.gate_proj.weight", [i, h]),
            (p + "mlp.up_proj.weight", [i, h]), (p + "mlp.down_proj.weight", [h, i]),
            ("model.norm.weight", [h])]


def header_and_data(c):
    header, data = {}, bytearray()
    for k, (name, shape) in enumerate(tensors(c)):
        n = 1
        for s in shape:
            n *= s
        values = [((j * 7 + k * 13) % 17 - 8) / 16.0 for j in range(n)]
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
        data += struct.pack("<%df" % n, *values)
    return header, data


def write(dirname, config=CONFIG, header_edit=None, data_edit=None, raw_header=None):
    shutil.rmtree(dirname, ignore_errors=True)
    os.makedirs(dirname)
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    header, data = header_and_data(CONFIG)
    if header_edit:
        header_edit(header)
    if data_edit:
        data = data_edit(data)
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(os.path.join(dirname, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def v_proj_on_k_proj(h):  # issue 13 #9: v_proj reads k_proj's bytes
    h["model.layers.0.self_attn.v_proj.weight"]["data_offsets"] = list(h["model.layers.0.self_attn.k_proj.weight"]["data_offsets"])


def shift_all(h, by):
    for e in h.values():
        e["data_offsets"] = [e["data_offsets"][0] + by, e["data_offsets"][1] + by]


def misaligned(h):  # the tensors tile the data, but after a 2-byte BF16 tensor the F32 ones start at byte 2
    shift_all(h, 2)
    h["pad"] = {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}


def shape_huge(h):  # issue 13 #10: a shape of 1e300
    h["model.norm.weight"]["shape"] = [1e300]


def expected(dirname, prompts, num_new_tokens=2, raw=None):  # issue 23 #8, #11: expected.json of run --compare-dtypes
    write(dirname)
    with open(os.path.join(dirname, "expected.json"), "w") as f:
        f.write(raw) if raw else json.dump({"num_new_tokens": num_new_tokens, "prompts": prompts}, f)


def truncated_library():  # issue 23 #10: a shared library cut after 1,000 bytes (dlopen dies with SIGBUS)
    source = "int kvc_attention_cpu(void) { return 1; }\nint kvc_attention_cpu_workspace_size(void) { return 0; }\n"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-s", "-o", "whole.so", "-x", "c", "-"], input=source.encode(),
                   check=True)
    with open("whole.so", "rb") as f:
        head = f.read(1000)
    os.remove("whole.so")
    with open("bench_truncated.so", "wb") as f:
        f.write(head)


def main():
    write("run_ok")
    for key, value in [("vocab_size", 2**40), ("vocab_size", 2**25), ("hidden_size", 9 * 10**15),
                       ("intermediate_size", 2**40), ("num_attention_heads", 2**50), ("head_dim", 2**41)]:
        write("run_%s_%d" % (key, value), config=dict(CONFIG, **{key: value}))
    write("run_vocab_mismatch", config=dict(CONFIG, vocab_size=2**24))
    write("run_st_overlap", header_edit=v_proj_on_k_proj)
    write("run_st_gap_first", header_edit=lambda h: shift_all(h, 4), data_edit=lambda d: b"\0" * 4 + d)
    write("run_st_gap_last", data_edit=lambda d: d + b"\0" * 4)
    write("run_st_shape_1e300", header_edit=shape_huge)
    write("run_st_misaligned", header_edit=misaligned, data_edit=lambda d: b"\0" * 2 + d)
    write("run_st_dup_name", raw_header=b'{"model.norm.weight": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, '
          b'"model.norm.weight": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}', data_edit=lambda d: b"")
    write("run_st_utf8", raw_header=b'{"model.norm.weight\xff": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}')
    # two *.safetensors symlinks that point at each other (issue 13 #11)
    shutil.rmtree("run_st_loop", ignore_errors=True)
    os.makedirs("run_st_loop")
    shutil.copy(os.path.join("run_ok", "config.json"), "run_st_loop")
    os.symlink("b.safetensors", os.path.join("run_st_loop", "a.safetensors"))
    os.symlink("a.safetensors", os.path.join("run_st_loop", "b.safetensors"))
    expected("run_expected_fraction", [{"ids": [1, 1.5], "greedy_ids": [1, 2]}])
    expected("run_expected_count", [{"ids": [1, 2], "greedy_ids": [1, 2, 3]}])
    expected("run_expected_long", [{"ids": [k % 16 for k in range(40)], "greedy_ids": [1, 2]}])
    # a key given twice: the first was taken (Python's json keeps the last)
    expected("run_expected_dup_key", None, raw='{"num_new_tokens": 2, "prompts": [{"ids": [1], "greedy_ids": [1, 2]}], '
             '"prompts": [{"ids": [3], "greedy_ids": [4, 5]}]}')
    truncated_library()


main()
