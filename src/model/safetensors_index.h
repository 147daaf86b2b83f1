/* Which files of a model directory hold its tensors: model.safetensors, or the shards of
 * model.safetensors.index.json. */
#ifndef KVC_MODEL_SAFETENSORS_INDEX_H
#define KVC_MODEL_SAFETENSORS_INDEX_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "kvcache/base.h"

#define KVCI_ST_MAX_SHARDS 64

typedef struct kvci_st_index {
    char path[4200];                        /* DIR/model.safetensors.index.json, for messages */
    cJSON *root;                            /* the index; NULL: none read */
    const cJSON *weight_map;                /* {tensor: shard file name} */
    const char *shards[KVCI_ST_MAX_SHARDS]; /* [n_shards] the files to read, distinct (strings of root or static) */
    int32_t n_shards;                       /* 0: every *.safetensors file of the directory */
} kvci_st_index;

/* The files of dir a load reads, into *idx: "model.safetensors" alone when dir has it (an index beside it
 * is not read, as transformers reads neither), else the shards of dir's model.safetensors.index.json
 * (root: the index), else none named (n_shards 0: the caller reads every *.safetensors file). An index
 * is refused naming it: not a JSON object (a key twice, a \u0000 escape), no weight_map object or an
 * empty one, a shard named other than as a .safetensors file of dir itself ("../x.safetensors",
 * "/abs/x.safetensors", "sub/x.safetensors"), a shard that does not exist (the tensor named), more than
 * KVCI_ST_MAX_SHARDS shards. Release with kvci_st_index_close. */
kvc_status kvci_st_index_open(const char *dir, kvci_st_index *idx);
void kvci_st_index_close(kvci_st_index *idx);

#endif
