"""From a cache plan to a paged decode loop, in Python (the C version:
examples/plan_to_paged_decode.c).

A small two-layer Llama-shaped model (4 query heads, 2 KV heads, head dim 16):
plan its caches (4-token blocks, two requests of up to 16 tokens), allocate
them (NumPy arrays over the library's storage), admit two prompts (7 and 5
tokens) through the manager, and for a prefill and three decode steps: build
the step's block tables and slot mappings, write each layer's new keys and
values at their slots, run paged attention, and check it against a float64
softmax over the request's keys kept unpaged. Prints one line per step;
raises AssertionError on a mismatch.

Run: python python/examples/plan_to_paged_decode.py (with the package installed)."""
import numpy as np

import kvcache

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
          "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
          "max_position_embeddings": 16, "rope_theta": 10000.0, "torch_dtype": "float32"}
PROMPTS = {11: 7, 12: 5}  # request id -> prompt tokens
DECODE_STEPS = 3


def direct_attention(q, keys, values):
    """float64 softmax(q k^T / sqrt(D)) v of one query q [Nq, D] over keys/values [S, Nkv, D] (GQA)."""
    group = q.shape[0] // keys.shape[1]
    k = np.repeat(keys.astype(np.float64), group, axis=1)  # [S, Nq, D]
    v = np.repeat(values.astype(np.float64), group, axis=1)
    scores = np.einsum("hd,shd->hs", q.astype(np.float64), k) / np.sqrt(q.shape[1])
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.einsum("hs,shd->hd", weights, v)


def main():
    plan = kvcache.plan(CONFIG, block_size=4, max_concurrency=len(PROMPTS))
    caches = plan.caches()  # [{"k_cache": [blocks, 4, 2, 16], "v_cache": ...} per layer], float32
    print(f"plan: {caches[0]['k_cache'].shape[0]} blocks of 4 tokens per cache, "
          f"{len(caches)} layers x (K, V): {caches.nbytes} bytes")
    rng = np.random.default_rng(7)
    history = {(layer, rid): ([], []) for layer in range(len(caches)) for rid in PROMPTS}  # unpaged K/V
    rows = [(rid, 0, n) for rid, n in PROMPTS.items()]  # (request, computed tokens, new tokens)
    worst = 0.0
    with plan.manager() as m:
        for step in range(1 + DECODE_STEPS):
            for rid, computed, new in rows:
                m.allocate_slots(rid, computed_tokens=computed, num_new_tokens=new)
            md = m.step(rows, is_prefill=step == 0)
            key = md.keys["FullAttention"]
            owner = np.repeat([rid for rid, _, _ in rows], md.seq_lens_q)  # the request of each token
            for layer, cache in enumerate(caches):
                k_new, v_new = (rng.uniform(-1, 1, (md.n_tokens, 2, 16)).astype(np.float32) for _ in range(2))
                q = rng.uniform(-1, 1, (md.n_tokens, 4, 16)).astype(np.float32)
                kvcache.write_slots(cache["k_cache"], k_new, key.slot_mapping)
                kvcache.write_slots(cache["v_cache"], v_new, key.slot_mapping)
                out = kvcache.attention(q, cache["k_cache"], cache["v_cache"], key.block_table,
                                        q_lens=md.seq_lens_q, kv_lens=md.seq_lens_kv)  # causal (sparse_mode 3)
                for t in range(md.n_tokens):
                    keys, values = history[(layer, owner[t])]
                    keys.append(k_new[t])
                    values.append(v_new[t])
                    want = direct_attention(q[t], np.stack(keys), np.stack(values))  # keys 0..position t
                    worst = max(worst, float(np.abs(out[t] - want).max()))
            tables = ", ".join(f"request {rid}: {n} keys in blocks {key.block_table[i, :(n + 3) // 4].tolist()}"
                               for i, (rid, n) in enumerate(zip(PROMPTS, md.seq_lens_kv)))
            print(f"{'prefill' if step == 0 else 'decode':8} {md.n_tokens} tokens; {tables}")
            rows = [(rid, computed + new, 1) for rid, computed, new in rows]  # one token each next step
        for rid in PROMPTS:
            m.free(rid)
    print(f"paged attention, {len(caches)} layers, prefill + {DECODE_STEPS} decode steps: "
          f"largest difference from float64 {worst:.2e}")
    assert worst <= 1e-5, f"paged attention differs from the direct computation by {worst}"


if __name__ == "__main__":
    main()
