#!/usr/bin/env python3
"""Side-by-side speed of llama.cpp on the same weights as `kvcache bench model`
(issue 30's table). Never part of the build or CI.

1. Writes MODEL_DIR (a bf16 Qwen3 checkpoint, e.g. from make_random_model.py)
   into a GGUF file bit for bit (the bf16 matrices copied, the norm vectors
   widened exactly to f32 as ggml needs them), with
   a vocabulary-free tokenizer ("no_vocab": llama-bench feeds random ids).
2. Quantizes it with llama.cpp's llama-quantize to each requested type
   (Q8_0, Q4_0: llama.cpp's own rounding, its default rule for the output
   and embedding tensors).
3. Runs llama-bench (prefill tokens/s at each prompt length, decode tokens/s
   at batch 1) with the same thread count, and prints one table.

llama.cpp comes from the llama-cpp-python source package (its vendor/llama.cpp),
built once with -DGGML_NATIVE=ON (AMX, AVX-512 VNNI where the CPU has them):
  pip download --no-deps --no-binary :all: llama-cpp-python && tar xzf llama_cpp_python-*.tar.gz
  CC=clang CXX=clang++ cmake -S llama_cpp_python-*/vendor/llama.cpp -B LLAMA_BUILD -DGGML_NATIVE=ON -DLLAMA_CURL=OFF
  cmake --build LLAMA_BUILD -j --target llama-bench llama-quantize
(clang: the same source built by Debian's GCC 12 died with SIGILL at its first AMX tile load in
the Q8_0 kernel, repacked buffers on; the clang 14 build runs it.)
Needs numpy and gguf (pip install numpy gguf), in a throwaway venv.

usage: llamacpp_compare.py MODEL_DIR LLAMA_BUILD WORK_DIR [--types BF16,Q8_0,Q4_0]
                           [--prompts 64,512] [--gen 32] [--threads 2] [--reps 3] [--repack 1,0]
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import gguf

# Hugging Face tensor name suffix -> GGUF name (qwen3 architecture)
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
TOP_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}


def gguf_name(hf):
    if hf in TOP_NAMES:
        return TOP_NAMES[hf]
    parts = hf.split(".", 3)  # model, layers, N, rest
    if len(parts) == 4 and parts[0] == "model" and parts[1] == "layers" and parts[3] in LAYER_NAMES:
        return f"blk.{int(parts[2])}.{LAYER_NAMES[parts[3]]}"
    raise SystemExit(f"tensor {hf!r} has no GGUF name (only Qwen3 checkpoints are converted)")


def safetensors_tensors(model_dir):
    """(name, uint16 array [shape]) of every BF16 tensor, memory-mapped."""
    files = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    for f in files:
        path = os.path.join(model_dir, f)
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
        for name, t in header.items():
            if name == "__metadata__":
                continue
            if t["dtype"] != "BF16":
                raise SystemExit(f"{name}: dtype {t['dtype']} (only BF16 checkpoints are written bit for bit)")
            a, b = t["data_offsets"]
            yield name, data[a:b].view(np.uint16).reshape(t["shape"])


def write_gguf(model_dir, out):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    if cfg.get("model_type") != "qwen3":
        raise SystemExit(f"model_type {cfg.get('model_type')!r}: only qwen3 is converted")
    w = gguf.GGUFWriter(out, "qwen3")
    w.add_context_length(min(int(cfg["max_position_embeddings"]), 40960))
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_freq_base(float(cfg["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model("no_vocab")
    seen = set()
    for name, arr in safetensors_tensors(model_dir):
        g = gguf_name(name)
        seen.add(g)
        if arr.ndim == 1:  # norms: ggml adds them to f32 rows, so F32 (widened exactly, as convert_hf_to_gguf does)
            w.add_tensor(g, (arr.astype(np.uint32) << 16).view(np.float32))
        else:
            w.add_tensor(g, np.ascontiguousarray(arr), raw_dtype=gguf.GGMLQuantizationType.BF16)
    if "output.weight" not in seen and not cfg.get("tie_word_embeddings"):
        raise SystemExit("no lm_head.weight and the embedding is not tied")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bench(binary, model, prompts, gen, threads, reps, repack):
    """{"ppP": (tokens/s, stddev), "tgG": ...}, or the reason llama-bench failed."""
    cmd = [binary, "-m", model, "-t", str(threads), "-p", ",".join(map(str, prompts)), "-n", str(gen),
           "-r", str(reps), "--repack", str(repack), "-o", "json"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        why = f"signal {-run.returncode}" if run.returncode < 0 else f"exit {run.returncode}"
        last = [line for line in run.stderr.splitlines() if line.strip() and not line.startswith("#")]
        return f"llama-bench failed ({why}): {last[-1][:100] if last else ''}"
    rows = {}
    out = run.stdout
    for r in json.loads(out):
        key = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        rows[key] = (r["avg_ts"], r["stddev_ts"])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("llama_build")
    ap.add_argument("work_dir")
    ap.add_argument("--types", default="BF16,Q8_0,Q4_0")
    ap.add_argument("--prompts", default="64,512")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--repack", default="1,0",
                    help="llama-bench --repack values (1: its repacked CPU buffers, AMX where built; 0: plain)")
    a = ap.parse_args()
    prompts = [int(p) for p in a.prompts.split(",")]
    bindir = os.path.join(a.llama_build, "bin")
    os.makedirs(a.work_dir, exist_ok=True)
    base = os.path.join(a.work_dir, "model-BF16.gguf")
    if not os.path.exists(base):
        write_gguf(a.model_dir, base)
    print(f"llama.cpp on {a.model_dir}, {a.threads} threads; load: {open('/proc/loadavg').read().strip()}")
    print(f"{'weights':8} {'repack':>6} " + " ".join(f"{'prefill ' + str(p) + ' tok/s':>20}" for p in prompts) +
          f" {'decode b1 ms/token':>20}")
    for t in a.types.split(","):
        path = os.path.join(a.work_dir, f"model-{t}.gguf")
        if not os.path.exists(path):
            subprocess.run([os.path.join(bindir, "llama-quantize"), base, path, t], check=True,
                           capture_output=True)
        for repack in a.repack.split(","):
            rows = bench(os.path.join(bindir, "llama-bench"), path, prompts, a.gen, a.threads, a.reps, repack)
            if isinstance(rows, str):
                print(f"{t:8} {repack:>6} {rows}")
                continue
            tg = rows[f"tg{a.gen}"]
            cells = [f"{rows[f'pp{p}'][0]:>12.1f} ± {rows[f'pp{p}'][1]:<5.1f}" for p in prompts]
            print(f"{t:8} {repack:>6} " + " ".join(cells) + f" {1e3 / tg[0]:>20.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
