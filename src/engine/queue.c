/* Request bookkeeping: lookup by id (the request table of base/) and the two
 * ordered lists, waiting and running, each kept best first by (priority,
 * arrival). Insertion and removal shift the list (a few hundred entries at
 * most); nothing here allocates. */
#include <string.h>

#include "engine/engine_internal.h"

kvc_engine_req *kvci_engine_find(const kvc_engine *e, int64_t id) {
    int32_t slot = id >= 0 ? kvci_request_table_find(&e->table, id) : -1;
    return slot >= 0 ? &e->reqs[slot] : NULL;
}

bool kvci_engine_req_before(const kvc_engine_req *a, const kvc_engine_req *b) {
    return a->priority != b->priority ? a->priority < b->priority : a->arrival < b->arrival;
}

static void list_insert(const kvc_engine *e, int32_t *list, int64_t *n, int32_t slot) {
    int64_t i = *n;
    while (i > 0 && kvci_engine_req_before(&e->reqs[slot], &e->reqs[list[i - 1]])) i--;
    memmove(list + i + 1, list + i, (size_t)(*n - i) * sizeof *list);
    list[i] = slot;
    (*n)++;
}

static void list_remove(int32_t *list, int64_t *n, int32_t slot) {
    int64_t i = 0;
    while (i < *n && list[i] != slot) i++;
    KVC_ASSERT(i < *n);
    memmove(list + i, list + i + 1, (size_t)(*n - i - 1) * sizeof *list);
    (*n)--;
}

void kvci_engine_wait_insert(kvc_engine *e, int32_t slot) {
    KVC_ASSERT(e->n_waiting < e->p.max_requests);
    list_insert(e, e->waiting, &e->n_waiting, slot);
}

void kvci_engine_wait_remove(kvc_engine *e, int32_t slot) { list_remove(e->waiting, &e->n_waiting, slot); }

void kvci_engine_run_insert(kvc_engine *e, int32_t slot) {
    KVC_ASSERT(e->n_running < e->p.max_num_seqs);
    list_insert(e, e->running, &e->n_running, slot);
}

void kvci_engine_run_remove(kvc_engine *e, int32_t slot) { list_remove(e->running, &e->n_running, slot); }
