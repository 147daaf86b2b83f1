/* `kvcache run --stream | --temperature ... | --eos`: the prompts as requests of the engine, which
 * samples (kvc_sampler) and stops at an end-of-sequence id, one step at a time (run_engine.h). */
#include "run_engine.h"
#include "run_tp.h"

#include <stdio.h>

#include "base/internal.h"

kvc_status kvc_run_engine_stream(const kvc_engine *e, int64_t b, int32_t *buf, int64_t cap, int64_t *printed) {
    int64_t n_out = 0;
    kvc_status st = kvc_engine_request_output(e, b, buf, cap, &n_out);
    for (; st == KVC_OK && *printed < n_out; (*printed)++) printf("%lld: %d\n", (long long)b, buf[*printed]);
    return st;
}

kvc_engine_request kvc_run_engine_request(const kvc_run_engine_opts *o, int64_t b, const int32_t *prompt,
                                          int64_t n_prompt) {
    kvc_engine_request r = kvc_engine_request_default();
    r.id = b;
    r.prompt = prompt;
    r.n_prompt = n_prompt;
    r.max_new_tokens = o->max_new_tokens;
    r.eos_id = o->eos_id;
    r.sampling = o->sampling;
    return r;
}

static kvc_status add_prompts(kvc_engine *e, const kvc_run_engine_opts *o, const int32_t *ids, const int64_t *lens,
                              int64_t n) {
    kvc_status st = KVC_OK;
    for (int64_t b = 0, t = 0; b < n && st == KVC_OK; t += lens[b++]) {
        const kvc_engine_request r = kvc_run_engine_request(o, b, ids + t, lens[b]);
        st = kvc_engine_add_request(e, &r);
    }
    return st;
}

/* Steps until every prompt finished, streaming as it goes. */
static kvc_status drive(kvc_engine *e, const kvc_run_engine_opts *o, int64_t n, int32_t *buf, int64_t *printed) {
    kvc_engine_stats stats;
    kvc_status st = kvc_engine_get_stats(e, &stats);
    while (st == KVC_OK && stats.n_finished < n) {
        kvc_engine_step_result res;
        st = kvc_engine_step(e, &res);
        for (int64_t b = 0; st == KVC_OK && o->stream && b < n; b++)
            st = kvc_run_engine_stream(e, b, buf, o->max_new_tokens, &printed[b]);
        fflush(stdout);
        if (st == KVC_OK) st = kvc_engine_get_stats(e, &stats);
    }
    return st;
}

kvc_status kvc_run_engine_print(const kvc_engine *e, const kvc_run_engine_opts *o, int64_t b, int32_t *buf) {
    int64_t n_out = 0;
    kvc_engine_request_info info;
    kvc_status st = kvc_engine_request_output(e, b, buf, o->max_new_tokens, &n_out);
    if (st == KVC_OK) st = kvc_engine_request_get(e, b, &info);
    if (st != KVC_OK) return st;
    if (!o->stream) {
        for (int64_t i = 0; i < n_out; i++) printf(i ? ",%d" : "%d", buf[i]);
        printf("\n");
    }
    if (kvc_run_tp_root()) /* one report per tensor-parallel job */
        fprintf(stderr, "kvcache run: prompt %lld: %lld tokens, stopped by %s\n", (long long)b, (long long)n_out,
                kvc_engine_finish_reason_name(info.finish));
    return KVC_OK;
}

/* The end of the output: the ids of each prompt (unless streamed) and why it stopped. */
static kvc_status print_outputs(const kvc_engine *e, const kvc_run_engine_opts *o, int64_t n, int32_t *buf) {
    kvc_status st = KVC_OK;
    for (int64_t b = 0; b < n && st == KVC_OK; b++) st = kvc_run_engine_print(e, o, b, buf);
    return st;
}

kvc_engine_params kvc_run_engine_params(const kvc_run_engine_opts *o, const int64_t *lens, int64_t n) {
    int64_t max_prompt = 0;
    for (int64_t b = 0; b < n; b++) max_prompt = lens[b] > max_prompt ? lens[b] : max_prompt;
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = max_prompt + o->max_new_tokens;
    ep.max_num_seqs = n;
    ep.max_requests = n;
    ep.reserved_decode_tokens = 0; /* the pools hold every prompt at full length: admit them all at once */
    ep.check = false;
    return ep;
}

int kvc_run_engine(const kvc_model *m, const kvc_run_engine_opts *o, const int32_t *ids, const int64_t *lens,
                   int64_t n) {
    const kvc_engine_params ep = kvc_run_engine_params(o, lens, n);
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    int32_t *buf = kvci_calloc((size_t)o->max_new_tokens, sizeof *buf);
    int64_t *printed = kvci_calloc((size_t)n, sizeof *printed);
    kvc_status st = buf != NULL && printed != NULL ? KVC_OK : kvci_fail(KVC_ENOMEM, "out of memory");
    if (st == KVC_OK) st = kvc_engine_adapter_create(m, &o->adapter, &ep, &a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e);
    if (st == KVC_OK) st = add_prompts(e, o, ids, lens, n);
    if (st == KVC_OK) st = drive(e, o, n, buf, printed);
    if (st == KVC_OK) st = print_outputs(e, o, n, buf);
    if (st != KVC_OK) fprintf(stderr, "kvcache run: %s\n", kvc_last_error());
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    kvci_free(buf);
    kvci_free(printed);
    return st == KVC_OK ? 0 : 1;
}
