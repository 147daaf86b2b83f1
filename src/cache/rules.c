/* The per-type rules with the defaults of the optional vtable slots
 * (manager_type.h), and the kvc_manager_* queries through which the layers
 * above (batch, engine) ask them. */
#include "base/internal.h"
#include "cache/manager_internal.h"

int64_t kvci_type_skipped_tokens(const kvc_single_manager *m, int64_t computed) {
    return m->type->num_skipped_tokens != NULL ? m->type->num_skipped_tokens(m, computed) : 0;
}

int64_t kvci_type_leading_nulls(const kvc_single_manager *m, int64_t computed) {
    return kvci_type_skipped_tokens(m, computed) / m->group.block_size;
}

int64_t kvci_type_max_table_len(const kvc_manager_type *t, const kvc_cache_group *g, int64_t max_model_len) {
    return t->max_table_len != NULL ? t->max_table_len(g, max_model_len) : kvci_cdiv(max_model_len, g->block_size);
}

int64_t kvci_type_step_width(const kvc_manager_type *t, const kvc_cache_group *g, int64_t max_model_len,
                             bool is_prefill) {
    return t->step_width != NULL ? t->step_width(g, max_model_len, is_prefill)
                                 : kvci_cdiv(max_model_len, g->block_size);
}

bool kvci_type_has_slot_mapping(const kvc_manager_type *t, const kvc_cache_group *g) {
    return t->has_slot_mapping != NULL ? t->has_slot_mapping(g) : g->compress_ratio == 1;
}

int64_t kvci_type_worst_blocks(const kvc_manager_type *t, const kvc_cache_group *g, int64_t positions) {
    return t->worst_blocks != NULL ? t->worst_blocks(g, positions) : kvci_cdiv(positions, g->block_size);
}

void kvci_type_grow(kvc_single_manager *m, kvc_req_blocks *t, int64_t n, int64_t num_tokens) {
    if (m->type->grow != NULL)
        m->type->grow(m, t, n, num_tokens);
    else
        kvci_single_manager_append(m, t, n);
}

void kvci_type_cache_computed(kvc_single_manager *m, kvc_req_blocks *t, const int32_t *tokens, int64_t computed) {
    if (m->type->cache_computed != NULL)
        m->type->cache_computed(m, t, tokens, computed);
    else
        kvci_paged_cache_computed(m, t, tokens, computed);
}

/* ---- queries ---------------------------------------------------------------- */
static const kvc_single_manager *key_manager(const kvc_manager *m, int32_t k) {
    return m != NULL && k >= 0 && k < m->n_managers ? &m->managers[k] : NULL;
}

int64_t kvc_manager_step_width(const kvc_manager *m, int32_t k, bool is_prefill) {
    const kvc_single_manager *sm = key_manager(m, k);
    return sm != NULL ? kvci_type_step_width(sm->type, &sm->group, m->max_model_len, is_prefill) : -1;
}

bool kvc_manager_has_slot_mapping(const kvc_manager *m, int32_t k) {
    const kvc_single_manager *sm = key_manager(m, k);
    return sm != NULL && kvci_type_has_slot_mapping(sm->type, &sm->group);
}

bool kvc_manager_key_is_state(const kvc_manager *m, int32_t k) {
    const kvc_single_manager *sm = key_manager(m, k);
    return sm != NULL && sm->type->state_hits;
}

int64_t kvc_manager_worst_blocks(const kvc_manager *m, int32_t k, int64_t positions) {
    const kvc_single_manager *sm = key_manager(m, k);
    return sm != NULL && positions >= 0 ? kvci_type_worst_blocks(sm->type, &sm->group, positions) : -1;
}

int64_t kvc_manager_skipped_tokens(const kvc_manager *m, int32_t k, int64_t computed) {
    const kvc_single_manager *sm = key_manager(m, k);
    return sm != NULL && computed >= 0 ? kvci_type_skipped_tokens(sm, computed) : -1;
}
