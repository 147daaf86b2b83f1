/* The standalone runner's state: caches, static tables, step arrays. */
#ifndef KVC_RUNNER_INTERNAL_H
#define KVC_RUNNER_INTERNAL_H

#include "cache/page_set.h"
#include "model/cache_build.h"
#include "kvcache/runner.h"

struct kvc_runner {
    const kvc_model *m;
    kvc_runner_params p;
    int64_t batch, max_prompt, S; /* rows, longest prompt, positions per row */
    int64_t max_tokens;           /* tokens of the largest step */
    kvc_static_layout lay;        /* paged modes */
    kvc_model_caches caches;      /* modes 1-3 */
    kvci_cache_set cache;         /* modes 1-3: the entries behind caches (cache builder) */
    kvci_page_set cache_mem;      /* one buffer: every cache tensor, zero-filled, paged as p.pages says */
    kvc_model_workspace *ws;
    int32_t *table;                           /* [batch, blocks_per_seq] static block table */
    int32_t *state_table;                     /* [batch] paged conv states: row b's state block is b */
    int32_t *ids;                             /* [max_tokens] step tokens */
    int64_t *positions;                       /* [max_tokens] */
    int64_t *slots;                           /* [max_tokens] */
    int64_t *kv_pos;                          /* [batch] */
    int64_t *lens_q, *lens_kv, *cu_q, *cu_kv; /* [batch] */
    int64_t *seq_len;                         /* [batch] tokens held per row (prompt + fed back) */
    int32_t *hist;                            /* mode 0: [batch, S] every token of each row */
    float *logits;                            /* [batch, V] */
    int32_t *chosen, *last;                   /* [batch] tokens picked by / fed to a step */
    kvc_step_metadata md;
};

/* The metadata of a step of n rows, row b holding q[b] tokens (NULL: 1 each) from position first[b]
 * (NULL: 0 each), into the runner's arrays (generate.c). */
kvc_status kvci_runner_fill_md(kvc_runner *r, int64_t n, bool prefill, const int64_t *first, const int64_t *q);

/* kvc_runner_compare_dtype between two models of one config: the reference runs `ref` with f32
 * caches, the compared runs `m` with `dtype` caches (m == ref: kvc_runner_compare_dtype). */
kvc_status kvci_runner_compare_models(const kvc_model *ref, const kvc_model *m, const kvc_runner_params *p,
                                      const int32_t *ids, const int64_t *lens, int64_t n, kvc_dtype dtype,
                                      const int32_t *ref_tokens, kvc_dtype_compare *out);

#endif
