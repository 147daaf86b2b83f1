/* The cache builder (docs/runtime.md, "The cache builder"): every owner of a
 * model's KV caches (the standalone runner, the engine adapter's managed and
 * self-managed paths) states the same knobs, the public kvc_cache_knobs
 * (model.h) its caller fills, has them checked in one place, and gets the
 * same description of its caches: each layer's
 * entries (kvc_model_cache_info: k/v or nope/rope with the heads and dims of
 * kvci_model_cache_dims, the KV dtype, and the f32 per-slot scales of an
 * int8 / fp8 dtype) and the kvc_model_caches the forward reads, whose tensor
 * slot each entry fills. Storage is the owner's: the engine's managed
 * storage and legacy caches hand tensors to the entries' setters; the runner
 * carves its own buffer with kvci_cache_set_carve. */
#ifndef KVC_MODEL_CACHE_BUILD_H
#define KVC_MODEL_CACHE_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "kvcache/cache.h"
#include "kvcache/model.h"

/* What a cache owner chooses: the public knobs (model.h) and what the owner's mode decides. */
typedef struct kvci_cache_knobs {
    kvc_cache_knobs cache; /* block_size read when paged (entries then take it; contiguous: 1) */
    bool paged;            /* blocks of cache.block_size tokens (the cache manager's or a static table), else a
                            * contiguous row of positions per sequence */
    bool latent;           /* MLA latent caches (nope/rope, one head): an MLA family only */
} kvci_cache_knobs;

/* Checks k against m. Messages begin "who: " and name each public knob as
 * `field` then its name (the caller's spelling: "cache." gives
 * "cache.kv_dtype", "" gives "kv_dtype"); a refused layout says it is not
 * taken `where` (the owner's words, e.g. "in mode 1"). */
kvc_status kvci_cache_knobs_check(const kvc_model *m, const kvci_cache_knobs *k, const char *who, const char *field,
                                  const char *where);

/* DeepSeek sparse attention: whether layer l keeps indexer keys (an indexer of its own), in its last entry
 * named KVCI_INDEX_ENTRY (f32 [1, index_head_dim] per slot, whatever the KV dtype). */
#define KVCI_INDEX_ENTRY "indexer_k_cache"
bool kvci_layer_index_keys(const kvc_model_config *c, int64_t l);

/* One model's caches as the knobs describe them. */
typedef struct kvci_cache_set {
    kvci_cache_knobs knobs;
    kvc_model_cache_info *ci; /* [n_layers] layer infos; entries k, v (latent: nope, rope), then the scales;
                               * entry block_size 1 when contiguous; BNNDBS: k in BNNDBS, v head-major */
    kvc_model_caches *caches; /* the owner's: kind, latent, block_size, layout, layers (owned by the set),
                               * layers[l].key from the entries' group */
} kvci_cache_set;

/* Builds the set of checked knobs k (kvci_cache_knobs_check first) and fills *caches (the owner's, as
 * long as the set lives); release with kvci_cache_set_release (it frees caches->layers). */
kvc_status kvci_cache_set_build(const kvc_model *m, const kvci_cache_knobs *k, kvc_model_caches *caches,
                                kvci_cache_set *out);
void kvci_cache_set_release(kvci_cache_set *s);
/* The tensor slot of *s->caches that entry `entry` of layer info `info` fills: k, v, k_scales, v_scales. */
kvc_tensor *kvci_cache_set_slot(kvci_cache_set *s, int32_t info, int32_t entry);
/* Points every entry's tensor_setter at its slot (the engine's storage then fills s->caches). */
void kvci_cache_set_wire_setters(kvci_cache_set *s);
/* Bytes of every layer's K/V entries over `slots` cache slots (conv states, a block per sequence, left out);
 * false on int64 overflow. */
bool kvci_cache_set_bytes(const kvci_cache_set *s, int64_t slots, int64_t *out);
/* Carves mem (kvci_cache_set_bytes(s, n0 * n1) bytes) into every K/V slot (conv states are the owner's): paged n0
 * blocks of n1 = block_size tokens, k/v [n0, n1, heads, dim] (BNNDBS: k [n0, heads, dim, n1], v [n0, heads, n1, dim]);
 * contiguous n0 rows of n1 positions, k/v [n0, n1, heads * dim]; scales [n0, n1]. */
void kvci_cache_set_carve(kvci_cache_set *s, void *mem, int64_t n0, int64_t n1);

/* The entries of each layer info: the K/V pair first (k, v; latent: nope, rope), then the scale entries
 * the dtype table gives kv_dtype: with scales per token beside the data (KVC_SCALES_PER_TOKEN: int8, fp8)
 * one f32 per slot, k_scale and v_scale (latent: one scale over latent + rope); none otherwise. */
#define KVCI_CACHE_KV_ENTRIES 2
int32_t kvci_cache_scale_entries(kvc_dtype kv_dtype, bool latent);

/* The entries of every layer of c, unchecked (kvc_model_cache_info_build checks its arguments). */
kvc_status kvci_cache_info_new(const kvc_model_config *c, bool latent, kvc_dtype kv_dtype, int64_t block_size,
                               kvc_model_cache_info **out);

#endif /* KVC_MODEL_CACHE_BUILD_H */
