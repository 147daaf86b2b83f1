/* Block planner (KM 6): fixed-size types first, then the paged types,
 * offline from a maximum length or online from a memory budget. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "cache/manager_type.h"

kvc_plan_params kvc_plan_default_params(void) {
    return (kvc_plan_params){.mode = KVC_PLAN_OFFLINE,
                             .max_concurrency = 1,
                             .free_bytes = -1,
                             .mem_fraction = 0.85,
                             .n_ranks = 0,
                             .partition = 1};
}

int64_t kvci_entry_block_bytes(const kvc_cache_entry *e) {
    int64_t row = 0;
    kvci_entry_row_bytes(e, &row); /* validated: it exists and fits */
    if (e->attn_type == KVC_ATTN_MAMBA) return row;
    return e->block_size / e->compress_ratio * e->num_head * row;
}

/* Sizing cost of one token of a paged entry: floor(heads * row bytes / ratio). */
static int64_t entry_token_bytes(const kvc_cache_entry *e) {
    int64_t row = 0;
    kvci_entry_row_bytes(e, &row);
    return e->num_head * row / e->compress_ratio;
}

static int32_t group_index(const kvc_cache_groups *groups, const kvc_cache_entry *e) {
    const char *key = kvc_cache_entry_group_key(e);
    for (int32_t g = 0; g < groups->n_groups; g++)
        if (strcmp(groups->groups[g].key, key) == 0) return g;
    return -1;
}

/* Plan skeleton from the groups; block counts left at 0. Fills block_bytes
 * and per_token_bytes from the HBM entries (the budget rules count only those). */
static void plan_skeleton(const kvc_model_cache_info *ci, const kvc_cache_groups *groups, kvc_block_plan *plan) {
    *plan = (kvc_block_plan){.n_groups = groups->n_groups};
    for (int32_t g = 0; g < groups->n_groups; g++) {
        kvc_group_plan *gp = &plan->groups[g];
        snprintf(gp->key, sizeof gp->key, "%s", groups->groups[g].key);
        gp->attn_type = groups->groups[g].attn_type;
        gp->block_size = groups->groups[g].block_size;
        gp->fixed = kvci_manager_type_find(gp->attn_type)->fixed_size;
    }
    for (int32_t l = 0; l < ci->n_layer_infos; l++) {
        const kvc_layer_cache_info *layer = &ci->layer_infos[l];
        for (int32_t c = 0; c < layer->n_caches; c++) {
            const kvc_cache_entry *e = &layer->caches[c];
            if (!e->needs_block || e->allocator != KVC_ALLOC_HBM) continue;
            kvc_group_plan *gp = &plan->groups[group_index(groups, e)];
            gp->block_bytes += kvci_entry_block_bytes(e);
            if (!gp->fixed) plan->per_token_bytes += entry_token_bytes(e);
        }
    }
    for (int32_t g = 0; g < groups->n_groups; g++) plan->groups[g].page_bytes = kvci_group_page_bytes(ci, groups, g);
}

int64_t kvci_group_page_bytes(const kvc_model_cache_info *ci, const kvc_cache_groups *groups, int32_t g) {
    int64_t page = 0;
    for (int32_t l = 0; l < ci->n_layer_infos; l++)
        for (int32_t c = 0; c < ci->layer_infos[l].n_caches; c++) {
            const kvc_cache_entry *e = &ci->layer_infos[l].caches[c];
            if (!e->needs_block || group_index(groups, e) != g) continue;
            if (e->allocator != KVC_ALLOC_HBM || (page != 0 && kvci_entry_block_bytes(e) != page)) return 0;
            page = kvci_entry_block_bytes(e);
        }
    return page;
}

/* Bytes one block id of pool_id costs: a page in every entry slot, as many
 * slots as its key with the most entries has. */
static int64_t pool_block_bytes(const kvc_block_plan *plan, int32_t pool_id) {
    int64_t bytes = 0;
    for (int32_t g = 0; g < plan->n_groups; g++)
        if (plan->groups[g].pool_id == pool_id) bytes = kvci_max64(bytes, plan->groups[g].block_bytes);
    return bytes;
}

/* The first group of g's pool (g itself for a pool of its own). */
static int32_t pool_leader(const kvc_block_plan *plan, int32_t g) {
    for (int32_t h = 0; h < g && plan->groups[g].pool_id > 0; h++)
        if (plan->groups[h].pool_id == plan->groups[g].pool_id) return h;
    return g;
}

/* Whether key h agrees slot by slot with every key of pool id (ids
 * assigned so far). */
static bool joins_pool(const kvc_block_plan *plan, const kvc_model_cache_info *ci, int32_t id, int32_t h) {
    for (int32_t m = 0; m < h; m++)
        if (plan->groups[m].pool_id == id && !kvci_keys_share_slots(ci, plan->groups[m].key, plan->groups[h].key))
            return false;
    return true;
}

/* The sharing rule: keys whose entry slots agree in page bytes (each key's
 * i-th entries equal, kvci_keys_share_slots; every key of a pool with every
 * other) share one pool, ids 1, 2, ... by first key; a key alone keeps
 * pool_id 0. */
static void assign_pools(kvc_block_plan *plan, const kvc_model_cache_info *ci) {
    int32_t next = 1;
    for (int32_t g = 0; g < plan->n_groups; g++) {
        kvc_group_plan *gp = &plan->groups[g];
        if (gp->pool_id > 0 || !kvci_keys_share_slots(ci, gp->key, gp->key)) continue;
        gp->pool_id = next;
        bool shared = false;
        for (int32_t h = g + 1; h < plan->n_groups; h++)
            if (plan->groups[h].pool_id == 0 && joins_pool(plan, ci, next, h)) {
                plan->groups[h].pool_id = next;
                shared = true;
            }
        gp->pool_id = shared ? next++ : 0;
    }
}

/* Whether a fixed-size key draws from a pool that a paged key sizes. */
static bool pooled_with_paged(const kvc_block_plan *plan, int32_t g) {
    for (int32_t h = 0; h < plan->n_groups && plan->groups[g].pool_id > 0; h++)
        if (plan->groups[h].pool_id == plan->groups[g].pool_id && !plan->groups[h].fixed) return true;
    return false;
}

/* A shared pool's block id is a page in every one of its entry slots, however
 * few of them the key holding it fills (a key with fewer layers than the
 * pool's widest leaves the rest of its block unused): the pool holds 1 + the
 * real blocks of every key, each a whole id. */
static void merge_pools(kvc_block_plan *plan) {
    for (int32_t g = 0; g < plan->n_groups; g++) {
        if (plan->groups[g].pool_id == 0 || pool_leader(plan, g) != g) continue;
        int32_t id = plan->groups[g].pool_id;
        int64_t n = 1;
        for (int32_t h = g; h < plan->n_groups; h++)
            if (plan->groups[h].pool_id == id) n += plan->groups[h].block_num - 1;
        for (int32_t h = g; h < plan->n_groups; h++)
            if (plan->groups[h].pool_id == id) plan->groups[h].block_num = n;
    }
}

/* Budget sizing's cost of one token of the paged keys: a key of a shared pool pays the pool's whole block id
 * per block_size tokens, one of its own its entries' bytes (plan_skeleton's sum). */
static void pooled_token_bytes(kvc_block_plan *plan) {
    for (int32_t g = 0; g < plan->n_groups; g++) {
        const kvc_group_plan *gp = &plan->groups[g];
        if (gp->fixed || gp->pool_id == 0) continue;
        plan->per_token_bytes += (pool_block_bytes(plan, gp->pool_id) - gp->block_bytes) / gp->block_size;
    }
}

/* Totals once every count is known: fixed_bytes and total_bytes (HBM
 * entries); KVC_EINVAL when they overflow int64. */
static kvc_status plan_totals(kvc_block_plan *plan) {
    plan->fixed_bytes = 0;
    plan->total_bytes = 0;
    for (int32_t g = 0; g < plan->n_groups; g++) {
        int64_t bytes = 0;
        int32_t pool = plan->groups[g].pool_id;
        if (pool > 0 && pool_leader(plan, g) != g) continue; /* a shared pool counts once */
        if (plan->groups[g].block_num > INT32_MAX ||
            !kvci_mul64(plan->groups[g].block_num,
                        pool > 0 ? pool_block_bytes(plan, pool) : plan->groups[g].block_bytes, &bytes) ||
            !kvci_add64(plan->total_bytes, bytes, &plan->total_bytes))
            return kvci_fail(KVC_EINVAL,
                             "plan: manager %s would need %lld blocks of %lld bytes, beyond what one "
                             "pool can address",
                             plan->groups[g].key, (long long)plan->groups[g].block_num,
                             (long long)plan->groups[g].block_bytes);
        if (plan->groups[g].fixed && pool == 0) plan->fixed_bytes += bytes;
    }
    return KVC_OK;
}

static kvc_status check_plan_params(const kvc_plan_params *p) {
    if (p->max_concurrency < 1)
        return kvci_fail(KVC_EINVAL, "plan: max_concurrency %lld must be >= 1", (long long)p->max_concurrency);
    if (p->max_concurrency > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "plan: max_concurrency %lld must be < 2^31", (long long)p->max_concurrency);
    if (p->next_n < 0 || p->next_n > KVC_MAX_NEXT_N)
        return kvci_fail(KVC_EINVAL, "plan: next_n %lld must be in [0, %d]", (long long)p->next_n, KVC_MAX_NEXT_N);
    if (p->extra_reserved_bytes < 0 || p->max_prefill_tokens < 0)
        return kvci_fail(KVC_EINVAL, "plan: extra_reserved_bytes and max_prefill_tokens must not be negative");
    switch (p->mode) {
    case KVC_PLAN_OFFLINE:
        if (p->max_len < 1)
            return kvci_fail(KVC_EINVAL, "plan: offline max_len %lld must be >= 1", (long long)p->max_len);
        if (p->partition < 1 || p->max_concurrency % p->partition != 0)
            return kvci_fail(KVC_EINVAL, "plan: partition %lld must be >= 1 and divide max_concurrency %lld",
                             (long long)p->partition, (long long)p->max_concurrency);
        return KVC_OK;
    case KVC_PLAN_BUDGET:
        if (p->kv_memory_bytes <= 0)
            return kvci_fail(KVC_EINVAL, "plan: kv_memory_bytes %lld must be positive", (long long)p->kv_memory_bytes);
        return KVC_OK;
    case KVC_PLAN_DEVICE:
        if (p->total_bytes <= 0 || !(p->mem_fraction > 0.0 && p->mem_fraction <= 1.0))
            return kvci_fail(KVC_EINVAL, "plan: device total_bytes %lld must be positive and mem_fraction %g in (0, 1]",
                             (long long)p->total_bytes, p->mem_fraction);
        if (p->n_ranks < 1 || p->rank_free_bytes == NULL)
            return kvci_fail(KVC_EINVAL, "plan: device mode needs the free memory of n_ranks >= 1 ranks");
        for (int32_t r = 0; r < p->n_ranks; r++)
            if (p->rank_free_bytes[r] < 0 || p->rank_free_bytes[r] > p->total_bytes)
                return kvci_fail(KVC_EINVAL, "plan: rank %d free bytes %lld must be in [0, total %lld]", r,
                                 (long long)p->rank_free_bytes[r], (long long)p->total_bytes);
        return KVC_OK;
    }
    return kvci_fail(KVC_EINVAL, "plan: mode %d is unknown (expected OFFLINE, BUDGET or DEVICE)", (int)p->mode);
}

static kvc_status plan_offline(const kvc_plan_params *p, kvc_block_plan *plan) {
    for (int32_t g = 0; g < plan->n_groups; g++) {
        kvc_group_plan *gp = &plan->groups[g];
        if (gp->fixed) continue;
        int64_t partition = gp->attn_type == KVC_ATTN_FULL ? p->partition : 1;
        if (!kvci_mul64(kvci_cdiv(p->max_len, gp->block_size), p->max_concurrency / partition, &gp->block_num) ||
            gp->block_num >= INT32_MAX)
            return kvci_fail(KVC_EINVAL, "plan: manager %s: max_len %lld x concurrency %lld needs more than %d blocks",
                             gp->key, (long long)p->max_len, (long long)p->max_concurrency, INT32_MAX);
        gp->block_num += 1;
    }
    merge_pools(plan);
    if (!kvci_mul64(p->max_len, p->max_concurrency, &plan->max_tokens))
        return kvci_fail(KVC_EINVAL, "plan: max_len %lld x concurrency %lld overflows", (long long)p->max_len,
                         (long long)p->max_concurrency);
    kvc_status st = plan_totals(plan);
    if (st != KVC_OK) return st;
    int64_t required = plan->total_bytes + p->extra_reserved_bytes;
    if (p->free_bytes >= 0 && required > p->free_bytes)
        return kvci_fail(KVC_ENOMEM, "plan: offline caches need %lld bytes but only %lld are free (short by %lld)",
                         (long long)required, (long long)p->free_bytes, (long long)(required - p->free_bytes));
    return KVC_OK;
}

/* Bytes left for the paged caches on one rank (may be <= 0). */
static double paged_budget(const kvc_plan_params *p, int64_t fixed_bytes, int32_t rank) {
    double budget = p->mode == KVC_PLAN_BUDGET ? (double)p->kv_memory_bytes
                                               : (double)p->total_bytes * p->mem_fraction -
                                                     (double)(p->total_bytes - p->rank_free_bytes[rank]);
    return budget - (double)fixed_bytes - (double)p->extra_reserved_bytes;
}

static kvc_status plan_online(const kvc_plan_params *p, kvc_block_plan *plan) {
    kvc_status st = plan_totals(plan); /* fixed_bytes from the fixed counts */
    if (st != KVC_OK) return st;
    int32_t n_ranks = p->mode == KVC_PLAN_BUDGET ? 1 : p->n_ranks;
    int64_t max_tokens = INT64_MAX;
    for (int32_t r = 0; r < n_ranks; r++) {
        double available = paged_budget(p, plan->fixed_bytes, r);
        if (available <= 0.0)
            return kvci_fail(KVC_ENOMEM,
                             "plan: rank %d has %.0f bytes left for the paged caches after %lld bytes of "
                             "fixed-size caches and %lld reserved (raise the memory budget or fraction)",
                             r, available, (long long)plan->fixed_bytes, (long long)p->extra_reserved_bytes);
        max_tokens = kvci_min64(max_tokens, (int64_t)floor(available / (double)plan->per_token_bytes));
    }
    plan->max_tokens = max_tokens;
    int64_t supported = INT64_MAX;
    for (int32_t g = 0; g < plan->n_groups; g++) {
        kvc_group_plan *gp = &plan->groups[g];
        if (gp->fixed) continue;
        gp->block_num = max_tokens / gp->block_size;
        supported = kvci_min64(supported, (gp->block_num - 1) * gp->block_size);
    }
    merge_pools(plan);
    st = plan_totals(plan);
    if (st != KVC_OK) return st;
    if (supported < 1)
        return kvci_fail(KVC_ENOMEM, "plan: the budget holds %lld tokens (%lld bytes each), not one usable block",
                         (long long)max_tokens, (long long)plan->per_token_bytes);
    if (p->max_prefill_tokens > 0 && supported - 1 < p->max_prefill_tokens)
        return kvci_fail(KVC_ENOMEM, "plan: the budget supports %lld tokens, a prefill of %lld needs %lld more",
                         (long long)(supported - 1), (long long)p->max_prefill_tokens,
                         (long long)(p->max_prefill_tokens - (supported - 1)));
    return KVC_OK;
}

kvc_status kvc_plan_blocks(const kvc_plan_params *p, const kvc_model_cache_info *ci, kvc_block_plan *out) {
    if (p == NULL || out == NULL) return kvci_fail(KVC_EINVAL, "kvc_plan_blocks: params and out must not be NULL");
    kvc_status st = check_plan_params(p);
    if (st == KVC_OK) st = kvc_validate_cache_info(ci, p->next_n);
    kvc_cache_groups groups;
    if (st == KVC_OK) st = kvc_cache_groups_build(ci, &groups);
    if (st != KVC_OK) return st;
    kvc_block_plan plan;
    plan_skeleton(ci, &groups, &plan);
    if (p->shared_pools) {
        assign_pools(&plan, ci);
        pooled_token_bytes(&plan);
    }
    bool any_paged = false;
    for (int32_t g = 0; g < plan.n_groups; g++) {
        const kvc_manager_type *type = kvci_manager_type_find(plan.groups[g].attn_type);
        if (!type->fixed_size)
            any_paged = true;
        else if (p->mode != KVC_PLAN_OFFLINE && pooled_with_paged(&plan, g))
            plan.groups[g].block_num = 1; /* draws from the budget's pool */
        else
            plan.groups[g].block_num = type->fixed_blocks(&groups.groups[g], p->max_concurrency, p->next_n);
    }
    if (!any_paged) {
        merge_pools(&plan);
        st = plan_totals(&plan);
    } else if (p->mode == KVC_PLAN_OFFLINE) {
        st = plan_offline(p, &plan);
    } else {
        if (plan.per_token_bytes <= 0)
            return kvci_fail(KVC_EINVAL, "plan: no HBM-backed paged cache to size from the memory budget");
        st = plan_online(p, &plan);
    }
    if (st == KVC_OK) *out = plan;
    return st;
}

kvc_status kvci_block_plan_check(const kvc_block_plan *plan) {
    if (plan->n_groups < 0 || plan->n_groups > KVC_MAX_MANAGERS)
        return kvci_fail(KVC_EINVAL, "plan: n_groups %d must be in [0, %d] (KVC_MAX_MANAGERS)", plan->n_groups,
                         KVC_MAX_MANAGERS);
    for (int32_t g = 0; g < plan->n_groups; g++) {
        const kvc_group_plan *gp = &plan->groups[g];
        if (memchr(gp->key, '\0', sizeof gp->key) == NULL)
            return kvci_fail(KVC_EINVAL, "plan: the key of group %d is not NUL-terminated within %d bytes", g,
                             KVC_NAME_MAX);
        if (gp->pool_id < 0)
            return kvci_fail(KVC_EINVAL, "plan: key %s has pool_id %d (0: its own pool, > 0: a shared one)", gp->key,
                             gp->pool_id);
        const kvc_group_plan *lead = &plan->groups[pool_leader(plan, g)];
        if (lead->block_num != gp->block_num)
            return kvci_fail(KVC_EINVAL, "plan: keys %s and %s share pool %d but plan %lld and %lld blocks", lead->key,
                             gp->key, gp->pool_id, (long long)lead->block_num, (long long)gp->block_num);
    }
    return KVC_OK;
}

kvc_status kvc_block_plan_check_pools(kvc_block_plan *plan) {
    if (plan == NULL) return kvci_fail(KVC_EINVAL, "kvc_block_plan_check_pools: plan must not be NULL");
    kvc_status st = kvci_block_plan_check(plan);
    if (st != KVC_OK) return st;
    for (int32_t g = 0; g < plan->n_groups; g++) {
        const kvc_group_plan *gp = &plan->groups[g], *lead = &plan->groups[pool_leader(plan, g)];
        if (gp->pool_id > 0 && gp->page_bytes != lead->page_bytes && gp->page_bytes != 0 && lead->page_bytes != 0)
            return kvci_fail(KVC_EINVAL,
                             "plan: keys %s and %s share pool %d but their pages differ (%lld and %lld "
                             "bytes; 0: entries of unequal sizes, checked slot by slot by the storage)",
                             lead->key, gp->key, gp->pool_id, (long long)lead->page_bytes, (long long)gp->page_bytes);
    }
    return plan_totals(plan);
}

kvc_status kvci_block_plan_group(const kvc_block_plan *plan, const char *key, const kvc_group_plan **out) {
    for (int32_t g = 0; g < plan->n_groups; g++) {
        if (strcmp(plan->groups[g].key, key) == 0) {
            *out = &plan->groups[g];
            return KVC_OK;
        }
    }
    return kvci_fail(KVC_EINVAL, "no block count planned for manager key \"%s\"", key);
}

kvc_status kvc_block_plan_block_num(const kvc_block_plan *plan, const char *key, int64_t *out) {
    if (plan == NULL || key == NULL || out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_block_plan_block_num: plan, key and out must not be NULL");
    kvc_status st = kvci_block_plan_check(plan);
    if (st != KVC_OK) return kvci_fail(st, "kvc_block_plan_block_num: %s", kvc_last_error());
    const kvc_group_plan *gp = NULL;
    st = kvci_block_plan_group(plan, key, &gp);
    if (st != KVC_OK) return st;
    /* a pool's ids are int32 and block 0 is the null block: what a caller's plan says is bounded here,
     * before storage sizes a tensor by it (0 divided by zero, a negative count overflowed the bytes) */
    if (gp->block_num < 1 || gp->block_num > INT32_MAX)
        return kvci_fail(KVC_EINVAL,
                         "kvc_block_plan_block_num: key %s plans %lld blocks, outside [1, %d] (the null "
                         "block included)",
                         key, (long long)gp->block_num, INT32_MAX);
    *out = gp->block_num;
    return KVC_OK;
}

kvc_status kvc_block_plan_from_counts(const kvc_model_cache_info *ci, const char *const *keys, const int64_t *counts,
                                      int32_t n, kvc_block_plan *out) {
    if (out == NULL || n < 0 || (n > 0 && (keys == NULL || counts == NULL)))
        return kvci_fail(KVC_EINVAL, "kvc_block_plan_from_counts: out and %d keys with counts are required", n);
    kvc_cache_groups groups;
    kvc_status st = kvc_cache_groups_build(ci, &groups);
    if (st != KVC_OK) return st;
    kvc_block_plan plan;
    plan_skeleton(ci, &groups, &plan);
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] == NULL) return kvci_fail(KVC_EINVAL, "block count %d has no key", i);
        int32_t g = 0;
        while (g < plan.n_groups && strcmp(plan.groups[g].key, keys[i]) != 0) g++;
        if (g == plan.n_groups) return kvci_fail(KVC_EINVAL, "block count for \"%s\" matches no manager key", keys[i]);
        if (counts[i] < 1 || counts[i] > INT32_MAX)
            return kvci_fail(KVC_EINVAL, "block count %lld for \"%s\" must be in [1, %d] (null block included)",
                             (long long)counts[i], keys[i], INT32_MAX);
        plan.groups[g].block_num = counts[i];
    }
    for (int32_t g = 0; g < plan.n_groups; g++)
        if (plan.groups[g].block_num == 0)
            return kvci_fail(KVC_EINVAL, "no block count given for manager key \"%s\"", plan.groups[g].key);
    st = plan_totals(&plan);
    if (st != KVC_OK) return st;
    int64_t min_tokens = INT64_MAX;
    for (int32_t g = 0; g < plan.n_groups; g++)
        if (!plan.groups[g].fixed)
            min_tokens = kvci_min64(min_tokens, plan.groups[g].block_num * plan.groups[g].block_size);
    plan.max_tokens = min_tokens == INT64_MAX ? 0 : min_tokens;
    *out = plan;
    return KVC_OK;
}
