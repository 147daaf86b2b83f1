/* Built-in models, the mixed workload and its driver (demo_workload.h). */
#include "base/internal.h"
#include "demo_workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

const kvc_demo_family kvc_demo_families[KVC_DEMO_N_FAMILIES] = {
    {"qwen3",
     "{\"model_type\":\"qwen3\",\"vocab_size\":512,\"hidden_size\":64,\"intermediate_size\":128,"
     "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
     "\"rope_theta\":1000000,\"rms_norm_eps\":1e-6,\"max_position_embeddings\":1024,\"tie_word_embeddings\":true}",
     false},
    {"gpt_oss",
     "{\"model_type\":\"gpt_oss\",\"vocab_size\":512,\"hidden_size\":64,\"intermediate_size\":32,"
     "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"
     "\"sliding_window\":32,\"num_local_experts\":8,\"num_experts_per_tok\":2,\"rms_norm_eps\":1e-5,"
     "\"layer_types\":[\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"full_attention\"],"
     "\"max_position_embeddings\":4096}",
     false},
    {"deepseek_v3",
     "{\"model_type\":\"deepseek_v3\",\"vocab_size\":512,\"hidden_size\":64,\"intermediate_size\":96,"
     "\"moe_intermediate_size\":32,\"num_hidden_layers\":3,\"first_k_dense_replace\":1,"
     "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"q_lora_rank\":32,\"kv_lora_rank\":24,"
     "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":12,\"n_routed_experts\":8,"
     "\"n_group\":2,\"topk_group\":1,\"num_experts_per_tok\":2,\"n_shared_experts\":1,"
     "\"routed_scaling_factor\":2.5,\"max_position_embeddings\":4096}",
     true},
};

kvc_status kvc_demo_model(const kvc_demo_family *f, kvc_model **out) {
    kvc_model_config cfg;
    kvc_status st = kvc_model_config_parse(f->config, f->name, &cfg);
    return st == KVC_OK ? kvc_model_create_random(&cfg, 20240604, out) : st;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static uint64_t next_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static int64_t uniform(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_rand(s) % (uint64_t)(hi - lo + 1));
}

kvc_status kvc_demo_workload_make(int64_t n, uint64_t seed, int64_t vocab, int64_t long_every, kvc_demo_workload *out) {
    memset(out, 0, sizeof *out);
    out->n = n;
    const int64_t max_prompt = long_every > 0 ? 900 : 256;
    out->reqs = kvci_calloc((size_t)n, sizeof *out->reqs);
    out->arrival_s = kvci_calloc((size_t)n, sizeof *out->arrival_s);
    out->ids = kvci_malloc((size_t)(n * max_prompt) * sizeof *out->ids);
    if (out->reqs == NULL || out->arrival_s == NULL || out->ids == NULL) {
        kvc_demo_workload_free(out);
        return KVC_ENOMEM;
    }
    uint64_t s = seed;
    int64_t t = 0;
    for (int64_t i = 0; i < n; i++) {
        kvc_demo_request *r = &out->reqs[i];
        r->n_prompt = next_rand(&s) % 5 == 0 ? uniform(&s, 96, 256) : uniform(&s, 4, 96);
        if (long_every > 0 && i % long_every == long_every - 1) r->n_prompt = uniform(&s, 600, 900);
        r->max_new_tokens = next_rand(&s) % 4 == 0 ? uniform(&s, 96, 224) : uniform(&s, 4, 32);
        r->prompt = out->ids + t;
        for (int64_t j = 0; j < r->n_prompt; j++) out->ids[t++] = (int32_t)(next_rand(&s) % (uint64_t)vocab);
        r->sampling = kvc_sampling_default_params();
        if (i % 2 == 1)
            r->sampling =
                (kvc_sampling_params){.temperature = 0.8f, .top_k = 40, .top_p = 0.9f, .seed = (uint64_t)i + 1};
        out->max_len = max64(out->max_len, r->n_prompt + r->max_new_tokens - 1);
        out->max_new = max64(out->max_new, r->max_new_tokens);
    }
    return KVC_OK;
}

void kvc_demo_workload_free(kvc_demo_workload *w) {
    kvci_free(w->reqs);
    kvci_free(w->arrival_s);
    kvci_free(w->ids);
    memset(w, 0, sizeof *w);
}

void kvc_demo_workload_share_prefix(kvc_demo_workload *w, int64_t every, int64_t n_shared, int64_t vocab) {
    for (int64_t i = 0; i < w->n; i += every) {
        kvc_demo_request *r = &w->reqs[i];
        int32_t *prompt = w->ids + (r->prompt - w->ids); /* the workload owns its ids */
        uint64_t s = 77;
        for (int64_t j = 0; j < n_shared && j < r->n_prompt - 1; j++)
            prompt[j] = (int32_t)(next_rand(&s) % (uint64_t)vocab);
    }
}

void kvc_demo_workload_arrivals(kvc_demo_workload *w, double rate, uint64_t seed) {
    uint64_t s = seed;
    double t = 0.0;
    for (int64_t i = 0; i < w->n; i++) {
        if (rate > 0.0) t -= log(1.0 - ((double)next_rand(&s) + 0.5) / 2147483648.0) / rate; /* next_rand: 31 bits */
        w->arrival_s[i] = t;
    }
}

kvc_status kvc_demo_latency_create(const kvc_demo_workload *w, kvc_demo_latency *out) {
    memset(out, 0, sizeof *out);
    int64_t tokens = 16; /* every step runs a token: steps <= tokens fed (recomputation counted 4 times over) */
    for (int64_t i = 0; i < w->n; i++) tokens += 4 * (w->reqs[i].n_prompt + w->reqs[i].max_new_tokens);
    size_t n = (size_t)w->n, gaps = (size_t)(w->n * w->max_new);
    out->ttft_s = kvci_malloc(n * sizeof *out->ttft_s);
    out->ttft_work = kvci_malloc(n * sizeof *out->ttft_work);
    out->tpot_s = kvci_malloc(gaps * sizeof *out->tpot_s);
    out->tpot_work = kvci_malloc(gaps * sizeof *out->tpot_work);
    out->tpot_cpu_s = kvci_malloc(gaps * sizeof *out->tpot_cpu_s);
    out->token_ns = kvci_malloc((size_t)w->max_new * sizeof *out->token_ns);
    out->token_step = kvci_malloc((size_t)w->max_new * sizeof *out->token_step);
    out->cum_tokens = kvci_malloc((size_t)tokens * sizeof *out->cum_tokens);
    out->cum_cpu_ns = kvci_malloc((size_t)tokens * sizeof *out->cum_cpu_ns);
    out->cap_steps = tokens;
    if (!out->ttft_s || !out->ttft_work || !out->tpot_s || !out->tpot_work || !out->tpot_cpu_s || !out->token_ns ||
        !out->token_step || !out->cum_tokens || !out->cum_cpu_ns) {
        kvc_demo_latency_free(out);
        return KVC_ENOMEM;
    }
    return KVC_OK;
}

void kvc_demo_latency_free(kvc_demo_latency *l) {
    kvci_free(l->ttft_s);
    kvci_free(l->ttft_work);
    kvci_free(l->tpot_s);
    kvci_free(l->tpot_work);
    kvci_free(l->tpot_cpu_s);
    kvci_free(l->token_ns);
    kvci_free(l->token_step);
    kvci_free(l->cum_tokens);
    kvci_free(l->cum_cpu_ns);
    memset(l, 0, sizeof *l);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kvc_demo_percentile(double *v, int64_t n, double q) {
    if (n == 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int64_t rank = (int64_t)ceil(q * (double)n); /* nearest rank, 1-based */
    return v[rank < 1 ? 0 : (rank > n ? n - 1 : rank - 1)];
}

/* Adds requests from *next on that have arrived by now while request slots
 * are free, each with its arrival time. */
static kvc_status admit(kvc_engine *e, const kvc_demo_workload *w, int64_t t0, int64_t *next, int64_t *live,
                        int64_t *n_live) {
    const int64_t now = kvc_engine_now_ns();
    for (; *next < w->n; (*next)++) {
        const kvc_demo_request *d = &w->reqs[*next];
        int64_t arrival = t0 + (int64_t)(w->arrival_s[*next] * 1e9);
        if (arrival > now) return KVC_OK;
        kvc_engine_request r = kvc_engine_request_default();
        r.id = *next;
        r.prompt = d->prompt;
        r.n_prompt = d->n_prompt;
        r.max_new_tokens = d->max_new_tokens;
        r.arrival_ns = arrival > 0 ? arrival : 1;
        r.sampling = d->sampling;
        kvc_status st = kvc_engine_add_request(e, &r);
        if (st == KVC_NO_SPACE) return KVC_OK;
        if (st != KVC_OK) return st;
        live[(*n_live)++] = *next;
    }
    return KVC_OK;
}

/* Sleeps until the next arrival when nothing is held. */
static void wait_arrival(const kvc_demo_workload *w, int64_t t0, int64_t next, int64_t n_live) {
    if (n_live > 0 || next >= w->n) return;
    int64_t wait = t0 + (int64_t)(w->arrival_s[next] * 1e9) - kvc_engine_now_ns();
    if (wait <= 0) return;
    struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
    nanosleep(&ts, NULL);
}

/* What cum[] sums (tokens run, thread CPU ns) over engine steps [from, to]. */
static double steps_sum(const kvc_demo_latency *lat, const int64_t *cum, int64_t from, int64_t to) {
    if (to >= lat->cap_steps) return -1.0; /* beyond the record (not reached by the workloads) */
    return (double)(cum[to] - (from > 0 ? cum[from - 1] : 0));
}

/* The finished request's time to first token and gaps between its tokens. */
static kvc_status record_latency(const kvc_engine *e, int64_t id, kvc_demo_latency *lat, int64_t max_new) {
    kvc_engine_request_times t;
    int64_t n = 0;
    kvc_status st = kvc_engine_request_times_get(e, id, &t);
    if (st == KVC_OK) st = kvc_engine_request_token_times(e, id, lat->token_step, lat->token_ns, max_new, &n);
    if (st != KVC_OK) return st;
    lat->ttft_s[lat->n_ttft] = 1e-9 * (double)(t.first_token_ns - t.arrival_ns);
    lat->ttft_work[lat->n_ttft++] = steps_sum(lat, lat->cum_tokens, t.arrival_step, t.first_token_step);
    for (int64_t k = 1; k < n && k < max_new; k++) {
        const int64_t from = lat->token_step[k - 1] + 1, to = lat->token_step[k];
        lat->tpot_s[lat->n_tpot] = 1e-9 * (double)(lat->token_ns[k] - lat->token_ns[k - 1]);
        lat->tpot_cpu_s[lat->n_tpot] = 1e-9 * steps_sum(lat, lat->cum_cpu_ns, from, to);
        lat->tpot_work[lat->n_tpot++] = steps_sum(lat, lat->cum_tokens, from, to);
    }
    return KVC_OK;
}

/* Running totals of the tokens and the thread CPU time of every step, by the engine's step number. */
static void record_step(const kvc_engine *e, const kvc_engine_step_result *res, int64_t cpu_ns, kvc_demo_latency *lat) {
    kvc_engine_stats st;
    if (res->n_rows == 0 || kvc_engine_get_stats(e, &st) != KVC_OK) return;
    int64_t s = st.steps - 1;
    if (s >= lat->cap_steps) return;
    lat->cum_tokens[s] = (s > 0 ? lat->cum_tokens[s - 1] : 0) + res->n_tokens;
    lat->cum_cpu_ns[s] = (s > 0 ? lat->cum_cpu_ns[s - 1] : 0) + cpu_ns;
}

int64_t kvc_demo_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waste sample over FullAttention keys, then finished requests read and released. */
static kvc_status after_step(kvc_engine *e, const kvc_demo_workload *w, int32_t *outputs, int64_t *live,
                             int64_t *n_live, kvc_demo_figures *fig) {
    kvc_engine_stats st;
    kvc_status s = kvc_engine_get_stats(e, &st);
    int64_t cached = 0;
    for (int64_t i = 0; i < *n_live && s == KVC_OK; i++) {
        kvc_engine_request_info info;
        s = kvc_engine_request_get(e, live[i], &info);
        cached += info.n_cached;
    }
    for (int32_t k = 0; k < st.n_keys && s == KVC_OK; k++)
        if (strcmp(fig->keys[k], "FullAttention") == 0) {
            fig->full_slots += st.blocks_in_use[k] * fig->block_size[k];
            fig->full_cached += cached;
        }
    for (int64_t i = 0; i < *n_live && s == KVC_OK;) {
        kvc_engine_request_info info;
        s = kvc_engine_request_get(e, live[i], &info);
        if (s != KVC_OK || info.state != KVC_REQ_FINISHED) {
            i++;
            continue;
        }
        int64_t got = 0;
        s = kvc_engine_request_output(e, live[i], outputs + live[i] * w->max_new, w->max_new, &got);
        if (s == KVC_OK && fig->lat != NULL) s = record_latency(e, live[i], fig->lat, w->max_new);
        if (s == KVC_OK) s = kvc_engine_request_release(e, live[i]);
        live[i] = live[--(*n_live)];
    }
    return s;
}

kvc_status kvc_demo_drive(kvc_engine *e, const kvc_demo_workload *w, int32_t *outputs, kvc_demo_figures *fig) {
    int64_t *live = kvci_malloc((size_t)kvc_engine_params_of(e)->max_requests * sizeof *live);
    if (live == NULL) return KVC_ENOMEM;
    int64_t next = 0, n_live = 0;
    kvc_status st = KVC_OK;
    const int64_t t0_ns = kvc_engine_now_ns(), cpu0_ns = kvc_demo_thread_cpu_ns();
    while (st == KVC_OK && (next < w->n || n_live > 0)) {
        wait_arrival(w, t0_ns, next, n_live);
        st = admit(e, w, t0_ns, &next, live, &n_live);
        kvc_engine_step_result res;
        const int64_t cpu0 = kvc_demo_thread_cpu_ns();
        if (st == KVC_OK) st = kvc_engine_step(e, &res);
        if (st == KVC_OK && fig->lat != NULL) record_step(e, &res, kvc_demo_thread_cpu_ns() - cpu0, fig->lat);
        if (st == KVC_OK && res.n_rows > fig->peak_rows) fig->peak_rows = res.n_rows;
        if (st == KVC_OK) st = after_step(e, w, outputs, live, &n_live, fig);
    }
    fig->seconds = 1e-9 * (double)(kvc_engine_now_ns() - t0_ns);
    fig->cpu_seconds = 1e-9 * (double)(kvc_demo_thread_cpu_ns() - cpu0_ns);
    kvci_free(live);
    return st;
}

kvc_status kvc_demo_run(const kvc_model *m, const kvc_engine_params *ep, const kvc_engine_adapter_params *ap,
                        const kvc_demo_workload *w, int32_t *outputs, kvc_demo_latency *lat, kvc_demo_figures *fig) {
    memset(fig, 0, sizeof *fig);
    fig->lat = lat;
    for (int64_t i = 0; i < w->n * w->max_new; i++) outputs[i] = -1;
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    kvc_status st = kvc_engine_adapter_create(m, ap, ep, &a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(a), ep, &e);
    if (st == KVC_OK) {
        const kvc_manager *mgr = kvc_engine_manager(e);
        for (int32_t k = 0; mgr != NULL && k < kvc_manager_n_keys(mgr); k++) {
            snprintf(fig->keys[k], sizeof fig->keys[k], "%s", kvc_manager_key(mgr, k));
            fig->block_size[k] = kvc_manager_block_size(mgr, k);
        }
        st = kvc_demo_drive(e, w, outputs, fig);
    }
    if (st == KVC_OK) st = kvc_engine_get_stats(e, &fig->stats);
    if (st == KVC_OK && kvc_engine_manager(e) != NULL)
        st = kvc_manager_prefix_stats(kvc_engine_manager(e), &fig->prefix);
    fig->requests = fig->stats.finished_total;
    fig->prompt_tokens = fig->stats.prefill_tokens;
    fig->generated_tokens = fig->stats.generated_tokens;
    fig->steps = fig->stats.steps;
    fig->preemptions = fig->stats.preemptions;
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    return st;
}

int64_t kvc_demo_kv_bytes_per_token(const kvc_model *m, bool latent, kvc_dtype kv_dtype) {
    kvc_model_cache_info *ci = NULL;
    if (kvc_model_cache_info_build(m, latent, kv_dtype, 1, &ci) != KVC_OK) return 0;
    int64_t bytes = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            bytes += e->num_head * kvc_cache_entry_dim_numel(e) * (int64_t)kvc_dtype_size(e->dtype);
        }
    kvc_model_cache_info_destroy(ci);
    return bytes;
}
