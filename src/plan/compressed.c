/* DeepSeek-V4's layers in the plan (docs/plan.md, "DeepSeek-V4"). Every layer keeps a sliding
 * window of one shared key-value head (K = V: one cache). A compressed layer adds, per m positions,
 * one compressed entry (FullAttention with compress_ratio m: a block of block_size x m positions
 * holds block_size entries), and CSA layers the indexer's compressed key beside it. The compressors
 * emit an entry when a window of m positions closes, so each sequence also holds the projections of
 * the positions of the open window (m - 1 at most: C and Z, kv and gate, side by side) and, CSA,
 * the first half of the last closed window (its Ca series, the next window's overlap): fixed-size
 * states, one per sequence, beside the paged caches. */
#include "base/internal.h"
#include "plan/plan_internal.h"

/* The indexer's head dim when config.json has none (DeepseekV4Config's). */
#define DEFAULT_INDEX_HEAD_DIM 128

kvc_status kvci_plan_v4_read(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    f->v4 = kvci_calloc((size_t)f->n_layers, sizeof *f->v4);
    if (f->v4 == NULL) return kvci_fail(KVC_ENOMEM, "plan: out of host memory for %lld layers", (long long)f->n_layers);
    KVC_TRY(kvci_deepseek_v4_layers(hp, f->n_layers, f->v4));
    bool have = false;
    f->v4_index_dim = DEFAULT_INDEX_HEAD_DIM;
    KVC_TRY(kvci_json_int(&hp->cfg, "index_head_dim", 1, KVC_HP_MAX_DIM, &f->v4_index_dim, &have));
    int64_t csa = 0, hca = 0;
    for (int64_t i = 0; i < f->n_layers; i++) {
        csa += f->v4[i].ratio > 0 && f->v4[i].indexed;
        hca += f->v4[i].ratio > 0 && !f->v4[i].indexed;
    }
    kvci_plan_warn(plan,
                   "DeepSeek-V4: %lld CSA and %lld HCA layers keep compressed entries (Compressed_<ratio> keys) and "
                   "their compressors' pending positions (state keys) beside the window of every layer; the "
                   "operator parameters below are the window's, the compressed entries are another attention",
                   (long long)csa, (long long)hca);
    return KVC_OK;
}

/* The pending states of a compressor of head dim d over windows of m positions: the open window's (m - 1)
 * positions' kv | gate rows (CSA: two series each, 4 d wide; HCA: 2 d) and, CSA, the last closed window's first
 * series (its m rows of kv | gate, 2 d wide). */
static void pending_shapes(const char *buffer, const char *overlap, int64_t m, int64_t d, bool indexed,
                           kvc_state_shapes *s) {
    *s = (kvc_state_shapes){0};
    if (m > 1) {
        s->names[s->n] = buffer;
        s->n_shape[s->n] = 2;
        s->shape[s->n][0] = m - 1;
        s->shape[s->n][1] = (indexed ? 4 : 2) * d;
        s->n++;
    }
    if (indexed) {
        s->names[s->n] = overlap;
        s->n_shape[s->n] = 2;
        s->shape[s->n][0] = m;
        s->shape[s->n][1] = 2 * d;
        s->n++;
    }
}

/* A plan entry of layer i of type t (span: its window), its masks set. */
static kvc_plan_layer *entry(kvc_model_plan *plan, kvc_plan_layer *L, int32_t i, kvc_attn_type t, int64_t span) {
    L->layer = i;
    L->attn_type = t;
    L->sliding_window = t == KVC_ATTN_SLIDING_WINDOW ? span : 0;
    kvci_plan_set_layer_masks(plan, L);
    return L;
}

int32_t kvci_plan_v4_layer(kvc_model_plan *plan, const kvc_model_facts *f, int32_t i, kvc_plan_layer *L) {
    const kvc_v4_layer *v = &f->v4[i];
    kvc_state_shapes comp, index = {0};
    pending_shapes("compressor_buffer", "compressor_overlap", v->ratio, f->head_dim, v->indexed, &comp);
    if (v->indexed) pending_shapes("indexer_buffer", "indexer_overlap", v->ratio, f->v4_index_dim, true, &index);
    const bool states = v->ratio > 0 && comp.n + index.n > 0;
    const int32_t n = 1 + (v->ratio > 0) + states;
    if (L == NULL) return n;
    const kvc_dtype dt = plan->options.kv_dtype;
    const int64_t bs = plan->options.block_size;
    const bool sliding = f->kinds[i] == KVC_LK_SLIDING; /* a window past max_position_embeddings: full */
    kvc_plan_layer *w = entry(plan, L, i, sliding ? KVC_ATTN_SLIDING_WINDOW : KVC_ATTN_FULL, f->window);
    kvci_plan_add_cache(w, "kv_cache", 1, f->head_dim, dt, bs); /* K = V: one cache */
    if (v->ratio == 0) return n;
    kvc_plan_layer *c = entry(plan, L + 1, i, KVC_ATTN_FULL, 0);
    c->compress_ratio = v->ratio;
    kvci_plan_add_cache(c, "compressed_kv", 1, f->head_dim, dt, bs);
    if (v->indexed) kvci_plan_add_cache(c, "indexer_kv", 1, f->v4_index_dim, dt, bs);
    /* a block holds bs entries (its bytes stand); per position: an entry's bytes over the ratio, the planner's */
    for (int32_t k = 0; k < c->n_caches; k++) c->caches[k].bytes_per_token /= v->ratio;
    if (!states) return n;
    kvc_plan_layer *s = entry(plan, L + 2, i, KVC_ATTN_MAMBA, 0);
    for (int32_t k = 0; k < comp.n; k++) kvci_plan_add_state(s, &comp, k, dt);
    for (int32_t k = 0; k < index.n; k++) kvci_plan_add_state(s, &index, k, dt);
    return n;
}
