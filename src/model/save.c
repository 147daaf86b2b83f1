/* kvci_model_save: a model whose matrices are quantized, written as a model
 * directory that kvc_model_load reads back without quantizing again
 * (docs/runtime.md, "Saving a quantized copy"). One safetensors file: every
 * vector as F32 under its name; every matrix NAME as NAME.qweight (U8
 * [count, integer bytes], the packed integers of gemm_quant.h) and NAME.scales
 * (F16 [count, scales]); __metadata__ holds kvcache.format and, per matrix,
 * kvcache.dtype.NAME ("q8_0" or "q4_0"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "model/model_internal.h"
#include "model/weights_internal.h"

typedef struct save_ctx {
    bool norm_offset;     /* Gemma: the norms hold 1 + w (prepare.c); w is written */
    cJSON *header, *meta; /* the header pass */
    int64_t offset;       /* data bytes laid out so far */
    FILE *out;            /* the data pass; NULL in the header pass */
} save_ctx;

/* The header entry of tensor `name`: dtype, shape dims[0..ndim) (ndim <= KVC_MAX_DIMS; LFM2's conv taps [H, 1,
 * L] have 3), its bytes at the next offset. */
static kvc_status add_entry(save_ctx *c, const char *name, const char *dtype, const int64_t *dims, int32_t ndim,
                            int64_t bytes) {
    double shape[KVC_MAX_DIMS] = {0};
    for (int32_t i = 0; i < ndim && i < KVC_MAX_DIMS; i++) shape[i] = (double)dims[i];
    const double off[2] = {(double)c->offset, (double)(c->offset + bytes)};
    cJSON *e = cJSON_AddObjectToObject(c->header, name);
    bool ok = e && cJSON_AddStringToObject(e, "dtype", dtype);
    cJSON *sh = ok ? cJSON_CreateDoubleArray(shape, ndim) : NULL;
    ok = sh && cJSON_AddItemToObject(e, "shape", sh);
    if (!ok) cJSON_Delete(sh); /* not attached */
    cJSON *of = ok ? cJSON_CreateDoubleArray(off, 2) : NULL;
    ok = of && cJSON_AddItemToObject(e, "data_offsets", of);
    if (!ok) {
        cJSON_Delete(of);
        return kvci_fail(KVC_ENOMEM, "model_save: out of memory for the header");
    }
    c->offset += bytes;
    return KVC_OK;
}

static kvc_status write_bytes(save_ctx *c, const void *p, int64_t n) {
    if (fwrite(p, 1, (size_t)n, c->out) != (size_t)n)
        return kvci_fail(KVC_EINVAL, "model_save: write failed (%s)", strerror(errno));
    return KVC_OK;
}

/* A Gemma norm's checkpoint values w from its a = 1 + w, in runs of 256: the reload's 1 + (a - 1) is a
 * again for every float32 w but one (w = -16777218: a = -2^24 after a tie to even, a - 1 ties back
 * to -2^24), which is refused, as is any element whose reload would not give its bits back. */
static kvc_status write_norm(save_ctx *c, const kvc_wtensor *t, const float *v, int64_t n) {
    float buf[256];
    for (int64_t i = 0; i < n; i += 256) {
        const int64_t k = n - i < 256 ? n - i : 256;
        for (int64_t j = 0; j < k; j++) {
            buf[j] = v[i + j] - 1.0f;
            if (1.0f + buf[j] != v[i + j])
                return kvci_fail(KVC_EINVAL, "model_save: norm \"%s\"[%lld] = 1 + w does not give w back exactly",
                                 t->name, (long long)(i + j));
        }
        KVC_TRY(write_bytes(c, buf, k * 4));
    }
    return KVC_OK;
}

static kvc_status save_fn(void *user, const kvc_wtensor *t) {
    save_ctx *c = user;
    const size_t n_len = strlen(t->name), g_len = strlen(KVC_GDN_NORM);
    const bool plain = n_len >= g_len && strcmp(t->name + n_len - g_len, KVC_GDN_NORM) == 0; /* held as w */
    if (!t->mat && c->out && c->norm_offset && t->init == KVC_WINIT_NORM && !plain)
        return write_norm(c, t, *t->vec, t->shape[0]);
    if (!t->mat) {
        int64_t n = 1;
        for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i];
        const char *star = strchr(t->name, '*');
        if (c->out || star == NULL)
            return c->out ? write_bytes(c, *t->vec, n * 4) : add_entry(c, t->name, "F32", t->shape, t->ndim, n * 4);
        /* per-head vectors stacked [heads, D] (StableLM's q/k LayerNorms): the checkpoint's modules prefix{h}suffix,
         * [D] each and in order, which the loader stacks back (the name with its '*' is no tensor it reads) */
        char name[320];
        for (int64_t h = 0; h < t->shape[0]; h++) {
            snprintf(name, sizeof name, "%.*s%lld%s", (int)(star - t->name), t->name, (long long)h, star + 1);
            KVC_TRY(add_entry(c, name, "F32", t->shape + 1, t->ndim - 1, n / t->shape[0] * 4));
        }
        return KVC_OK;
    }
    const kvc_wmat *w = t->mat;
    int64_t ib, ns;
    if (!kvci_wmat_quant_parts(w, &ib, &ns))
        return kvci_fail(KVC_EINVAL, "model_save: matrix \"%s\" is %s, not quantized (load with q8_0 or q4_0 weights)",
                         t->name, kvci_wmat_dtype_name(w->dtype));
    if (c->out) {
        for (int64_t e = 0; e < w->count; e++) KVC_TRY(write_bytes(c, kvci_wmat_at(w, e).data, ib));
        for (int64_t e = 0; e < w->count; e++)
            KVC_TRY(write_bytes(c, (const char *)kvci_wmat_at(w, e).data + ib, ns * 2));
        return KVC_OK;
    }
    char name[320], key[320];
    snprintf(name, sizeof name, "%s.qweight", t->name);
    KVC_TRY(add_entry(c, name, "U8", (const int64_t[2]){w->count, ib}, 2, w->count * ib));
    snprintf(name, sizeof name, "%s.scales", t->name);
    KVC_TRY(add_entry(c, name, "F16", (const int64_t[2]){w->count, ns}, 2, w->count * ns * 2));
    snprintf(key, sizeof key, "kvcache.dtype.%s", t->name);
    if (!cJSON_AddStringToObject(c->meta, key, kvci_wmat_dtype_name(w->dtype)))
        return kvci_fail(KVC_ENOMEM, "model_save: out of memory for the header");
    return KVC_OK;
}

/* Writes the header and the data of m to the open file out. */
static kvc_status write_model(kvc_model *m, FILE *out) {
    save_ctx c = {.norm_offset = m->cfg.gemma_norms, .header = cJSON_CreateObject()};
    c.meta = cJSON_AddObjectToObject(c.header, "__metadata__");
    kvc_status st = c.meta && cJSON_AddStringToObject(c.meta, "kvcache.format", KVC_QUANT_FORMAT)
                        ? KVC_OK
                        : kvci_fail(KVC_ENOMEM, "model_save: out of memory for the header");
    if (st == KVC_OK) st = kvci_model_visit_weights(m, save_fn, &c);
    char *text = st == KVC_OK ? cJSON_PrintUnformatted(c.header) : NULL;
    cJSON_Delete(c.header);
    if (st == KVC_OK && !text) st = kvci_fail(KVC_ENOMEM, "model_save: out of memory for the header");
    if (st == KVC_OK) {
        const size_t len = strlen(text), padded = (len + 7) / 8 * 8; /* the data 8-byte aligned */
        uint8_t hl[8];
        for (int i = 0; i < 8; i++) hl[i] = (uint8_t)(padded >> (8 * i));
        c.out = out;
        st = write_bytes(&c, hl, 8);
        if (st == KVC_OK) st = write_bytes(&c, text, (int64_t)len);
        if (st == KVC_OK) st = write_bytes(&c, "       ", (int64_t)(padded - len));
        if (st == KVC_OK) st = kvci_model_visit_weights(m, save_fn, &c);
    }
    kvci_free(text);
    return st;
}

static const char *const COPIED[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                                     "expected.json"}; /* config.json required */

/* Copies src_dir/name to out_dir/name; absent optional files are skipped. */
static kvc_status copy_file(const char *src_dir, const char *out_dir, const char *name, bool optional) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/%s", src_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", out_dir, name);
    if (optional && access(src, F_OK) != 0) return KVC_OK;
    char *text = NULL;
    size_t len = 0;
    KVC_TRY(kvci_read_file(src, KVC_MAX_INPUT_BYTES, &text, &len));
    FILE *f = fopen(dst, "wbx");
    const bool ok = f && fwrite(text, 1, len, f) == len;
    kvci_free(text);
    if (f && fclose(f) != 0) return kvci_fail(KVC_EINVAL, "model_save: cannot write %s (%s)", dst, strerror(errno));
    return ok ? KVC_OK : kvci_fail(KVC_EINVAL, "model_save: cannot write %s (%s)", dst, strerror(errno));
}

/* Removes what a failed save wrote, and out_dir it created. */
static void remove_partial(const char *out_dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    remove(path);
    for (size_t i = 0; i < sizeof COPIED / sizeof COPIED[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, COPIED[i]);
        remove(path);
    }
    rmdir(out_dir);
}

kvc_status kvci_model_save(kvc_model *m, const char *src_dir, const char *out_dir) {
    if (mkdir(out_dir, 0755) != 0)
        return kvci_fail(KVC_EINVAL, "model_save: cannot create %s (%s); it must not exist yet", out_dir,
                         strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    FILE *out = fopen(path, "wbx");
    if (!out) {
        const kvc_status st = kvci_fail(KVC_EINVAL, "model_save: cannot create %s (%s)", path, strerror(errno));
        rmdir(out_dir);
        return st;
    }
    kvc_status st = write_model(m, out);
    if (fclose(out) != 0 && st == KVC_OK)
        st = kvci_fail(KVC_EINVAL, "model_save: cannot write %s (%s)", path, strerror(errno));
    for (size_t i = 0; i < sizeof COPIED / sizeof COPIED[0] && st == KVC_OK; i++)
        st = copy_file(src_dir, out_dir, COPIED[i], i > 0);
    if (st != KVC_OK) remove_partial(out_dir); /* no half-written model stays behind */
    return st;
}
