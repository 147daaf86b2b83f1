/* The --compare-dtypes table of `kvcache run` (run_compare.h). */
#include "run_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "model/json_read.h"

#define ORACLE_MAX_IDS 65536

typedef struct oracle_prompts {
    int32_t *ids;  /* [sum lens] */
    int64_t *lens; /* [n] */
    int32_t *ref;  /* [n, new_tokens] greedy ids of the oracle */
    int64_t n, new_tokens;
} oracle_prompts;

static void oracle_free(oracle_prompts *o) {
    kvci_free(o->ids), kvci_free(o->lens), kvci_free(o->ref);
    memset(o, 0, sizeof *o);
}

/* Reads DIR/expected.json; 0 on success, else prints why and returns 2. */
static int oracle_read(const char *dir, int64_t vocab, oracle_prompts *o) {
    memset(o, 0, sizeof *o);
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    if (kvci_read_file(path, KVC_MAX_INPUT_BYTES, &text, &len) == KVC_OK) (void)kvci_json_parse(text, len, path, &root);
    kvci_free(text);
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(root, "prompts");
    const cJSON *nt = cJSON_GetObjectItemCaseSensitive(root, "num_new_tokens");
    const int n = cJSON_GetArraySize(prompts);
    int rc = 0;
    if (!root || !cJSON_IsArray(prompts) || n < 1 || n > 64 || !cJSON_IsNumber(nt) || nt->valuedouble < 1 ||
        nt->valuedouble > 4096) {
        fprintf(stderr,
                "kvcache run: --compare-dtypes without --prompt-ids needs %s with \"prompts\" (1-64) and "
                "\"num_new_tokens\" (1-4096)\n",
                path);
        rc = 2;
    }
    if (rc == 0) {
        o->n = n, o->new_tokens = (int64_t)nt->valuedouble;
        o->ids = kvci_malloc(ORACLE_MAX_IDS * sizeof *o->ids);
        o->lens = kvci_calloc((size_t)n, sizeof *o->lens);
        o->ref = kvci_malloc((size_t)(n * o->new_tokens) * sizeof *o->ref);
        if (!o->ids || !o->lens || !o->ref) {
            fprintf(stderr, "kvcache run: out of memory\n");
            rc = 1;
        }
    }
    int64_t t = 0;
    for (int b = 0; rc == 0 && b < n; b++) {
        const cJSON *p = cJSON_GetArrayItem(prompts, b);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(p, "ids"),
                    *g = cJSON_GetObjectItemCaseSensitive(p, "greedy_ids");
        const cJSON *x;
        if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) < 1 || cJSON_GetArraySize(g) != o->new_tokens) rc = 2;
        cJSON_ArrayForEach(x, ids) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= (double)vocab || t >= ORACLE_MAX_IDS)
                rc = 2;
            else
                o->ids[t++] = (int32_t)x->valuedouble, o->lens[b]++;
        }
        int64_t i = 0;
        cJSON_ArrayForEach(x, g) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= (double)vocab)
                rc = 2;
            else
                o->ref[b * o->new_tokens + i++] = (int32_t)x->valuedouble;
        }
        if (rc)
            fprintf(
                stderr,
                "kvcache run: %s prompt %d: \"ids\" and \"greedy_ids\" (%lld) must hold token ids of the vocabulary\n",
                path, b, (long long)o->new_tokens);
    }
    cJSON_Delete(root);
    if (rc) oracle_free(o);
    return rc;
}

int kvc_run_compare_dtypes(const kvc_model *m, const char *dir, kvc_runner_params p, const int32_t *ids,
                           const int64_t *lens, int64_t n, bool json) {
    oracle_prompts o;
    memset(&o, 0, sizeof o);
    if (n == 0) {
        const int rc = oracle_read(dir, kvc_model_config_of(m)->vocab_size, &o);
        if (rc) return rc;
        ids = o.ids, lens = o.lens, n = o.n, p.max_new_tokens = o.new_tokens;
    }
    if (p.mode == KVC_RUNNER_RECOMPUTE) p.mode = KVC_RUNNER_PAGED;
    const kvc_dtype dts[] = {KVC_DTYPE_F32, KVC_DTYPE_F16,    KVC_DTYPE_BF16,
                             KVC_DTYPE_I8,  KVC_DTYPE_F8E4M3, KVC_DTYPE_F8E5M2};
    if (!json)
        printf("%s: mode %d, %lld prompts x %lld greedy tokens; each KV dtype against f32 caches\n"
               "(tokens: free-running greedy equal to f32 / to the oracle; logit error, KL(f32 || dtype) and\n"
               "argmax: teacher-forced on the f32 tokens; near ties: steps whose top-2 gap <= 2x their error)\n"
               "%-8s %10s %12s %12s %12s %12s %12s %10s %6s\n",
               dir, (int)p.mode, (long long)n, (long long)p.max_new_tokens, "dtype", "B/token", "tokens=f32",
               "tokens=ref", "max |dlogit|", "KL mean", "KL max", "argmax=", "ties");
    int rc = 0;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        kvc_dtype_compare c;
        if (kvc_runner_compare_dtype(m, &p, ids, lens, n, dts[d], o.ref, &c) != KVC_OK) {
            fprintf(stderr, "kvcache run: %s: %s\n", kvc_dtype_name(dts[d]), kvc_last_error());
            rc = 1;
            break;
        }
        char ref[32];
        if (c.same_as_ref < 0)
            snprintf(ref, sizeof ref, "-");
        else
            snprintf(ref, sizeof ref, "%lld/%lld", (long long)c.same_as_ref, (long long)c.tokens);
        if (json)
            printf(
                "{\"model\":\"%s\",\"mode\":%d,\"dtype\":\"%s\",\"bytes_per_token\":%lld,\"f32_bytes_per_token\":%lld,"
                "\"tokens\":%lld,\"same_as_f32\":%lld,\"same_as_ref\":%lld,\"max_logit_err\":%.6g,\"kl_mean\":%.6g,"
                "\"kl_max\":%.6g,\"forced_argmax_same\":%lld,\"near_ties\":%lld}\n",
                dir, (int)p.mode, kvc_dtype_name(dts[d]), (long long)c.bytes_per_token,
                (long long)c.f32_bytes_per_token, (long long)c.tokens, (long long)c.same_as_f32,
                (long long)c.same_as_ref, c.max_logit_err, c.kl_mean, c.kl_max, (long long)c.forced_argmax_same,
                (long long)c.near_ties);
        else {
            char same[32], am[32];
            snprintf(same, sizeof same, "%lld/%lld", (long long)c.same_as_f32, (long long)c.tokens);
            snprintf(am, sizeof am, "%lld/%lld", (long long)c.forced_argmax_same, (long long)c.tokens);
            printf("%-8s %10lld %12s %12s %12.3g %12.3g %12.3g %10s %6lld\n", kvc_dtype_name(dts[d]),
                   (long long)c.bytes_per_token, same, ref, c.max_logit_err, c.kl_mean, c.kl_max, am,
                   (long long)c.near_ties);
        }
    }
    oracle_free(&o);
    return rc;
}
