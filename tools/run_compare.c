/* The --compare-dtypes and --compare-weights tables of `kvcache run` (run_compare.h). */
#include "run_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "model/json_read.h"
#include "model/model_internal.h"
#include "runner/runner_internal.h"

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

/* Reads the token ids of the array v (the member `what` of prompt b) into
 * out[0..n): every item an integer id of the vocabulary, at most cap of
 * them. KVC_OK, or the failure with the item named. */
static kvc_status read_ids(const cJSON *v, const char *path, int b, const char *what, int64_t vocab, int64_t cap,
                           int32_t *out, int64_t *n) {
    char where[4200];
    *n = 0;
    if (!cJSON_IsArray(v))
        return kvci_fail(KVC_EINVAL, "%s prompts[%d].%s must be an array of token ids, got %s", path, b, what,
                         kvci_json_type_name(v));
    const cJSON *x;
    cJSON_ArrayForEach(x, v) {
        if (*n >= cap)
            return kvci_fail(KVC_EINVAL, "%s prompts[%d].%s: more than %lld ids", path, b, what, (long long)cap);
        int64_t id = 0;
        snprintf(where, sizeof where, "%s prompts[%d].%s[%lld]", path, b, what, (long long)*n);
        KVC_TRY(kvci_json_int_value(x, where, 0, vocab - 1, &id));
        out[(*n)++] = (int32_t)id;
    }
    return KVC_OK;
}

/* The prompts and reference ids of the parsed expected.json `root` into o
 * (its buffers allocated here). */
static kvc_status oracle_fill(const cJSON *root, const char *path, int64_t vocab, oracle_prompts *o) {
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(root, "prompts");
    const int n = cJSON_GetArraySize(prompts);
    char where[4200];
    snprintf(where, sizeof where, "%s num_new_tokens", path);
    if (!cJSON_IsArray(prompts) || n < 1 || n > 64)
        return kvci_fail(KVC_EINVAL, "%s needs \"prompts\", an array of 1 to 64 prompts", path);
    KVC_TRY(
        kvci_json_int_value(cJSON_GetObjectItemCaseSensitive(root, "num_new_tokens"), where, 1, 4096, &o->new_tokens));
    o->n = n;
    o->ids = kvci_malloc(ORACLE_MAX_IDS * sizeof *o->ids);
    o->lens = kvci_calloc((size_t)n, sizeof *o->lens);
    o->ref = kvci_malloc((size_t)(n * o->new_tokens) * sizeof *o->ref);
    if (!o->ids || !o->lens || !o->ref) return kvci_fail(KVC_ENOMEM, "out of memory");
    int64_t t = 0;
    for (int b = 0; b < n; b++) {
        const cJSON *p = cJSON_GetArrayItem(prompts, b);
        KVC_TRY(read_ids(cJSON_GetObjectItemCaseSensitive(p, "ids"), path, b, "ids", vocab, ORACLE_MAX_IDS - t,
                         o->ids + t, &o->lens[b]));
        if (o->lens[b] < 1) return kvci_fail(KVC_EINVAL, "%s prompts[%d].ids is empty", path, b);
        t += o->lens[b];
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(p, "greedy_ids");
        if (cJSON_IsArray(g) && cJSON_GetArraySize(g) != o->new_tokens)
            return kvci_fail(KVC_EINVAL, "%s prompts[%d].greedy_ids holds %d ids, num_new_tokens says %lld", path, b,
                             cJSON_GetArraySize(g), (long long)o->new_tokens);
        int64_t got = 0;
        KVC_TRY(read_ids(g, path, b, "greedy_ids", vocab, o->new_tokens, o->ref + b * o->new_tokens, &got));
    }
    return KVC_OK;
}

/* Reads DIR/expected.json; 0 on success, else prints why (`flag` naming the comparison) and
 * returns 2 (1 when memory ran out). */
static int oracle_read(const char *dir, const char *flag, int64_t vocab, oracle_prompts *o) {
    memset(o, 0, sizeof *o);
    char path[4096];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    kvc_status st = kvci_read_file(path, KVC_MAX_INPUT_BYTES, &text, &len);
    if (st == KVC_OK) st = kvci_json_parse_object(text, len, path, &root); /* a key given twice refused */
    kvci_free(text);
    if (st == KVC_OK) st = oracle_fill(root, path, vocab, o);
    cJSON_Delete(root);
    if (st == KVC_OK) return 0;
    fprintf(stderr, "kvcache run: %s without --prompt-ids: %s\n", flag, kvc_last_error());
    oracle_free(o);
    return st == KVC_ENOMEM ? 1 : 2;
}

/* The prompts of a comparison: *ids, *lens, *n as given, or (n 0) expected.json's, held by o,
 * with p->max_new_tokens its num_new_tokens; then the runner's checks (positions, mode, block
 * size) on m before any table starts. 0, or the exit code after a message naming `flag`. */
/* run_compare.h */
int kvc_run_check_ids(const int32_t *ids, const int64_t *lens, int64_t n, int32_t eos, int64_t V_in, int64_t V) {
    for (int64_t b = 0, t = 0; b < n; b++)
        for (int64_t i = 0; i < lens[b]; i++, t++)
            if (ids[t] >= V_in) {
                fprintf(stderr,
                        "kvcache run: --prompt-ids: id %d (prompt %lld, item %lld) is outside the model's "
                        "vocabulary [0, %lld)\n",
                        ids[t], (long long)b, (long long)i, (long long)V_in);
                return 2;
            }
    if (eos >= V) {
        fprintf(stderr, "kvcache run: --eos %d is outside the model's vocabulary [0, %lld)\n", eos, (long long)V);
        return 2;
    }
    return 0;
}

static int compare_prompts(const kvc_model *m, const char *dir, const char *flag, kvc_runner_params *p,
                           const int32_t **ids, const int64_t **lens, int64_t *n, oracle_prompts *o) {
    memset(o, 0, sizeof *o);
    const kvc_model_config *mc = kvc_model_config_of(m);
    if (*n > 0 && kvc_run_check_ids(*ids, *lens, *n, -1, kvci_model_input_vocab(mc), mc->vocab_size) != 0) return 2;
    if (*n == 0) {
        const int rc = oracle_read(dir, flag, kvc_model_config_of(m)->vocab_size, o);
        if (rc) return rc;
        *ids = o->ids, *lens = o->lens, *n = o->n, p->max_new_tokens = o->new_tokens;
    }
    int64_t max_len = 0;
    for (int64_t b = 0; b < *n; b++) max_len = (*lens)[b] > max_len ? (*lens)[b] : max_len;
    if (kvc_runner_check(m, p, *n, max_len) == KVC_OK) return 0;
    fprintf(stderr, "kvcache run: %s: %s\n", flag, kvc_last_error());
    oracle_free(o);
    return 2;
}

/* The head of a comparison table: what is compared against what, the columns (the first two named). */
static void print_header(const char *dir, const kvc_runner_params *p, int64_t n, const char *what, const char *col1,
                         const char *col2) {
    printf("%s: mode %d, %lld prompts x %lld greedy tokens; %s\n"
           "(tokens: free-running greedy equal to f32 / to the oracle; logit error, KL(f32 || dtype) and\n"
           "argmax: teacher-forced on the f32 tokens; near ties: steps whose top-2 gap <= 2x their error)\n"
           "%-8s %10s %12s %12s %12s %12s %12s %10s %6s\n",
           dir, (int)p->mode, (long long)n, (long long)p->max_new_tokens, what, col1, col2, "tokens=f32", "tokens=ref",
           "max |dlogit|", "KL mean", "KL max", "argmax=", "ties");
}

/* One row of a comparison table: `what` the dtype compared, `bytes` its size column. */
static void print_row(const char *what, int64_t bytes, const kvc_dtype_compare *c) {
    char same[32], am[32], ref[32];
    snprintf(same, sizeof same, "%lld/%lld", (long long)c->same_as_f32, (long long)c->tokens);
    snprintf(am, sizeof am, "%lld/%lld", (long long)c->forced_argmax_same, (long long)c->tokens);
    if (c->same_as_ref < 0)
        snprintf(ref, sizeof ref, "-");
    else
        snprintf(ref, sizeof ref, "%lld/%lld", (long long)c->same_as_ref, (long long)c->tokens);
    printf("%-8s %10lld %12s %12s %12.3g %12.3g %12.3g %10s %6lld\n", what, (long long)bytes, same, ref,
           c->max_logit_err, c->kl_mean, c->kl_max, am, (long long)c->near_ties);
}

/* The measures of a JSON row after its leading members (no closing brace). */
static void print_json_measures(const kvc_dtype_compare *c) {
    printf("\"tokens\":%lld,\"same_as_f32\":%lld,\"same_as_ref\":%lld,\"max_logit_err\":%.6g,\"kl_mean\":%.6g,"
           "\"kl_max\":%.6g,\"forced_argmax_same\":%lld,\"near_ties\":%lld",
           (long long)c->tokens, (long long)c->same_as_f32, (long long)c->same_as_ref, c->max_logit_err, c->kl_mean,
           c->kl_max, (long long)c->forced_argmax_same, (long long)c->near_ties);
}

int kvc_run_compare_dtypes(const kvc_model *m, const char *dir, kvc_runner_params p, const int32_t *ids,
                           const int64_t *lens, int64_t n, bool json) {
    oracle_prompts o;
    const int prc = compare_prompts(m, dir, "--compare-dtypes", &p, &ids, &lens, &n, &o);
    if (prc) return prc;
    kvc_dtype dts[KVC_DTYPE_COUNT]; /* the runtime's KV dtypes, in the dtype table's order */
    size_t n_dts = 0;
    for (int d = 0; d < KVC_DTYPE_COUNT; d++)
        if (kvc_model_kv_dtype_ok((kvc_dtype)d)) dts[n_dts++] = (kvc_dtype)d;
    if (!json) print_header(dir, &p, n, "each KV dtype against f32 caches", "dtype", "B/token");
    int rc = 0;
    for (size_t d = 0; d < n_dts; d++) {
        kvc_dtype_compare c;
        if (kvc_runner_compare_dtype(m, &p, ids, lens, n, dts[d], o.ref, &c) != KVC_OK) {
            fprintf(stderr, "kvcache run: %s: %s\n", kvc_dtype_name(dts[d]), kvc_last_error());
            rc = 1;
            break;
        }
        if (!json) {
            print_row(kvc_dtype_name(dts[d]), c.bytes_per_token, &c);
            continue;
        }
        printf("{\"model\":\"%s\",\"mode\":%d,\"dtype\":\"%s\",\"bytes_per_token\":%lld,\"f32_bytes_per_token\":%lld,",
               dir, (int)p.mode, kvc_dtype_name(dts[d]), (long long)c.bytes_per_token,
               (long long)c.f32_bytes_per_token);
        print_json_measures(&c);
        printf("}\n");
    }
    oracle_free(&o);
    return rc;
}

/* Loads dir with its GEMM matrices in wd into *m: 0, or the exit code after a message. */
static int load_as(const char *dir, kvc_wmat_dtype wd, kvc_model **m) {
    const kvc_status st = kvci_model_load_as(dir, wd, m);
    if (st == KVC_OK) return 0;
    fprintf(stderr, "kvcache run: --compare-weights: loading %s as %s: %s\n", dir, kvci_wmat_dtype_name(wd),
            kvc_last_error());
    return st == KVC_ENOMEM ? 1 : 2;
}

int kvc_run_compare_weights(const char *dir, kvc_runner_params p, const int32_t *ids, const int64_t *lens, int64_t n,
                            bool json) {
    kvc_model *ref = NULL;
    const int lrc = load_as(dir, KVC_WMAT_F32, &ref);
    if (lrc) return lrc;
    oracle_prompts o;
    const int prc = compare_prompts(ref, dir, "--compare-weights", &p, &ids, &lens, &n, &o);
    if (prc) {
        kvc_model_destroy(ref);
        return prc;
    }
    static const struct {
        kvc_wmat_dtype wd;
        const char *activations; /* kvc_model_set_activations */
        const char *label;
    } rows[] = {{KVC_WMAT_F32, "f32", "f32"},
                {KVC_WMAT_BF16, "f32", "bf16"},
                {KVC_WMAT_BF16, "bf16", "bf16+act"},
                {KVC_WMAT_Q8_0, "f32", "q8_0"},
                {KVC_WMAT_Q4_0, "f32", "q4_0"}};
    if (!json)
        print_header(dir, &p, n, "f32 caches, each weight dtype against f32 weights (bytes: all weights as stored)",
                     "weights", "bytes");
    int rc = 0;
    for (size_t d = 0; d < sizeof rows / sizeof rows[0] && rc == 0; d++) {
        kvc_model *m = ref;
        kvc_dtype_compare c;
        kvc_model_cost cost;
        if (rows[d].wd != KVC_WMAT_F32) rc = load_as(dir, rows[d].wd, &m);
        if (rc) {
            break;
        } else if (kvc_model_set_activations(m, rows[d].activations) != KVC_OK ||
                   kvci_runner_compare_models(ref, m, &p, ids, lens, n, KVC_DTYPE_F32, o.ref, &c) != KVC_OK ||
                   kvci_model_cost_of(m, &cost) != KVC_OK) {
            fprintf(stderr, "kvcache run: --compare-weights %s: %s\n", rows[d].label, kvc_last_error());
            rc = 1;
        } else if (!json) {
            print_row(rows[d].label, cost.weight_bytes, &c);
        } else {
            printf("{\"model\":\"%s\",\"mode\":%d,\"weights\":\"%s\",\"activations\":\"%s\",\"weight_bytes\":%lld,"
                   "\"flips_beyond_error\":%lld,",
                   dir, (int)p.mode, kvci_wmat_dtype_name(rows[d].wd), rows[d].activations,
                   (long long)cost.weight_bytes, (long long)c.flips_beyond_error);
            print_json_measures(&c);
            printf("}\n");
        }
        if (m != ref) kvc_model_destroy(m);
    }
    kvc_model_destroy(ref);
    oracle_free(&o);
    return rc;
}
