/* The prefill side of P/D (pd.h): one message per prefilled request, its
 * header and its payload (prompt ids, then the blocks each key needs). */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "dist/pd.h"

/* The request's sampling options: the decode side samples every token (the prefill side none). */
static void sampling_of(const kvc_sampling_params *sp, kvci_pd_header *h) {
    h->temperature = sp->temperature;
    h->top_p = sp->top_p;
    h->top_k = sp->top_k;
    h->sampling_seed = sp->seed;
    h->min_p = sp->min_p;
    h->presence_penalty = sp->presence_penalty;
    h->frequency_penalty = sp->frequency_penalty;
    h->repetition_penalty = sp->repetition_penalty;
    h->min_tokens = sp->min_tokens;
    h->n_min_tokens_ids = sp->n_min_tokens_ids;
    h->n_logit_bias = sp->n_logit_bias;
    if (sp->n_min_tokens_ids > 0)
        memcpy(h->min_tokens_ids, sp->min_tokens_ids, (size_t)sp->n_min_tokens_ids * sizeof *sp->min_tokens_ids);
    if (sp->n_logit_bias > 0) memcpy(h->logit_bias, sp->logit_bias, (size_t)sp->n_logit_bias * sizeof *sp->logit_bias);
}

static kvci_pd_header header_of(uint64_t seq, const kvc_engine_request *r) {
    kvci_pd_header h;
    memset(&h, 0, sizeof h);
    h.magic = KVC_PD_MAGIC;
    h.version = KVC_PD_VERSION;
    h.seq = seq;
    h.request_id = r->id;
    h.status = KVC_OK;
    h.eos_id = r->eos_id;
    h.n_prompt = r->n_prompt;
    h.n_external = r->n_prompt - 1;
    h.max_new_tokens = r->max_new_tokens;
    h.priority = r->priority;
    sampling_of(&r->sampling, &h);
    h.cache_salt_len = r->cache_salt_len;
    if (r->cache_salt_len > 0 && r->cache_salt_len <= KVC_ENGINE_SALT_MAX)
        memcpy(h.cache_salt, r->cache_salt, (size_t)r->cache_salt_len);
    return h;
}

kvc_status kvci_pd_send(const kvc_engine *e, kvci_pd_layout *l, const kvci_transport *t, int32_t peer, uint64_t seq,
                        const kvc_engine_request *r, int64_t timeout_ms, bool drop_payload) {
    kvc_engine_request_info info;
    kvc_status st = kvc_engine_request_get(e, r->id, &info);
    if (st != KVC_OK) return st;
    if (info.state != KVC_REQ_FINISHED || info.finish != KVC_FINISH_PREFILLED)
        return kvci_fail(KVC_EINVAL, "P/D send: request %lld is %s (%s), not prefilled by a PREFILL engine",
                         (long long)r->id, kvc_engine_request_state_name(info.state),
                         kvc_engine_finish_reason_name(info.finish));
    if (info.n_prompt != kvci_pd_prefill_len(l, r->n_prompt)) /* a state sent must be the one after n_external */
        return kvci_fail(KVC_EINVAL,
                         "P/D send: request %lld was prefilled over %lld prompt tokens, its prompt has %lld: a model "
                         "%s state layers prefills %lld (kvci_pd_prefill_len)",
                         (long long)r->id, (long long)info.n_prompt, (long long)r->n_prompt,
                         l->has_state ? "with" : "without", (long long)kvci_pd_prefill_len(l, r->n_prompt));
    st = kvc_sampling_params_check(&r->sampling); /* the arrays' counts bound what the header copies */
    if (st != KVC_OK) return st;
    const kvc_manager *m = kvc_engine_manager(e);
    kvci_pd_header h = header_of(seq, r);
    h.n_keys = l->n_keys;
    h.n_tensors = l->n_buffers;
    h.payload_bytes = kvci_pd_blocks_offset(l, r->n_prompt);
    for (int32_t k = 0; k < l->n_keys; k++) {
        kvci_pd_block_range(m, k, h.n_external, &h.first_block[k], &h.n_blocks[k]);
        h.block_bytes[k] = l->block_bytes[k];
        h.payload_bytes += h.n_blocks[k] * h.block_bytes[k];
    }
    if (l->pack_cap < h.payload_bytes) { /* the buffer grows to the largest message and stays */
        kvci_free(l->pack);
        l->pack_cap = 0;
        l->pack = kvci_malloc((size_t)h.payload_bytes);
        if (l->pack == NULL)
            return kvci_fail(KVC_ENOMEM, "P/D send: %lld bytes for request %lld", (long long)h.payload_bytes,
                             (long long)r->id);
        l->pack_cap = h.payload_bytes;
    }
    memcpy(l->pack, r->prompt, (size_t)r->n_prompt * sizeof(int32_t));
    memcpy(l->pack + r->n_prompt * (int64_t)sizeof(int32_t), l->tensors, (size_t)l->n_buffers * sizeof *l->tensors);
    st = kvci_pd_copy_blocks(m, l, r->id, r->n_prompt, h.n_external, 0, l->pack, true);
    if (st != KVC_OK) return st;
    if (drop_payload) return t->ops->send(t->self, peer, seq, &h, sizeof h, NULL, 0, timeout_ms);
    st = t->ops->send(t->self, peer, seq, &h, sizeof h, l->pack, h.payload_bytes, timeout_ms);
    if (st != KVC_OK) l->pack = NULL, l->pack_cap = 0; /* the transport has it now */
    return st;
}

kvc_status kvci_pd_send_failure(const kvci_transport *t, int32_t peer, uint64_t seq, int64_t id, kvc_status status,
                                const char *message, int64_t timeout_ms) {
    kvci_pd_header h;
    memset(&h, 0, sizeof h);
    h.magic = KVC_PD_MAGIC;
    h.version = KVC_PD_VERSION;
    h.seq = seq;
    h.request_id = id;
    h.status = status == KVC_OK ? KVC_EINTERNAL : status;
    snprintf(h.message, sizeof h.message, "%s", message ? message : "");
    return t->ops->send(t->self, peer, seq, &h, sizeof h, NULL, 0, timeout_ms);
}
