/* `kvcache run ... --role prefill|decode` (run_pd.h): the prompts through
 * PREFILL engines on the prefill ranks and DECODE engines on the decode ranks,
 * their KV sent over the MPI transport (src/dist/pd.h), prefill rank r to
 * decode rank r (each holds the same shard); the MLA latent, whole on every
 * rank, goes from prefill rank 0 to every decode rank. A build without MPI
 * refuses --role (kvc_run_dist_start); its kvc_run_pd, at the end, only says so. */
#include "run_pd.h"

#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "base/internal.h"
#include "dist/pd.h"
#include "model/json_read.h" /* KVC_TRY */
#include "run_tp.h"

#ifdef KVC_HAVE_MPI

enum { PROMPT_PENDING = 0, PROMPT_ADDED, PROMPT_FAILED };

static const int32_t *prompt_of(const int32_t *ids, const int64_t *lens, int64_t b) {
    int64_t t = 0;
    for (int64_t i = 0; i < b; i++) t += lens[i];
    return ids + t;
}

/* The decode ranks [*first, *first + *count) that this prefill rank sends every prompt's KV to: its
 * own (the same shard), or for the MLA latent (whole on every rank) rank 0 to all and the others none. */
static void send_range(const kvc_run_pd_link *k, bool latent, int32_t *first, int32_t *count) {
    *first = latent ? 0 : k->rank;
    *count = !latent ? 1 : k->rank == 0 ? k->size : 0;
}

/* Sends every prefilled prompt that has not gone yet, then releases it. */
static kvc_status send_prefilled(kvc_engine *e, kvci_pd_layout *l, const kvc_run_pd_link *k,
                                 const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, const int32_t *ids,
                                 const int64_t *lens, int64_t n, bool *sent, int64_t *n_sent, int *rc) {
    int32_t first, count;
    send_range(k, o->adapter.latent, &first, &count);
    for (int64_t b = 0; b < n; b++) {
        kvc_engine_request_info info;
        if (sent[b] || kvc_engine_request_get(e, b, &info) != KVC_OK || info.state != KVC_REQ_FINISHED) continue;
        if (pd->exit_after >= 0 && *n_sent >= pd->exit_after) return KVC_OK;
        const kvc_engine_request r = kvc_run_engine_request(o, b, prompt_of(ids, lens, b), lens[b]);
        /* twice the decode side's timeout: it may spend one on an earlier message before it takes this one */
        for (int32_t d = first; d < first + count; d++)
            if (kvci_pd_send(e, l, &k->transport, k->peers[d], (uint64_t)*n_sent, &r, 2 * pd->timeout_ms,
                             b == pd->drop_payload) != KVC_OK) {
                fprintf(stderr, "kvcache run: prompt %lld: %s\n", (long long)b, kvc_last_error());
                *rc = 1;
            }
        sent[b] = true;
        (*n_sent)++;
        kvc_status st = kvc_engine_request_release(e, b);
        if (st != KVC_OK) return st;
    }
    return KVC_OK;
}

/* Each prompt's first kvci_pd_prefill_len tokens go through the PREFILL engine (a model with state layers: all
 * but the last, whose states the decode rank resumes from); kvci_pd_send sends the whole prompt. */
static int run_prefill(kvc_engine *e, const kvc_model_cache_info *ci, const kvc_run_pd_link *k,
                       const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, const int32_t *ids, const int64_t *lens,
                       int64_t n) {
    kvci_pd_layout l = {0};
    bool *sent = kvci_calloc((size_t)n, sizeof *sent);
    kvc_status st = sent ? kvci_pd_layout_init(kvc_engine_manager(e), ci, &l) : kvci_fail(KVC_ENOMEM, "out of memory");
    int rc = 0;
    int64_t n_sent = 0;
    for (int64_t b = 0; b < n && st == KVC_OK; b++) {
        const kvc_engine_request r =
            kvc_run_engine_request(o, b, prompt_of(ids, lens, b), kvci_pd_prefill_len(&l, lens[b]));
        st = kvc_engine_add_request(e, &r);
    }
    while (st == KVC_OK && n_sent < n && (pd->exit_after < 0 || n_sent < pd->exit_after)) {
        kvc_engine_step_result res;
        st = kvc_engine_step(e, &res);
        if (st == KVC_OK) st = send_prefilled(e, &l, k, o, pd, ids, lens, n, sent, &n_sent, &rc);
    }
    if (st != KVC_OK) { /* the prompts not sent yet fail on the decode side too */
        fprintf(stderr, "kvcache run: prefill rank: %s\n", kvc_last_error());
        int32_t first, count;
        send_range(k, o->adapter.latent, &first, &count);
        for (int64_t b = 0; b < n && sent; b++) {
            if (sent[b]) continue;
            for (int32_t d = first; d < first + count; d++)
                kvci_pd_send_failure(&k->transport, k->peers[d], (uint64_t)n_sent, b, st, kvc_last_error(),
                                     pd->timeout_ms);
            n_sent++;
        }
        rc = 1;
    } else if (n_sent < n && pd->kill) {
        fprintf(stderr, "kvcache run: prefill rank: killing itself after %lld of %lld prompts (--pd-fault kill=%lld)\n",
                (long long)n_sent, (long long)n, (long long)pd->exit_after);
        raise(SIGKILL);
    } else if (n_sent < n) {
        fprintf(stderr, "kvcache run: prefill rank: stopping after %lld of %lld prompts (--pd-fault exit=%lld)\n",
                (long long)n_sent, (long long)n, (long long)pd->exit_after);
        rc = 1;
    }
    kvci_pd_layout_free(&l);
    kvci_free(sent);
    return rc;
}

static int64_t now_ms(void) { return kvc_engine_now_ns() / 1000000; }

/* One received event: the prompt's state, a message for a failure. */
static void note_event(const kvci_pd_event *ev, char *state, int64_t n, kvc_engine *e, kvci_pd_receiver *rx, int *rc) {
    const bool known = ev->request_id >= 0 && ev->request_id < n && state[ev->request_id] == PROMPT_PENDING;
    if (ev->kind == KVC_PD_ADDED && known) {
        state[ev->request_id] = PROMPT_ADDED;
        return;
    }
    if (ev->kind == KVC_PD_ADDED) { /* not one of this run's prompts */
        kvc_engine_request_release(e, ev->request_id);
        kvci_pd_receiver_forget(rx, ev->request_id);
        fprintf(stderr, "kvcache run: the prefill rank sent request %lld, which is not a pending prompt\n",
                (long long)ev->request_id);
    } else {
        fprintf(stderr, "kvcache run: prompt %lld: %s\n", (long long)ev->request_id, kvc_last_error());
    }
    if (known) state[ev->request_id] = PROMPT_FAILED;
    *rc = 1;
}

/* The decode ranks of a tensor-parallel group agree before each step, so that every rank admits and
 * steps the same requests (the forward's collectives pair up): agree[0] = the most prompts any rank has
 * settled (received or failed), agree[1] = minus the fewest, agree[2] = some rank waited idle past the
 * timeout, agree[3 + b] = prompt b's worst state on any rank. */
enum { AGREE_MOST, AGREE_FEWEST, AGREE_EXPIRED, AGREE_STATES };

/* Once every rank has settled the same prompts: a prompt that failed on any rank fails on all (those
 * that added it release it before its admission). */
static void settle_failures(const int32_t *agree, char *state, int64_t n, kvc_engine *e, kvci_pd_receiver *rx,
                            int *rc) {
    for (int64_t b = 0; b < n; b++)
        if (agree[AGREE_STATES + b] == PROMPT_FAILED && state[b] == PROMPT_ADDED) {
            kvc_engine_request_release(e, b);
            kvci_pd_receiver_forget(rx, b);
            state[b] = PROMPT_FAILED;
            fprintf(stderr, "kvcache run: prompt %lld: its transfer failed on another decode rank\n", (long long)b);
            *rc = 1;
        }
}

/* Receives and decodes until every prompt is finished or failed; the prompts whose KV has not come
 * fail when a rank has waited idle for the timeout since its last message or step. */
static kvc_status decode_all(kvc_engine *e, kvci_pd_receiver *rx, const kvci_transport *t, const kvc_run_engine_opts *o,
                             const kvc_run_pd_opts *pd, int64_t n, char *state, int32_t *agree, int32_t *buf,
                             int64_t *printed, int *rc) {
    int64_t last = now_ms();
    for (;;) {
        kvci_pd_event ev;
        KVC_TRY(kvci_pd_receive(rx, e, t, pd->timeout_ms, &ev));
        if (ev.kind != KVC_PD_NONE) note_event(&ev, state, n, e, rx, rc), last = now_ms();
        int32_t settled = 0;
        for (int64_t b = 0; b < n; b++) settled += state[b] != PROMPT_PENDING, agree[AGREE_STATES + b] = state[b];
        agree[AGREE_MOST] = settled, agree[AGREE_FEWEST] = -settled;
        agree[AGREE_EXPIRED] = ev.kind == KVC_PD_NONE && now_ms() - last > pd->timeout_ms;
        KVC_TRY(kvc_run_role_max(agree, (int)(AGREE_STATES + n)));
        if (agree[AGREE_EXPIRED]) {
            for (int64_t b = 0; b < n; b++)
                if (state[b] == PROMPT_PENDING) {
                    fprintf(stderr, "kvcache run: prompt %lld: no KV from the prefill rank within %lld ms\n",
                            (long long)b, (long long)pd->timeout_ms);
                    state[b] = PROMPT_FAILED;
                    *rc = 1;
                }
            last = now_ms();
            continue;
        }
        if (agree[AGREE_MOST] != -agree[AGREE_FEWEST]) { /* a rank waits for a message the others have */
            nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
            continue;
        }
        settle_failures(agree, state, n, e, rx, rc);
        kvc_engine_stats stats;
        KVC_TRY(kvc_engine_get_stats(e, &stats));
        if (stats.n_waiting + stats.n_running > 0) {
            kvc_engine_step_result res;
            KVC_TRY(kvc_engine_step(e, &res));
            last = now_ms();
            for (int64_t b = 0; o->stream && b < n; b++)
                if (state[b] == PROMPT_ADDED) KVC_TRY(kvc_run_engine_stream(e, b, buf, o->max_new_tokens, &printed[b]));
            fflush(stdout);
        } else if (agree[AGREE_MOST] == n) {
            return KVC_OK;
        } else if (ev.kind == KVC_PD_NONE) {
            nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
        }
    }
}

static int run_decode(kvc_engine *e, const kvc_model_cache_info *ci, const kvci_transport *t,
                      const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, int64_t n) {
    kvci_pd_receiver rx;
    char *state = kvci_calloc((size_t)n, 1);
    int32_t *agree = kvci_calloc((size_t)(AGREE_STATES + n), sizeof *agree);
    int32_t *buf = kvci_calloc((size_t)o->max_new_tokens, sizeof *buf);
    int64_t *printed = kvci_calloc((size_t)n, sizeof *printed);
    int rc = 0;
    kvc_status st = state && agree && buf && printed ? kvci_pd_receiver_init(e, ci, n, &rx)
                                                     : kvci_fail(KVC_ENOMEM, "out of memory");
    if (st == KVC_OK) {
        printf("%s\n", pd->first_line);
        st = decode_all(e, &rx, t, o, pd, n, state, agree, buf, printed, &rc);
        kvci_pd_receiver_free(&rx);
    }
    for (int64_t b = 0; b < n && st == KVC_OK; b++) {
        if (state[b] == PROMPT_ADDED)
            st = kvc_run_engine_print(e, o, b, buf);
        else if (!o->stream)
            printf("\n"); /* its transfer failed (said on stderr) */
    }
    if (st != KVC_OK) fprintf(stderr, "kvcache run: decode rank: %s\n", kvc_last_error()), rc = 1;
    kvci_free(state);
    kvci_free(agree);
    kvci_free(buf);
    kvci_free(printed);
    return rc;
}

int kvc_run_pd(const kvc_model *m, const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, const int32_t *ids,
               const int64_t *lens, int64_t n) {
    kvc_run_pd_link k;
    kvc_status st = kvc_run_pd_connect(&k);
    kvc_engine_params ep = kvc_run_engine_params(o, lens, n);
    ep.role = pd->role;
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    if (st == KVC_OK) st = kvc_engine_adapter_create(m, &o->adapter, &ep, &a);
    if (st == KVC_OK) st = kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e);
    int rc = 1;
    if (st != KVC_OK)
        fprintf(stderr, "kvcache run: %s\n", kvc_last_error());
    else if (pd->role == KVC_ENGINE_ROLE_PREFILL)
        rc = run_prefill(e, kvc_engine_adapter_model(a)->cache_info, &k, o, pd, ids, lens, n);
    else
        rc = run_decode(e, kvc_engine_adapter_model(a)->cache_info, &k.transport, o, pd, n);
    fflush(stdout); /* everything is out before MPI ends (its teardown may wait for a dead peer) */
    fflush(stderr);
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
    kvci_transport_close(&k.transport);
    return rc;
}

#else

int kvc_run_pd(const kvc_model *m, const kvc_run_engine_opts *o, const kvc_run_pd_opts *pd, const int32_t *ids,
               const int64_t *lens, int64_t n) {
    (void)m, (void)o, (void)pd, (void)ids, (void)lens, (void)n;
    fprintf(stderr, "kvcache run: --role: this kvcache was built without MPI\n");
    return 2;
}

#endif
