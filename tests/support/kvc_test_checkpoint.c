/* kvc_test_write_deepseek_moe, kvc_test_write_qwen3_moe, kvc_test_write_gemma3, kvc_test_write_axk1_released,
 * kvc_test_write_falcon_h1_one_group (kvc_test_checkpoint.h): every tensor
 * the model visits, as the loader reads it (F32, the stored shape), in one safetensors file. */
#include "kvc_test_checkpoint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "kvc_test_util.h"
#include "model/model_internal.h"
#include "model/weights_internal.h"

typedef struct tensor {
    char name[200];
    int32_t ndim;
    int64_t shape[3];
    const float *data; /* numel floats, rows contiguous (f32 models have no padding inside a matrix) */
    int64_t stride;    /* floats from one [rows, cols] matrix to the next (count > 1) */
    int64_t count;     /* matrices written one after the other */
} tensor;

typedef struct collect {
    tensor t[1024];
    int n;
    int64_t fused_layer; /* this layer's routed experts in the fused form */
    const char *prefix;  /* the "model." tensors' names under this prefix instead (NULL: as they are) */
    const char *omit;    /* tensors whose names hold this are left out (NULL: none) */
    const char *rename; /* names as this model type's checkpoints hold them (kvci_checkpoint_name; NULL: as they are) */
} collect;

static int64_t numel(const int64_t *s, int32_t n) {
    int64_t k = 1;
    for (int32_t i = 0; i < n; i++) k *= s[i];
    return k;
}

static void add(collect *c, const char *name, int32_t ndim, const int64_t *shape, const float *data, int64_t count,
                int64_t stride) {
    assert_true(c->n < 1024);
    tensor *t = &c->t[c->n++];
    char renamed[200];
    if (c->rename) name = kvci_checkpoint_name(c->rename, name, renamed, sizeof renamed);
    if (c->prefix && strncmp(name, "model.", 6) == 0)
        snprintf(t->name, sizeof t->name, "%s%s", c->prefix, name + 6);
    else
        snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->data = data, t->count = count, t->stride = stride;
}

/* The virtual expert names "...experts.*.gate_proj.weight": per-expert modules, or (fused
 * layer) gate_up_proj [E, 2 Im, H] (two tensors' matrices interleaved by expert: written by the
 * gate visit once both are known) and down_proj [E, H, Im]. */
static kvc_status collect_fn(void *user, const kvc_wtensor *w) {
    collect *c = user;
    assert_false(w->transposed); /* DeepSeek and Qwen3-MoE store every matrix [out, in] */
    const float *data = w->mat ? (const float *)w->mat->data : *w->vec;
    const int64_t stride = w->mat ? kvci_wmat_matrix_bytes(w->mat) / 4 : 0;
    const char *star = strchr(w->name, '*');
    if (c->omit && strstr(w->name, c->omit)) return KVC_OK;
    if (!star) {
        add(c, w->name, w->ndim, w->shape, data, w->mat ? w->mat->count : 1, stride);
        return KVC_OK;
    }
    long long layer = -1;
    sscanf(w->name, "model.layers.%lld.", &layer);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%.*s", (int)(star - w->name), w->name);
    if (layer != c->fused_layer) {
        for (int64_t e = 0; e < w->shape[0]; e++) {
            char n[200];
            snprintf(n, sizeof n, "%s%lld%s", prefix, (long long)e, star + 1);
            add(c, n, 2, w->shape + 1, data + e * stride, 1, 0);
        }
        return KVC_OK;
    }
    char n[200];
    const bool down = strstr(star, "down_proj") != NULL, up = strstr(star, "up_proj") && !strstr(star, "gate");
    snprintf(n, sizeof n, "%s%s", prefix, down ? "down_proj" : up ? "gate_up_proj#up" : "gate_up_proj");
    add(c, n, 3, w->shape, data, w->shape[0], stride);
    return KVC_OK;
}

/* Bytes of tensor i in the file; the fused gate_up holds its gate and (next entry) up matrices. */
static int64_t file_floats(const collect *c, int i) {
    const tensor *t = &c->t[i];
    return strstr(t->name, "gate_up_proj") && !strstr(t->name, "#up") ? 2 * numel(t->shape, t->ndim)
                                                                      : numel(t->shape, t->ndim);
}

static void write_file(const collect *c, const char *path) {
    cJSON *h = cJSON_CreateObject();
    int64_t off = 0;
    for (int i = 0; i < c->n; i++) {
        const tensor *t = &c->t[i];
        if (strstr(t->name, "#up")) continue;
        cJSON *e = cJSON_AddObjectToObject(h, t->name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        int64_t shape[3];
        memcpy(shape, t->shape, sizeof shape);
        if (strstr(t->name, "gate_up_proj")) shape[1] *= 2;
        const double s[3] = {(double)shape[0], (double)shape[1], (double)shape[2]};
        cJSON_AddItemToObject(e, "shape", cJSON_CreateDoubleArray(s, t->ndim));
        const int64_t bytes = file_floats(c, i) * 4;
        const double offs[2] = {(double)off, (double)(off + bytes)};
        cJSON_AddItemToObject(e, "data_offsets", cJSON_CreateDoubleArray(offs, 2));
        off += bytes;
    }
    char *text = cJSON_PrintUnformatted(h);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const uint64_t len = strlen(text);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(len >> (8 * i));
    assert_int_equal(fwrite(le, 1, 8, f), 8);
    assert_int_equal(fwrite(text, 1, len, f), len);
    for (int i = 0; i < c->n; i++) {
        const tensor *t = &c->t[i];
        if (strstr(t->name, "#up")) continue;
        /* a matrix of E (count), or the whole tensor (a conv's [C, 1, L] too) */
        const int64_t per = t->ndim == 3 && t->count > 1 ? t->shape[1] * t->shape[2] : numel(t->shape, t->ndim);
        for (int64_t e = 0; e < t->count; e++) {
            assert_int_equal(fwrite(t->data + e * t->stride, 4, (size_t)per, f), (size_t)per);
            if (strstr(t->name, "gate_up_proj")) { /* the up matrix of expert e follows its gate */
                const tensor *u = &c->t[i + 1];
                assert_int_equal(fwrite(u->data + e * u->stride, 4, (size_t)per, f), (size_t)per);
            }
        }
    }
    assert_int_equal(fclose(f), 0);
    free(text);
    cJSON_Delete(h);
}

/* oracle `family`'s config.json, its first `from` (when not NULL) replaced by `to` (as long), and a
 * random model of it (seed) with layer 2's routed experts fused and the "model." tensors under `prefix`
 * (NULL: as they are), renamed as the model type's checkpoints name them (rename), in a fresh directory dir[cap]. */
static void write_random(const char *family, const char *from, const char *to, const char *prefix, uint64_t seed,
                         char *dir, size_t cap, const char *omit, bool rename) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/kvc_moe_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    char src[1024], path[1200];
    kvc_test_oracle_dir(family, src, sizeof src);
    snprintf(path, sizeof path, "%s/config.json", src);
    char *text = kvc_test_read_text(path), *k = from ? strstr(text, from) : NULL;
    assert_true(!from || (k && strlen(from) == strlen(to)));
    if (k) memcpy(k, to, strlen(to));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
    free(text);
    kvc_model_config cfg;
    kvc_model *m = NULL;
    assert_int_equal(kvc_model_config_load(dir, &cfg), KVC_OK);
    assert_int_equal(kvc_model_create_random(&cfg, seed, &m), KVC_OK);
    collect *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->fused_layer = 2, c->prefix = prefix, c->omit = omit, c->rename = rename ? cfg.model_type : NULL;
    assert_int_equal(kvci_model_visit_weights(m, collect_fn, c), KVC_OK);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_file(c, path);
    free(c);
    kvc_model_destroy(m);
}

void kvc_test_write_deepseek_moe(uint64_t seed, char *dir, size_t cap) {
    write_random("deepseek_v3", "\"first_k_dense_replace\": 3", "\"first_k_dense_replace\": 1", NULL, seed, dir, cap,
                 NULL, false);
}

void kvc_test_write_qwen3_moe(uint64_t seed, char *dir, size_t cap) {
    write_random("qwen3_moe", NULL, NULL, NULL, seed, dir, cap, NULL, false);
}

void kvc_test_write_gemma3(uint64_t seed, const char *prefix, char *dir, size_t cap) {
    write_random("gemma3", NULL, NULL, prefix, seed, dir, cap, NULL, false);
}

void kvc_test_write_axk1_released(uint64_t seed, char *dir, size_t cap) {
    write_random("axk1", NULL, NULL, NULL, seed, dir, cap, "e_score_correction_bias", false);
}

void kvc_test_write_falcon_h1_one_group(uint64_t seed, char *dir, size_t cap) {
    write_random("falcon_h1", "\"mamba_n_groups\": 2", "\"mamba_n_groups\": 1", NULL, seed, dir, cap, NULL, true);
}

void kvc_test_remove_checkpoint(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    rmdir(dir);
}
