/* Pages of the keys (issue 24): which keys' entry slots agree so that they
 * can share one pool, and block sizes chosen so that keys whose bytes per
 * block differ take pages equal in bytes (kvc_cache_info_unify_pages's rule
 * in cache.h). */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"
#include "kvcache/ops.h"

/* Walks the needs_block entries of one key in order (its entry slots). */
typedef struct slot_cursor {
    const kvc_model_cache_info *ci;
    const char *key;
    int32_t layer, cache;
} slot_cursor;

/* The key's next entry, NULL after its last. */
static const kvc_cache_entry *next_slot(slot_cursor *cur) {
    for (; cur->layer < cur->ci->n_layer_infos; cur->layer++, cur->cache = 0)
        while (cur->cache < cur->ci->layer_infos[cur->layer].n_caches) {
            const kvc_cache_entry *e = &cur->ci->layer_infos[cur->layer].caches[cur->cache++];
            if (e->needs_block && strcmp(kvc_cache_entry_group_key(e), cur->key) == 0) return e;
        }
    return NULL;
}

bool kvci_keys_share_slots(const kvc_model_cache_info *ci, const char *a, const char *b) {
    slot_cursor ca = {.ci = ci, .key = a}, cb = {.ci = ci, .key = b};
    const kvc_cache_entry *ea = next_slot(&ca), *eb = next_slot(&cb);
    for (; ea != NULL || eb != NULL; ea = ea ? next_slot(&ca) : NULL, eb = eb ? next_slot(&cb) : NULL) {
        if ((ea && ea->allocator != KVC_ALLOC_HBM) || (eb && eb->allocator != KVC_ALLOC_HBM)) return false;
        if (ea && eb && kvci_entry_block_bytes(ea) != kvci_entry_block_bytes(eb)) return false;
    }
    return true;
}

/* Group order sorted by page bytes, largest first (stable: equal pages keep
 * group order). */
static void order_by_page(const int64_t *page, int32_t n, int32_t *order) {
    for (int32_t i = 0; i < n; i++) {
        int32_t j = i;
        while (j > 0 && page[order[j - 1]] < page[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

/* The block size key g takes to reach a page of `target` bytes, or 0 when it
 * cannot: a state key's page is fixed, a position key's page must divide the
 * target and the grown block size stay <= max_block_size. */
static int64_t block_size_for(const kvc_cache_group *grp, int64_t page, int64_t target, int64_t max_block_size) {
    if (target == page) return grp->block_size;
    if (grp->attn_type == KVC_ATTN_MAMBA || target % page != 0) return 0;
    int64_t bs = 0;
    if (!kvci_mul64(grp->block_size, target / page, &bs) || bs > max_block_size) return 0;
    return bs;
}

int64_t kvci_page_unify_bound(const kvc_model_cache_info *ci, int64_t max_model_len) {
    int64_t bound = kvci_min64(max_model_len, KVC_ATTN_MAX_BLOCK_SIZE);
    for (int32_t li = 0; li < ci->n_layer_infos; li++)
        for (int32_t c = 0; c < ci->layer_infos[li].n_caches; c++)
            bound = kvci_max64(bound, ci->layer_infos[li].caches[c].block_size);
    return bound;
}

kvc_status kvc_cache_info_unify_pages(kvc_model_cache_info *ci, int64_t max_block_size, int32_t *n_pools) {
    if (max_block_size < 1)
        return kvci_fail(KVC_EINVAL, "kvc_cache_info_unify_pages: max_block_size %lld must be >= 1",
                         (long long)max_block_size);
    kvc_cache_groups groups;
    kvc_status st = kvc_cache_groups_build(ci, &groups); /* validates ci */
    if (st != KVC_OK) return st;
    int32_t n = groups.n_groups, order[KVC_MAX_MANAGERS], leaders[KVC_MAX_MANAGERS], n_leaders = 0, alone = 0;
    int64_t page[KVC_MAX_MANAGERS], new_bs[KVC_MAX_MANAGERS];
    for (int32_t g = 0; g < n; g++) {
        page[g] = kvci_group_page_bytes(ci, &groups, g);
        new_bs[g] = groups.groups[g].block_size;
        alone += page[g] == 0;
    }
    order_by_page(page, n, order);
    for (int32_t i = 0; i < n && page[order[i]] > 0; i++) {
        int32_t g = order[i], l = 0;
        int64_t bs = 0;
        while (l < n_leaders &&
               (bs = block_size_for(&groups.groups[g], page[g], page[leaders[l]], max_block_size)) == 0)
            l++;
        if (l == n_leaders)
            leaders[n_leaders++] = g;
        else
            new_bs[g] = bs;
    }
    /* Every check passed: rewrite the entries (a grown block size stays a
     * multiple of the compress ratio, its page a page some key already has). */
    for (int32_t li = 0; li < ci->n_layer_infos; li++)
        for (int32_t c = 0; c < ci->layer_infos[li].n_caches; c++) {
            kvc_cache_entry *e = &ci->layer_infos[li].caches[c];
            if (!e->needs_block) continue;
            for (int32_t g = 0; g < n; g++)
                if (strcmp(groups.groups[g].key, kvc_cache_entry_group_key(e)) == 0) e->block_size = new_bs[g];
        }
    if (n_pools != NULL) *n_pools = n_leaders + alone;
    return KVC_OK;
}
