/* Prefill/decode disaggregation over a transport (docs/pd.md).
 *
 * A prefill engine (KVC_ENGINE_ROLE_PREFILL) computes a request's prompt
 * and keeps its blocks; kvci_pd_send packs what the decode side needs and
 * sends it as one message: a kvci_pd_header, then a payload
 *
 *   payload = prompt ids int32 [n_prompt]
 *             then one kvci_pd_tensor per cache tensor (n_tensors): what the
 *             sender's tensors are, checked by the receiver one by one
 *             then for each manager key k, each block j of its range
 *             [first_block[k], first_block[k] + n_blocks[k]), each cache
 *             tensor of k (in the order of the tensor records): the block's
 *             bytes_per_block bytes.
 *
 * The range covers the KV of positions [0, n_external) with n_external =
 * n_prompt - 1 (the decode side computes the last prompt token, which
 * samples the first token): a full-attention key all their blocks, a
 * sliding-window key only the blocks its window still reads at n_external
 * (kvc_manager_skipped_tokens), an MLA latent key its latent blocks (one
 * key: sent once), a state (Mamba) key the request's state block, every
 * state tensor of it: the state after exactly n_external tokens. For that
 * the prefill engine of a model with state layers computes n_prompt - 1
 * tokens only (kvci_pd_prefill_len: the request is added with its prompt
 * cut by one), so its state block holds the state the decode side resumes
 * from; the prompt's last token is computed once, on the decode side.
 *
 * The decode side (kvci_pd_receiver) checks a header against its own
 * manager before it takes the payload, then adds the request to its
 * KVC_ENGINE_ROLE_DECODE engine with n_external_tokens; at admission the
 * engine's loader copies the blocks beyond the request's prefix-cache hit
 * into the blocks its own pool gave the request.
 *
 * Both sides must run the same model with the same cache layout (dtype,
 * block size, keys): every difference is refused, naming it. */
#ifndef KVC_DIST_PD_H
#define KVC_DIST_PD_H

#include "dist/transport.h"
#include "kvcache/engine.h"

#define KVC_PD_MAGIC   0x4450564bu /* "KVPD" */
#define KVC_PD_VERSION 3u          /* 3: the tensor records and state blocks; 2: the sampling options after seed */

typedef struct kvci_pd_header {
    uint32_t magic, version;
    uint64_t seq; /* the sender's message number (matches the payload) */
    int64_t request_id;
    int32_t status; /* KVC_OK, or the prefill side's failure for this request: no payload, see message */
    int32_t eos_id;
    int64_t n_prompt, n_external, max_new_tokens;
    int32_t priority, n_keys;
    float temperature, top_p;
    int32_t top_k, reserved;
    uint64_t sampling_seed;
    float min_p, presence_penalty, frequency_penalty, repetition_penalty;
    int64_t min_tokens;
    int32_t n_min_tokens_ids, n_logit_bias; /* entries of the two arrays below that are the request's */
    int32_t min_tokens_ids[KVC_SAMPLING_MAX_STOP_IDS];
    kvc_logit_bias logit_bias[KVC_SAMPLING_MAX_LOGIT_BIAS];
    int64_t cache_salt_len;
    uint8_t cache_salt[KVC_ENGINE_SALT_MAX];
    int64_t first_block[KVC_MAX_MANAGERS], n_blocks[KVC_MAX_MANAGERS];
    int64_t block_bytes[KVC_MAX_MANAGERS]; /* bytes of one block of the key, all its tensors */
    int64_t payload_bytes;
    char message[512]; /* status != KVC_OK: why */
    int64_t n_tensors; /* tensor records in the payload, after the prompt ids */
} kvci_pd_header;

/* One cache tensor as the payload describes it (the receiver compares each with its own, naming the first that
 * differs): its layer, cache name, manager key, whether it is a per-sequence state, dtype and bytes per block. */
typedef struct kvci_pd_tensor {
    int32_t layer_idx, key, dtype, is_state;
    int64_t bytes_per_block;
    char name[KVC_NAME_MAX];
} kvci_pd_tensor;

/* The cache tensors of a manager, grouped by key. */
typedef struct kvci_pd_layout {
    int32_t n_keys;
    int64_t block_size[KVC_MAX_MANAGERS];
    int64_t block_bytes[KVC_MAX_MANAGERS];
    bool has_state; /* some key holds per-sequence states */
    int64_t n_buffers;
    kvci_pd_tensor *tensors; /* [n_buffers] the records the payload carries */
    char **data;             /* [n_buffers] each tensor's storage, [blocks, bytes_per_block] */
    int32_t *table;          /* [max table width] scratch for block ids */
    int64_t table_cap;
    char *pack; /* [pack_cap] the sender's payload buffer, kept from message to message */
    int64_t pack_cap;
} kvci_pd_layout;

/* The tensors of manager m, every needs_block entry of ci (the engine's cache description, its storage
 * allocated) in ci's order. */
kvc_status kvci_pd_layout_init(const kvc_manager *m, const kvc_model_cache_info *ci, kvci_pd_layout *out);
void kvci_pd_layout_free(kvci_pd_layout *l);

/* The prompt tokens a PREFILL engine computes of a prompt of n_prompt tokens: all of them, or with state
 * layers n_prompt - 1 (at least 1), so that the states it sends are those after n_external tokens. */
int64_t kvci_pd_prefill_len(const kvci_pd_layout *l, int64_t n_prompt);

/* Bytes of the payload before the blocks: the prompt ids and the tensor records. */
int64_t kvci_pd_blocks_offset(const kvci_pd_layout *l, int64_t n_prompt);

/* Block range [*first, *first + *n) of key k that carries the KV of positions [0, n_external) (a state key:
 * the request's state block, none when n_external is 0). */
void kvci_pd_block_range(const kvc_manager *m, int32_t k, int64_t n_external, int64_t *first, int64_t *n);

/* Pool <-> payload for every key of the request id (manager m): the blocks of positions [0, n_external)
 * at their payload offsets (after the ids and records); to the pool (to_payload false), the blocks before
 * position n_hit are skipped (the request's prefix-cache hit; never a state block). KVC_EINTERNAL for a block the
 * request's table lacks. */
kvc_status kvci_pd_copy_blocks(const kvc_manager *m, kvci_pd_layout *l, int64_t id, int64_t n_prompt,
                               int64_t n_external, int64_t n_hit, char *payload, bool to_payload);

/* The prefill side: packs the request r (its whole prompt; added to the prefill engine e with
 * kvci_pd_prefill_len of it, now finished PREFILLED)
 * and sends it to peer as message seq. drop_payload (a fault for tests): the header goes, the payload
 * does not. The caller releases the request from e afterwards, whatever the outcome. */
kvc_status kvci_pd_send(const kvc_engine *e, kvci_pd_layout *l, const kvci_transport *t, int32_t peer, uint64_t seq,
                        const kvc_engine_request *r, int64_t timeout_ms, bool drop_payload);
/* Tells peer that request id failed on the prefill side (status, message): no payload follows. */
kvc_status kvci_pd_send_failure(const kvci_transport *t, int32_t peer, uint64_t seq, int64_t id, kvc_status status,
                                const char *message, int64_t timeout_ms);

/* ---- the decode side ---- */

typedef struct kvci_pd_staged kvci_pd_staged; /* a received request waiting for its admission */

typedef struct kvci_pd_receiver {
    kvci_pd_layout layout;
    const kvc_manager *mgr;
    int64_t n_slots;
    kvci_pd_staged *staged; /* [n_slots] */
} kvci_pd_receiver;

/* For a DECODE engine (ci: its cache description): up to max_staged received requests waiting for admission
 * at once. */
kvc_status kvci_pd_receiver_init(const kvc_engine *e, const kvc_model_cache_info *ci, int64_t max_staged,
                                 kvci_pd_receiver *out);
void kvci_pd_receiver_free(kvci_pd_receiver *rx);
/* Frees what is staged for request id (call it when the request leaves the engine before its
 * admission: released, aborted); nothing for an id with nothing staged. */
void kvci_pd_receiver_forget(kvci_pd_receiver *rx, int64_t id);

typedef enum kvci_pd_event_kind {
    KVC_PD_NONE = 0,   /* no message has arrived */
    KVC_PD_ADDED = 1,  /* a request was added to the engine with its KV staged */
    KVC_PD_FAILED = 2, /* a request's transfer failed: it never entered the engine (kvc_last_error says why) */
} kvci_pd_event_kind;

typedef struct kvci_pd_event {
    kvci_pd_event_kind kind;
    int64_t request_id; /* ADDED, FAILED (-1 when the header itself was unreadable) */
    kvc_status status;  /* FAILED: the failure */
} kvci_pd_event;

/* Takes at most one message from t (never waits for a header; waits up to timeout_ms for the payload of
 * one that came): checks it against the engine's manager, receives the payload and adds the request to
 * e. KVC_OK with the event; the status of a local failure that is not the transfer's (out of memory). */
kvc_status kvci_pd_receive(kvci_pd_receiver *rx, kvc_engine *e, const kvci_transport *t, int64_t timeout_ms,
                           kvci_pd_event *ev);

#endif /* KVC_DIST_PD_H */
