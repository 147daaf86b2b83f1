/* The plan's pools (issue 24): the cache description's block sizes unified
 * before planning, and what sharing the attention's pool would cost a state
 * key kept in a pool of its own. */
#include <stdio.h>

#include "base/internal.h"
#include "cache/manager_type.h"
#include "plan/plan_internal.h"

kvc_status kvci_plan_unify_pages(kvc_model_plan *plan) {
    const int64_t bound = kvci_page_unify_bound(&plan->cache_info, plan->options.max_model_len);
    kvc_status st = kvc_cache_info_unify_pages(&plan->cache_info, bound, NULL);
    if (st != KVC_OK) return st;
    for (int32_t i = 0; i < plan->n_layers; i++) /* the layers' figures follow their entries */
        for (int32_t c = 0; c < plan->layers[i].n_caches; c++) {
            kvc_plan_cache *pc = &plan->layers[i].caches[c];
            if (!pc->is_state) /* block_size / compress_ratio stored rows */
                pc->bytes_per_block = kvci_entry_block_bytes(&plan->cache_info.layer_infos[i].caches[c]);
        }
    return KVC_OK;
}

/* The first attention key whose entries take one page size, or -1. */
static int32_t first_paged_key(const kvc_block_plan *b) {
    for (int32_t g = 0; g < b->n_groups; g++)
        if (b->groups[g].attn_type != KVC_ATTN_MAMBA && b->groups[g].page_bytes > 0) return g;
    return -1;
}

void kvci_plan_measure_state_padding(kvc_model_plan *plan) {
    const kvc_block_plan *b = &plan->blocks;
    kvc_plan_state_padding *pad = &plan->state_padding;
    *pad = (kvc_plan_state_padding){0};
    int32_t paged = first_paged_key(b), state = -1;
    for (int32_t g = 0; g < b->n_groups && state < 0; g++)
        if (b->groups[g].attn_type == KVC_ATTN_MAMBA) state = g;
    if (paged < 0 || state < 0 ||
        (b->groups[state].pool_id > 0 && b->groups[state].pool_id == b->groups[paged].pool_id))
        return;
    const kvc_group_plan *pg = &b->groups[paged];
    int64_t token_bytes = pg->page_bytes / pg->block_size, largest = 0, n = 0;
    for (int32_t i = 0; i < plan->n_layers; i++)
        for (int32_t c = 0; c < plan->layers[i].n_caches; c++) {
            const kvc_plan_cache *pc = &plan->layers[i].caches[c];
            if (!pc->is_state) continue;
            largest = kvci_max64(largest, pc->bytes_per_block);
            pad->state_bytes += pc->bytes_per_block;
            n++;
        }
    snprintf(pad->state_key, sizeof pad->state_key, "%s", b->groups[state].key);
    snprintf(pad->paged_key, sizeof pad->paged_key, "%s", pg->key);
    pad->block_size = kvci_cdiv(largest, token_bytes);
    pad->page_bytes = pad->block_size * token_bytes;
    pad->padded_bytes = n * pad->page_bytes;
}
