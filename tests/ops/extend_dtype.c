/* The dtype contract (docs/extending.md, "A KV dtype"): a KV cache dtype
 * defined in this file alone by its dtype-table entry and registered with
 * one call, with no other file of the library changed, is written into
 * paged caches by the ordinary slot write, read by the CPU attention
 * operator (its generic converter path, on every SIMD table this CPU runs)
 * and by the float64 reference, and the two agree within the bound of
 * every other K/V dtype.
 *
 * Then the runtime (docs/kv-dtypes.md, "Adding a KV dtype"): a model runs
 * with it as its KV cache dtype through the runner (contiguous and paged),
 * the engine (managed with prefix caching, and self-managed) and the
 * planner, which count its bytes through the table.
 *
 * The dtype, "toy_blockq8", is block-scaled 8-bit like ggml's Q8_0: blocks
 * of 32 channels, each an f16 scale d (little-endian) and 32 int8 codes q,
 * value d * q; written with d = f16(amax / 127) and q = round_half_even(x / d)
 * clamped to [-127, 127]. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype_traits.h"
#include "kvc_test_util.h"
#include "kvcache/engine.h"
#include "kvcache/half.h"
#include "kvcache/plan.h"
#include "kvcache/runner.h"
#include "ops/cpu/simd.h"

#define DTYPE_NAME "toy_blockq8"
#define QK         32
#define BLOCK_B    (2 + QK)

static float block_scale(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return kvc_f16_to_f32(h);
}

static void q8_to_f32(const void *base, int64_t i0, int64_t n, float *dst) {
    for (int64_t i = i0; i < i0 + n; i++) {
        const uint8_t *blk = (const uint8_t *)base + i / QK * BLOCK_B;
        dst[i - i0] = block_scale(blk) * (float)(int8_t)blk[2 + i % QK]; /* exact: 11 x 8 significant bits */
    }
}

static void q8_from_f32(const float *src, int64_t n, void *base, int64_t i0) {
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        uint8_t *blk = (uint8_t *)base + (i0 / QK + b) * BLOCK_B;
        float amax = 0.0f;
        for (int i = 0; i < QK; i++) amax = fmaxf(amax, fabsf(x[i]));
        const uint16_t h = kvc_f32_to_f16(amax / 127.0f);
        memcpy(blk, &h, 2);
        const float d = kvc_f16_to_f32(h), inv = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < QK; i++)
            blk[2 + i] = (uint8_t)(int8_t)fmaxf(-127.0f, fminf(127.0f, nearbyintf(x[i] * inv)));
    }
}

static const uint8_t POISON[BLOCK_B] = {0x00, 0x7e}; /* an f16 NaN scale: every value NaN */

static const kvc_dtype_traits toy = {
    .name = DTYPE_NAME,
    .bits = 8,
    .block = QK,
    .block_bytes = BLOCK_B,
    .scales = KVC_SCALES_IN_BLOCK,
    .kv = true,
    .qmax = 127.0f,
    .simd = KVC_SIMD_GENERIC,
    .poison = POISON,
    .to_f32 = q8_to_f32,
    .from_f32 = q8_from_f32,
};
static kvc_dtype toy_id;

static int register_dtype(void **state) {
    (void)state;
    return kvci_dtype_register(&toy, &toy_id) == KVC_OK ? 0 : -1;
}

static uint32_t rng(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}
static float unif(uint32_t *s) { return (float)(rng(s) & 0xffff) / 32768.0f - 1.0f; }

/* The table answers for the new dtype, and a second registration of its name is refused. */
static void test_table_answers(void **state) {
    (void)state;
    assert_true(toy_id >= KVC_DTYPE_COUNT);
    assert_string_equal(kvc_dtype_name(toy_id), DTYPE_NAME);
    kvc_dtype parsed;
    assert_int_equal(kvc_dtype_parse(DTYPE_NAME, &parsed), KVC_OK);
    assert_int_equal(parsed, toy_id);
    int64_t bytes = 0;
    assert_true(kvci_dtype_bytes(toy_id, 4 * QK, &bytes));
    assert_int_equal(bytes, 4 * BLOCK_B);
    assert_false(kvci_dtype_bytes(toy_id, QK + 1, &bytes)); /* not whole blocks */
    assert_int_equal(kvc_dtype_size(toy_id), 0);            /* no bytes per element */
    assert_true(kvci_dtype_is_kv(toy_id) && kvci_dtype_is_blocked(toy_id));
    assert_false(kvci_dtype_scales_beside(toy_id));
    assert_true(kvc_model_kv_dtype_ok(toy_id));   /* the runtime's caches take it: scales in its blocks */
    assert_false(kvc_model_kv_quantised(toy_id)); /* no per-slot scale entries */
    kvc_dtype again;
    assert_int_equal(kvci_dtype_register(&toy, &again), KVC_EINVAL);
    float x[QK];
    toy.to_f32(POISON, 0, QK, x);
    for (int i = 0; i < QK; i++) assert_true(isnan(x[i]));
}

/* The toy entry under another name with field i made inconsistent; the field as the refusal names it. */
static const char *spoil(int i, kvc_dtype_traits *t) {
    *t = toy;
    t->name = DTYPE_NAME "_bad";
    switch (i) {
    case 0: t->block = 0; return "block 0";
    case 1: t->block_bytes = 0; return "block_bytes 0";
    case 2: t->block_bytes = KVC_DTYPE_MAX_BLOCK_BYTES + 1; return "block_bytes 257";
    case 3: t->bits = 0; return "bits 0";
    case 4: t->bits = 16; return "bits 16"; /* 32 codes of 16 bits do not fit 34 bytes */
    case 5: t->scales = KVC_SCALES_PER_TOKEN; return "scales 2";
    case 6: t->scale_required = true; return "scale_required";
    case 7: t->compute = true; return "compute";
    case 8: t->simd = KVC_SIMD_F32; return "simd";
    case 9: t->poison = NULL; return "poison";
    case 10: t->to_f32 = NULL; return "to_f32";
    case 11: t->from_f32 = NULL; return "from_f32";
    default: return NULL;
    }
}

/* An entry with one inconsistent field is refused with a message naming that field, and is not registered. */
static void test_register_refuses_inconsistent_fields(void **state) {
    (void)state;
    kvc_dtype_traits t;
    const char *field;
    for (int i = 0; (field = spoil(i, &t)) != NULL; i++) {
        kvc_dtype id = KVC_DTYPE_F32, parsed;
        if (kvci_dtype_register(&t, &id) != KVC_EINVAL) fail_msg("%s: registered", field);
        if (!strstr(kvc_last_error(), field)) fail_msg("%s: the refusal does not name it: %s", field, kvc_last_error());
        assert_int_equal(id, KVC_DTYPE_F32);
        assert_int_not_equal(kvc_dtype_parse(t.name, &parsed), KVC_OK);
    }
}

/* A written row decodes within 0.57 of its block's step d (half a step, plus the f16 rounding of d). */
static void test_write_round_trip(void **state) {
    (void)state;
    enum { NB = 2, BS = 4, NKV = 2, D = 64, T = 5 };
    uint8_t cache[NB * BS * NKV * D / QK * BLOCK_B];
    float upd[T * NKV * D], back[D];
    uint32_t s = 7;
    for (int i = 0; i < T * NKV * D; i++) upd[i] = 3.0f * unif(&s) * (float)(1 + i % 5);
    kvc_tensor c = {.data = cache, .dtype = toy_id, .ndim = 4, .shape = {NB, BS, NKV, D}};
    const kvc_tensor u = {.data = upd, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {T, NKV, D}};
    const int64_t slots[T] = {5, 0, 7, KVC_SLOT_SKIP, 2};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u, slots, T), KVC_OK);
    for (int t = 0; t < T; t++) {
        if (slots[t] < 0) continue;
        for (int h = 0; h < NKV; h++) {
            const int64_t e = (slots[t] * NKV + h) * D;
            toy.to_f32(cache, e, D, back);
            for (int d = 0; d < D; d++) {
                const float step = block_scale(cache + (e + d) / QK * BLOCK_B);
                assert_true(fabsf(back[d] - upd[(t * NKV + h) * D + d]) <= 0.57f * step);
            }
        }
    }
    /* refused: a layout that splits rows, an update not f32 */
    kvc_tensor lanes = {.data = cache, .dtype = toy_id, .ndim = 4, .shape = {NB, NKV, D, BS}};
    assert_int_equal(kvc_write_slots(&lanes, KVC_BLOCK_BNNDBS, &u, slots, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "BNBSND or BNNBSD"));
    const kvc_tensor u16 = {.data = upd, .dtype = KVC_DTYPE_F16, .ndim = 3, .shape = {T, NKV, D}};
    assert_int_equal(kvc_write_slots(&c, KVC_BLOCK_BNBSND, &u16, slots, T), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "from f32 upd"));
}

enum { B = 3, NQ = 4, NKV = 2, D = 64, BS = 16, W = 5, NB = 1 + B * W };

/* Decode (one query per request) or prefill (causal) over paged K/V of the
 * dtype in `order`, written through kvc_write_slots from f32 rows; the CPU
 * operator on table t against the float64 reference. */
static double run_case(kvc_block_layout order, bool prefill, const kvc_simd_table *t) {
    const int64_t kv_lens[B] = {37, 5, 70}, sq[B] = {prefill ? 6 : 1, prefill ? 5 : 1, prefill ? 9 : 1};
    int64_t q_cu[B], tq = 0;
    for (int b = 0; b < B; b++) q_cu[b] = tq += sq[b];
    int32_t tbl[B * W];
    for (int i = 0; i < B * W; i++) tbl[i] = 1 + (i * 7) % (B * W); /* a permutation of blocks 1.. */
    int64_t bytes = 0;
    assert_true(kvci_dtype_bytes(toy_id, (int64_t)NB * BS * NKV * D, &bytes));
    uint8_t *kc = calloc(1, (size_t)bytes), *vc = calloc(1, (size_t)bytes);
    float *q = malloc(sizeof(float) * (size_t)(tq * NQ * D)), *cpu = malloc(sizeof(float) * (size_t)(tq * NQ * D));
    float *ref = malloc(sizeof(float) * (size_t)(tq * NQ * D));
    assert_true(kc && vc && q && cpu && ref);
    const int64_t shape_bsnd[4] = {NB, BS, NKV, D}, shape_bnsd[4] = {NB, NKV, BS, D};
    const int64_t *shape = order == KVC_BLOCK_BNBSND ? shape_bsnd : shape_bnsd;
    kvc_tensor k = {.data = kc, .dtype = toy_id, .ndim = 4}, v = {.data = vc, .dtype = toy_id, .ndim = 4};
    memcpy(k.shape, shape, sizeof shape_bsnd), memcpy(v.shape, shape, sizeof shape_bsnd);
    uint32_t s = 11;
    for (int b = 0; b < B; b++) { /* each request's keys and values, one write per request */
        float *x = malloc(sizeof(float) * (size_t)(kv_lens[b] * NKV * D)),
              *y = malloc(sizeof *y * (size_t)(kv_lens[b] * NKV * D));
        int64_t *slots = malloc(sizeof(int64_t) * (size_t)kv_lens[b]);
        assert_true(x && y && slots);
        for (int64_t i = 0; i < kv_lens[b] * NKV * D; i++) x[i] = 2.0f * unif(&s), y[i] = unif(&s) * (float)(1 + i % 3);
        for (int64_t j = 0; j < kv_lens[b]; j++) slots[j] = (int64_t)tbl[b * W + j / BS] * BS + j % BS;
        const kvc_tensor ux = {.data = x, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {kv_lens[b], NKV, D}};
        const kvc_tensor uy = {.data = y, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {kv_lens[b], NKV, D}};
        assert_int_equal(kvc_write_slots(&k, order, &ux, slots, kv_lens[b]), KVC_OK);
        assert_int_equal(kvc_write_slots(&v, order, &uy, slots, kv_lens[b]), KVC_OK);
        free(x), free(y), free(slots);
    }
    for (int64_t i = 0; i < tq * NQ * D; i++) q[i] = unif(&s);
    kvc_attention_params p = kvc_attention_default_params();
    p.layout = KVC_LAYOUT_TND;
    p.num_heads = NQ;
    p.num_kv_heads = NKV;
    p.scale = 1.0 / sqrt((double)D);
    p.sparse_mode = 3; /* causal: each query sees every earlier key */
    p.batch = B;
    p.q_lens = q_cu;
    p.kv_lens = kv_lens;
    p.kv_len_form = KVC_KV_FORM_DIRECT;
    p.q = (kvc_tensor){.data = q, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {tq, NQ, D}};
    p.k = k;
    p.v = v;
    p.kv_storage = KVC_KV_BLOCKS;
    p.block_layout = order;
    p.block_table = (kvc_tensor){.data = tbl, .dtype = KVC_DTYPE_I32, .ndim = 2, .shape = {B, W}};
    p.block_size = BS;
    p.out = (kvc_tensor){.data = cpu, .dtype = KVC_DTYPE_F32, .ndim = 3, .shape = {tq, NQ, D}};
    kvci_simd_override(t);
    size_t ws_bytes = 0;
    assert_int_equal(kvc_attention_cpu_workspace_size(&p, omp_get_max_threads(), &ws_bytes), KVC_OK);
    void *ws = NULL;
    assert_int_equal(kvc_aligned_alloc(64, ws_bytes, &ws), KVC_OK);
    if (kvc_attention_cpu(&p, ws, ws_bytes) != KVC_OK) fail_msg("attention_cpu: %s", kvc_last_error());
    kvc_aligned_free(ws);
    kvci_simd_override(NULL);
    p.out.data = ref;
    assert_int_equal(kvc_attention_ref(&p), KVC_OK);
    double worst = 0.0;
    for (int64_t i = 0; i < tq * NQ * D; i++) {
        assert_true(isfinite(cpu[i]));
        worst = fmax(worst, fabs((double)cpu[i] - (double)ref[i]) / (1.0 + fabs((double)ref[i])));
    }
    if (order == KVC_BLOCK_BNBSND) { /* the same caches through a kvc_paged_kv descriptor */
        float *desc = malloc(sizeof(float) * (size_t)(tq * NQ * D));
        assert_non_null(desc);
        const kvc_paged_tensor rows = {KVC_BLOCK_BNBSND, D, (int64_t)BS * NKV * D, D, (int64_t)NKV * D, 1};
        kvc_paged_kv d = {.num_blocks = NB, .k = rows, .v = rows};
        kvc_attention_params pd = p;
        pd.paged_kv = &d, pd.out.data = desc;
        pd.k.ndim = pd.v.ndim = 1, pd.k.shape[0] = pd.v.shape[0] = (int64_t)NB * BS * NKV * D;
        if (kvc_attention_ref(&pd) != KVC_OK) fail_msg("descriptor: %s", kvc_last_error());
        assert_memory_equal(desc, ref, sizeof(float) * (size_t)(tq * NQ * D));
        /* a stride that is not whole blocks of the dtype (rows then start inside a block) is refused by name */
        const struct {
            int64_t *field, value;
            const char *frag;
        } cases[] = {{&d.k.token_stride, NKV * D - 16,
                      "paged_kv.k: block_stride 2048, head_stride 64 and token_stride "
                      "112 must be multiples of the " DTYPE_NAME " dtype's block of 32"},
                     {&d.v.head_stride, D + 8, "paged_kv.v: block_stride 2048, head_stride 72"},
                     {&d.k.block_stride, (int64_t)BS * NKV * D + 1, "block_stride 2049"}};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            d = (kvc_paged_kv){.num_blocks = NB, .k = rows, .v = rows};
            *cases[i].field = cases[i].value;
            for (int impl = 0; impl < 2; impl++) {
                const kvc_status st = impl ? kvc_attention_check(&pd) : kvc_attention_ref(&pd);
                if (st != KVC_EINVAL || !strstr(kvc_last_error(), cases[i].frag))
                    fail_msg("case %zu: status %s, message '%s'", i, kvc_status_str(st), kvc_last_error());
            }
        }
        d = (kvc_paged_kv){.num_blocks = NB, .k = rows, .v = rows};
        d.k.layout = KVC_BLOCK_NZ; /* tiles of 32 bytes hold no block of the dtype */
        assert_int_equal(kvc_attention_check(&pd), KVC_EINVAL);
        assert_non_null(strstr(kvc_last_error(), "paged_kv.k.layout NZ: tiles hold 16-bit or 8-bit"));
        d.k = (kvc_paged_tensor){KVC_BLOCK_BNNDBS, D, (int64_t)BS * NKV * D, (int64_t)D * BS, 1, BS};
        assert_int_equal(kvc_attention_check(&pd), KVC_EINVAL); /* keys in lanes [NB, Nkv, D, bs]: token_stride 1 */
        assert_non_null(strstr(kvc_last_error(), "paged_kv.k: block_stride 2048, head_stride 1024 and token_stride 1"));
        free(desc);
    }
    /* refused: a head dim that is not whole blocks (the same caches viewed with D 48) */
    p.k.shape[3] = p.v.shape[3] = 48, p.q.shape[2] = p.out.shape[2] = 48;
    assert_int_equal(kvc_attention_check(&p), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "blocks of 32 channels"));
    free(kc), free(vc), free(q), free(cpu), free(ref);
    return worst;
}

/* The operator's generic path against the reference: decode and prefill, token- and head-major blocks, every
 * SIMD table this CPU runs; 1e-5 relative-and-absolute, the bound of the other K/V dtypes. */
static void test_attention_matches_reference(void **state) {
    (void)state;
    const kvc_simd_table *tables[] = {&kvc_simd_portable, kvci_simd_avx2_table(), kvci_simd_avx512_table()};
    const kvc_block_layout orders[] = {KVC_BLOCK_BNBSND, KVC_BLOCK_BNNBSD};
    int runs = 0;
    for (size_t ti = 0; ti < sizeof tables / sizeof tables[0]; ti++) {
        if (tables[ti] == NULL || !kvci_simd_cpu_runs(tables[ti])) continue;
        for (int o = 0; o < 2; o++)
            for (int prefill = 0; prefill < 2; prefill++) {
                const double e = run_case(orders[o], prefill, tables[ti]);
                print_message("%s %s %s: worst %.3g\n", tables[ti]->name, o ? "BNNBSD" : "BNBSND",
                              prefill ? "prefill" : "decode", e);
                assert_true(e <= 1e-5);
                runs++;
            }
    }
    assert_true(runs >= 4);
}

/* ---- the runtime: runner, engine, planner ------------------------------------------------------------------- */

/* The qwen3 oracle model (2 layers, 2 KV heads of 64 = 2 blocks): three prompts, the last two sharing the
 * first's first 8 ids (two blocks of BLOCK, for the engine's prefix cache). */
#define N_REQ      3
#define NEW        6
#define BLOCK      4
#define PROMPT_MAX 11
static const int32_t IDS[] = {3,       17, 42, 9, 100, 5, 77, 63, 12, 1,  99, /* */ 3, 17, 42, 9, 100, 5, 77, 63, 31, 8,
                              /* */ 3, 17, 42, 9, 100, 5, 77, 63, 2,  60, 71};
static const int64_t LENS[N_REQ] = {11, 10, 11};
/* qwen3: layers x (k, v) x heads x blocks of a head row x BLOCK_B bytes */
#define TOY_TOKEN_BYTES (2 * 2 * 2 * (64 / QK) * BLOCK_B)

static void check(kvc_status st, const char *what) {
    if (st != KVC_OK) fail_msg("%s: %s (%s)", what, kvc_status_str(st), kvc_last_error());
}

static kvc_model *load_qwen3(void) {
    char dir[1024];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    kvc_model *m = NULL;
    check(kvc_model_load(dir, &m), "load");
    return m;
}

static kvc_runner_params runner_params(kvc_runner_mode mode, kvc_dtype dt) {
    kvc_runner_params p = kvc_runner_default_params();
    p.mode = mode, p.cache.block_size = BLOCK, p.max_new_tokens = NEW, p.cache.kv_dtype = dt;
    p.max_seq_len = 16; /* one S for every runner, batched or alone */
    return p;
}

/* Greedy tokens [n, NEW] and logits [NEW, n, V] of the n prompts from ids (lens) in one runner. */
static void runner_run(const kvc_model *m, const kvc_runner_params *p, const int32_t *ids, const int64_t *lens,
                       int64_t n, int32_t *tokens, float *logits) {
    kvc_runner *r = NULL;
    check(kvc_runner_create(m, p, n, PROMPT_MAX, &r), "runner");
    assert_int_equal(kvc_runner_kv_bytes_per_token(r), TOY_TOKEN_BYTES); /* the table's bytes, not elements */
    check(kvc_runner_generate(r, ids, lens, n, tokens, logits, NULL), "generate");
    kvc_runner_destroy(r);
}

/* The runner with toy caches, contiguous (mode 1) and paged (mode 2):
 *  - against f32 caches (kvc_runner_compare_dtype, logits teacher-forced on the f32 tokens): the largest logit
 *    error stays within twice that of int8 caches in the same mode, and no argmax moves where the f32 top-2
 *    gap exceeds twice the error. The bound: a toy value is off by at most 0.5 * d_b (1 + 2^-10) with d_b its
 *    block's amax / 127 rounded to f16, an int8 value by 0.5 * d_t with d_t its token's amax over every head
 *    and channel / 127 >= d_b; so each toy K/V error is below the int8 one's bound, and the factor 2 allows
 *    for errors of equal bound adding up differently through two layers;
 *  - each prompt alone gives logits memcmp-equal to the three batched (the forward is batch-invariant, and a
 *    toy row's blocks depend on that row alone). */
static void test_runner_end_to_end(void **state) {
    (void)state;
    kvc_model *m = load_qwen3();
    const int64_t V = kvc_model_config_of(m)->vocab_size;
    const kvc_runner_mode modes[2] = {KVC_RUNNER_CONTIGUOUS, KVC_RUNNER_PAGED};
    float *batched = malloc(sizeof(float) * (size_t)(NEW * N_REQ * V)),
          *alone = malloc(sizeof(float) * (size_t)(NEW * V));
    assert_true(batched && alone);
    for (int i = 0; i < 2; i++) {
        const kvc_runner_params p = runner_params(modes[i], toy_id);
        kvc_dtype_compare toy_cmp, i8_cmp;
        check(kvc_runner_compare_dtype(m, &p, IDS, LENS, N_REQ, toy_id, NULL, &toy_cmp), "compare toy");
        check(kvc_runner_compare_dtype(m, &p, IDS, LENS, N_REQ, KVC_DTYPE_I8, NULL, &i8_cmp), "compare i8");
        print_message("mode %d: toy max logit err %.3g (int8 %.3g), kl_max %.3g, greedy same as f32 %lld/%lld, "
                      "near ties %lld\n",
                      (int)modes[i], toy_cmp.max_logit_err, i8_cmp.max_logit_err, toy_cmp.kl_max,
                      (long long)toy_cmp.same_as_f32, (long long)toy_cmp.tokens, (long long)toy_cmp.near_ties);
        assert_int_equal(toy_cmp.bytes_per_token, TOY_TOKEN_BYTES);
        assert_true(toy_cmp.max_logit_err > 0.0); /* the toy caches did quantise */
        assert_true(toy_cmp.max_logit_err <= 2.0 * i8_cmp.max_logit_err);
        assert_int_equal(toy_cmp.flips_beyond_error, 0);
        int32_t tok_b[N_REQ * NEW], tok_a[NEW];
        runner_run(m, &p, IDS, LENS, N_REQ, tok_b, batched);
        int64_t off = 0;
        for (int64_t b = 0; b < N_REQ; off += LENS[b++]) {
            runner_run(m, &p, IDS + off, &LENS[b], 1, tok_a, alone);
            assert_memory_equal(tok_a, tok_b + b * NEW, sizeof tok_a);
            for (int64_t t = 0; t < NEW; t++)
                if (memcmp(alone + t * V, batched + (t * N_REQ + b) * V, sizeof(float) * (size_t)V) != 0)
                    fail_msg("mode %d, prompt %lld, step %lld: logits alone differ from batched", (int)modes[i],
                             (long long)b, (long long)t);
        }
    }
    free(batched), free(alone);
    kvc_model_destroy(m);
}

/* Greedy tokens [N_REQ, NEW] of the engine (managed caches with the prefix cache, or self-managed), the first
 * request run to completion before the other two arrive, so that they find its blocks cached. */
static void engine_tokens(const kvc_model *m, bool self_managed, int32_t *out, kvc_engine_stats *stats) {
    kvc_engine_params ep = kvc_engine_default_params();
    ep.max_model_len = 32, ep.max_num_seqs = 2, ep.max_num_batched_tokens = 5; /* prompts in chunks, decode mixed */
    ep.check = true, ep.prefix_caching = !self_managed;
    kvc_engine_adapter_params ap = kvc_engine_adapter_default_params();
    ap.self_managed = self_managed, ap.cache.block_size = BLOCK, ap.cache.kv_dtype = toy_id;
    kvc_engine_adapter *a = NULL;
    kvc_engine *e = NULL;
    check(kvc_engine_adapter_create(m, &ap, &ep, &a), "adapter");
    check(kvc_engine_create(kvc_engine_adapter_model(a), &ep, &e), "engine");
    int64_t off = 0;
    for (int64_t i = 0; i < N_REQ; off += LENS[i++]) {
        kvc_engine_request r = kvc_engine_request_default();
        r.id = i, r.prompt = IDS + off, r.n_prompt = LENS[i], r.max_new_tokens = NEW;
        check(kvc_engine_add_request(e, &r), "add_request");
        for (int steps = 0; i == 0 || i == N_REQ - 1; steps++) { /* request 0 alone, then 1 and 2 together */
            assert_true(steps < 200);
            int64_t finished = 0;
            for (int64_t j = 0; j <= i; j++) {
                kvc_engine_request_info info;
                check(kvc_engine_request_get(e, j, &info), "request_get");
                finished += info.state == KVC_REQ_FINISHED;
            }
            if (finished == i + 1) break;
            kvc_engine_step_result res;
            check(kvc_engine_step(e, &res), "step");
        }
    }
    for (int64_t i = 0; i < N_REQ; i++) {
        int64_t got = 0;
        check(kvc_engine_request_output(e, i, out + i * NEW, NEW, &got), "output");
        assert_int_equal(got, NEW);
    }
    check(kvc_engine_get_stats(e, stats), "stats");
    kvc_engine_destroy(e);
    kvc_engine_adapter_destroy(a);
}

/* The engine with toy caches gives the runner's greedy tokens, request by request (managed with prefix hits,
 * and self-managed), and its managed storage is blocks x the table's block bytes. */
static void test_engine_end_to_end(void **state) {
    (void)state;
    kvc_model *m = load_qwen3();
    const kvc_runner_params p = runner_params(KVC_RUNNER_PAGED, toy_id);
    int32_t want[N_REQ * NEW], got[N_REQ * NEW];
    float *logits = malloc(sizeof(float) * (size_t)(NEW * N_REQ * kvc_model_config_of(m)->vocab_size));
    assert_non_null(logits);
    runner_run(m, &p, IDS, LENS, N_REQ, want, logits);
    free(logits);
    kvc_engine_stats st;
    engine_tokens(m, false, got, &st);
    assert_memory_equal(want, got, sizeof want);
    assert_true(st.prefix_hit_tokens >= 2 * 8); /* requests 1 and 2 took request 0's two full blocks */
    assert_int_equal(st.n_keys, 1);
    assert_int_equal(st.kv_bytes, st.num_blocks[0] * TOY_TOKEN_BYTES * BLOCK);
    engine_tokens(m, true, got, &st);
    assert_memory_equal(want, got, sizeof want);
    assert_int_equal(st.kv_bytes, 2 * 32 * TOY_TOKEN_BYTES); /* max_num_seqs rows of max_model_len slots */
    kvc_model_destroy(m);
}

/* The planner counts the toy bytes exactly (kvcache plan's figures), and the runtime refuses by name what a
 * dtype stored in blocks of channels cannot be: a dim of partial blocks, keys in lanes. */
static void test_plan_bytes_and_refusals(void **state) {
    (void)state;
    char dir[1024], path[1100];
    kvc_test_oracle_dir("qwen3", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *json = kvc_test_read_text(path);
    kvc_plan_options o = kvc_plan_default_options();
    o.kv_dtype_set = true, o.kv_dtype = toy_id, o.block_size = 32, o.max_model_len = 256;
    kvc_model_plan *plan = NULL;
    check(kvc_model_plan_create(json, strlen(json), &o, &plan), "plan");
    assert_int_equal(plan->layers[0].caches[0].bytes_per_token, 2 * (64 / QK) * BLOCK_B);
    assert_int_equal(plan->blocks.per_token_bytes, TOY_TOKEN_BYTES);
    assert_int_equal(plan->blocks.groups[0].block_bytes, TOY_TOKEN_BYTES * plan->blocks.groups[0].block_size);
    assert_int_equal(plan->blocks.total_bytes, plan->blocks.groups[0].block_num * plan->blocks.groups[0].block_bytes);
    kvc_model_plan_destroy(plan);
    free(json);
    kvc_test_oracle_dir("deepseek_v3", dir, sizeof dir); /* MLA: latent caches, refused */
    snprintf(path, sizeof path, "%s/config.json", dir);
    json = kvc_test_read_text(path);
    assert_int_equal(kvc_model_plan_create(json, strlen(json), &o, &plan), KVC_EINVAL);
    assert_null(plan);
    assert_non_null(strstr(kvc_last_error(), "MLA latent caches cannot hold it"));
    free(json);
    /* the cache manager: an entry of dim 48 (not whole blocks), one in keys-in-lanes order */
    kvc_cache_entry e = kvc_cache_entry_default();
    snprintf(e.name, sizeof e.name, "k_cache");
    e.dtype = toy_id, e.num_head = 2, e.n_dims = 1, e.dim[0] = 48, e.block_size = 16;
    kvc_layer_cache_info li = {.layer_idx = 0, .n_caches = 1, .caches = &e};
    kvc_model_cache_info ci = {.num_layers = 1, .n_layer_infos = 1, .layer_infos = &li};
    assert_int_equal(kvc_validate_cache_info(&ci, -1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache k_cache: dim 48 is not a multiple of the 32-element blocks"));
    e.dim[0] = 64, e.layout = KVC_BLOCK_BNNDBS;
    assert_int_equal(kvc_validate_cache_info(&ci, -1), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache_layout BnNDBs (keys in lanes) cannot hold it"));
    e.layout = KVC_BLOCK_BNBSND;
    assert_int_equal(kvc_validate_cache_info(&ci, -1), KVC_OK);
    /* the runner: keys in lanes */
    kvc_model *m = load_qwen3();
    kvc_runner_params p = runner_params(KVC_RUNNER_PAGED, toy_id);
    p.cache.kv_layout = KVC_BLOCK_BNNDBS;
    assert_int_equal(kvc_runner_check(m, &p, 1, PROMPT_MAX), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "KVC_BLOCK_BNNDBS (keys in lanes) cannot hold it"));
    kvc_model_destroy(m);
    /* DeepSeek: latent caches (a rope part), and full-form keys of 32 + 16 channels */
    kvc_test_oracle_dir("deepseek_v3", dir, sizeof dir);
    check(kvc_model_load(dir, &m), "load deepseek");
    p = runner_params(KVC_RUNNER_MLA_LATENT, toy_id);
    assert_int_equal(kvc_runner_check(m, &p, 1, PROMPT_MAX), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "MLA latent caches (a rope part) cannot hold it"));
    p.mode = KVC_RUNNER_PAGED;
    assert_int_equal(kvc_runner_check(m, &p, 1, PROMPT_MAX), KVC_EINVAL);
    assert_non_null(strstr(kvc_last_error(), "cache k_cache has dim 48, not a multiple"));
    kvc_model_destroy(m);
}

static void ignore_tensor(void *user, const kvc_tensor *tensor) { (void)user, (void)tensor; }

/* The cache manager's storage, export and poison: a toy entry of 2 heads of 64 channels takes blocks x the
 * table's block bytes, and every block the manager takes for new data is the dtype's poison block throughout (each
 * value NaN), while the null block stays zero. */
static void test_storage_and_poison(void **state) {
    (void)state;
    enum { HEADS = 2, DIM = 64, PBS = 4, BLOCKS = 6, BLOCK_BYTES = PBS * HEADS * DIM / QK * BLOCK_B };
    kvc_test_model model;
    kvc_cache_entry e = kvc_test_attention_entry("k_cache", KVC_ATTN_FULL, PBS, 0);
    e.dtype = toy_id, e.num_head = HEADS, e.dim[0] = DIM, e.tensor_setter = ignore_tensor;
    kvc_test_model_init(&model, &e, 1);
    kvc_block_plan plan;
    check(kvc_block_plan_from_counts(&model.ci, (const char *[]){"FullAttention"}, (const int64_t[]){BLOCKS}, 1, &plan),
          "plan");
    assert_int_equal(plan.groups[0].block_bytes, BLOCK_BYTES);
    kvc_cache_storage *storage = NULL;
    const kvc_cache_storage_params sp = kvc_cache_storage_default_params();
    check(kvc_cache_storage_allocate(&model.ci, &plan, &sp, &storage), "storage");
    assert_int_equal(kvc_cache_storage_bytes(storage), BLOCKS * BLOCK_BYTES);
    kvc_manager_params p = kvc_manager_default_params();
    p.max_model_len = 32, p.poison_new_blocks = true;
    kvc_manager *m = NULL;
    check(kvc_manager_create(&model.ci, &plan, &p, &m), "manager");
    check(kvc_manager_allocate_slots(m, &(kvc_slot_request){.request_id = 1, .num_new_tokens = 9}), "allocate");
    kvc_buffer_info info; /* the export for KV transfer */
    int64_t n_info = 0;
    check(kvc_manager_buffer_infos(m, &info, 1, &n_info), "buffer infos");
    assert_int_equal(n_info, 1);
    assert_int_equal(info.bytes_per_block, BLOCK_BYTES);
    assert_int_equal(info.total_bytes, BLOCKS * BLOCK_BYTES);
    int32_t ids[BLOCKS];
    int64_t n_ids = 0;
    check(kvc_manager_block_ids(m, 1, 0, ids, BLOCKS, &n_ids), "block ids");
    assert_int_equal(n_ids, 3); /* 9 tokens: three blocks of 4 */
    const uint8_t *data = model.entries[0].tensor.data;
    float x[PBS * HEADS * DIM];
    for (int b = 0; b < BLOCKS; b++) {
        bool taken = false;
        for (int64_t i = 0; i < n_ids; i++) taken |= ids[i] == b;
        toy.to_f32(data, (int64_t)b * PBS * HEADS * DIM, PBS * HEADS * DIM, x);
        for (int i = 0; i < PBS * HEADS * DIM && taken; i++) assert_true(isnan(x[i]));
        if (b == 0) assert_true(kvc_test_zero_bytes(data, BLOCK_BYTES)); /* the null block */
    }
    kvc_manager_destroy(m);
    kvc_cache_storage_destroy(storage);
}

/* One file: the dtype's name appears in no other source file. */
static void test_only_this_file_names_the_dtype(void **state) {
    (void)state;
    kvc_test_assert_only_file_naming(DTYPE_NAME, "extend_dtype.c");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_answers),
        cmocka_unit_test(test_register_refuses_inconsistent_fields),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_attention_matches_reference),
        cmocka_unit_test(test_runner_end_to_end),
        cmocka_unit_test(test_engine_end_to_end),
        cmocka_unit_test(test_plan_bytes_and_refusals),
        cmocka_unit_test(test_storage_and_poison),
        cmocka_unit_test(test_only_this_file_names_the_dtype),
    };
    return cmocka_run_group_tests(tests, register_dtype, NULL);
}
