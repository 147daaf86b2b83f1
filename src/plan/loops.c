/* Dory's recurrent section (DoryConfig, transformers 5.25): n_input_layers run once, then n_recurrent_layers
 * n_recurrent_loops times over the same weights, then n_output_layers once. With recurrent_kv_cache_mode "per_loop"
 * (the default) every loop keeps caches of its own for the recurrent layers; "last_loop" keeps one per layer (the
 * earlier loops read it). Its saved configs list an "mlp" entry after every attention layer and double the layer
 * counts; the config class halves them back (floor), as read here. */
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

/* Whether layer_types lists "mlp" entries (the saved form); then they must alternate with attention layers. */
static kvc_status mlp_form(const kvc_hparams *hp, const kvc_model_facts *f, bool *out) {
    *out = false;
    for (int64_t i = 0; i < f->n_layers; i++) *out |= f->kinds[i] == KVC_LK_NONE;
    if (!*out) return KVC_OK;
    if (f->n_layers % 2 != 0)
        return kvci_fail(KVC_EINVAL, "%s: layer_types lists \"mlp\" entries but num_hidden_layers %lld is odd",
                         hp->cfg.doc, (long long)f->n_layers);
    for (int64_t i = 0; i < f->n_layers; i++)
        if ((f->kinds[i] == KVC_LK_NONE) != (i % 2 == 1))
            return kvci_fail(KVC_EINVAL,
                             "%s: layer_types[%lld]: the saved form alternates an attention layer and \"mlp\"",
                             hp->cfg.doc, (long long)i);
    return KVC_OK;
}

kvc_status kvci_plan_dory_loops(const kvc_hparams *hp, kvc_model_plan *plan, kvc_model_facts *f) {
    const kvc_json_obj *c = &hp->cfg;
    bool doubled = false, have_rec = false;
    KVC_TRY(mlp_form(hp, f, &doubled));
    const int64_t step = doubled ? 2 : 1, n = f->n_layers / step; /* attention layers */
    int64_t n_in = 8, n_out = 8, n_rec = 0, loops = 2;            /* DoryConfig's */
    KVC_TRY(kvci_json_int(c, "n_input_layers", 0, KVC_HP_MAX_LAYERS, &n_in, &(bool){false}));
    KVC_TRY(kvci_json_int(c, "n_output_layers", 0, KVC_HP_MAX_LAYERS, &n_out, &(bool){false}));
    if (!cJSON_IsNull(kvci_json_find(c, "n_recurrent_layers"))) /* null: the layers left over */
        KVC_TRY(kvci_json_int(c, "n_recurrent_layers", 0, KVC_HP_MAX_LAYERS, &n_rec, &have_rec));
    KVC_TRY(kvci_json_int(c, "n_recurrent_loops", 1, 1024, &loops, &(bool){false}));
    n_in /= step, n_out /= step, n_rec = have_rec ? n_rec / step : n - n_in - n_out;
    if (n_rec < 0 || n_in + n_rec + n_out != n)
        return kvci_fail(KVC_EINVAL,
                         "%s: n_input_layers %lld + n_recurrent_layers %lld + n_output_layers %lld must be the %lld "
                         "attention layers%s",
                         c->doc, (long long)n_in, (long long)n_rec, (long long)n_out, (long long)n,
                         doubled ? " (each count halved, as layer_types lists \"mlp\" entries)" : "");
    const char *mode = "per_loop";
    KVC_TRY(kvci_json_str(c, "recurrent_kv_cache_mode", 16, &mode, &(bool){false}));
    const bool per_loop = strcmp(mode, "per_loop") == 0;
    if (!per_loop && strcmp(mode, "last_loop") != 0)
        return kvci_fail(KVC_EINVAL, "%s: recurrent_kv_cache_mode \"%s\" is not per_loop or last_loop", c->doc, mode);
    if (per_loop && n + n_rec * (loops - 1) > KVC_HP_MAX_LAYERS)
        return kvci_fail(KVC_EINVAL, "%s: n_recurrent_loops %lld keeps %lld cache layers, more than %d", c->doc,
                         (long long)loops, (long long)(n + n_rec * (loops - 1)), KVC_HP_MAX_LAYERS);
    f->loop_lo = n_in * step, f->loop_hi = (n_in + n_rec) * step;
    f->loop_copies = per_loop ? loops : 1;
    kvci_plan_warn(plan,
                   "recurrent section: layers %lld-%lld run %lld times (n_recurrent_loops), %s: %lld cache layers "
                   "for %lld attention layers",
                   (long long)f->loop_lo, (long long)f->loop_hi - 1, (long long)loops,
                   per_loop ? "one cache per loop (per_loop)" : "one cache, written by the last loop (last_loop)",
                   (long long)(n + n_rec * (f->loop_copies - 1)), (long long)n);
    return KVC_OK;
}
