/* kvci_model_fuse: one GEMM for the projections that share an input (q/k/v, gate/up), so a
 * decode step opens fewer parallel regions and streams each weight byte in one pass. The
 * fused matrix is a view over the parts where they already lie back to back in the arena in
 * the fused layout (model_internal.h); each output element's reduction depends only on its
 * own row of the weights (gemm.h, gemm_bf16.h), so the results are bitwise those of the
 * separate calls. */
#include "model/model_internal.h"

/* Whether b's matrix starts where a's ends and a's bytes are exactly a's part of a packed
 * [a.rows + b.rows, cols] matrix of their dtype. */
static bool packs_before(const kvc_wmat *a, const kvc_wmat *b) {
    if (!a->data || !b->data || a->count != 1 || b->count != 1 || a->dtype != b->dtype || a->cols != b->cols)
        return false;
    if ((const char *)a->data + kvci_wmat_matrix_bytes(a) != (const char *)b->data) return false;
    if (a->dtype == KVC_WMAT_F32) return a->rows * a->cols * 4 == kvci_wmat_matrix_bytes(a);
    return a->dtype == KVC_WMAT_BF16 && a->rows % 16 == 0; /* whole column groups (gemm_bf16.h) */
}

/* *out = the view over parts[0..n) (n >= 2) when each packs before the next, else data NULL. */
static void fuse(const kvc_wmat *const *parts, int n, kvc_wmat *out) {
    *out = (kvc_wmat){0};
    int64_t rows = parts[n - 1]->rows;
    for (int i = 0; i + 1 < n; i++) {
        if (!packs_before(parts[i], parts[i + 1])) return;
        rows += parts[i]->rows;
    }
    *out = *parts[0];
    out->rows = rows;
}

void kvci_model_fuse(kvc_model *m) {
    for (int64_t l = 0; l < m->cfg.num_layers; l++) {
        kvc_layer_weights *w = &m->layers[l];
        const kvc_wmat *qkv[3] = {&w->wq, &w->wk, &w->wv}, *gu[2] = {&w->w_gate, &w->w_up};
        w->wqkv = w->w_gu = (kvc_wmat){0};
        if (!w->bq && !w->bk && !w->bv) fuse(qkv, 3, &w->wqkv);
        if (!w->b_gate && !w->b_up) fuse(gu, 2, &w->w_gu);
    }
}
