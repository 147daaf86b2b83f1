/* Uniform page size (issue 24): block sizes chosen so that keys whose bytes
 * per block differ take pages equal in bytes, for one shared pool. The rule
 * is kvc_cache_info_unify_pages's comment in cache.h. */
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

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
