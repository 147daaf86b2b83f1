/* Internal layout of a kvc_model: f32 weights per layer, named as in the
 * Hugging Face checkpoints (MF 2, 3.5, 4.5), and the small dense kernels
 * shared by the families (RMSNorm and RoPE are the ops layer's). */
#ifndef KVC_MODEL_INTERNAL_H
#define KVC_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/model.h"

/* Every weight of one decoder layer; NULL when the family/config has none. */
typedef struct kvc_layer_weights {
    float *in_norm;   /* [H] input_layernorm */
    float *post_norm; /* [H] post_attention_layernorm */
    /* GQA attention (dense, GptOss) */
    float *wq, *bq;   /* [nH*D, H], [nH*D] */
    float *wk, *bk;   /* [nKV*D, H], [nKV*D] */
    float *wv, *bv;   /* [nKV*D, H], [nKV*D] */
    float *wo, *bo;   /* [H, nH*Dv], [H] */
    float *q_norm, *k_norm; /* [D] Qwen3 */
    float *sinks;     /* [nH] GptOss */
    /* MLA (DeepseekV3); wq above is q_proj [nH*dq, H] when q_lora_rank == 0 */
    float *wqa, *bqa; /* [rq, H], [rq] */
    float *qa_norm;   /* [rq] */
    float *wqb;       /* [nH*dq, rq] */
    float *wkva, *bkva; /* [rkv+dr, H], [rkv+dr] */
    float *kva_norm;  /* [rkv] */
    float *wkvb;      /* [nH*(dn+dv), rkv] */
    float *wuk_t;     /* [nH, rkv, dn] W_UK^h transposed (absorbed queries), in kvc_model.derived */
    /* dense SwiGLU MLP */
    float *w_gate, *b_gate; /* [I, H], [I] */
    float *w_up, *b_up;     /* [I, H], [I] */
    float *w_down, *b_down; /* [H, I], [H] */
    /* GptOss MoE */
    float *router_w, *router_b; /* [E, H], [E] */
    float *gu, *gu_b;           /* [E, 2I, H] after load (checkpoint [E, H, 2I] transposed), [E, 2I] */
    float *dn, *dn_b;           /* [E, H, I] after load (checkpoint [E, I, H] transposed), [E, H] */
    /* DeepseekV3 MoE */
    float *gate_w;     /* [E, H] */
    float *gate_corr;  /* [E] e_score_correction_bias */
    float *ex_gate, *ex_up, *ex_down; /* [E, Imoe, H], [E, Imoe, H], [E, H, Imoe] */
    float *sh_gate, *sh_up, *sh_down; /* [Ish, H], [Ish, H], [H, Ish] */
    bool moe;
} kvc_layer_weights;

struct kvc_model {
    kvc_model_config cfg;
    float *embed;      /* [V, H] */
    float *final_norm; /* [H] */
    float *lm_head;    /* [V, H] (aliases embed when tied) */
    kvc_layer_weights layers[KVC_MODEL_MAX_LAYERS]; /* [num_layers] */
    float *arena;      /* every weight above lives in this one allocation */
    int64_t arena_floats;
    float *derived;    /* [num_layers * nH * rkv * dn] the wuk_t of every MLA layer, or NULL */
    float *inv_freq;   /* [rot/2] RoPE inverse frequencies after scaling */
    float rope_attn_factor; /* A (MF 1.4) */
    int64_t rot_dim;   /* rotary width d */
};

/* Walks every tensor of the model in a fixed order; the callback receives
 * the HF name, the shape, the destination pointer slot and the kind of
 * initialisation a random model gives it. Used by load, random init and
 * arena sizing, so the three never disagree. */
typedef enum kvc_winit { KVC_WINIT_WEIGHT, KVC_WINIT_NORM, KVC_WINIT_BIAS, KVC_WINIT_SINK, KVC_WINIT_GATE_UP } kvc_winit;
typedef kvc_status (*kvc_weight_visit_fn)(void *user, const char *name, int32_t ndim, const int64_t *shape,
                                          float **slot, kvc_winit init);
kvc_status kvci_model_visit_weights(kvc_model *m, kvc_weight_visit_fn fn, void *user);

/* Largest size of any one dimension of a config (2^24: vocabularies and
 * widths of real models are below 2^20), so that products of two sizes stay
 * far from int64 overflow; and the most weight bytes a model may take
 * (2^38 = 256 GiB of f32). */
#define KVC_MODEL_MAX_DIM (INT64_C(1) << 24)
#define KVC_MODEL_MAX_WEIGHT_BYTES (INT64_C(1) << 38)

/* Common head of load / random: config checks (every size bounded), arena
 * sizing, RoPE frequencies (kvc_rope_frequencies), then `check` (may be NULL) over every tensor before the arena is
 * allocated (load compares the file's shapes there), arena, rope tables. */
kvc_status kvci_model_alloc(const kvc_model_config *cfg, kvc_weight_visit_fn check, void *check_user,
                           kvc_model **out);
/* Common tail of load / random, once the weights are filled (prepare.c):
 * brings every weight the GEMM reads into [out, in] form (GptOss experts
 * transposed in place, W_UK^h transposed into m->derived). */
kvc_status kvci_model_prepare(kvc_model *m);

/* ---- kernels (layers.c) --------------------------------------------------- */

/* y[T, out] = x[T, in] . W[out, in]^T (+ b[out]) (HF Linear), batch-invariant (gemm.h). */
void kvci_linear(const float *x, int64_t T, int64_t in, const float *w, const float *b, int64_t out, float *y);
/* out[T, n] = silu(g) * u, g/u rows with stride ld (may equal out). */
void kvci_swiglu(const float *g, const float *u, int64_t T, int64_t n, int64_t ld, float *out, int64_t ld_out);

#endif /* KVC_MODEL_INTERNAL_H */
