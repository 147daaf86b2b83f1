/* model.safetensors.index.json: which files of a model directory hold its tensors. */
#ifndef KVC_MODEL_SAFETENSORS_INDEX_H
#define KVC_MODEL_SAFETENSORS_INDEX_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "kvcache/base.h"

#define KVCI_ST_MAX_SHARDS 64

typedef struct kvci_st_index {
    char path[4200];         /* DIR/model.safetensors.index.json, for messages */
    cJSON *root;             /* NULL: the directory has no index */
    const cJSON *weight_map; /* {tensor: shard file name} */
    const char
        *shards[KVCI_ST_MAX_SHARDS]; /* [n_shards] distinct shard names in the weight map's order (strings of root) */
    int32_t n_shards;
} kvci_st_index;

/* Reads dir's index into *idx (root NULL when the directory has none). Refused naming the index: not
 * a JSON object (a key twice, a \u0000 escape), no weight_map object or an empty one, a shard named
 * other than as a .safetensors file of dir itself ("../x.safetensors", "/abs/x.safetensors",
 * "sub/x.safetensors"), a shard that does not exist (the tensor named), more than
 * KVCI_ST_MAX_SHARDS shards. Release with kvci_st_index_close. */
kvc_status kvci_st_index_open(const char *dir, kvci_st_index *idx);
void kvci_st_index_close(kvci_st_index *idx);

#endif
