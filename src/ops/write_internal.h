/* Paged-cache geometry shared by the write ops. */
#ifndef KVC_OPS_WRITE_INTERNAL_H
#define KVC_OPS_WRITE_INTERNAL_H

#include "kvcache/ops.h"

typedef struct kvc_paged_geom {
    kvc_paged_order order;
    int64_t n_blocks, bs, n_heads, head_dim;
    int64_t c0; /* NZ channels per tile; 0 for plain orders */
} kvc_paged_geom;

/* Reads the geometry of a 4-D paged cache (refusal names `what`). */
kvc_status kvc_paged_geom_of(const kvc_tensor *cache, kvc_paged_order order, const char *what,
                             kvc_paged_geom *g);
/* Element index of (slot, head h, channel d). */
int64_t kvc_paged_index(const kvc_paged_geom *g, int64_t slot, int64_t h, int64_t d);
/* R16: one slot per token, each -1 or in [0, capacity); debug builds also
 * refuse a slot >= bs (outside the null block) given twice. */
kvc_status kvc_check_slots(const int64_t *slots, int64_t n_slots, int64_t n_tokens, int64_t capacity, int64_t bs,
                           const char *what);

#endif
