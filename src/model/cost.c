/* kvci_model_cost: the bytes and multiply-adds of a model's steps, and the
 * GEMM kernel each kind of layer runs on (bench model's rooflines). */
#include <string.h>

#include "model/family.h"
#include "model/model_internal.h"

typedef struct cost_ctx {
    const kvc_model *m;
    kvc_model_cost *out;
} cost_ctx;

static kvc_status cost_fn(void *user, const kvc_wtensor *t) {
    cost_ctx *c = user;
    kvc_model_cost *o = c->out;
    const kvc_model_config *cfg = &c->m->cfg;
    if (!t->mat) {
        int64_t n = 1;
        for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
        o->dense_read_bytes += n * 4;
        return KVC_OK;
    }
    const kvc_wmat *w = t->mat;
    const int64_t bytes = w->count * kvci_wmat_matrix_bytes(w);
    if (w == &c->m->embed) { /* gathered by id; read whole as the tied lm_head */
        if (cfg->tie_word_embeddings) o->dense_read_bytes += bytes;
        return KVC_OK;
    }
    if (w == &c->m->lm_head) {
        o->dense_read_bytes += bytes;
        return KVC_OK;
    }
    const bool mlp = strstr(t->name, "mlp.") != NULL || strstr(t->name, "block_sparse_moe.") != NULL ||
                     strstr(t->name, "feed_forward.") != NULL; /* Llama 4's */
    kvc_model_cost_path *p = mlp ? &o->mlp : &o->attn_proj;
    p->dtype = kvci_wmat_dtype_name(w->dtype), p->kernel = kvci_wmat_kernel_name(w);
    if (w->count > 1) {
        o->expert_bytes += bytes;
        o->expert_fraction = (double)cfg->experts_per_tok / (double)w->count;
        o->macs_per_token += cfg->experts_per_tok * w->rows * w->cols;
    } else {
        o->dense_read_bytes += bytes;
        o->macs_per_token += w->rows * w->cols;
    }
    return KVC_OK;
}

kvc_status kvci_model_cost_of(const kvc_model *m, kvc_model_cost *out) {
    *out = (kvc_model_cost){.weight_bytes = m->arena_bytes};
    cost_ctx c = {m, out};
    kvc_status st = kvci_model_visit_weights((kvc_model *)m, cost_fn, &c); /* reads only */
    if (st != KVC_OK) return st;
    const kvc_model_config *cfg = &m->cfg;
    out->lm_head_macs = cfg->vocab_size * kvci_model_embed_width(cfg);
    out->lm_head.dtype = kvci_wmat_dtype_name(m->lm_head.dtype),
    out->lm_head.kernel = kvci_wmat_kernel_name(&m->lm_head);
    const bool mla = kvci_family_get(cfg->family)->mla;
    const int64_t dqk = mla ? cfg->qk_nope_head_dim + cfg->qk_rope_head_dim : cfg->head_dim;
    const int64_t dv = mla ? cfg->v_head_dim : cfg->head_dim;
    for (int64_t l = 0; l < cfg->num_layers; l++)
        if (!cfg->layer_sliding[l] && !cfg->layer_chunked[l]) /* windows and chunks bound their keys */
            out->attn_macs_per_key += cfg->num_heads * (dqk + dv);
    return KVC_OK;
}
