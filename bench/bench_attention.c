/* `kvcache bench attention [--json]`: the machine's limits measured in the
 * same run (read bandwidth: parallel read-and-sum over 1 GiB; the peak of
 * each arithmetic instruction the kernels may use: independent chains), a
 * naive scalar attention baseline (batch-1 decode), and kvc_attention_cpu
 * on decode and prefill shapes with paged KV (block size 128), token-major
 * blocks [NB, bs, Nkv * D], plus two decode shapes on head-major blocks
 * [NB, Nkv, bs, D] (the order of vLLM's paged cache), and the decode of the
 * model runtime (`bench model`'s Qwen3-0.6B shape: 16 query heads over 8 KV
 * heads, token-major blocks of 16 tokens) at short contexts.
 *
 * Decode is measured cold: consecutive timed calls read different copies of
 * the cache (>= 1 GiB touched across them), and each timed call is
 * followed by one 1 GiB read pass, so every shape's bandwidth_ratio divides
 * medians measured side by side (this machine's bandwidth moves with the
 * load of its neighbours). Prefill is compared likewise with peak passes
 * of the path's instruction run between its timed calls.
 *
 * Roofline: each decode row's arithmetic work per KV byte (flop_per_byte)
 * and the peak of the instruction its SIMD path computes with (FMA on
 * scalars, ymm or zmm; the header also measures vdpbf16ps and vpdpbusd
 * where present, paths that may use them later) give the row's compute
 * ceiling in KV GB/s; the roofline is the lower of it and the read
 * bandwidth, and the row prints its ratio to it and which bound applies.
 *
 * --against LIB also times kvc_attention_cpu of another build (its shared
 * library), its calls alternating with ours on the same caches, so that the
 * ratio of the two medians holds even while the machine's speed moves.
 *
 * Pages: the caches come from the library's cache storage
 * (kvc_cache_storage_allocate), on 2 MiB transparent huge pages by default
 * as there; --pages 4k puts them and the read buffer on 4 KiB pages, and
 * --pages both allocates each decode shape's caches twice (4 KiB and 2 MiB
 * pages) and alternates its calls between them, each followed by a read
 * pass on a buffer of the same pages, so that the two rows of a shape and
 * their ratio come from the same minutes. */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kvcache/cache.h"
#include "kvcache/half.h"
#include "kvcache/ops.h"
#include "machine_limits.h"
#include "ops/cpu/attn_amx.h"
#include "ops/cpu/simd.h"
#include "shared_lib_check.h"

#define GIB  ((size_t)1 << 30)
#define REPS 5

/* Median of 2 REPS read passes on the buffer of each page kind of
 * kinds[0..n), the kinds alternating pass by pass; into gbps[kind]. */
static void median_reads(const kvc_limits_pages *kinds, int n, double *gbps) {
    double g[KVC_LIMITS_PAGE_KINDS][2 * REPS];
    for (int r = 0; r < 2 * REPS; r++)
        for (int i = 0; i < n; i++) g[i][r] = kvc_limits_read_pass(kinds[i]);
    for (int i = 0; i < n; i++) gbps[kinds[i]] = kvc_bench_median(g[i], 2 * REPS);
}

/* Median of REPS peak passes of instruction k. */
static double median_peak(kvc_peak_kind k) {
    double g[REPS];
    for (int r = 0; r < REPS; r++) g[r] = kvc_limits_peak_pass(k);
    return kvc_bench_median(g, REPS);
}

/* Another build's attention entry points, for --against. RTLD_DEEPBIND
 * makes the library resolve its own symbols first, so that its kernel calls
 * its own internal functions and not ours (same names, other code). The two
 * builds must share the kvc_attention_params layout of kvcache/ops.h. */
typedef struct other_lib {
    void *handle;
    kvc_status (*run)(const kvc_attention_params *p, void *workspace, size_t bytes);
    kvc_status (*workspace_size)(const kvc_attention_params *p, int max_threads, size_t *bytes);
} other_lib;

/* --against PATH: this build's kernel with the SIMD path PATH forced (avx512, avx2 or portable). */
static const kvc_simd_table *against_table;

static kvc_status against_path_run(const kvc_attention_params *p, void *workspace, size_t bytes) {
    kvci_simd_override(against_table);
    const kvc_status st = kvc_attention_cpu(p, workspace, bytes);
    kvci_simd_override(NULL);
    return st;
}

/* The table a path name names, NULL for any other text. */
static const kvc_simd_table *path_table(const char *name) {
    if (strcmp(name, "avx512") == 0) return kvci_simd_avx512_table();
    if (strcmp(name, "avx2") == 0) return kvci_simd_avx2_table();
    if (strcmp(name, "portable") == 0) return &kvc_simd_portable;
    return NULL;
}

static int other_open(const char *path, other_lib *o) {
    memset(o, 0, sizeof *o);
    if (path_table(path)) {
        against_table = path_table(path);
        if (!kvci_simd_cpu_runs(against_table)) {
            fprintf(stderr, "bench attention: --against %s: this CPU does not run that path\n", path);
            return 1;
        }
        o->run = against_path_run;
        o->workspace_size = kvc_attention_cpu_workspace_size;
        return 0;
    }
    o->handle = kvc_shared_lib_open(path, "attention");
    if (!o->handle) return 1;
    *(void **)&o->run = dlsym(o->handle, "kvc_attention_cpu");
    *(void **)&o->workspace_size = dlsym(o->handle, "kvc_attention_cpu_workspace_size");
    if (!o->run || !o->workspace_size) {
        fprintf(stderr, "bench attention: %s has no kvc_attention_cpu / kvc_attention_cpu_workspace_size\n", path);
        dlclose(o->handle);
        return 1;
    }
    return 0;
}

typedef struct shape {
    const char *phase;
    int batch, q_len, kv_len, q_heads, kv_heads, head_dim;
    kvc_dtype kv_dtype;
    kvc_block_layout blk; /* paged BNBSND [NB, bs, Nkv * D], BNNBSD [NB, Nkv, bs, D] (vLLM's order) or BNNDBS (K
                             [NB, Nkv, D, bs]: keys in lanes; V as BNNBSD) */
    int bs;               /* tokens per block: 128, or the model runtime's 16 (its rows) */
} shape;

static const char *storage_name(kvc_block_layout blk) {
    return blk == KVC_BLOCK_BNNBSD ? "BnNBsD" : blk == KVC_BLOCK_BNNDBS ? "BnNDBs" : "BnBsH";
}

/* One shape's figures on one page kind. */
typedef struct result {
    double us, naive_us; /* medians */
    double other_us;     /* --against: median of the other build's calls */
    double read_gbps;    /* decode: median of read passes interleaved with the timed calls */
    double peak_gflops;  /* prefill: median of peak passes of the path's instruction interleaved with the timed calls */
    int64_t huge_bytes;  /* bytes of the caches on huge pages after the calls (-1: unknown) */
    double cpu_us;       /* median process CPU time of our calls (all threads) */
} result;

/* The K and V caches of one shape, from the library's cache storage. */
typedef struct kv_pool {
    kvc_cache_storage *storage;
    void *k, *v; /* [NB, bs, Nkv, D] or [NB, Nkv, bs, D] each */
} kv_pool;

static void keep_tensor(void *user, const kvc_tensor *t) { *(void **)user = t->data; }

/* Allocates NB blocks of K and V for s on `pages` through kvc_cache_storage_allocate. */
static int pool_allocate(const shape *s, int64_t NB, int bs, kvc_limits_pages pages, kv_pool *pool) {
    kvc_cache_entry e[2];
    for (int i = 0; i < 2; i++) {
        e[i] = kvc_cache_entry_default();
        snprintf(e[i].name, sizeof e[i].name, "%s", i ? "v_cache" : "k_cache");
        e[i].num_head = s->kv_heads;
        e[i].n_dims = 1;
        e[i].dim[0] = s->head_dim;
        e[i].dtype = s->kv_dtype;
        e[i].block_size = bs;
        e[i].layout = s->blk == KVC_BLOCK_BNBSND ? KVC_BLOCK_BNBSND : KVC_BLOCK_BNNBSD; /* BNNDBS K: the same bytes */
        e[i].tensor_setter = keep_tensor;
        e[i].setter_user = i ? &pool->v : &pool->k;
    }
    kvc_layer_cache_info layer = {.layer_idx = 0, .n_caches = 2, .caches = e};
    kvc_model_cache_info ci = {.num_layers = 1, .n_layer_infos = 1, .layer_infos = &layer};
    kvc_block_plan plan;
    kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    sp.pages = pages == KVC_LIMITS_2M ? KVC_STORAGE_PAGES_HUGE : KVC_STORAGE_PAGES_BASE;
    if (kvc_block_plan_from_counts(&ci, (const char *[]){"FullAttention"}, &NB, 1, &plan) != KVC_OK ||
        kvc_cache_storage_allocate(&ci, &plan, &sp, &pool->storage) != KVC_OK) {
        fprintf(stderr, "bench attention: caches on %s pages: %s\n", kvc_limits_pages_name(pages), kvc_last_error());
        return 1;
    }
    return 0;
}

/* Bytes of the pool's caches on huge pages now (-1: unknown). */
static int64_t pool_huge_bytes(const kv_pool *pool) {
    kvc_storage_page_info info;
    return kvc_cache_storage_page_info(pool->storage, &info) == KVC_OK ? info.huge_bytes : -1;
}

static size_t kv_bytes(const shape *s) {
    return (size_t)s->batch * (size_t)s->kv_len * (size_t)s->kv_heads * (size_t)s->head_dim * 2u *
           kvc_dtype_size(s->kv_dtype);
}

/* Arithmetic work per KV byte of a decode row: every K and V element is
 * multiplied and added (2 flops) once for each of the G query heads that
 * share it. int8 and fp8 elements cost no flops beyond that: they are converted to
 * f32, per-channel key scales are folded into q and value scales applied
 * after the product. The softmax (a few dozen flops per key and head) is
 * left out: under 1/(2 D) of the work. */
static double flop_per_byte(const shape *s) {
    return 2.0 * (double)(s->q_heads / s->kv_heads) / (double)kvc_dtype_size(s->kv_dtype);
}

/* Visible (query, key) pairs of one head under mode 3. */
static double pairs(const shape *s) {
    double p = 0.0;
    for (int i = 0; i < s->q_len; i++) p += (double)(s->kv_len - s->q_len + i + 1);
    return p * s->batch;
}

/* One K/V element as the naive loop reads it (1-byte types times the per-tensor scale). */
static float naive_load(const char *e, kvc_dtype dt, float scale) {
    switch (dt) {
    case KVC_DTYPE_I8: return scale * (float)*(const int8_t *)e;
    case KVC_DTYPE_F8E4M3: return scale * kvc_fp8_e4m3_to_f32(*(const uint8_t *)e);
    case KVC_DTYPE_F16: return kvc_f16_to_f32(*(const uint16_t *)e);
    default: return kvc_bf16_to_f32(*(const uint16_t *)e);
    }
}

/* Naive attention: per head and query, scores then softmax then values,
 * scalar conversions, no sharing of K/V loads across heads. */
static void naive_attention(const kvc_attention_params *p, int bs, float *scratch) {
    const int Nq = p->num_heads, Nkv = p->num_kv_heads, D = (int)p->q.shape[2], G = Nq / Nkv;
    const int32_t *tbl = p->block_table.data;
    const int64_t W = p->block_table.shape[1];
    const size_t es = kvc_dtype_size(p->k.dtype);
    const float ks = p->key_scale.data ? *(const float *)p->key_scale.data : 1.0f;
    for (int64_t b = 0; b < p->batch; b++) {
        const int64_t skv = p->kv_lens[b];
        for (int n = 0; n < Nq; n++) {
            const float *q = (const float *)p->q.data + (b * Nq + n) * D;
            float m = -INFINITY, l = 0.0f;
            for (int64_t j = 0; j < skv; j++) {
                const int64_t off = ((int64_t)tbl[b * W + j / bs] * bs + j % bs) * Nkv * D + (int64_t)(n / G) * D;
                float s = 0.0f;
                for (int d = 0; d < D; d++) {
                    const char *k = (const char *)p->k.data + (size_t)(off + d) * es;
                    const float x = naive_load(k, p->k.dtype, ks);
                    s += q[d] * x;
                }
                scratch[j] = s * (float)p->scale;
                m = scratch[j] > m ? scratch[j] : m;
            }
            float *o = (float *)p->out.data + (b * Nq + n) * D;
            for (int d = 0; d < D; d++) o[d] = 0.0f;
            for (int64_t j = 0; j < skv; j++) {
                const float w = expf(scratch[j] - m);
                l += w;
                const int64_t off = ((int64_t)tbl[b * W + j / bs] * bs + j % bs) * Nkv * D + (int64_t)(n / G) * D;
                for (int d = 0; d < D; d++) {
                    const char *v = (const char *)p->v.data + (size_t)(off + d) * es;
                    const float x = naive_load(v, p->v.dtype, ks);
                    o[d] += w * x;
                }
            }
            for (int d = 0; d < D; d++) o[d] /= l;
        }
    }
}

/* Fills n elements of a cache of dtype dt with a pseudo-random pattern:
 * 64 Ki converted values copied in runs at varying offsets (fast for
 * multi-GiB caches; the values only need to be finite and varied). */
static void fill_cache(void *dst, kvc_dtype dt, size_t n, uint32_t seed) {
    enum { PAT = 1 << 16 };
    static uint16_t p16[2 * PAT];
    static int8_t p8[2 * PAT];
    const size_t es = kvc_dtype_size(dt);
    for (size_t i = 0; i < 2 * PAT; i++) {
        const uint32_t h = (uint32_t)((i + seed) * 2654435761u) >> 12;
        const float x = (float)(h & 1023) / 1024.0f - 0.5f;
        p16[i] = dt == KVC_DTYPE_F16 ? kvc_f32_to_f16(x) : kvc_f32_to_bf16(x);
        p8[i] = dt == KVC_DTYPE_F8E4M3 ? (int8_t)kvc_f32_to_fp8_e4m3(x) : (int8_t)((h & 127) - 64);
    }
    const size_t runs = (n + PAT - 1) / PAT;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < runs; r++) {
        const size_t off = (r * 7919u) % PAT, len = r + 1 < runs ? PAT : n - r * PAT;
        memcpy((char *)dst + r * PAT * es, es == 1 ? (const void *)(p8 + off) : (const void *)(p16 + off), len * es);
    }
}

/* Runs one shape on each page kind of pages[0..n_pages) (its calls
 * alternating between them), res[i] for pages[i]; returns 0 on success.
 * Paged BnBsH (or BnNBsD), blocks of s->bs tokens. */
static int run_shape(const shape *s, bool with_naive, const other_lib *other, kvc_peak_kind pk_kind,
                     const kvc_limits_pages *pages, int n_pages, result *res) {
    const int bs = s->bs, D = s->head_dim;
    const bool decode = s->q_len == 1;
    const int64_t nbpr = (s->kv_len + bs - 1) / bs; /* blocks per request */
    const size_t cache = kv_bytes(s);
    const int copies = decode && cache < GIB ? (int)((GIB + cache - 1) / cache) : 1;
    const int64_t NB = nbpr * s->batch * copies;
    const size_t pool_elems = (size_t)NB * bs * (size_t)s->kv_heads * (size_t)D;
    const size_t qn = (size_t)s->batch * s->q_len * s->q_heads * D;
    void *ws = NULL;
    kv_pool pool[KVC_LIMITS_PAGE_KINDS] = {{0}};
    float *q = malloc(sizeof(float) * qn), *out = malloc(sizeof(float) * qn);
    int32_t *tbl = malloc(sizeof(int32_t) * (size_t)(copies * s->batch * nbpr));
    int64_t *cuq = malloc(sizeof(int64_t) * (size_t)s->batch), *kvl = malloc(sizeof(int64_t) * (size_t)s->batch);
    float *scratch = malloc(sizeof(float) * (size_t)s->kv_len);
    int rc = !q || !out || !tbl || !cuq || !kvl || !scratch;
    if (rc) fprintf(stderr, "bench attention: out of memory\n");
    for (int i = 0; rc == 0 && i < n_pages; i++) {
        rc = pool_allocate(s, NB, bs, pages[i], &pool[i]);
        if (rc == 0) {
            fill_cache(pool[i].k, s->kv_dtype, pool_elems, 1);
            fill_cache(pool[i].v, s->kv_dtype, pool_elems, 2);
        }
    }
    if (rc != 0) {
        for (int i = 0; i < n_pages; i++) kvc_cache_storage_destroy(pool[i].storage);
        free(q), free(out), free(tbl), free(cuq), free(kvl), free(scratch);
        return 1;
    }
    for (size_t i = 0; i < qn; i++) q[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < copies * s->batch * nbpr; i++) tbl[i] = (int32_t)i;
    for (int b = 0; b < s->batch; b++) {
        cuq[b] = (int64_t)(b + 1) * s->q_len;
        kvl[b] = s->kv_len;
    }
    float scale1 = 0.01f;
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND;
    p.num_heads = s->q_heads;
    p.num_kv_heads = s->kv_heads;
    p.scale = 1.0 / sqrt((double)D);
    p.sparse_mode = 3;
    p.batch = s->batch;
    p.q_lens = cuq;
    p.kv_lens = kvl;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = (kvc_tensor){
        .data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {(int64_t)s->batch * s->q_len, s->q_heads, D}};
    p.out = p.q;
    p.out.data = out;
    p.k = (kvc_tensor){.data = pool[0].k, .dtype = s->kv_dtype, .ndim = 3, .shape = {NB, bs, (int64_t)s->kv_heads * D}};
    p.v = p.k;
    p.v.data = pool[0].v;
    p.kv_storage = KVC_KV_BLOCKS;
    if (s->blk != KVC_BLOCK_BNBSND) {
        p.block_layout = s->blk;
        p.k.ndim = p.v.ndim = 4;
        p.k.shape[1] = p.v.shape[1] = s->kv_heads, p.k.shape[2] = p.v.shape[2] = bs, p.k.shape[3] = p.v.shape[3] = D;
        if (s->blk == KVC_BLOCK_BNNDBS) p.k.shape[2] = D, p.k.shape[3] = bs;
    }
    p.block_size = bs;
    p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {s->batch, nbpr}};
    if (kvci_dtype_scales_beside(s->kv_dtype)) { /* int8, fp8: one scale per tensor */
        p.key_quant_mode = p.value_quant_mode = KVC_QUANT_PER_CHANNEL;
        p.key_scale = (kvc_tensor){.data = &scale1, .dtype = KVC_DTYPE_F32, .ndim = 1, .shape = {1}};
        p.value_scale = p.key_scale;
    }
    size_t wsb = 0, wso = 0;
    if (kvc_attention_cpu_workspace_size(&p, omp_get_max_threads(), &wsb) != KVC_OK ||
        (other && other->workspace_size(&p, omp_get_max_threads(), &wso) != KVC_OK) ||
        kvc_aligned_alloc(64, wsb > wso ? wsb : wso, &ws) != KVC_OK) {
        fprintf(stderr, "bench attention: %s\n", kvc_last_error());
        rc = 1;
    }
    if (wso > wsb) wsb = wso;
    /* prefill is compute-bound and long: no warm-up, one run for 2048 new tokens */
    const int reps = decode ? REPS : s->q_len >= 2048 ? 1 : 3;
    double t[KVC_LIMITS_PAGE_KINDS][REPS], g[KVC_LIMITS_PAGE_KINDS][REPS], pk[KVC_LIMITS_PAGE_KINDS][REPS],
        to[KVC_LIMITS_PAGE_KINDS][REPS], tc[KVC_LIMITS_PAGE_KINDS][REPS];
    const int runs = other ? 2 : 1; /* per page kind: ours, then the other build's, each on the next copy */
    for (int r = decode ? -1 : 0; rc == 0 && r < reps; r++) /* r = -1: warm-up */
        for (int i = 0; rc == 0 && i < n_pages; i++)
            for (int who = 0; rc == 0 && who < runs; who++) {
                p.k.data = pool[i].k, p.v.data = pool[i].v;
                p.block_table.data = tbl + (size_t)((runs * (r + 1) + who) % copies) * (size_t)(s->batch * nbpr);
                const double t0 = kvc_bench_now(), c0 = kvc_bench_cpu_now();
                if ((who == 0 ? kvc_attention_cpu(&p, ws, wsb) : other->run(&p, ws, wsb)) != KVC_OK) {
                    fprintf(stderr, "bench attention: %s%s\n", who ? "--against build: " : "",
                            who ? "its call failed" : kvc_last_error());
                    rc = 1;
                }
                if (r >= 0) *(who == 0 ? &t[i][r] : &to[i][r]) = kvc_bench_now() - t0;
                if (r >= 0 && who == 0) tc[i][r] = kvc_bench_cpu_now() - c0;
                /* the read pass also evicts this call's KV from the caches */
                if (r >= 0 && decode) {
                    const double gb = kvc_limits_read_pass(pages[i]);
                    if (who == 0) g[i][r] = gb;
                }
                if (r >= 0 && who == 0 && !decode) pk[i][r] = kvc_limits_peak_pass(pk_kind);
            }
    for (int i = 0; i < n_pages; i++) {
        res[i].us = rc == 0 ? kvc_bench_median(t[i], reps) * 1e6 : 0.0;
        res[i].other_us = rc == 0 && other ? kvc_bench_median(to[i], reps) * 1e6 : 0.0;
        res[i].read_gbps = rc == 0 && decode ? kvc_bench_median(g[i], reps) : 0.0;
        res[i].peak_gflops = rc == 0 && !decode ? kvc_bench_median(pk[i], reps) : 0.0;
        res[i].huge_bytes = pool_huge_bytes(&pool[i]);
        res[i].cpu_us = rc == 0 ? kvc_bench_median(tc[i], reps) * 1e6 : 0.0;
        res[i].naive_us = 0.0;
    }
    if (rc == 0 && with_naive) { /* one cold run: the naive loop takes seconds at 32k */
        p.k.data = pool[0].k, p.v.data = pool[0].v;
        p.block_table.data = tbl + (size_t)(1 % copies) * (size_t)(s->batch * nbpr);
        const double t0 = kvc_bench_now();
        naive_attention(&p, bs, scratch);
        res[0].naive_us = (kvc_bench_now() - t0) * 1e6;
    }
    kvc_aligned_free(ws);
    for (int i = 0; i < n_pages; i++) kvc_cache_storage_destroy(pool[i].storage);
    free(q), free(out), free(tbl), free(cuq), free(kvl), free(scratch);
    return rc;
}

#define MAX_SHAPES 160

/* Every shape of the benchmark, in the order of its rows; returns their count. */
static int all_shapes(shape shapes[MAX_SHAPES]) {
    int n = 0;
    const kvc_dtype dts[4] = {KVC_DTYPE_F16, KVC_DTYPE_BF16, KVC_DTYPE_I8, KVC_DTYPE_F8E4M3};
    const int dec[6][2] = {{1, 4096}, {1, 16384}, {1, 32768}, {8, 4096}, {8, 16384}, {32, 4096}};
    const int kvh[3] = {8, 32, 4}; /* GQA 4, 1 and 8 */
    for (int h = 0; h < 3; h++)
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 6; i++)
                shapes[n++] =
                    (shape){"decode", dec[i][0], 1, dec[i][1], 32, kvh[h], 128, dts[d], KVC_BLOCK_BNBSND, 128};
    for (int h = 0; h < 2; h++) /* the same cache in head-major block order */
        shapes[n++] = (shape){"decode", 8, 1, 4096, 32, h ? 32 : 8, 128, KVC_DTYPE_F16, KVC_BLOCK_BNNBSD, 128};
    const int lan[3][2] = {{1, 16384}, {8, 4096}, {8, 16384}}; /* keys in lanes */
    for (int h = 0; h < 3; h++)
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 3; i++)
                shapes[n++] =
                    (shape){"decode", lan[i][0], 1, lan[i][1], 32, kvh[h], 128, dts[d], KVC_BLOCK_BNNDBS, 128};
    /* the model runtime's decode (bench model's Qwen3-0.6B shape): 16 query heads over 8 KV heads of 128, token-major
     * blocks of 16 tokens (the runner's default), short contexts whose fixed costs weigh */
    const int mod[6][2] = {{1, 128}, {1, 512}, {1, 2048}, {8, 128}, {8, 512}, {8, 2048}};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 6; i++)
            shapes[n++] = (shape){"decode", mod[i][0], 1, mod[i][1], 16, 8, 128, dts[d], KVC_BLOCK_BNBSND, 16};
    const int pre[4][2] = {{512, 4096}, {2048, 4096}, {512, 16384}, {2048, 16384}};
    for (int i = 0; i < 4; i++)
        shapes[n++] = (shape){"prefill", 1, pre[i][0], pre[i][1], 32, 8, 128, KVC_DTYPE_BF16, KVC_BLOCK_BNBSND, 128};
    for (int i = 0; i < 4; i++)
        shapes[n++] = (shape){"prefill", 1, pre[i][0], pre[i][1], 32, 8, 128, KVC_DTYPE_BF16, KVC_BLOCK_BNNDBS, 128};
    return n;
}

/* The instruction a shape's arithmetic runs on, and how many of its operations make one operation of the shape:
 * the AMX path computes bf16 K/V rows on TDPBF16PS tiles, each product as KVC_AMX_PARTS tile products (one per
 * bf16 part of the query or weight, ops/cpu/attn_amx.h); everything else on the path's FMA. */
static kvc_peak_kind shape_peak(const char *isa, const shape *s, double *ops_per_flop) {
    *ops_per_flop = 1.0;
    if (strncmp(isa, "amx", 3) == 0 && s->kv_dtype == KVC_DTYPE_BF16 && s->blk != KVC_BLOCK_BNNDBS) {
        *ops_per_flop = KVC_AMX_PARTS;
        return KVC_PEAK_TDPBF16;
    }
    return kvc_limits_fma_of_path(isa);
}

/* The row label --only matches: phase/bBATCH/qQ/kvKV/gGQA/DTYPE/STORAGE/bsBLOCK. */
static void shape_label(const shape *s, char *label, size_t cap) {
    snprintf(label, cap, "%s/b%d/q%d/kv%d/g%d/%s/%s/bs%d", s->phase, s->batch, s->q_len, s->kv_len,
             s->q_heads / s->kv_heads, kvc_dtype_name(s->kv_dtype), storage_name(s->blk), s->bs);
}

/* --only TEXT must match a row: 0, or 2 with the labels printed. */
static int check_only(const char *only, const shape *shapes, int n) {
    if (!only) return 0;
    char label[96];
    for (int i = 0; i < n; i++) {
        shape_label(&shapes[i], label, sizeof label);
        if (strstr(label, only)) return 0;
    }
    fprintf(stderr, "bench attention: --only \"%s\" matches no row; the row labels are:\n", only);
    for (int i = 0; i < n; i++) {
        shape_label(&shapes[i], label, sizeof label);
        fprintf(stderr, "  %s\n", label);
    }
    return 2;
}

int kvc_bench_attention(const kvc_bench_opts *opts) {
    const bool json = opts->json;
    shape shapes[MAX_SHAPES];
    const int n = all_shapes(shapes);
    if (check_only(opts->only, shapes, n) != 0) return 2; /* before the 1 GiB buffers and the other build */
    other_lib other_store, *other = NULL;
    if (opts->against) {
        if (other_open(opts->against, &other_store) != 0) return 2;
        other = &other_store;
    }
    /* the page kinds of this run: 4 KiB first, so that --pages both prints each shape's 4k row, then its 2m row */
    kvc_limits_pages kinds[KVC_LIMITS_PAGE_KINDS];
    int n_kinds = 0;
    if (opts->pages != KVC_BENCH_PAGES_2M) kinds[n_kinds++] = KVC_LIMITS_4K;
    if (opts->pages != KVC_BENCH_PAGES_4K) kinds[n_kinds++] = KVC_LIMITS_2M;
    bool want[KVC_LIMITS_PAGE_KINDS] = {false};
    for (int i = 0; i < n_kinds; i++) want[kinds[i]] = true;
    if (kvc_limits_init(want) != 0) {
        if (other && other->handle) dlclose(other->handle);
        return 1;
    }
    const double t_start = kvc_bench_now();
    const char *isa = kvc_attention_cpu_isa();
    const kvc_peak_kind path_kind = kvc_limits_fma_of_path(isa);
    double read_by[KVC_LIMITS_PAGE_KINDS] = {0};
    median_reads(kinds, n_kinds, read_by);
    char thp[32];
    kvc_limits_thp_setting(thp, sizeof thp);
    double peaks[KVC_PEAK_KINDS];
    for (int k = 0; k < KVC_PEAK_KINDS; k++) peaks[k] = median_peak((kvc_peak_kind)k);
    char flags[256];
    kvc_limits_cpu_flags(flags, sizeof flags);
    if (!json) { /* --json: one JSON object per shape, a line each */
        printf("attention: path %s (KVC_SIMD=portable|avx2|avx512|amx forces one), %d threads, CPU flags: %s\n"
               "read bandwidth (%zu MiB, median of %d, page kinds alternating):",
               isa, omp_get_max_threads(), flags, kvc_limits_read_mib(), 2 * REPS);
        for (int i = 0; i < n_kinds; i++) {
            const int64_t huge = kvc_limits_huge_bytes(kinds[i]);
            printf(" %s pages %.2f GB/s (%lld MiB on huge pages)%s", kvc_limits_pages_name(kinds[i]), read_by[kinds[i]],
                   (long long)(huge < 0 ? -1 : huge >> 20), i + 1 < n_kinds ? "," : "");
        }
        if (n_kinds == 2) printf(", 2m/4k %.3f", read_by[KVC_LIMITS_2M] / read_by[KVC_LIMITS_4K]);
        printf("; transparent huge pages: %s\npeaks (G op/s, median of %d):", thp, REPS);
        for (int k = 0; k < KVC_PEAK_KINDS; k++)
            if (kvc_limits_has_peak((kvc_peak_kind)k))
                printf(" %s %.1f%s", kvc_limits_peak_name((kvc_peak_kind)k), peaks[k],
                       k == (int)path_kind ? " (path)" : "");
        printf(
            "\ndecode: KV read GB/s vs the read bandwidth measured between its calls on the same pages (read, bw) and "
            "vs\n"
            "the roofline min(read, path peak / flop per KV byte) (roof GB/s, bound, roof = KV GB/s / roof GB/s);\n"
            "prefill: GFLOP/s vs the path's peak measured between its calls (peak, and roof = that ratio; bf16 rows "
            "on\n"
            "the amx path: the tdpbf16ps-amx peak / 3, each product being three tile products, one per bf16 part)\n"
            "cache: paged blocks of 128 tokens (the rows of 16 query heads, the model runtime's decode: of 16)\n"
            "pages: the caches' pages (huge: MiB of them on huge pages after the calls)%s\n"
            "%s"
            "%-7s %5s %5s %6s %4s %4s %4s %-5s %-6s %-5s %6s %11s %8s %8s %6s %5s %8s %-7s %6s %8s %6s %11s %7s%s%s\n",
            n_kinds == 2 ? ";\n4k/2m: a decode shape's 4k time over its 2m time (above 1: huge pages are faster), by "
                           "the wall clock and\n"
                           "by the process's CPU time (the time its threads ran: less disturbed by other processes on "
                           "a loaded machine)"
                         : "",
            other ? "against: the other build's median us, and ours over it (below 1: ours is faster)\n" : "", "phase",
            "batch", "q_len", "kv_len", "Nq", "Nkv", "D", "kv", "cache", "pages", "huge", "us", "KV GB/s", "read", "bw",
            "f/B", "roof GB/s", "bound", "roof", "GFLOP/s", "peak", "naive us", "speedup",
            other ? "  against us   ratio" : "", n_kinds == 2 ? "    4k/2m  cpu 4k/2m" : "");
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const shape *s = &shapes[i];
        char label[96];
        shape_label(s, label, sizeof label);
        if (opts->only && !strstr(label, opts->only)) continue;
        result res[KVC_LIMITS_PAGE_KINDS];
        const bool naive =
            s->q_len == 1 && s->batch == 1 && s->blk == KVC_BLOCK_BNBSND; /* its loop reads token-major blocks */
        const bool decode = s->q_len == 1;
        /* decode on every page kind of the run; prefill (compute-bound) on the last one only */
        const kvc_limits_pages *pg = decode ? kinds : &kinds[n_kinds - 1];
        const int n_pg = decode ? n_kinds : 1;
        double ops_per_flop;
        const kvc_peak_kind pk_kind = shape_peak(isa, s, &ops_per_flop);
        const double peak = peaks[pk_kind] / ops_per_flop;
        if (run_shape(s, naive, other, pk_kind, pg, n_pg, res) != 0) {
            rc = 1;
            continue;
        }
        for (int k = 0; k < n_pg; k++) {
            const result *r = &res[k];
            const double sec = r->us * 1e-6;
            const double kv_gbps = (double)kv_bytes(s) / sec / 1e9;
            const double rd = decode ? r->read_gbps : read_by[pg[k]];
            const double pkr = decode ? peak : r->peak_gflops / ops_per_flop;
            const double gflops = 4.0 * s->q_heads * s->head_dim * pairs(s) / sec / 1e9;
            const double fpb = flop_per_byte(s), compute_gbps = pkr / fpb;
            const double roof = compute_gbps < rd ? compute_gbps : rd;
            const char *bound = !decode || compute_gbps < rd ? "compute" : "memory";
            const double roof_ratio = decode ? kv_gbps / roof : gflops / pkr;
            const char *storage = storage_name(s->blk);
            const bool has_naive = naive && r->naive_us > 0.0;
            const bool paired = n_pg == 2 && pg[k] == KVC_LIMITS_2M; /* the 2m row of a shape run on both */
            const double pages_ratio = paired ? res[0].us / r->us : 0.0;
            const double pages_cpu_ratio = paired ? res[0].cpu_us / r->cpu_us : 0.0;
            if (json) {
                printf("{\"bench\": \"attention\", \"isa\": \"%s\", \"cpu_flags\": \"%s\", \"threads\": %d, \"phase\": "
                       "\"%s\", \"batch\": %d, \"q_len\": %d, \"kv_len\": %d, \"q_heads\": %d, \"kv_heads\": %d, "
                       "\"head_dim\": %d, \"kv_dtype\": \"%s\", \"kv_storage\": \"%s\", \"block_size\": %d, "
                       "\"pages\": \"%s\", \"thp\": \"%s\", "
                       "\"huge_bytes\": %lld, \"us\": %.1f, \"cpu_us\": %.1f, \"kv_gbps\": %.2f, "
                       "\"read_gbps\": %.2f, \"bandwidth_ratio\": %.3f, \"gflops\": %.2f, \"peak_gflops\": %.1f, "
                       "\"peak_ratio\": %.3f, \"flop_per_byte\": %.2f, ",
                       isa, flags, omp_get_max_threads(), s->phase, s->batch, s->q_len, s->kv_len, s->q_heads,
                       s->kv_heads, s->head_dim, kvc_dtype_name(s->kv_dtype), storage, s->bs,
                       kvc_limits_pages_name(pg[k]), thp, (long long)r->huge_bytes, r->us, r->cpu_us, kv_gbps, rd,
                       kv_gbps / rd, gflops, pkr, gflops / pkr, fpb);
                if (decode)
                    printf("\"roofline_gbps\": %.2f, ", roof);
                else
                    printf("\"roofline_gbps\": null, ");
                printf("\"bound\": \"%s\", \"roofline_ratio\": %.3f, ", bound, roof_ratio);
                if (has_naive)
                    printf("\"naive_us\": %.1f, \"speedup\": %.2f", r->naive_us, r->naive_us / r->us);
                else
                    printf("\"naive_us\": null, \"speedup\": null");
                if (other) printf(", \"against_us\": %.1f, \"against_ratio\": %.3f", r->other_us, r->us / r->other_us);
                if (paired) printf(", \"us_4k_over_2m\": %.3f, \"cpu_4k_over_2m\": %.3f", pages_ratio, pages_cpu_ratio);
                printf("}\n");
            } else {
                printf("%-7s %5d %5d %6d %4d %4d %4d %-5s %-6s %-5s %6lld %11.1f %8.2f", s->phase, s->batch, s->q_len,
                       s->kv_len, s->q_heads, s->kv_heads, s->head_dim, kvc_dtype_name(s->kv_dtype), storage,
                       kvc_limits_pages_name(pg[k]), (long long)(r->huge_bytes < 0 ? -1 : r->huge_bytes >> 20), r->us,
                       kv_gbps);
                if (decode)
                    printf(" %8.2f %6.3f %5.1f %8.2f", rd, kv_gbps / rd, fpb, roof);
                else
                    printf(" %8s %6s %5s %8s", "-", "-", "-", "-"); /* prefill is compute-bound: no bandwidth ratio */
                printf(" %-7s %6.3f %8.2f %6.3f", bound, roof_ratio, gflops, gflops / pkr);
                if (has_naive)
                    printf(" %11.1f %7.2f", r->naive_us, r->naive_us / r->us);
                else
                    printf(" %11s %7s", "-", "-");
                if (other) printf(" %11.1f %7.3f", r->other_us, r->us / r->other_us);
                if (paired)
                    printf(" %8.3f %8.3f", pages_ratio, pages_cpu_ratio);
                else if (n_kinds == 2)
                    printf(" %8s %8s", "-", "-");
                printf("\n");
            }
        }
        fflush(stdout);
    }
    if (!json) printf("total %.1f s\n", kvc_bench_now() - t_start);
    kvc_limits_free();
    if (other && other->handle) dlclose(other->handle);
    return rc;
}
