#!/usr/bin/env python3
"""Independent check of LFM2 beside the oracle: two random LFM2 models of other shapes (hidden 96, 6 layers,
conv kernel 4 without biases, attention by full_attn_idxs, the MLP width adjusted by multiplier and
block_multiple_of; hidden 48, 5 layers, kernel 2 with biases, attention first, no width adjustment, untied), built
and run greedily by transformers without a cache (and checked against its generate() with the conv cache), then
through the built `kvcache run` in modes 0, 1 and 2 and through the engine (--stream): the greedy ids must be equal.

Usage: python tools/oracle/check_lfm2_run.py build/kvcache [WORKDIR]   (transformers 5.25, torch)
"""
import json
import math
import subprocess
import sys

import torch
from transformers import Lfm2Config, Lfm2ForCausalLM
KV = sys.argv[1]
WORK = sys.argv[2] if len(sys.argv) > 2 else "/tmp/lfm2_check"
torch.set_num_threads(1)
CFGS = {
  "a": dict(vocab_size=300, hidden_size=96, intermediate_size=256, num_hidden_layers=6, num_attention_heads=6,
            num_key_value_heads=3, conv_L_cache=4, conv_bias=False, full_attn_idxs=[2, 5], layer_types=None,
            block_multiple_of=64, block_ffn_dim_multiplier=1.25, max_position_embeddings=128,
            bos_token_id=None, eos_token_id=None, pad_token_id=None),
  "b": dict(vocab_size=200, hidden_size=48, intermediate_size=80, num_hidden_layers=5, num_attention_heads=2,
            num_key_value_heads=1, conv_L_cache=2, conv_bias=True, block_auto_adjust_ff_dim=False,
            tie_word_embeddings=False, layer_types=["full_attention", "conv", "conv", "full_attention", "conv"],
            max_position_embeddings=128, bos_token_id=None, eos_token_id=None, pad_token_id=None),
}
def std(name, shape):
    if name.endswith("norm.weight"): return None
    if name.endswith(".bias"): return 0.05
    if name.endswith("conv.conv.weight"): return 1.0 / math.sqrt(shape[2])
    if name == "model.embed_tokens.weight": return 0.5
    return (2.0 if name == "lm_head.weight" else 1.0) / math.sqrt(shape[1])
worst = 0
for key, kw in CFGS.items():
    cfg = Lfm2Config(**kw)
    torch.manual_seed(7)
    m = Lfm2ForCausalLM._from_config(cfg, attn_implementation="eager", dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(11 + len(key))
    with torch.no_grad():
        for n, p in m.named_parameters():
            s = std(n, p.shape); z = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.1 * z if s is None else s * z)
    d = f"{WORK}/{key}"; m.save_pretrained(d, safe_serialization=True)
    I = m.model.layers[0].feed_forward.w1.weight.shape[0]
    prompts = [torch.randint(0, cfg.vocab_size, (n,), generator=g).tolist() for n in (1, 4, 9, 30)]
    NEW = 12
    for ids in prompts:
        seq = list(ids)
        with torch.no_grad():
            for _ in range(NEW):
                lg = m(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
                seq.append(int(lg.argmax()))
            gen = m.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=NEW, min_new_tokens=NEW,
                             pad_token_id=0, eos_token_id=None)[0, len(ids):].tolist()
        want = seq[len(ids):]
        assert gen == want, (key, "generate with cache differs from no-cache greedy")
        for mode in (0, 1, 2):
            out = subprocess.run([KV, "run", d, "--prompt-ids", ",".join(map(str, ids)), "--max-new-tokens",
                                  str(NEW), "--mode", str(mode), "--json"], capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            got = json.loads(out.stdout)["prompts"][0]
            ok = got["generated_ids"] == want
            # the first step's top logit against transformers'
            with torch.no_grad():
                lg = m(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
            diff = abs(got["steps"][0]["top_logit"] - float(lg.max()))
            worst = max(worst, diff)
            print(f"model {key} (H {cfg.hidden_size}, L {cfg.num_hidden_layers}, kernel {cfg.conv_L_cache}, I {I}, "
                  f"layers {cfg.layer_types}) prompt len {len(ids)} mode {mode}: ids {'EQUAL' if ok else 'DIFFER'} "
                  f"({len(want)} tokens), first top logit diff {diff:.2e}")
            assert ok, (got["generated_ids"], want)
        out = subprocess.run([KV, "run", d, "--prompt-ids", ",".join(map(str, ids)), "--max-new-tokens", str(NEW),
                              "--stream"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        eng = [int(l.split(": ")[1]) for l in out.stdout.splitlines() if l.startswith("0: ")]
        print(f"model {key} prompt len {len(ids)} engine (--stream): ids {'EQUAL' if eng == want else 'DIFFER'}")
        assert eng == want, (eng, want)
print("worst first-step top-logit diff", worst)
