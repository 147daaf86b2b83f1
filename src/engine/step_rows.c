/* The rows of the step being built, and what taking a request out of the
 * running set means: preemption (recompute later) and undoing this step's
 * admissions when its forward fails. */
#include "engine/engine_internal.h"

void kvci_engine_row_add(kvc_engine *e, int32_t slot, int64_t n_new, bool admitted) {
    kvc_engine_req *r = &e->reqs[slot];
    r->row_build = e->build;
    int64_t b = e->n_rows++;
    e->rows[b] = (kvc_step_request){.request_id = r->id, .computed_tokens = r->n_cached, .num_new_tokens = n_new};
    e->row_slots[b] = slot;
    e->row_ids[b] = r->id;
    e->row_admitted[b] = admitted;
    e->n_row_tokens += n_new;
}

kvc_status kvci_engine_preempt(kvc_engine *e, int32_t slot) {
    kvc_engine_req *r = &e->reqs[slot];
    kvc_status st = kvci_engine_evict(e, r);
    if (st != KVC_OK) return st;
    if (e->p.check) {
        st = kvci_engine_check_released(e, r->id);
        if (st != KVC_OK) return st;
    }
    kvci_engine_run_remove(e, slot);
    r->state = KVC_REQ_WAITING;
    r->n_cached = 0;
    r->n_preemptions++;
    kvci_engine_wait_insert(e, slot);
    e->stats.preemptions++;
    return KVC_OK;
}

void kvci_engine_rows_undo(kvc_engine *e) {
    for (int64_t b = e->n_rows - 1; b >= 0; b--) {
        if (!e->row_admitted[b]) continue;
        kvc_engine_req *r = &e->reqs[e->row_slots[b]];
        kvci_engine_evict(e, r);
        kvci_engine_run_remove(e, e->row_slots[b]);
        r->state = KVC_REQ_WAITING;
        r->n_cached = 0; /* a prefix hit is asked for again at the next admission */
        kvci_engine_wait_insert(e, e->row_slots[b]);
    }
    e->n_rows = e->n_row_tokens = 0;
}
