/* Which files of a model directory a load reads, as transformers picks them: model.safetensors alone
 * when the directory has it, else the shards of a sharded checkpoint's model.safetensors.index.json
 * (save_pretrained's: {"metadata": {...}, "weight_map": {tensor: shard file}}). */
#include "model/safetensors_index.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/internal.h"
#include "model/json_nul.h"
#include "model/json_read.h"

#define INDEX_NAME  "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

/* A shard's name is a file of the directory itself: no '/', not "." or "..", ending in .safetensors. */
static bool plain_shard_name(const char *s) {
    const size_t n = strlen(s);
    return n > 12 && strchr(s, '/') == NULL && strcmp(s + n - 12, ".safetensors") == 0;
}

/* The distinct shard names of the weight map, in its order, into idx->shards; each one a plain name of
 * an existing file. */
static kvc_status shards_of(kvci_st_index *idx, const char *dir) {
    const cJSON *e;
    cJSON_ArrayForEach(e, idx->weight_map) {
        if (!cJSON_IsString(e) || !plain_shard_name(e->valuestring))
            return kvci_fail(KVC_EINVAL,
                             "%s: weight_map.%s must name a .safetensors file of the directory itself (no '/'), "
                             "got %s%s%s",
                             idx->path, e->string, cJSON_IsString(e) ? "\"" : "a non-string",
                             cJSON_IsString(e) ? e->valuestring : "", cJSON_IsString(e) ? "\"" : "");
        bool seen = false;
        for (int32_t i = 0; i < idx->n_shards && !seen; i++) seen = strcmp(idx->shards[i], e->valuestring) == 0;
        if (seen) continue;
        if (idx->n_shards == KVCI_ST_MAX_SHARDS)
            return kvci_fail(KVC_EINVAL, "%s: more than %d shard files", idx->path, KVCI_ST_MAX_SHARDS);
        char path[4200];
        struct stat sb;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->valuestring) >= sizeof path)
            return kvci_fail(KVC_EINVAL, "%s: shard %.64s... (of tensor \"%s\"): path too long", idx->path,
                             e->valuestring, e->string);
        if (stat(path, &sb) != 0)
            return kvci_fail(KVC_EINVAL, "%s: shard %s (of tensor \"%s\") is missing (%s)", idx->path, e->valuestring,
                             e->string, strerror(errno));
        idx->shards[idx->n_shards++] = e->valuestring;
    }
    return KVC_OK;
}

kvc_status kvci_st_index_open(const char *dir, kvci_st_index *idx) {
    memset(idx, 0, sizeof *idx);
    if ((size_t)snprintf(idx->path, sizeof idx->path, "%s/%s", dir, SINGLE_NAME) >= sizeof idx->path)
        return kvci_fail(KVC_EINVAL, "%s: path too long", dir);
    struct stat sb;
    if (lstat(idx->path, &sb) == 0) { /* transformers reads model.safetensors alone when the directory has it */
        idx->shards[idx->n_shards++] = SINGLE_NAME;
        return KVC_OK;
    }
    if ((size_t)snprintf(idx->path, sizeof idx->path, "%s/%s", dir, INDEX_NAME) >= sizeof idx->path)
        return kvci_fail(KVC_EINVAL, "%s: path too long", dir);
    if (lstat(idx->path, &sb) != 0 && errno == ENOENT) return KVC_OK; /* not sharded by an index */
    char *text = NULL;
    size_t len = 0;
    KVC_TRY(kvci_read_file(idx->path, KVC_MAX_INPUT_BYTES, &text, &len));
    kvc_status st = kvci_json_parse_object(text, len, idx->path, &idx->root);
    char nul[600];
    if (st == KVC_OK && !kvci_json_check_nuls(text, len, idx->root, NULL, nul, sizeof nul))
        st = kvci_fail(KVC_EINVAL, "%s: %s", idx->path, nul);
    kvci_free(text);
    if (st == KVC_OK) {
        idx->weight_map = cJSON_GetObjectItemCaseSensitive(idx->root, "weight_map");
        if (!cJSON_IsObject(idx->weight_map) || !idx->weight_map->child)
            st = kvci_fail(KVC_EINVAL, "%s: weight_map must be an object naming each tensor's shard", idx->path);
    }
    if (st == KVC_OK) st = shards_of(idx, dir);
    if (st != KVC_OK) kvci_st_index_close(idx);
    return st;
}

void kvci_st_index_close(kvci_st_index *idx) {
    cJSON_Delete(idx->root);
    memset(idx, 0, sizeof *idx);
}
