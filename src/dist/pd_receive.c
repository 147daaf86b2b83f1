/* The decode side of P/D (pd.h): takes a message, checks its header against
 * this engine's manager, receives the payload into a staging slot and adds
 * the request with its external tokens; the engine's loader copies the
 * blocks into the request's own blocks at admission and frees the slot. */
#include <string.h>

#include "base/internal.h"
#include "dist/pd.h"

struct kvci_pd_staged {
    bool used;
    kvci_pd_receiver *rx;
    kvci_pd_header h;
    char *payload; /* [cap], h.payload_bytes of it received; kept when the slot is free again */
    int64_t cap;
};

kvc_status kvci_pd_receiver_init(const kvc_engine *e, const kvc_model_cache_info *ci, int64_t max_staged,
                                 kvci_pd_receiver *out) {
    memset(out, 0, sizeof *out);
    const kvc_manager *m = kvc_engine_manager(e);
    if (m == NULL || kvc_engine_params_of(e)->role != KVC_ENGINE_ROLE_DECODE || max_staged < 1)
        return kvci_fail(KVC_EINVAL, "P/D receiver: needs a managed engine of the DECODE role and max_staged %lld >= 1",
                         (long long)max_staged);
    kvc_status st = kvci_pd_layout_init(m, ci, &out->layout);
    if (st != KVC_OK) return st;
    out->staged = kvci_calloc((size_t)max_staged, sizeof *out->staged);
    if (out->staged == NULL) {
        kvci_pd_layout_free(&out->layout);
        return kvci_fail(KVC_ENOMEM, "P/D receiver: out of memory");
    }
    out->mgr = m;
    out->n_slots = max_staged;
    return KVC_OK;
}

static void unstage(kvci_pd_staged *s) { s->used = false; }

void kvci_pd_receiver_free(kvci_pd_receiver *rx) {
    for (int64_t i = 0; rx->staged != NULL && i < rx->n_slots; i++) kvci_free(rx->staged[i].payload);
    kvci_free(rx->staged);
    kvci_pd_layout_free(&rx->layout);
    memset(rx, 0, sizeof *rx);
}

void kvci_pd_receiver_forget(kvci_pd_receiver *rx, int64_t id) {
    for (int64_t i = 0; i < rx->n_slots; i++)
        if (rx->staged[i].used && rx->staged[i].h.request_id == id) unstage(&rx->staged[i]);
}

/* The header against this side's manager: same keys, block bytes and block ranges, a consistent size. */
static kvc_status check_header(const kvci_pd_receiver *rx, const kvci_pd_header *h) {
    const int64_t id = h->request_id, max_len = kvc_manager_max_model_len(rx->mgr);
    if (h->magic != KVC_PD_MAGIC || h->version != KVC_PD_VERSION)
        return kvci_fail(KVC_EINVAL, "P/D receive: a message with magic 0x%08x version %u (expected 0x%08x version %u)",
                         h->magic, h->version, KVC_PD_MAGIC, KVC_PD_VERSION);
    if (h->n_prompt < 1 || h->n_prompt > max_len || h->n_external < 0 || h->n_external >= h->n_prompt ||
        h->cache_salt_len < 0 || h->cache_salt_len > KVC_ENGINE_SALT_MAX || h->n_min_tokens_ids < 0 ||
        h->n_min_tokens_ids > KVC_SAMPLING_MAX_STOP_IDS || h->n_logit_bias < 0 ||
        h->n_logit_bias > KVC_SAMPLING_MAX_LOGIT_BIAS)
        return kvci_fail(KVC_EINVAL,
                         "P/D receive: request %lld: n_prompt %lld (1 .. %lld), n_external %lld (0 .. n_prompt - 1), "
                         "cache salt of %lld bytes (0 .. %d), %d min_tokens ids (0 .. %d), %d logit_bias entries "
                         "(0 .. %d)",
                         (long long)id, (long long)h->n_prompt, (long long)max_len, (long long)h->n_external,
                         (long long)h->cache_salt_len, KVC_ENGINE_SALT_MAX, h->n_min_tokens_ids,
                         KVC_SAMPLING_MAX_STOP_IDS, h->n_logit_bias, KVC_SAMPLING_MAX_LOGIT_BIAS);
    if (h->n_keys != rx->layout.n_keys || h->n_tensors != rx->layout.n_buffers)
        return kvci_fail(KVC_EINVAL,
                         "P/D receive: request %lld has %d manager keys and %lld cache tensors, this engine %d and "
                         "%lld (another model?)",
                         (long long)id, h->n_keys, (long long)h->n_tensors, rx->layout.n_keys,
                         (long long)rx->layout.n_buffers);
    int64_t bytes = kvci_pd_blocks_offset(&rx->layout, h->n_prompt);
    for (int32_t k = 0; k < h->n_keys; k++) {
        int64_t first = 0, n = 0;
        kvci_pd_block_range(rx->mgr, k, h->n_external, &first, &n);
        if (h->block_bytes[k] != rx->layout.block_bytes[k] || h->first_block[k] != first || h->n_blocks[k] != n)
            return kvci_fail(KVC_EINVAL,
                             "P/D receive: request %lld, manager %s: blocks [%lld, +%lld) of %lld bytes, expected "
                             "[%lld, +%lld) of %lld bytes (another KV dtype, block size or model?)",
                             (long long)id, kvc_manager_key(rx->mgr, k), (long long)h->first_block[k],
                             (long long)h->n_blocks[k], (long long)h->block_bytes[k], (long long)first, (long long)n,
                             (long long)rx->layout.block_bytes[k]);
        bytes += n * h->block_bytes[k];
    }
    if (h->payload_bytes != bytes)
        return kvci_fail(KVC_EINVAL, "P/D receive: request %lld announces %lld payload bytes, its blocks make %lld",
                         (long long)id, (long long)h->payload_bytes, (long long)bytes);
    return KVC_OK;
}

/* The sender's tensor records (after the prompt ids) against this side's, each naming the first that differs:
 * the layer, the cache, its kind (state or K/V), manager key, dtype and bytes per block. */
static kvc_status check_tensors(const kvci_pd_receiver *rx, const kvci_pd_header *h, const char *payload) {
    const kvci_pd_layout *l = &rx->layout;
    for (int64_t i = 0; i < l->n_buffers; i++) {
        kvci_pd_tensor got;
        memcpy(&got, payload + h->n_prompt * (int64_t)sizeof(int32_t) + i * (int64_t)sizeof got, sizeof got);
        const kvci_pd_tensor *want = &l->tensors[i];
        got.name[sizeof got.name - 1] = '\0';
        if (got.layer_idx == want->layer_idx && strcmp(got.name, want->name) == 0 && got.key == want->key &&
            got.is_state == want->is_state && got.dtype == want->dtype && got.bytes_per_block == want->bytes_per_block)
            continue;
        return kvci_fail(KVC_EINVAL,
                         "P/D receive: request %lld, tensor %lld: the prefill side sends layer %d, cache %s (%s, "
                         "manager %s, %s, %lld bytes per block), this engine holds layer %d, cache %s (%s, manager %s, "
                         "%s, %lld bytes per block) (another model, dtype or tensor parallelism?)",
                         (long long)h->request_id, (long long)i, got.layer_idx, got.name,
                         got.is_state ? "state" : "K/V",
                         got.key >= 0 && got.key < l->n_keys ? kvc_manager_key(rx->mgr, got.key) : "?",
                         kvc_dtype_name((kvc_dtype)got.dtype), (long long)got.bytes_per_block, want->layer_idx,
                         want->name, want->is_state ? "state" : "K/V", kvc_manager_key(rx->mgr, want->key),
                         kvc_dtype_name((kvc_dtype)want->dtype), (long long)want->bytes_per_block);
    }
    return KVC_OK;
}

/* The engine's loader (kvc_engine_request.load_external): the staged blocks into the request's own. */
static kvc_status load_staged(void *user, const kvc_manager *m, int64_t id, int64_t n_hit, int64_t n_external) {
    kvci_pd_staged *s = user;
    kvc_status st = kvci_pd_copy_blocks(m, &s->rx->layout, id, s->h.n_prompt, n_external, n_hit, s->payload, false);
    unstage(s);
    return st;
}

static kvc_status add_request(kvc_engine *e, kvci_pd_staged *s) {
    const kvci_pd_header *h = &s->h;
    kvc_engine_request r = kvc_engine_request_default();
    r.id = h->request_id;
    r.prompt = (const int32_t *)s->payload;
    r.n_prompt = h->n_prompt;
    r.max_new_tokens = h->max_new_tokens;
    r.eos_id = h->eos_id;
    r.priority = h->priority;
    r.cache_salt = h->cache_salt_len > 0 ? h->cache_salt : NULL;
    r.cache_salt_len = h->cache_salt_len;
    r.sampling =
        (kvc_sampling_params){.temperature = h->temperature,
                              .top_k = h->top_k,
                              .top_p = h->top_p,
                              .seed = h->sampling_seed,
                              .min_p = h->min_p,
                              .presence_penalty = h->presence_penalty,
                              .frequency_penalty = h->frequency_penalty,
                              .repetition_penalty = h->repetition_penalty,
                              .min_tokens = h->min_tokens,
                              .min_tokens_ids = h->n_min_tokens_ids > 0 ? h->min_tokens_ids : NULL,
                              .n_min_tokens_ids = h->n_min_tokens_ids,
                              .n_logit_bias = h->n_logit_bias,
                              .logit_bias = h->n_logit_bias > 0 ? h->logit_bias : NULL}; /* copied by the add */
    r.n_external_tokens = h->n_external;
    r.load_external = h->n_external > 0 ? load_staged : NULL;
    r.load_user = s;
    return kvc_engine_add_request(e, &r);
}

static kvci_pd_staged *free_slot(kvci_pd_receiver *rx) {
    for (int64_t i = 0; i < rx->n_slots; i++)
        if (!rx->staged[i].used) return &rx->staged[i];
    return NULL;
}

/* The event of a failed transfer; the failure's message stays in kvc_last_error. */
static kvc_status failed(kvci_pd_event *ev, int64_t id, kvc_status st) {
    *ev = (kvci_pd_event){.kind = KVC_PD_FAILED, .request_id = id, .status = st};
    return KVC_OK;
}

kvc_status kvci_pd_receive(kvci_pd_receiver *rx, kvc_engine *e, const kvci_transport *t, int64_t timeout_ms,
                           kvci_pd_event *ev) {
    *ev = (kvci_pd_event){.kind = KVC_PD_NONE, .request_id = -1};
    kvci_pd_header h;
    int32_t from = -1;
    kvc_status st = t->ops->poll_header(t->self, &h, sizeof h, &from);
    if (st != KVC_OK) return failed(ev, -1, st);
    if (from < 0) return KVC_OK;
    if (h.status != KVC_OK)
        return failed(ev, h.request_id,
                      kvci_fail((kvc_status)h.status, "P/D receive: request %lld failed on the prefill side: %.*s",
                                (long long)h.request_id, (int)sizeof h.message, h.message));
    st = check_header(rx, &h);
    if (st != KVC_OK) return failed(ev, h.request_id, st);
    kvci_pd_staged *s = free_slot(rx);
    if (s == NULL)
        return failed(ev, h.request_id,
                      kvci_fail(KVC_NO_SPACE,
                                "P/D receive: request %lld: all %lld staging slots hold requests not "
                                "admitted yet",
                                (long long)h.request_id, (long long)rx->n_slots));
    if (s->cap < h.payload_bytes) { /* a slot's buffer grows to the largest message and stays */
        kvci_free(s->payload);
        s->cap = 0;
        s->payload = kvci_malloc((size_t)h.payload_bytes);
        if (s->payload == NULL)
            return kvci_fail(KVC_ENOMEM, "P/D receive: %lld bytes for request %lld", (long long)h.payload_bytes,
                             (long long)h.request_id);
        s->cap = h.payload_bytes;
    }
    s->used = true;
    s->rx = rx;
    s->h = h;
    st = t->ops->recv_payload(t->self, from, h.seq, s->payload, h.payload_bytes, timeout_ms);
    if (st == KVC_OK) st = check_tensors(rx, &h, s->payload);
    if (st == KVC_OK) st = add_request(e, s);
    if (st != KVC_OK || h.n_external == 0) unstage(s); /* nothing (more) to load */
    if (st != KVC_OK) return failed(ev, h.request_id, st);
    *ev = (kvci_pd_event){.kind = KVC_PD_ADDED, .request_id = h.request_id, .status = KVC_OK};
    return KVC_OK;
}
