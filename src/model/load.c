/* kvc_model_load: config.json + *.safetensors of a model directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/model_internal.h"
#include "model/weights_internal.h"

typedef struct load_ctx {
    const kvc_safetensors *st;
    bool check_only;        /* compare names, shapes and dtypes; read nothing */
    kvc_wmat_dtype weights; /* the GEMM operands' dtype asked (kvci_wmat_dtype_for) */
    bool packed;            /* the files are a saved quantized copy (kvci_model_save) */
    const char *text;       /* a multimodal checkpoint's prefix of the text model's tensors in place of "model."
                             * (text_prefix); NULL: none */
    const char *model_type; /* the checkpoint's names are its (kvci_checkpoint_name); NULL: a saved copy's */
    float *staging;         /* a GEMM operand in f32 on its way to its dtype: grown to the largest, */
    int64_t staging_n;      /* reused (its pages faulted once, not per tensor) */
} load_ctx;

/* c's staging buffer, at least n floats. */
static float *staging(load_ctx *c, int64_t n) {
    if (n <= c->staging_n) return c->staging;
    kvci_free(c->staging);
    c->staging = kvci_malloc((size_t)n * sizeof(float));
    c->staging_n = c->staging ? n : 0;
    return c->staging;
}

/* "model.layers.3.mlp.experts.*.gate_proj.weight" -> prefix "model.layers.3.mlp.experts." and suffix
 * ".gate_proj.weight" */
static void split_star(const char *name, char *prefix, size_t cap, const char **suffix) {
    const char *star = strchr(name, '*');
    size_t n = (size_t)(star - name);
    if (n >= cap) n = cap - 1;
    memcpy(prefix, name, n);
    prefix[n] = '\0';
    *suffix = star + 1;
}

/* The part t->split names of tensor `name`, of shape `shape` as stored ([E, ...] per expert when
 * `per_expert`: the split's dim then counts one expert's dims); dst NULL: checks only. */
static kvc_status read_part(const load_ctx *c, const char *name, int32_t ndim, const int64_t *shape,
                            const kvc_wsplit *sp, int64_t offset, float *dst) {
    if (sp->runs == 0)
        return kvci_safetensors_read_part(c->st, name, ndim, shape, sp->dim, sp->full, sp->start + offset,
                                          c->check_only ? NULL : dst);
    int64_t part[KVC_MAX_DIMS], inner = 1, at = 0; /* runs of dim 0, stacked in dst */
    for (int32_t i = 0; i < ndim && i < KVC_MAX_DIMS; i++) part[i] = shape[i], inner *= i > 0 ? shape[i] : 1;
    for (int32_t r = 0; r < sp->runs; r++) {
        part[0] = sp->run_len[r];
        KVC_TRY(kvci_safetensors_read_part(c->st, name, ndim, part, 0, sp->full, sp->run_start[r] + offset,
                                           c->check_only || !dst ? NULL : dst + at * inner));
        at += sp->run_len[r];
    }
    return KVC_OK;
}

/* A tensor [N, ...] stacked from the per-module tensors prefix{i}suffix of shape [...] (routed experts, StableLM's
 * per-head norms), this rank's part: split along dim 0, the modules split.start .. + N of split.full; along another
 * dim, that dim of each module. A module past the last is refused. *dtype: the modules' dtype (NULL, held as f32,
 * when they differ: module 0's BF16 would round another's F16 or F32 values). */
static kvc_status load_modules(const load_ctx *c, const kvc_wtensor *t, const char *prefix, const char *suffix,
                               const char *what, float *dst, const char **dtype) {
    const int64_t *shape = t->shape, N = shape[0];
    int64_t per = 1;
    for (int32_t i = 1; i < t->ndim; i++) per *= shape[i];
    const bool by_module = t->split.dim == 0;
    const int64_t first = by_module ? t->split.start : 0, total = by_module ? t->split.full : N;
    char extra[200];
    snprintf(extra, sizeof extra, "%s%lld%s", prefix, (long long)total, suffix);
    if (kvc_safetensors_has(c->st, extra))
        return kvci_fail(KVC_EINVAL, "unexpected tensor \"%s\": the config has %lld %s", extra, (long long)total, what);
    kvc_wsplit one = t->split; /* a module has no dim 0 */
    one.dim = by_module ? -1 : one.dim > 0 ? one.dim - 1 : one.dim;
    *dtype = NULL;
    for (int64_t i = 0; i < N; i++) {
        char n[200];
        snprintf(n, sizeof n, "%s%lld%s", prefix, (long long)(first + i), suffix);
        KVC_TRY(read_part(c, n, t->ndim - 1, shape + 1, &one, 0, dst ? dst + i * per : NULL));
        const char *d = kvci_safetensors_dtype(c->st, n);
        if (i == 0) *dtype = d;
        if (*dtype && strcmp(d, *dtype) != 0) *dtype = NULL;
    }
    return KVC_OK;
}

/* Routed experts [E, rows, cols] (this rank's part) of a virtual name (weights_internal.h): per-module
 * tensors, or for the *_proj names the fused [E, 2 I, H] / [E, H, I] form (transposed: [E, H, 2 I] / [E, I, H],
 * t->shape as stored); *dtype: the source's. */
static kvc_status load_experts(const load_ctx *c, const kvc_wtensor *t, const char *name, float *dst,
                               const char **dtype) {
    char prefix[160];
    const char *suffix;
    split_star(name, prefix, sizeof prefix, &suffix);
    char first[200];
    snprintf(first, sizeof first, "%s0%s", prefix, suffix);
    if (kvc_safetensors_has(c->st, first)) return load_modules(c, t, prefix, suffix, "experts", dst, dtype);
    if (!strstr(suffix, "_proj.")) return kvci_fail(KVC_EINVAL, "missing tensor \"%s\"", first);
    char fused[200], saved[320];
    const bool down = strstr(suffix, "down_proj") != NULL;
    snprintf(fused, sizeof fused, "%s%s", prefix, down ? "down_proj" : "gate_up_proj");
    const char *as_saved = c->model_type ? kvci_checkpoint_name(c->model_type, fused, saved, sizeof saved) : fused;
    if (!kvc_safetensors_has(c->st, fused) && kvc_safetensors_has(c->st, as_saved)) /* Aria's fc1 / fc2 */
        snprintf(fused, sizeof fused, "%s", as_saved);
    if (!kvc_safetensors_has(c->st, fused))
        return kvci_fail(KVC_EINVAL, "missing tensor \"%s\" (nor the fused \"%s\")", first, fused);
    *dtype = kvci_safetensors_dtype(c->st, fused);
    const int64_t *shape = t->shape;
    if (down) return read_part(c, fused, 3, shape, &t->split, 0, dst);
    /* gate rows first, then up rows (concatenated, MF 4.5): this rank's rows of the gate or up half; stored
     * transposed (Llama 4's [E, H, 2I]), the columns of that half */
    const int32_t hd = t->transposed ? 2 : 1;
    const int64_t I = t->split.dim == hd ? t->split.full : shape[hd];
    const kvc_wsplit half = {.dim = hd, .full = 2 * I, .start = t->split.dim == hd ? t->split.start : 0};
    return read_part(c, fused, 3, shape, &half, strstr(suffix, "up_proj") ? I : 0, dst);
}

/* A matrix of a saved quantized copy: its dtype from the metadata (check pass; the dtype asked
 * must be the checkpoint's or give the same by kvci_wmat_dtype_for), its packed integers and
 * scales copied into the arena as they are. */
static kvc_status load_packed(const load_ctx *c, const kvc_wtensor *t) {
    char key[320], qname[320], sname[320];
    snprintf(key, sizeof key, "kvcache.dtype.%s", t->name);
    snprintf(qname, sizeof qname, "%s.qweight", t->name);
    snprintf(sname, sizeof sname, "%s.scales", t->name);
    kvc_wmat *w = t->mat;
    if (c->check_only) {
        const char *d = kvci_safetensors_meta(c->st, key);
        kvc_wmat_dtype wd = KVC_WMAT_CHECKPOINT;
        if (!d || kvci_wmat_dtype_parse(d, &wd) != KVC_OK || (wd != KVC_WMAT_Q8_0 && wd != KVC_WMAT_Q4_0))
            return kvci_fail(KVC_EINVAL,
                             "model_load: a saved quantized copy needs metadata %s naming q8_0 or q4_0%s%s%s", key,
                             d ? " (got \"" : "", d ? d : "", d ? "\")" : "");
        if (c->weights != KVC_WMAT_CHECKPOINT && kvci_wmat_dtype_for(c->weights, wd, t->name) != wd)
            return kvci_fail(KVC_EINVAL,
                             "model_load: \"%s\" is saved as %s; this copy loads as checkpoint (weights %s would "
                             "need the original checkpoint)",
                             t->name, d, kvci_wmat_dtype_name(c->weights));
        w->dtype = wd;
    }
    int64_t ib, ns;
    kvci_wmat_quant_parts(w, &ib, &ns);
    const int64_t qs[2] = {w->count, ib}, ss[2] = {w->count, ns};
    const void *q, *sc;
    KVC_TRY(kvci_safetensors_view(c->st, qname, "U8", 2, qs, &q));
    KVC_TRY(kvci_safetensors_view(c->st, sname, "F16", 2, ss, &sc));
    for (int64_t e = 0; !c->check_only && e < w->count; e++) {
        char *dst = kvci_wmat_at(w, e).data;
        memcpy(dst, (const char *)q + e * ib, (size_t)ib);
        memcpy(dst + ib, (const char *)sc + e * ns * 2, (size_t)ns * 2);
        memset(dst + ib + ns * 2, 0, (size_t)(kvci_wmat_matrix_bytes(w) - ib - ns * 2)); /* padding, as packed */
    }
    return KVC_OK;
}

/* The prefix under which a multimodal checkpoint keeps its text model's "model." tensors, the others
 * (the vision tower, the projector) left unread: transformers 5's model.language_model. (Gemma 3's
 * Gemma3ForConditionalGeneration) or the hub's earlier language_model.model., Emu3's model.text_model. or its hub's
 * text_model.model.; NULL when the file has model.embed_tokens.weight or none of them. */
static const char *text_prefix(const kvc_safetensors *st) {
    static const char *const prefixes[] = {"model.language_model.", "language_model.model.", "model.text_model.",
                                           "text_model.model."};
    if (kvc_safetensors_has(st, "model.embed_tokens.weight")) return NULL;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char n[64];
        snprintf(n, sizeof n, "%sembed_tokens.weight", prefixes[i]);
        if (kvc_safetensors_has(st, n)) return prefixes[i];
    }
    return NULL;
}

/* Whether the file holds `name`, for a virtual expert name (weights_internal.h) its expert 0 or its fused form. */
static bool has_module(const load_ctx *c, const char *name) {
    const char *star = strchr(name, '*');
    if (!star) return kvc_safetensors_has(c->st, name);
    char n[320];
    snprintf(n, sizeof n, "%.*s0%s", (int)(star - name), name, star + 1);
    if (kvc_safetensors_has(c->st, n)) return true;
    snprintf(n, sizeof n, "%.*s%s", (int)(star - name), name, strstr(star, "down_proj") ? "down_proj" : "gate_up_proj");
    return kvc_safetensors_has(c->st, n);
}

/* The file's name of tensor `name` into buf: its model type's (kvci_checkpoint_name); under c->text in place of
 * "model.", and the head as lm_head.weight (transformers 5) or, in the hub's earlier layout, beside the text model
 * (language_model.lm_head.weight; Emu3's text_model.lm_head.weight). */
static const char *file_name(const load_ctx *c, const char *name, char *buf, size_t cap) {
    char own[320], other[320], as_is[320];
    if (c->model_type) { /* or the name transformers renames on load, when the file holds that one */
        const char *ckpt = kvci_checkpoint_name(c->model_type, name, own, sizeof own);
        const char *alt = kvci_checkpoint_unconverted(c->model_type, name, as_is, sizeof as_is);
        name = alt && !has_module(c, ckpt) && has_module(c, alt) ? alt : ckpt;
    }
    const char *bare = c->model_type ? kvci_checkpoint_bare(c->model_type, name, other, sizeof other) : NULL;
    if (bare && !has_module(c, name) && has_module(c, bare)) name = bare;
    if (c->text && strncmp(name, "model.", 6) == 0)
        snprintf(buf, cap, "%s%s", c->text, name + 6);
    else if (c->text && strcmp(name, "lm_head.weight") == 0 && !kvc_safetensors_has(c->st, name))
        snprintf(buf, cap, "%s.%s", strstr(c->text, "text_model") ? "text_model" : "language_model", name);
    else
        snprintf(buf, cap, "%s", name);
    return buf;
}

/* Where the file holds t: under its own name (*sp = t->split), else inside t->fused (Phi-3's qkv_proj,
 * gate_up_proj, Granite MoE's input_linear: this rank's rows of t's part along the rows' dim, 0 of a matrix or
 * vector and 1 of E experts' [E, rows, cols], GPT-2's transposed Conv1D c_attn along its last; *name the fused
 * tensor's file name in buf; in blocks, GPT-NeoX's, read_blocks reads them). */
static kvc_status fused_source(const load_ctx *c, const kvc_wtensor *t, const char **name, char *buf, size_t cap,
                               kvc_wsplit *sp) {
    *sp = t->split;
    if (!t->fused.name || kvc_safetensors_has(c->st, *name)) return KVC_OK;
    const char *fused = file_name(c, t->fused.name, buf, cap);
    /* the operand's rows: GPT-2's Conv1D keeps them last, E experts' [E, rows, cols] in dim 1 */
    const int32_t rows = t->transposed ? t->ndim - 1 : t->ndim > 2 ? t->ndim - 2 : 0;
    if (!kvc_safetensors_has(c->st, fused))
        return kvci_fail(KVC_EINVAL, "missing tensor \"%s\" (nor the fused \"%s\")", *name, fused);
    if (t->split.dim >= 0 && t->split.dim != rows) /* weights.c splits the operands a checkpoint fuses by rows only */
        return kvci_fail(KVC_EINVAL, "model_load: \"%s\" split along dim %d cannot be read from \"%s\"", *name,
                         (int)t->split.dim, fused);
    *sp = (kvc_wsplit){
        .dim = rows, .full = t->fused.rows, .start = t->fused.at + (t->split.dim == rows ? t->split.start : 0)};
    *name = fused;
    return KVC_OK;
}

/* t (this rank's part, dst NULL: checks only) from the fused tensor `fused` whose blocks hold it (t->fused.block
 * > 0: the q, k or v rows of each KV head's group, weights.c), run by run: a rank's part may start or end inside a
 * block (its query heads a part of one group's). */
static kvc_status read_blocks(const load_ctx *c, const kvc_wtensor *t, const char *fused, float *dst) {
    const kvc_wfused *f = &t->fused;
    const int64_t rows = t->shape[0], cols = t->ndim > 1 ? t->shape[1] : 1;
    const int64_t first = t->split.dim == 0 ? t->split.start : 0; /* this rank's first row of the operand */
    for (int64_t r = 0; r < rows;) {
        const int64_t in = (first + r) % f->block, n = f->block - in < rows - r ? f->block - in : rows - r;
        const int64_t part[2] = {n, cols};
        const kvc_wsplit sp = {.dim = 0, .full = f->rows, .start = (first + r) / f->block * f->stride + f->at + in};
        KVC_TRY(read_part(c, fused, t->ndim, part, &sp, 0, dst ? dst + r * cols : NULL));
        r += n;
    }
    return KVC_OK;
}

/* t (this rank's rows, sp: all, one range or runs of dim 0; dst NULL: checks only) from the tensors t->parts one
 * after the other along dim 0, each as long as the file holds it (transformers' cut of OLMo Hybrid's conv1d in equal
 * thirds skips a part it leaves empty); *dtype: the parts' (NULL when they differ). */
static kvc_status read_concat(const load_ctx *c, const kvc_wtensor *t, const char *name, const kvc_wsplit *sp,
                              float *dst, const char **dtype) {
    char names[KVC_WPARTS_MAX][320];
    int64_t len[KVC_WPARTS_MAX], total = 0, inner = 1, part[KVC_MAX_DIMS];
    const int64_t full = sp->dim == 0 ? sp->full : t->shape[0];
    if (sp->dim > 0)
        return kvci_fail(KVC_EINVAL, "model_load: \"%s\" split along dim %d cannot be read from its parts", name,
                         (int)sp->dim);
    for (int32_t i = 0; i < t->ndim && i < KVC_MAX_DIMS; i++) part[i] = t->shape[i], inner *= i > 0 ? t->shape[i] : 1;
    for (int32_t p = 0; p < t->n_parts; p++) {
        file_name(c, t->parts[p], names[p], sizeof names[p]);
        len[p] = kvci_safetensors_dim0(c->st, names[p]);
        len[p] = len[p] > 0 ? len[p] : 0;
        const char *d = len[p] ? kvci_safetensors_dtype(c->st, names[p]) : NULL;
        if (d && !total) *dtype = d;
        if (d && *dtype && strcmp(d, *dtype) != 0) *dtype = NULL;
        total += len[p];
    }
    if (total == 0) return kvci_fail(KVC_EINVAL, "missing tensor \"%s\" (nor its parts \"%s\", ...)", name, names[0]);
    if (total != full)
        return kvci_fail(KVC_EINVAL, "model_load: the parts of \"%s\" (\"%s\", ...) hold %lld rows, expected %lld",
                         name, names[0], (long long)total, (long long)full);
    const kvc_wsplit one = {.runs = 1, .run_start = {sp->dim == 0 ? sp->start : 0}, .run_len = {t->shape[0]}};
    const kvc_wsplit *runs = sp->runs > 0 ? sp : &one;
    int64_t at = 0; /* rows written */
    for (int32_t r = 0; r < runs->runs; r++)
        for (int64_t p = 0, base = 0, row = runs->run_start[r], left = runs->run_len[r]; left > 0; base += len[p++]) {
            if (p == t->n_parts) return kvci_fail(KVC_EINVAL, "model_load: \"%s\": a run past its parts", name);
            if (row >= base + len[p]) continue;
            part[0] = base + len[p] - row < left ? base + len[p] - row : left;
            KVC_TRY(kvci_safetensors_read_part(c->st, names[p], t->ndim, part, 0, len[p], row - base,
                                               dst ? dst + at * inner : NULL));
            at += part[0], row += part[0], left -= part[0];
        }
    return KVC_OK;
}

/* Vectors straight into the arena; a GEMM operand through an f32 buffer into its
 * dtype (check pass: kvci_wmat_dtype_for the one asked and the file's, BF16, F16 or else f32). Each
 * reads this rank's part (t->split); a row-parallel bias on ranks > 0 is checked and held as zeros. */
static kvc_status load_fn(void *user, const kvc_wtensor *t) {
    load_ctx *c = user;
    char buf[320];
    const char *name = file_name(c, t->name, buf, sizeof buf);
    if (!c->packed && strcmp(t->name, "lm_head.weight") == 0 && !kvc_safetensors_has(c->st, name))
        return kvci_fail(KVC_EINVAL, /* the embedding was taken in its place: transformers leaves such a head random */
                         "missing tensor \"%s\": tie_word_embeddings is false (or absent, the family's default), so "
                         "the head is a matrix of its own",
                         name);
    if (t->mat && c->packed) return load_packed(c, t);
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++) n *= t->shape[i]; /* bounded by the arena sizing */
    if (!t->mat && strchr(name, '*')) {                     /* per-head vectors stacked [heads, D] */
        char prefix[160];
        const char *suffix, *dtype;
        split_star(name, prefix, sizeof prefix, &suffix);
        return load_modules(c, t, prefix, suffix, "heads", c->check_only ? NULL : *t->vec, &dtype);
    }
    char fbuf[320];
    kvc_wsplit sp;
    KVC_TRY(fused_source(c, t, &name, fbuf, sizeof fbuf, &sp));
    const bool blocks = name == fbuf && t->fused.block > 0;
    const bool concat = t->n_parts > 0 && !kvc_safetensors_has(c->st, name);
    const char *dtype = concat ? NULL : kvci_safetensors_dtype(c->st, name);
    if (!t->mat && t->split.absent_zero && !kvc_safetensors_has(c->st, name)) {
        if (!c->check_only) memset(*t->vec, 0, (size_t)n * sizeof(float));
        return KVC_OK;
    }
    if (!t->mat) {
        float *dst = c->check_only ? NULL : *t->vec;
        KVC_TRY(concat   ? read_concat(c, t, name, &sp, dst, &dtype)
                : blocks ? read_blocks(c, t, name, dst)
                         : read_part(c, name, t->ndim, t->shape, &sp, 0, *t->vec));
        if (t->split.zero && !c->check_only) memset(*t->vec, 0, (size_t)n * sizeof(float));
        return KVC_OK;
    }
    float *tmp = c->check_only ? NULL : staging(c, n);
    if (!c->check_only && !tmp) return kvci_fail(KVC_ENOMEM, "model_load: out of memory for \"%s\"", name);
    kvc_status s = strchr(name, '*') ? load_experts(c, t, name, tmp, &dtype)
                   : concat          ? read_concat(c, t, name, &sp, tmp, &dtype)
                   : blocks          ? read_blocks(c, t, name, tmp)
                                     : read_part(c, name, t->ndim, t->shape, &sp, 0, tmp);
    if (s == KVC_OK && c->check_only) {
        const kvc_wmat_dtype stored = !dtype                       ? KVC_WMAT_F32
                                      : strcmp(dtype, "BF16") == 0 ? KVC_WMAT_BF16
                                      : strcmp(dtype, "F16") == 0  ? KVC_WMAT_F16
                                                                   : KVC_WMAT_F32;
        t->mat->dtype = kvci_wmat_dtype_for(c->weights, stored, t->name);
    }
    if (s == KVC_OK && !c->check_only) kvci_wmat_fill(t->mat, tmp, t->transposed);
    return s;
}

static kvc_status load(const char *dir, const kvc_model_tp *tp, kvc_wmat_dtype weights, kvc_model **out);

kvc_status kvc_model_load(const char *dir, kvc_model **out) {
    return kvci_model_load_as(dir, KVC_WMAT_CHECKPOINT, out);
}

kvc_status kvc_model_load_weights(const char *dir, const char *weights, kvc_model **out) {
    if (out) *out = NULL;
    kvc_wmat_dtype wd = KVC_WMAT_CHECKPOINT;
    if (weights && kvci_wmat_dtype_parse(weights, &wd) != KVC_OK) {
        char why[256]; /* the parse's message names the dtype and the choices */
        snprintf(why, sizeof why, "%s", kvc_last_error());
        return kvci_fail(KVC_EINVAL, "model_load: weights: %s", why);
    }
    return kvci_model_load_as(dir, wd, out);
}

kvc_status kvci_model_load_as(const char *dir, kvc_wmat_dtype weights, kvc_model **out) {
    return load(dir, NULL, weights, out);
}

kvc_status kvci_model_load_tp(const char *dir, const kvc_model_tp *tp, kvc_wmat_dtype weights, kvc_model **out) {
    if (!tp) return kvci_fail(KVC_EINVAL, "model_load: tp must not be NULL");
    return load(dir, tp, weights, out);
}

static kvc_status load(const char *dir, const kvc_model_tp *tp, kvc_wmat_dtype weights, kvc_model **out) {
    if (!dir || !out) return kvci_fail(KVC_EINVAL, "model_load: dir and out must not be NULL");
    *out = NULL;
    if (weights < KVC_WMAT_CHECKPOINT || weights >= KVC_WMAT_COUNT)
        return kvci_fail(KVC_EINVAL, "model_load: weight dtype %d is not one of kvc_wmat_dtype", (int)weights);
    if (weights == KVC_WMAT_F16) /* as kvci_wmat_dtype_parse: bf16 or f32 matrices would be rounded to f16 */
        return kvci_fail(KVC_EINVAL, "model_load: weight dtype f16 is kept from an f16 checkpoint "
                                     "(KVC_WMAT_CHECKPOINT), never rounded to");
    kvc_model_config cfg;
    kvc_status s = kvc_model_config_load(dir, &cfg);
    if (s != KVC_OK) return s;
    kvc_safetensors *st = NULL;
    s = kvc_safetensors_open_dir(dir, &st);
    if (s != KVC_OK) return s;
    kvc_model *m = NULL;
    const char *format = kvci_safetensors_meta(st, "kvcache.format");
    const bool packed = format != NULL;
    if (packed && strcmp(format, KVC_QUANT_FORMAT) != 0)
        s = kvci_fail(KVC_EINVAL, "model_load: %s: kvcache.format \"%s\" is not %s (written by another version?)", dir,
                      format, KVC_QUANT_FORMAT);
    else if (packed && tp && tp->size > 1)
        s = kvci_fail(KVC_EINVAL,
                      "model_load: %s is a saved quantized copy, which is not split across ranks: run "
                      "--tp on the original checkpoint",
                      dir);
    if (s != KVC_OK) {
        kvc_safetensors_destroy(st);
        return s;
    }
    const char *text = packed ? NULL : text_prefix(st);
    const char *names = packed ? NULL : cfg.model_type;
    load_ctx check = {.st = st,
                      .check_only = true,
                      .weights = weights,
                      .packed = packed,
                      .text = text,
                      .model_type = names},
             c = {.st = st, .packed = packed, .text = text, .model_type = names};
    s = kvci_model_alloc(&cfg, tp, load_fn, &check, &m);        /* every shape checked against the files first */
    if (s == KVC_OK) s = kvci_check_unread(st, cfg.model_type); /* and nothing left out of a module read */
    if (s == KVC_OK) s = kvci_model_visit_weights(m, load_fn, &c);
    kvci_free(c.staging);
    if (s == KVC_OK) s = kvci_model_prepare(m);
    kvc_safetensors_destroy(st);
    if (s != KVC_OK) {
        kvc_model_destroy(m);
        return s;
    }
    *out = m;
    return KVC_OK;
}
