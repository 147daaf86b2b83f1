/* `kvcache bench model MODEL_DIR`: a whole model through the standalone
 * runner (paged caches, bf16 KV, the default block size), batches of random
 * prompts prefilled together and then decoded greedily in lock-step, each
 * figure next to its roofline measured in the same run:
 *
 *   decode: bytes one step reads (every weight but the gathered embedding,
 *           the routed experts the batch can reach, and the KV cache of
 *           every row up to its position) / the read bandwidth (a 1 GiB
 *           parallel read pass just before and just after the run, the
 *           faster one), or its flops / the peaks as for the prefill when
 *           that takes longer (a batch on a slow GEMM path: marked "c");
 *   prefill: the GEMM flops (dot kernels: times their bf16 parts per
 *           activation) / the peak of the instruction the GEMM path runs
 *           on, plus the causal attention flops / the peak of the FMA the
 *           attention path runs on (peak passes before and after, the
 *           faster one).
 *
 * roof = roofline time / measured time (1 is the machine's limit). Also the
 * resident memory (VmRSS, its anonymous and huge-page parts) after loading
 * and after the runs (the 1 GiB read buffer freed; the peak includes it), and the kernel of each kind of layer. One
 * generate per configuration (three when the prefill has at most 4,096 tokens, the median taken): prefill = its first
 * step, decode = the mean of its later steps.
 *
 * --against LIB also loads the model in another build's libkvcache.so
 * (bench_model_other.h) and times its generate calls on the same prompts,
 * alternating with this build's call by call, so that the ratio of the two
 * medians (this build's time over the other's: below 1, this build is
 * faster) holds while the machine's speed moves; each row also says whether
 * the two builds gave the same greedy tokens. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "bench_model_other.h"
#include "kvcache/ops.h"
#include "kvcache/runner.h"
#include "machine_limits.h"
#include "model/gemm_bf16.h"
#include "model/model_internal.h"
#include "model/step_profile.h"

#define DECODE_STEPS 16
#define MAX_LIST     8

typedef struct int_list {
    int n;
    int64_t v[MAX_LIST];
} int_list;

/* "1,8,32" -> list; 0 on success, else a message on stderr. */
static int parse_list(const char *what, const char *text, int64_t max, int_list *out) {
    out->n = 0;
    const char *p = text;
    for (bool more = true; more;) {
        int64_t v = 0;
        if (out->n == MAX_LIST || !kvc_arg_list_item(&p, 1, max, &v, &more)) { /* digits only: " 8" is no size */
            fprintf(stderr,
                    "kvcache bench model: %s must be up to %d numbers in 1 .. %lld separated by commas (got \"%s\")\n",
                    what, MAX_LIST, (long long)max, text);
            return 2;
        }
        out->v[out->n++] = v;
    }
    return 0;
}

typedef struct memory {
    int64_t rss_kib, hwm_kib, anon_kib, huge_kib; /* VmRSS, VmHWM, RssAnon, AnonHugePages; -1 unknown */
} memory;

static int64_t kib_field(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    int64_t v = -1;
    const size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            v = strtoll(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static memory memory_now(void) {
    return (memory){kib_field("/proc/self/status", "VmRSS:"), kib_field("/proc/self/status", "VmHWM:"),
                    kib_field("/proc/self/status", "RssAnon:"), kib_field("/proc/self/smaps_rollup", "AnonHugePages:")};
}

static void print_memory(bool json, const char *when, memory m, const kvc_model_cost *c) {
    if (json)
        printf(
            "{\"bench\":\"model_memory\",\"when\":\"%s\",\"vm_rss_kib\":%lld,\"vm_hwm_kib\":%lld,\"rss_anon_kib\":%lld,"
            "\"anon_huge_kib\":%lld,\"weight_bytes\":%lld}\n",
            when, (long long)m.rss_kib, (long long)m.hwm_kib, (long long)m.anon_kib, (long long)m.huge_kib,
            (long long)c->weight_bytes);
    else
        printf("memory %-10s VmRSS %.2f GB (peak %.2f, anonymous %.2f, on huge pages %.2f); weights %.2f GB\n", when,
               (double)m.rss_kib * 1024e-9, (double)m.hwm_kib * 1024e-9, (double)m.anon_kib * 1024e-9,
               (double)m.huge_kib * 1024e-9, (double)c->weight_bytes * 1e-9);
}

/* The instruction the GEMM kernel computes with, and how many of its operations one
 * multiply-add of the model takes (the bf16 dot kernels: one per bf16 part of the activation,
 * `parts`; the quantized kernels: one integer multiply-add of the int8 weights and activations). */
static kvc_peak_kind gemm_peak(const kvc_model_cost_path *p, int parts, double *ops_per_mac) {
    *ops_per_mac = 1.0;
    if (strcmp(p->kernel, "amx-int8") == 0) return KVC_PEAK_TDPBSSD; /* quantized weights (gemm_quant.h) */
    if (strcmp(p->kernel, "avx512-vnni") == 0) return KVC_PEAK_DPBUSD;
    if (strcmp(p->dtype, "bf16") != 0) return kvc_limits_fma_of_path(p->kernel);
    if (strcmp(p->kernel, "amx-bf16") == 0 || strcmp(p->kernel, "avx512-bf16") == 0) {
        *ops_per_mac = parts;
        return strcmp(p->kernel, "amx-bf16") == 0 ? KVC_PEAK_TDPBF16 : KVC_PEAK_DPBF16;
    }
    return kvc_limits_fma_of_path(p->kernel);
}

typedef struct ceilings {
    double read_gbs, gemm_gflops, attn_gflops;
} ceilings;

static ceilings measure_ceilings(kvc_peak_kind gemm, kvc_peak_kind attn) {
    return (ceilings){kvc_limits_read_pass(KVC_LIMITS_2M), kvc_limits_peak_pass(gemm), kvc_limits_peak_pass(attn)};
}

static double max2(double a, double b) { return a > b ? a : b; }

typedef struct run_result {
    double prefill_ms, decode_ms;
    double prefill_roof_ms, decode_roof_ms;
    bool decode_compute_bound; /* the decode roofline is its flops / the peaks, not its bytes / the bandwidth */
    ceilings ceil;
    int64_t kv_bytes_per_token;
    double profile_s[KVC_SK_KINDS][KVC_SP_PARTS]; /* --profile: seconds per kind of work, by kind of step */
    int64_t profiled_steps[KVC_SK_KINDS];
    double prefill_mean_ms;                   /* the mean prefill of the same runs the profile timed */
    double other_prefill_ms, other_decode_ms; /* with --against, that build's medians */
    bool other_same_tokens;                   /* with --against, every run's greedy tokens equal to ours */
} run_result;

/* --profile: ms of each kind of work per step of kind k (a decode step, or a row's prefill), their
 * sum; for the prefill also its measured mean over the same runs. */
static void print_profile(bool json, const run_result *r, int64_t B, kvc_step_kind k) {
    const int64_t n = r->profiled_steps[k];
    if (n == 0) return;
    const bool pre = k == KVC_SK_PREFILL;
    double sum = 0.0;
    const double per = 1e3 / (double)n;
    if (json)
        printf("{\"bench\":\"model_profile\",\"step\":\"%s\",\"batch\":%lld,\"steps\":%lld", pre ? "prefill" : "decode",
               (long long)B, (long long)n);
    else
        printf(pre ? "  prefill by kind of work, ms (mean of %lld prefills):"
                   : "  decode step by kind of work, ms (mean of %lld steps):",
               (long long)n);
    for (int p = 0; p < KVC_SP_PARTS; p++) {
        sum += r->profile_s[k][p] * per;
        printf(json ? ",\"%s_ms\":%.3f" : " %s %.2f", kvci_step_part_name((kvc_step_part)p), r->profile_s[k][p] * per);
    }
    printf(json ? ",\"sum_ms\":%.3f" : "; sum %.2f", sum);
    if (pre) printf(json ? ",\"measured_ms\":%.3f" : " of %.2f measured", r->prefill_mean_ms);
    printf(json ? "}\n" : "\n");
}

/* One configuration: batch B, prompts of P tokens; other (NULL: none) runs its build's model in turn. */
static int run_config(const kvc_model *m, const kvc_other_model *other, const kvc_model_cost *c, int64_t B, int64_t P,
                      kvc_peak_kind gk, double ops_per_mac, kvc_peak_kind ak, run_result *out) {
    const kvc_model_config *cfg = kvc_model_config_of(m);
    kvc_runner_params rp = kvc_runner_default_params();
    rp.cache.kv_dtype = KVC_DTYPE_BF16;
    rp.max_new_tokens = DECODE_STEPS + 1;
    if (P + rp.max_new_tokens > cfg->max_position_embeddings) rp.max_positions = P + rp.max_new_tokens;
    kvc_runner *r = NULL, *ro = NULL;
    int32_t *ids = malloc((size_t)(B * P) * sizeof *ids),
            *tokens = malloc((size_t)(B * rp.max_new_tokens) * 2 * sizeof *tokens); /* ours, then the other's */
    int64_t *lens = malloc((size_t)B * sizeof *lens);
    if (!ids || !tokens || !lens || kvc_runner_create(m, &rp, B, P, &r) != KVC_OK ||
        (other && !(ro = kvc_other_model_runner(other, &rp, B, P)))) {
        if (r == NULL) /* else the other build's runner failed, its error printed */
            fprintf(stderr, "bench model: batch %lld x %lld tokens: %s\n", (long long)B, (long long)P,
                    kvc_last_error());
        kvc_runner_destroy(r);
        free(ids), free(tokens), free(lens);
        return 1;
    }
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)(B * 131 + P);
    for (int64_t i = 0; i < B * P; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17, ids[i] = (int32_t)(x % (uint64_t)cfg->vocab_size);
    for (int64_t b = 0; b < B; b++) lens[b] = P;
    const ceilings before = measure_ceilings(gk, ak);
    const int reps = B * P <= 4096 ? 3 : 1;
    double pre[3], dec[3], opre[3], odec[3];
    kvci_step_profile_reset();
    int rc = 0;
    out->other_same_tokens = true;
    const int64_t nt = B * rp.max_new_tokens;
    for (int i = 0; i < reps && rc == 0; i++) {
        kvc_runner_stats st;
        if (kvc_runner_generate(r, ids, lens, B, tokens, NULL, &st) != KVC_OK) {
            fprintf(stderr, "bench model: generate: %s\n", kvc_last_error());
            rc = 1;
            break;
        }
        pre[i] = st.prefill_ms, dec[i] = st.decode_ms / (double)st.decode_steps;
        kvc_other_stats os;
        memset(&os, 0, sizeof os);
        if (other && other->generate(ro, ids, lens, B, tokens + nt, NULL, &os.s) != KVC_OK) {
            fprintf(stderr, "bench model: --against build: generate: %s\n", other->last_error());
            rc = 1;
        } else if (other) {
            opre[i] = os.s.prefill_ms, odec[i] = os.s.decode_ms / (double)os.s.decode_steps;
            out->other_same_tokens &= memcmp(tokens, tokens + nt, (size_t)nt * sizeof *tokens) == 0;
        }
    }
    const ceilings after = measure_ceilings(gk, ak);
    out->ceil = (ceilings){max2(before.read_gbs, after.read_gbs), max2(before.gemm_gflops, after.gemm_gflops),
                           max2(before.attn_gflops, after.attn_gflops)};
    out->kv_bytes_per_token = kvc_runner_kv_bytes_per_token(r);
    if (rc == 0) {
        out->prefill_ms = kvc_bench_median(pre, reps), out->decode_ms = kvc_bench_median(dec, reps);
        out->other_prefill_ms = other ? kvc_bench_median(opre, reps) : 0.0;
        out->other_decode_ms = other ? kvc_bench_median(odec, reps) : 0.0;
        out->prefill_mean_ms = 0.0;
        for (int i = 0; i < reps; i++) out->prefill_mean_ms += pre[i] / reps;
        for (int k = 0; k < KVC_SK_KINDS; k++)
            out->profiled_steps[k] = kvci_step_profile_read((kvc_step_kind)k, out->profile_s[k]);
        /* prefill: every token through the layers, the lm_head on each row's last token, causal attention */
        const double gemm_macs = (double)(B * P) * (double)c->macs_per_token + (double)B * (double)c->lm_head_macs;
        const double attn_macs = (double)B * (double)c->attn_macs_per_key * (double)P * (double)(P + 1) / 2.0;
        out->prefill_roof_ms = 1e3 * (2.0 * gemm_macs * ops_per_mac / (out->ceil.gemm_gflops * 1e9) +
                                      2.0 * attn_macs / (out->ceil.attn_gflops * 1e9));
        /* decode: step s (0-based) of row b reads P + s + 1 positions of KV; the experts reachable by B tokens */
        const double experts =
            (double)c->expert_bytes * (c->expert_fraction * (double)B < 1.0 ? c->expert_fraction * (double)B : 1.0);
        const double kv = (double)B * (double)out->kv_bytes_per_token * ((double)P + (DECODE_STEPS + 1) / 2.0);
        const double read_ms = 1e3 * ((double)c->dense_read_bytes + experts + kv) / (out->ceil.read_gbs * 1e9);
        /* and its flops: every row through the layers and the lm_head, attention over its positions */
        const double step_macs = (double)B * (double)(c->macs_per_token + c->lm_head_macs);
        const double step_attn = (double)B * (double)c->attn_macs_per_key * ((double)P + (DECODE_STEPS + 1) / 2.0);
        const double flop_ms = 1e3 * (2.0 * step_macs * ops_per_mac / (out->ceil.gemm_gflops * 1e9) +
                                      2.0 * step_attn / (out->ceil.attn_gflops * 1e9));
        out->decode_compute_bound = flop_ms > read_ms;
        out->decode_roof_ms = max2(read_ms, flop_ms);
    }
    kvc_runner_destroy(r);
    if (ro) other->runner_destroy(ro);
    free(ids), free(tokens), free(lens);
    return rc;
}

/* parts: the bf16 parts of an activation on the dot kernels (1: activations rounded to bf16). */
static void print_paths(bool json, const kvc_model_cost *c, int parts) {
    const char *attn = kvc_attention_cpu_isa();
    if (json)
        printf("{\"bench\":\"model_paths\",\"attn_proj\":\"%s %s\",\"mlp\":\"%s %s\",\"lm_head\":\"%s %s\","
               "\"attention\":\"%s\",\"bf16_parts\":%d,\"activations\":\"%s\"}\n",
               c->attn_proj.dtype, c->attn_proj.kernel, c->mlp.dtype, c->mlp.kernel, c->lm_head.dtype,
               c->lm_head.kernel, attn, parts, parts == 1 ? "bf16" : "f32");
    else
        printf("paths: q/k/v/o %s weights on %s, MLP %s on %s, lm_head %s on %s, attention %s (bf16 KV); %s\n",
               c->attn_proj.dtype, c->attn_proj.kernel, c->mlp.dtype, c->mlp.kernel, c->lm_head.dtype,
               c->lm_head.kernel, attn,
               parts == 1 ? "activations rounded to bf16 for bf16 weights (--activations bf16)"
                          : "dot kernels split activations into " KVC_STR(KVC_GEMM_BF16_PARTS) " bf16 parts");
}

/* One activation precision of --activations: its name, the rows' label, the cost (its kernel
 * names) and the GEMM's ceiling. */
typedef struct act_run {
    const char *name; /* "f32" or "bf16" */
    char label[48];   /* the weights column: the dtype, and "+bf16act" when rounded */
    int parts;        /* bf16 parts of an activation on the dot kernels */
    kvc_model_cost cost;
    kvc_peak_kind gk;
    double ops_per_mac;
} act_run;

/* --against: the other build's medians of row B x P and this build's over them. */
static void print_against(bool json, const act_run *ar, int64_t B, int64_t P, const run_result *r) {
    const char *same = r->other_same_tokens ? "same" : "differ";
    if (json)
        printf(
            "{\"bench\":\"model_against\",\"activations\":\"%s\",\"batch\":%lld,\"prompt\":%lld,"
            "\"prefill_ms\":%.3f,\"prefill_ratio\":%.3f,\"decode_ms\":%.3f,\"decode_ratio\":%.3f,\"tokens\":\"%s\"}\n",
            ar->name, (long long)B, (long long)P, r->other_prefill_ms, r->prefill_ms / r->other_prefill_ms,
            r->other_decode_ms, r->decode_ms / r->other_decode_ms, same);
    else
        printf("  against: prefill %.1f ms, ours/its %.3f; decode %.2f ms, ours/its %.3f; greedy tokens %s\n",
               r->other_prefill_ms, r->prefill_ms / r->other_prefill_ms, r->other_decode_ms,
               r->decode_ms / r->other_decode_ms, same);
}

/* --activations LIST ("f32", "bf16", or both comma-separated: each row runs them in turn, the
 * A/B in one window) into out[*n]; 0, or 2 after a message naming what was refused. */
static int activation_runs(kvc_model *m, const char *weights, const char *list, act_run *out, int *n) {
    static const char *const names[] = {"f32", "bf16"};
    *n = 0;
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        int k = -1;
        for (int i = 0; i < 2; i++)
            if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0) k = i;
        if (k < 0 || *n == 2 || (*n == 1 && strcmp(out[0].name, names[k]) == 0)) {
            fprintf(stderr, "bench model: --activations \"%s\" is not f32, bf16 or both comma-separated\n", list);
            return 2;
        }
        act_run *a = &out[(*n)++];
        a->name = names[k];
        a->parts = k == 1 ? 1 : KVC_GEMM_BF16_PARTS;
        snprintf(a->label, sizeof a->label, "%s%s", weights, k == 1 ? "+bf16act" : "");
        if (kvc_model_set_activations(m, a->name) != KVC_OK || kvci_model_cost_of(m, &a->cost) != KVC_OK) {
            fprintf(stderr, "bench model: --activations: %s\n", kvc_last_error());
            return 2;
        }
        a->gk = gemm_peak(&a->cost.mlp, a->parts, &a->ops_per_mac);
        p += len + (p[len] == ',');
    }
    if (*n == 0) {
        fprintf(stderr, "bench model: --activations needs f32, bf16 or both comma-separated\n");
        return 2;
    }
    return 0;
}

int kvc_bench_model(const kvc_bench_opts *opts) {
    if (!opts->model_dir) {
        fprintf(stderr, "kvcache bench model: needs MODEL_DIR (config.json + *.safetensors; tools/make_random_model.py "
                        "writes a Qwen3-0.6B-shaped one)\n");
        return 2;
    }
    int_list batches, prompts;
    if (parse_list("--batches", opts->batches ? opts->batches : "1,8,32", 256, &batches) ||
        parse_list("--prompts",
                   opts->prompts        ? opts->prompts
                   : opts->long_prompts ? "64,512,2048"
                                        : "64,512",
                   65536, &prompts))
        return 2;
    kvc_other_model other_store, *other = NULL; /* --against: checked and opened before either model loads */
    if (opts->against && kvc_other_model_open(opts->against, &other_store) != 0) return 2;
    if (opts->against) other = &other_store;
    const double t0 = kvc_bench_now();
    kvc_model *m = NULL;
    kvc_wmat_dtype wd = KVC_WMAT_CHECKPOINT;
    const char *weights = opts->weights ? opts->weights : "checkpoint";
    if (kvci_wmat_dtype_parse(weights, &wd) != KVC_OK || kvci_model_load_as(opts->model_dir, wd, &m) != KVC_OK) {
        fprintf(stderr, "bench model: %s\n", kvc_last_error());
        if (other) kvc_other_model_close(other);
        return 1;
    }
    const double load_s = kvc_bench_now() - t0;
    act_run acts[2];
    int n_acts = 0;
    int rc = activation_runs(m, weights, opts->activations ? opts->activations : "f32", acts, &n_acts);
    const double t1 = kvc_bench_now();
    if (rc == 0 && other) rc = kvc_other_model_load(other, opts->model_dir, weights);
    const double other_load_s = kvc_bench_now() - t1;
    for (int a = 0; a < n_acts && rc == 0 && other; a++) rc = kvc_other_model_activations(other, acts[a].name);
    if (rc != 0) {
        if (other) kvc_other_model_close(other);
        kvc_model_destroy(m);
        return rc;
    }
    const kvc_model_cost c = acts[0].cost; /* the bytes and sizes: the same for every activation precision */
    const kvc_peak_kind gk = acts[0].gk, ak = kvc_limits_fma_of_path(kvc_attention_cpu_isa());
    const double ops_per_mac = acts[0].ops_per_mac;
    char flags[200], thp[32], load[64] = "";
    kvc_limits_cpu_flags(flags, sizeof flags);
    kvc_limits_thp_setting(thp, sizeof thp);
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (!fgets(load, sizeof load, la)) load[0] = '\0';
        load[strcspn(load, "\n")] = '\0';
        fclose(la);
    }
    const kvc_model_config *cfg = kvc_model_config_of(m);
    const char *wait = getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "unset";
    const char *spin = getenv("GOMP_SPINCOUNT") ? getenv("GOMP_SPINCOUNT") : "unset";
    if (opts->json)
        printf("{\"bench\":\"model\",\"dir\":\"%s\",\"model_type\":\"%s\",\"layers\":%lld,\"threads\":%d,\"omp_wait_"
               "policy\":\"%s\",\"gomp_spincount\":\"%s\",\"cpu_flags\":\"%s\","
               "\"thp\":\"%s\",\"loadavg\":\"%s\",\"load_s\":%.2f,\"decode_read_bytes\":%lld,\"expert_bytes\":%lld}\n",
               opts->model_dir, cfg->model_type, (long long)cfg->num_layers, omp_get_max_threads(), wait, spin, flags,
               thp, load, load_s, (long long)c.dense_read_bytes, (long long)c.expert_bytes);
    else
        printf("model %s: %s, %lld layers, hidden %lld, vocabulary %lld; loaded in %.1f s\n"
               "%d threads (OMP_WAIT_POLICY %s, GOMP_SPINCOUNT %s); CPU flags: %s; transparent huge pages: %s; load "
               "average at start: %s\n"
               "decode reads %.3f GB of weights per step (+ KV); prefill ceiling: GEMM on %s (%.0f operations per "
               "multiply-add), attention on %s\n",
               opts->model_dir, cfg->model_type, (long long)cfg->num_layers, (long long)cfg->hidden_size,
               (long long)cfg->vocab_size, load_s, omp_get_max_threads(), wait, spin, flags, thp, load,
               (double)(c.dense_read_bytes + c.expert_bytes) * 1e-9, kvc_limits_peak_name(gk), ops_per_mac,
               kvc_limits_peak_name(ak));
    if (other && opts->json)
        printf("{\"bench\":\"model_against_build\",\"lib\":\"%s\",\"version\":\"%s\",\"load_s\":%.2f}\n", opts->against,
               other->version, other_load_s);
    else if (other)
        printf("against %s (version %s): loaded in %.1f s; each row's generate calls alternate with it\n",
               opts->against, other->version, other_load_s);
    for (int a = 0; a < n_acts; a++) print_paths(opts->json, &acts[a].cost, acts[a].parts);
    print_memory(opts->json, "loaded", memory_now(), &c);
    const bool want[KVC_LIMITS_PAGE_KINDS] = {[KVC_LIMITS_2M] = true};
    if (kvc_limits_init(want) != 0) {
        if (other) kvc_other_model_close(other);
        kvc_model_destroy(m);
        return 1;
    }
    if (!opts->json)
        printf("%-18s %5s %6s | %11s %11s %8s %6s | %9s %9s %6s | %7s %8s %8s\n", "weights", "batch", "prompt",
               "prefill ms", "tokens/s", "roof ms", "roof", "decode ms", "roof ms", "roof", "read GB/s", "GEMM G/s",
               "attn G/s");
    kvci_step_profile_enable(opts->profile);
    for (int pi = 0; pi < prompts.n && rc == 0; pi++)
        for (int bi = 0; bi < batches.n && rc == 0; bi++) {
            const int64_t B = batches.v[bi], P = prompts.v[pi];
            for (int a = 0; a < n_acts && rc == 0; a++) { /* both precisions: in turn, the A/B of one window */
                const act_run *ar = &acts[a];
                run_result res;
                if (kvc_model_set_activations(m, ar->name) != KVC_OK) { /* accepted by activation_runs */
                    fprintf(stderr, "bench model: %s\n", kvc_last_error());
                    rc = 1;
                    break;
                }
                rc = other ? kvc_other_model_activations(other, ar->name) : 0; /* accepted after its load */
                if (rc == 0) rc = run_config(m, other, &ar->cost, B, P, ar->gk, ar->ops_per_mac, ak, &res);
                if (rc) break;
                const double tps = (double)(B * P) / (res.prefill_ms * 1e-3);
                if (opts->json)
                    printf("{\"bench\":\"model_run\",\"weights\":\"%s\",\"activations\":\"%s\",\"batch\":%lld,"
                           "\"prompt\":%lld,\"prefill_ms\":%"
                           ".3f,"
                           "\"prefill_tokens_"
                           "per_s\":%.1f,"
                           "\"prefill_roof_ms\":%.3f,\"prefill_roof\":%.3f,\"decode_ms\":%.3f,\"decode_roof_ms\":%.3f,"
                           "\"decode_roof\":%.3f,\"decode_bound\":\"%s\",\"read_gbs\":%.2f,\"gemm_peak_gflops\":%.1f,"
                           "\"attn_peak_gflops\":%.1f,"
                           "\"kv_bytes_per_token\":%lld}\n",
                           weights, ar->name, (long long)B, (long long)P, res.prefill_ms, tps, res.prefill_roof_ms,
                           res.prefill_roof_ms / res.prefill_ms, res.decode_ms, res.decode_roof_ms,
                           res.decode_roof_ms / res.decode_ms, res.decode_compute_bound ? "compute" : "memory",
                           res.ceil.read_gbs, res.ceil.gemm_gflops, res.ceil.attn_gflops,
                           (long long)res.kv_bytes_per_token);
                else
                    printf("%-18s %5lld %6lld | %11.1f %11.1f %8.1f %6.2f | %9.2f %8.2f%s %6.2f | %7.1f %8.0f %8.0f\n",
                           ar->label, (long long)B, (long long)P, res.prefill_ms, tps, res.prefill_roof_ms,
                           res.prefill_roof_ms / res.prefill_ms, res.decode_ms, res.decode_roof_ms,
                           res.decode_compute_bound ? "c" : " ", res.decode_roof_ms / res.decode_ms, res.ceil.read_gbs,
                           res.ceil.gemm_gflops, res.ceil.attn_gflops);
                if (other) print_against(opts->json, ar, B, P, &res);
                print_profile(opts->json, &res, B, KVC_SK_PREFILL);
                print_profile(opts->json, &res, B, KVC_SK_DECODE);
                fflush(stdout);
            }
        }
    kvci_step_profile_enable(false);
    kvc_limits_free();
    print_memory(opts->json, "after runs", memory_now(), &c); /* the peak includes the 1 GiB read buffer */
    if (other) kvc_other_model_close(other);
    kvc_model_destroy(m);
    return rc;
}
