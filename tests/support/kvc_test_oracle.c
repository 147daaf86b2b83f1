/* Oracle helpers (kvc_test_oracle.h). */
#include "kvc_test_oracle.h"

#include <math.h>
#include <stdlib.h>

#include "kvc_test_util.h"

double kvc_test_oracle_abs_floor = KVC_TEST_ORACLE_ABS_FLOOR;

double kvc_test_oracle_compare_row(const float *got, const cJSON *ref, int64_t V, const char *what, int64_t i) {
    if (cJSON_GetArraySize(ref) != V)
        fail_msg("%s: reference row has %d entries, vocab %lld", what, cJSON_GetArraySize(ref), (long long)V);
    double worst = 0.0;
    int64_t j = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ref) {
        const double r = (double)(float)e->valuedouble, d = fabs((double)got[j] - r);
        if (d > KVC_TEST_ORACLE_REL_TOL * fabs(r) + kvc_test_oracle_abs_floor)
            fail_msg("%s row %lld: logit %lld is %.7g, transformers %.7g (diff %.3g)", what, (long long)i, (long long)j,
                     (double)got[j], r, d);
        worst = fmax(worst, d / fmax(fabs(r), 1e-3));
        j++;
    }
    return worst;
}

void kvc_test_oracle_open(const char *sub, kvc_test_oracle *o) {
    memset(o, 0, sizeof *o);
    char dir[1024], path[1100];
    kvc_test_oracle_dir(sub, dir, sizeof dir);
    if (kvc_model_load(dir, &o->m) != KVC_OK) fail_msg("load %s: %s", dir, kvc_last_error());
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *text = kvc_test_read_text(path);
    o->exp = cJSON_Parse(text);
    free(text);
    assert_non_null(o->exp);
    o->N = cJSON_GetObjectItem(o->exp, "num_new_tokens")->valueint;
    o->V = cJSON_GetObjectItem(o->exp, "vocab_size")->valueint;
    assert_int_equal(o->V, kvc_model_config_of(o->m)->vocab_size);
    const cJSON *ps = cJSON_GetObjectItem(o->exp, "prompts"), *p;
    int64_t t = 0;
    cJSON_ArrayForEach(p, ps) {
        assert_true(o->n < KVC_TEST_ORACLE_MAX_PROMPTS);
        const cJSON *ids = cJSON_GetObjectItem(p, "ids"), *x;
        o->prompts[o->n] = p;
        o->lens[o->n] = cJSON_GetArraySize(ids);
        cJSON_ArrayForEach(x, ids) {
            assert_true(t < 1024);
            o->ids[t++] = x->valueint;
        }
        o->n++;
    }
}

void kvc_test_oracle_close(kvc_test_oracle *o) {
    cJSON_Delete(o->exp);
    kvc_model_destroy(o->m);
}

void kvc_test_oracle_check_greedy(const kvc_test_oracle *o, kvc_runner_mode mode, int64_t bs, bool mla_paged,
                                  const char *sub) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode;
    p.cache.block_size = bs;
    p.mla_paged = mla_paged;
    p.max_new_tokens = o->N;
    int64_t maxl = 0;
    for (int64_t b = 0; b < o->n; b++) maxl = o->lens[b] > maxl ? o->lens[b] : maxl;
    kvc_runner *r = NULL;
    if (kvc_runner_create(o->m, &p, o->n, maxl, &r) != KVC_OK) fail_msg("%s runner: %s", sub, kvc_last_error());
    int32_t *tok = calloc((size_t)(o->n * o->N), sizeof(int32_t));
    float *lg = calloc((size_t)(o->N * o->n * o->V), sizeof(float));
    assert_non_null(tok);
    assert_non_null(lg);
    if (kvc_runner_generate(r, o->ids, o->lens, o->n, tok, lg, NULL) != KVC_OK)
        fail_msg("%s generate mode %d: %s", sub, (int)mode, kvc_last_error());
    char what[160];
    for (int64_t b = 0; b < o->n; b++) {
        const cJSON *g = cJSON_GetObjectItem(o->prompts[b], "greedy_ids");
        const cJSON *sl = cJSON_GetObjectItem(o->prompts[b], "step_logits");
        for (int64_t i = 0; i < o->N; i++) {
            const int want = cJSON_GetArrayItem(g, (int)i)->valueint;
            if (tok[b * o->N + i] != want)
                fail_msg("%s mode %d bs %lld prompt %lld: greedy token %lld is %d, transformers %d", sub, (int)mode,
                         (long long)bs, (long long)b, (long long)i, tok[b * o->N + i], want);
            snprintf(what, sizeof what, "%s mode %d bs %lld prompt %lld step_logits", sub, (int)mode, (long long)bs,
                     (long long)b);
            kvc_test_oracle_compare_row(lg + (i * o->n + b) * o->V, cJSON_GetArrayItem(sl, (int)i), o->V, what, i);
        }
    }
    free(tok);
    free(lg);
    kvc_runner_destroy(r);
}
