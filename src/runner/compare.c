/* kvc_runner_compare_dtype: a reduced-precision KV cache against f32 on the
 * same prompts; kvci_runner_compare_models: the same between two models (one
 * checkpoint in two weight dtypes, `kvcache run --compare-weights`). Greedy tokens are compared free-running (as a user
 * sees them); logits and next-token distributions teacher-forced on the f32 path's tokens, so every step compares the
 * same positions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "kvcache/runner.h"
#include "runner/runner_internal.h"

/* KL(p || q) of softmax(a) and softmax(b) over V logits, in nats (float64). */
static double kl_logits(const float *a, const float *b, int64_t V) {
    double ma = a[0], mb = b[0];
    for (int64_t i = 1; i < V; i++) ma = fmax(ma, a[i]), mb = fmax(mb, b[i]);
    double za = 0.0, zb = 0.0;
    for (int64_t i = 0; i < V; i++) za += exp(a[i] - ma), zb += exp(b[i] - mb);
    const double la = ma + log(za), lb = mb + log(zb);
    double kl = 0.0;
    for (int64_t i = 0; i < V; i++) {
        const double lpa = a[i] - la, lpb = b[i] - lb;
        kl += exp(lpa) * (lpa - lpb);
    }
    return kl > 0.0 ? kl : 0.0;
}

static int64_t argmax(const float *v, int64_t n, float *gap) {
    int64_t a = 0, b = -1;
    for (int64_t i = 1; i < n; i++) {
        if (v[i] > v[a])
            b = a, a = i;
        else if (b < 0 || v[i] > v[b])
            b = i;
    }
    *gap = b < 0 ? INFINITY : v[a] - v[b];
    return a;
}

/* One runner of p with dtype dt over the prompts: tokens [n, NT], logits
 * [NT, n, V] (or NULL), its KV bytes per token into *bytes. */
static kvc_status run(const kvc_model *m, kvc_runner_params p, kvc_dtype dt, const int32_t *ids, const int64_t *lens,
                      int64_t n, int64_t max_len, const int32_t *forced, int32_t *tokens, float *logits,
                      int64_t *bytes) {
    p.cache.kv_dtype = dt;
    kvc_runner *r = NULL;
    kvc_status st = kvc_runner_create(m, &p, n, max_len, &r);
    if (st == KVC_OK)
        st = forced ? kvc_runner_generate_forced(r, ids, lens, n, forced, tokens, logits, NULL)
                    : kvc_runner_generate(r, ids, lens, n, tokens, logits, NULL);
    *bytes = kvc_runner_kv_bytes_per_token(r);
    kvc_runner_destroy(r);
    return st;
}

kvc_status kvc_runner_compare_dtype(const kvc_model *m, const kvc_runner_params *p, const int32_t *ids,
                                    const int64_t *lens, int64_t n, kvc_dtype dtype, const int32_t *ref_tokens,
                                    kvc_dtype_compare *out) {
    return kvci_runner_compare_models(m, m, p, ids, lens, n, dtype, ref_tokens, out);
}

kvc_status kvci_runner_compare_models(const kvc_model *ref, const kvc_model *m, const kvc_runner_params *p,
                                      const int32_t *ids, const int64_t *lens, int64_t n, kvc_dtype dtype,
                                      const int32_t *ref_tokens, kvc_dtype_compare *out) {
    if (!ref || !m || !p || !ids || !lens || !out || n < 1)
        return kvci_fail(KVC_EINVAL,
                         "runner_compare_dtype: model, params, ids, lens and out must be given, n %lld >= 1",
                         (long long)n);
    if (p->mode == KVC_RUNNER_RECOMPUTE)
        return kvci_fail(KVC_EINVAL, "runner_compare_dtype: mode 0 has no cache to compare; use mode 1, 2 or 3");
    const int64_t NT = p->max_new_tokens, V = kvc_model_config_of(m)->vocab_size;
    int64_t max_len = 1;
    for (int64_t b = 0; b < n; b++) max_len = lens[b] > max_len ? lens[b] : max_len;
    kvc_runner_params with_dtype = *p; /* the runners' own check, before the logits are allocated */
    with_dtype.cache.kv_dtype = dtype;
    kvc_status checked = kvc_runner_check(m, &with_dtype, n, max_len);
    if (checked != KVC_OK) return checked;
    const kvc_model_config *rc = kvc_model_config_of(ref), *mc = kvc_model_config_of(m);
    if (rc->vocab_size != mc->vocab_size || rc->num_layers != mc->num_layers || rc->hidden_size != mc->hidden_size)
        return kvci_fail(KVC_EINVAL, "runner_compare: the two models differ in vocabulary, layers or width");
    int64_t cells = 0;
    if (!kvci_mul64(NT, n, &cells) || !kvci_mul64(cells, V, &cells) || cells > (INT64_C(1) << 28))
        return kvci_fail(KVC_EINVAL,
                         "runner_compare_dtype: %lld prompts x %lld tokens x vocabulary %lld logits exceed 2^28",
                         (long long)n, (long long)NT, (long long)V);
    int32_t *t32 = kvci_malloc((size_t)(n * NT) * sizeof *t32), *td = kvci_malloc((size_t)(n * NT) * sizeof *td);
    float *l32 = kvci_malloc((size_t)cells * sizeof *l32), *ld = kvci_malloc((size_t)cells * sizeof *ld);
    kvc_status st = t32 && td && l32 && ld ? KVC_OK : kvci_fail(KVC_ENOMEM, "runner_compare_dtype: out of memory");
    memset(out, 0, sizeof *out);
    out->dtype = dtype;
    out->tokens = n * NT;
    out->same_as_ref = -1;
    if (st == KVC_OK)
        st = run(ref, *p, KVC_DTYPE_F32, ids, lens, n, max_len, NULL, t32, l32, &out->f32_bytes_per_token);
    if (st == KVC_OK)
        st = run(m, *p, dtype, ids, lens, n, max_len, NULL, td, NULL, &out->bytes_per_token); /* free-running */
    if (st == KVC_OK) {
        out->same_as_ref = ref_tokens ? 0 : -1;
        for (int64_t i = 0; i < n * NT; i++) {
            out->same_as_f32 += td[i] == t32[i];
            if (ref_tokens) out->same_as_ref += td[i] == ref_tokens[i];
        }
        st = run(m, *p, dtype, ids, lens, n, max_len, t32, td, ld, &out->bytes_per_token); /* teacher-forced */
    }
    double kl_sum = 0.0;
    for (int64_t s = 0; st == KVC_OK && s < n * NT; s++) { /* s = step * n + row, as the logits are laid out */
        const float *a = l32 + s * V, *b = ld + s * V;
        double err = 0.0;
        for (int64_t v = 0; v < V; v++) err = fmax(err, fabs((double)a[v] - (double)b[v]));
        out->max_logit_err = fmax(out->max_logit_err, err);
        const double kl = kl_logits(a, b, V);
        kl_sum += kl;
        out->kl_max = fmax(out->kl_max, kl);
        float gap, unused;
        const int64_t top = argmax(a, V, &gap), topd = argmax(b, V, &unused);
        out->forced_argmax_same += top == topd;
        if ((double)gap <= 2.0 * err)
            out->near_ties++;
        else
            out->flips_beyond_error += top != topd;
    }
    if (st == KVC_OK) out->kl_mean = kl_sum / (double)(n * NT);
    kvci_free(t32), kvci_free(td), kvci_free(l32), kvci_free(ld);
    return st;
}
