/* The engine's verification checks: the step about to run (budgets, chunks
 * in order, metadata against the manager: INV-R1..R5, P-SELF-1/2), engine
 * bookkeeping and the manager's invariants after every step, the release
 * chain after every free (P-REL-1, P-REL-4). A leaf: it reads the engine and
 * writes only its own scratch; the callers decide when to check. Each
 * failure is KVC_EINTERNAL naming the rule, row and values. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

kvc_status kvci_engine_check_alloc(const kvc_engine *e, kvc_engine_check_ws *ws) {
    int64_t width = 1;
    for (int32_t k = 0; k < e->n_keys; k++) {
        width = kvci_max64(width, kvc_manager_table_width(e->mgr, k, e->p.max_model_len));
        width = kvci_max64(width, 1 + e->p.next_n);
        if (!kvc_manager_has_slot_mapping(e->mgr, k)) continue;
        int64_t bits = kvc_manager_num_blocks(e->mgr, k) * kvc_manager_block_size(e->mgr, k);
        ws->slot_seen[k] = kvci_calloc((size_t)kvci_cdiv(bits, 64), sizeof(uint64_t));
        if (ws->slot_seen[k] == NULL) return kvci_fail(KVC_ENOMEM, "engine: no host memory for the slot checks");
    }
    ws->row = kvci_malloc((size_t)width * sizeof *ws->row);
    if (ws->row == NULL) return kvci_fail(KVC_ENOMEM, "engine: no host memory for the table checks");
    return KVC_OK;
}

void kvci_engine_check_free(kvc_engine_check_ws *ws) {
    kvci_free(ws->row);
    for (int32_t k = 0; k < KVC_MAX_MANAGERS; k++) kvci_free(ws->slot_seen[k]);
    memset(ws, 0, sizeof *ws);
}

/* Both budgets; every row continues its request where its cached tokens end
 * (chunks in order, none twice) and stays within the request's tokens; no
 * request has two rows. */
static kvc_status check_schedule(const kvc_engine *e, const kvc_step_metadata *md) {
    if (md->n_rows > e->p.max_num_seqs || md->n_tokens > e->p.max_num_batched_tokens)
        return kvci_fail(KVC_EINTERNAL,
                         "engine: the step has %lld rows and %lld tokens; the budgets are %lld rows "
                         "(max_num_seqs) and %lld tokens (max_num_batched_tokens)",
                         (long long)md->n_rows, (long long)md->n_tokens, (long long)e->p.max_num_seqs,
                         (long long)e->p.max_num_batched_tokens);
    for (int64_t b = 0; b < md->n_rows; b++) {
        const kvc_step_request *row = &e->rows[b];
        const kvc_engine_req *r = kvci_engine_find(e, row->request_id);
        if (r == NULL || r->state != KVC_REQ_RUNNING || row->computed_tokens != r->n_cached ||
            row->computed_tokens + row->num_new_tokens > r->n_tokens)
            return kvci_fail(KVC_EINTERNAL,
                             "engine: step row %lld feeds tokens %lld .. %lld of request %lld, which "
                             "%s with %lld cached of %lld tokens",
                             (long long)b, (long long)row->computed_tokens,
                             (long long)(row->computed_tokens + row->num_new_tokens - 1), (long long)row->request_id,
                             r == NULL ? "is not held"
                                       : kvc_engine_request_state_name((kvc_engine_request_state)r->state),
                             r == NULL ? 0LL : (long long)r->n_cached, r == NULL ? 0LL : (long long)r->n_tokens);
        for (int64_t c = 0; c < b; c++)
            if (e->rows[c].request_id == row->request_id)
                return kvci_fail(KVC_EINTERNAL, "engine: request %lld has rows %lld and %lld in one step",
                                 (long long)row->request_id, (long long)c, (long long)b);
    }
    return KVC_OK;
}

/* The stall-free limit: with decode rows in the step (rows of requests
 * that ran before it, feeding their last token), its prompt chunks cost at
 * most (step_cost_ratio - 1) times them, unless the step has one chunk of
 * at most min_chunk_tokens tokens. */
static kvc_status check_step_cost(const kvc_engine *e, const kvc_step_metadata *md) {
    if (e->p.scheduler != KVC_ENGINE_SCHED_BUDGET || e->p.step_cost_ratio == 0.0) return KVC_OK;
    double decode = 0.0, chunks = 0.0;
    int64_t n_chunks = 0, chunk_tokens = 0;
    for (int64_t b = 0; b < md->n_rows; b++) {
        const kvc_step_request *row = &e->rows[b];
        const double c = kvci_engine_row_cost(e, row->computed_tokens, row->num_new_tokens);
        if (!e->row_admitted[b] && kvci_engine_is_decode_row(kvci_engine_find(e, row->request_id), row)) {
            decode += c;
        } else {
            chunks += c;
            n_chunks++;
            chunk_tokens += row->num_new_tokens;
        }
    }
    const double allowance = (e->p.step_cost_ratio - 1.0) * decode;
    if (decode == 0.0 || chunks <= allowance * (1.0 + 1e-12) ||
        (n_chunks == 1 && chunk_tokens <= e->p.min_chunk_tokens))
        return KVC_OK;
    return kvci_fail(KVC_EINTERNAL,
                     "engine: the step's %lld prompt chunks (%lld tokens) cost %g, more than "
                     "(step_cost_ratio %g - 1) x its decode rows' %g",
                     (long long)n_chunks, (long long)chunk_tokens, chunks, e->p.step_cost_ratio, decode);
}

/* INV-R4, R5 and agreement with the scheduled rows. */
static kvc_status check_rows(const kvc_engine *e, const kvc_step_metadata *md) {
    int64_t cu_q = 0, cu_kv = 0;
    for (int64_t b = 0; b < md->n_rows; b++) {
        const kvc_step_request *r = &e->rows[b];
        int64_t q = md->seq_lens_q[b];
        cu_q += q;
        cu_kv += md->seq_lens_kv[b];
        if (q != r->num_new_tokens || md->cu_seq_lens_q[b] != cu_q || md->cu_seq_lens_kv[b] != cu_kv)
            return kvci_fail(KVC_EINTERNAL,
                             "INV-R4: step row %lld: q %lld (scheduled %lld), cu_q %lld (expected %lld), "
                             "cu_kv %lld (expected %lld)",
                             (long long)b, (long long)q, (long long)r->num_new_tokens, (long long)md->cu_seq_lens_q[b],
                             (long long)cu_q, (long long)md->cu_seq_lens_kv[b], (long long)cu_kv);
        int64_t last = r->computed_tokens + q - 1;
        if (md->kv_pos[b] != last || md->seq_lens_kv[b] != last + 1)
            return kvci_fail(KVC_EINTERNAL, "INV-R5: step row %lld: kv_pos %lld, seq_lens_kv %lld; expected %lld, %lld",
                             (long long)b, (long long)md->kv_pos[b], (long long)md->seq_lens_kv[b], (long long)last,
                             (long long)last + 1);
        for (int64_t i = 0; i < q; i++) {
            int64_t t = cu_q - q + i;
            if (md->positions[t] != r->computed_tokens + i)
                return kvci_fail(KVC_EINTERNAL, "INV-R5: token %lld of row %lld has position %lld, expected %lld",
                                 (long long)t, (long long)b, (long long)md->positions[t],
                                 (long long)(r->computed_tokens + i));
        }
    }
    if (cu_q != md->n_tokens)
        return kvci_fail(KVC_EINTERNAL, "INV-R4: cu_q ends at %lld but the step has %lld tokens", (long long)cu_q,
                         (long long)md->n_tokens);
    return KVC_OK;
}

/* INV-R1: row b of a key's table is the request's table followed by nulls. */
static kvc_status check_table(const kvc_engine *e, int32_t *ids /* [width] */, const kvc_step_metadata *md, int32_t k) {
    const kvc_step_key *key = &md->keys[k];
    for (int64_t b = 0; b < md->n_rows; b++) {
        int64_t n = 0;
        kvc_status st = kvc_manager_block_ids(e->mgr, e->rows[b].request_id, k, ids, key->width, &n);
        if (st != KVC_OK) return st;
        const int32_t *row = key->block_table + b * key->width;
        for (int64_t i = 0; i < key->width; i++) {
            int32_t want = i < n ? ids[i] : KVC_NULL_BLOCK;
            if (row[i] != want)
                return kvci_fail(KVC_EINTERNAL,
                                 "INV-R1: key %s row %lld (request %lld) entry %lld is %d, the "
                                 "manager's table says %d",
                                 key->key, (long long)b, (long long)e->rows[b].request_id, (long long)i, row[i], want);
        }
    }
    return KVC_OK;
}

/* Tokens of row b's request computed once this step has run. */
static int64_t row_end(const kvc_step_metadata *md, int64_t b) { return md->positions[md->cu_seq_lens_q[b] - 1] + 1; }

/* INV-R2 (formula, bounds) and INV-R3 (a token goes to the null block only
 * at a position its type no longer keeps once the row's step is computed —
 * never for full attention, whose skipped prefix is empty; no two tokens of
 * the step share a non-null slot). */
static kvc_status check_slots(const kvc_engine *e, uint64_t *seen, const kvc_step_metadata *md, int32_t k) {
    const kvc_step_key *key = &md->keys[k];
    int64_t bs = key->block_size, limit = kvc_manager_num_blocks(e->mgr, k) * bs;
    kvc_status st = KVC_OK;
    int64_t b = 0, t = 0;
    for (; t < md->n_tokens && st == KVC_OK; t++) {
        while (t >= md->cu_seq_lens_q[b]) b++;
        int64_t pos = md->positions[t], slot = key->slot_mapping[t];
        int64_t want = (int64_t)key->block_table[b * key->width + pos / bs] * bs + pos % bs;
        if (slot != want || slot < 0 || slot >= limit)
            st = kvci_fail(KVC_EINTERNAL,
                           "INV-R2: key %s token %lld (row %lld, position %lld): slot %lld, expected "
                           "%lld within [0, %lld)",
                           key->key, (long long)t, (long long)b, (long long)pos, (long long)slot, (long long)want,
                           (long long)limit);
        else if (slot < bs && pos >= kvc_manager_skipped_tokens(e->mgr, k, row_end(md, b)))
            st = kvci_fail(KVC_EINTERNAL,
                           "INV-R3: key %s token %lld (request %lld, position %lld) maps into the null "
                           "block",
                           key->key, (long long)t, (long long)e->rows[b].request_id, (long long)pos);
        else if (slot >= bs && (seen[slot / 64] >> (slot % 64) & 1u))
            st = kvci_fail(KVC_EINTERNAL, "INV-R3: key %s slot %lld is written twice in one step (token %lld)",
                           key->key, (long long)slot, (long long)t);
        else if (slot >= bs)
            seen[slot / 64] |= (uint64_t)1 << (slot % 64);
    }
    for (int64_t i = 0; i < t; i++) { /* clear what was marked */
        int64_t slot = key->slot_mapping[i];
        if (slot >= bs && slot < limit) seen[slot / 64] &= ~((uint64_t)1 << (slot % 64));
    }
    return st;
}

/* P-SELF-1/2: each row writes only its own cache row, rows pairwise distinct. */
static kvc_status check_legacy(const kvc_engine *e, const kvc_engine_batch *batch) {
    const kvc_step_metadata *md = batch->md;
    int64_t s = batch->cache_seq_len;
    for (int64_t b = 0, t = 0; b < md->n_rows; b++) {
        for (int64_t c = 0; c < b; c++)
            if (batch->cache_rows[c] == batch->cache_rows[b])
                return kvci_fail(KVC_EINTERNAL, "P-SELF-1: rows %lld and %lld share cache row %lld", (long long)c,
                                 (long long)b, (long long)batch->cache_rows[b]);
        for (; t < md->cu_seq_lens_q[b]; t++) {
            int64_t pos = md->positions[t];
            if (pos >= s || batch->legacy_index[t] != batch->cache_rows[b] * s + pos ||
                batch->cache_rows[b] >= e->p.max_num_seqs)
                return kvci_fail(KVC_EINTERNAL,
                                 "P-SELF-2: token %lld (row %lld, cache row %lld, position %lld) has "
                                 "legacy index %lld",
                                 (long long)t, (long long)b, (long long)batch->cache_rows[b], (long long)pos,
                                 (long long)batch->legacy_index[t]);
        }
    }
    return KVC_OK;
}

kvc_status kvci_engine_check_step(const kvc_engine *e, kvc_engine_check_ws *ws, const kvc_engine_batch *batch) {
    const kvc_step_metadata *md = batch->md;
    kvc_status st = check_schedule(e, md);
    if (st == KVC_OK) st = check_step_cost(e, md);
    if (st == KVC_OK) st = check_rows(e, md);
    if (st != KVC_OK || !e->managed) return st == KVC_OK ? check_legacy(e, batch) : st;
    for (int32_t k = 0; k < md->n_keys && st == KVC_OK; k++) {
        st = check_table(e, ws->row, md, k);
        if (st == KVC_OK && md->keys[k].slot_mapping != NULL && ws->slot_seen[k] != NULL)
            st = check_slots(e, ws->slot_seen[k], md, k);
    }
    return st;
}

kvc_status kvci_engine_check_released(const kvc_engine *e, int64_t id) {
    for (int32_t k = 0; k < e->n_keys; k++)
        if (kvc_manager_has_request(e->mgr, id, k))
            return kvci_fail(KVC_EINTERNAL, "P-REL-1: request %lld still has an entry in manager %s after free",
                             (long long)id, kvc_manager_key(e->mgr, k));
    return KVC_OK;
}

/* Every held slot is in exactly the queue its state names. */
static kvc_status check_queues(const kvc_engine *e) {
    int64_t counts[3] = {0, 0, 0}, unused = 0;
    for (int64_t i = 0; i < e->p.max_requests; i++) {
        const kvc_engine_req *r = &e->reqs[i];
        if (r->state == KVC_SLOT_UNUSED) {
            unused++;
            continue;
        }
        counts[r->state]++;
        if (kvci_engine_find(e, r->id) != r)
            return kvci_fail(KVC_EINTERNAL, "engine: request %lld (slot %lld) is not found by its id", (long long)r->id,
                             (long long)i);
    }
    if (counts[KVC_REQ_WAITING] != e->n_waiting || counts[KVC_REQ_RUNNING] != e->n_running ||
        counts[KVC_REQ_FINISHED] != e->n_finished || unused != e->table.n_free)
        return kvci_fail(KVC_EINTERNAL,
                         "engine: slots say %lld waiting, %lld running, %lld finished, %lld free; queues "
                         "say %lld, %lld, %lld, %lld",
                         (long long)counts[0], (long long)counts[1], (long long)counts[2], (long long)unused,
                         (long long)e->n_waiting, (long long)e->n_running, (long long)e->n_finished,
                         (long long)e->table.n_free);
    for (int64_t i = 0; i < e->n_waiting; i++) {
        const kvc_engine_req *r = &e->reqs[e->waiting[i]];
        if (r->state != KVC_REQ_WAITING || r->n_cached != 0 || r->cache_row >= 0)
            return kvci_fail(KVC_EINTERNAL, "engine: waiting queue entry %lld (request %lld) is %s with %lld cached",
                             (long long)i, (long long)r->id,
                             kvc_engine_request_state_name((kvc_engine_request_state)r->state), (long long)r->n_cached);
        if (i > 0 && !kvci_engine_req_before(&e->reqs[e->waiting[i - 1]], r))
            return kvci_fail(KVC_EINTERNAL,
                             "engine: waiting queue entry %lld (request %lld) is out of (priority, "
                             "arrival) order",
                             (long long)i, (long long)r->id);
    }
    for (int64_t i = 0; i < e->n_running; i++) {
        const kvc_engine_req *r = &e->reqs[e->running[i]];
        if (r->state != KVC_REQ_RUNNING)
            return kvci_fail(KVC_EINTERNAL, "engine: running list entry %lld is not running", (long long)i);
        if (i > 0 && !kvci_engine_req_before(&e->reqs[e->running[i - 1]], r))
            return kvci_fail(KVC_EINTERNAL,
                             "engine: running list entry %lld (request %lld) is out of (priority, "
                             "arrival) order",
                             (long long)i, (long long)r->id);
    }
    return KVC_OK;
}

/* Running requests hold the blocks of their cached positions and at most
 * those of every token they hold plus the lookahead (what a step allocated
 * before its chunk ran); waiting ones hold nothing. */
static kvc_status check_residency(const kvc_engine *e) {
    if (!e->managed) {
        int64_t rows = e->legacy.n_free_rows;
        for (int64_t i = 0; i < e->n_running; i++) rows += e->reqs[e->running[i]].cache_row >= 0;
        return rows == e->p.max_num_seqs
                   ? KVC_OK
                   : kvci_fail(KVC_EINTERNAL, "P-SELF-3: %lld free + running cache rows, expected %lld",
                               (long long)rows, (long long)e->p.max_num_seqs);
    }
    if (kvc_manager_num_live_requests(e->mgr) != e->n_running + e->n_held)
        return kvci_fail(KVC_EINTERNAL, "engine: the manager tracks %lld requests, %lld are running and %lld prefilled",
                         (long long)kvc_manager_num_live_requests(e->mgr), (long long)e->n_running,
                         (long long)e->n_held);
    for (int64_t i = 0; i < e->n_running; i++) {
        const kvc_engine_req *r = &e->reqs[e->running[i]];
        for (int32_t k = 0; k < e->n_keys; k++) {
            int64_t n = 0;
            kvc_status st = kvc_manager_block_ids(e->mgr, r->id, k, NULL, 0, &n);
            if (st != KVC_OK) return st;
            int64_t bs = kvc_manager_block_size(e->mgr, k);
            int64_t lo = kvci_cdiv(r->n_cached, bs);
            int64_t hi = kvci_cdiv(kvci_min64(r->n_tokens + e->p.next_n, e->p.max_model_len), bs);
            if (!kvc_manager_key_is_state(e->mgr, k) && (n < lo || n > hi))
                return kvci_fail(KVC_EINTERNAL,
                                 "INV-K1: request %lld has %lld cached of %lld tokens but a table of "
                                 "%lld blocks in manager %s (expected %lld .. %lld)",
                                 (long long)r->id, (long long)r->n_cached, (long long)r->n_tokens, (long long)n,
                                 kvc_manager_key(e->mgr, k), (long long)lo, (long long)hi);
        }
    }
    for (int64_t i = 0; i < e->n_waiting; i++) {
        kvc_status st = kvci_engine_check_released(e, e->reqs[e->waiting[i]].id);
        if (st != KVC_OK) return st;
    }
    if (e->n_running == 0 && e->n_held == 0)
        for (int32_t k = 0; k < e->n_keys; k++)
            if (kvc_manager_num_free(e->mgr, k) != kvc_manager_num_blocks(e->mgr, k) - 1)
                return kvci_fail(KVC_EINTERNAL, "P-REL-4: nothing runs but manager %s has %lld of %lld blocks free",
                                 kvc_manager_key(e->mgr, k), (long long)kvc_manager_num_free(e->mgr, k),
                                 (long long)kvc_manager_num_blocks(e->mgr, k) - 1);
    return KVC_OK;
}

kvc_status kvc_engine_check(const kvc_engine *e) {
    if (e == NULL) return kvci_fail(KVC_EINVAL, "kvc_engine_check: engine is NULL");
    kvc_status st = e->managed ? kvc_manager_check_invariants(e->mgr) : KVC_OK;
    if (st == KVC_OK) st = check_queues(e);
    if (st == KVC_OK) st = check_residency(e);
    return st;
}
