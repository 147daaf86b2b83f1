/* `kvcache plan CONFIG.json [...]`: the cache plan of a Hugging Face model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/internal.h"
#include "args.h"
#include "cmd_plan.h"
#include "kvcache/model.h"
#include "kvcache/plan.h"
#include "plot_data.h"

static void plan_usage(FILE *f) {
    fprintf(f,
            "usage: kvcache plan CONFIG.json|MODEL_DIR [--tp N] [--block-size N] [--kv-dtype DTYPE]\n"
            "                    [--max-model-len N] [--max-concurrency N] [--next-n N] [--kv-memory BYTES] [--json]\n"
            "                    [--plot FILE.png]\n"
            "\n"
            "Reads a Hugging Face config.json (or MODEL_DIR/config.json, as `kvcache run` does) and prints its KV\n"
            "cache plan in plain words first: paged or contiguous caches, each layer's attention (causal, sliding\n"
            "window of N keys, sinks, MLA latent), the caches per tensor-parallel rank, the softmax scale and\n"
            "the block pools; then, under \"operator parameters (for porting)\", what the fused attention\n"
            "operator takes: kv_mode, fa_version, layout and each layer's sparse_mode and pre/next_tokens\n"
            "(docs/ops.md; --json has every field).\n"
            "\n"
            "  --tp N               attention tensor-parallel ranks (default 1)\n"
            "  --block-size N       tokens per block (default 128)\n"
            "  --kv-dtype DTYPE     cache dtype: f32, f16, bf16, i8 (int8), fp8_e4m3 (fp8) or fp8_e5m2, the\n"
            "                       dtypes `kvcache run` and the engine store (default: the config's torch_dtype)\n"
            "  --max-model-len N    offline sizing length (default: max_position_embeddings; at most 2^31-1,\n"
            "                       as positions and block tables are 32-bit)\n"
            "  --max-concurrency N  requests at once (default 1)\n"
            "  --next-n N           speculative depth (default 0)\n"
            "  --kv-memory BYTES    size the caches from this budget instead of len x concurrency;\n"
            "                       accepts 64GiB, 512MiB, 1.5GB, 1e9, ...\n"
            "  --json               one JSON object instead of the table\n"
            "  --plot FILE.png      also draw the memory split (writes FILE.png.json and runs\n"
            "                       PYTHON -m kvcache.plot on it: $KVC_PYTHON, else build/python-venv's\n"
            "                       beside this command, else python3)\n");
}

/* Parses a byte count or count: digits, or a decimal/exponent number, with an
 * optional K/M/G/T suffix (decimal; KiB/MiB/GiB/TiB binary; a trailing B ok). */
int kvc_parse_size(const char *text, int64_t *out) {
    if (text == NULL || !((*text >= '0' && *text <= '9') || *text == '.')) return -1; /* strtod takes " 7", "+7" */
    char *end = NULL;
    errno = 0;
    /* Whole digits followed by nothing or a unit: exact integer path. */
    size_t digits = strspn(text, "0123456789");
    char after = text[digits];
    bool plain = digits > 0 && after != '.' && after != 'e' && after != 'E';
    double value = 0.0;
    long long whole = 0;
    if (plain) {
        whole = strtoll(text, &end, 10);
        if (errno != 0 || end == text) return -1;
    } else {
        value = strtod(text, &end);
        if (errno != 0 || end == text || !isfinite(value)) return -1;
    }
    double mult = 1.0;
    const char *s = end;
    if (*s != '\0') {
        static const struct {
            const char *suffix;
            double mult;
        } units[] = {
            {"KiB", 1024.0},
            {"MiB", 1048576.0},
            {"GiB", 1073741824.0},
            {"TiB", 1099511627776.0},
            {"KB", 1e3},
            {"MB", 1e6},
            {"GB", 1e9},
            {"TB", 1e12},
            {"K", 1e3},
            {"M", 1e6},
            {"G", 1e9},
            {"T", 1e12},
            {"k", 1e3},
            {"B", 1.0},
        };
        size_t i = 0;
        for (; i < sizeof units / sizeof units[0]; i++)
            if (strcmp(s, units[i].suffix) == 0) break;
        if (i == sizeof units / sizeof units[0]) return -1;
        mult = units[i].mult;
    }
    if (plain && mult == 1.0) {
        if (whole < 0) return -1;
        *out = whole;
        return 0;
    }
    double bytes = (plain ? (double)whole : value) * mult;
    if (!(bytes >= 0.0) || bytes > 9.0e18 || bytes != floor(bytes)) return -1;
    *out = (int64_t)bytes;
    return 0;
}

/* --kv-memory is a size (64GiB, 1.5GB, 1e9); the counts are decimal digits, as every command's integer flags
 * (kvc_parse_size took "--tp 2B" as 2 and "--max-concurrency 2K" as 2000). */
static int parse_count(const char *flag, const char *text, int64_t min, int64_t *out) {
    int64_t v = 0;
    const bool size = strcmp(flag, "--kv-memory") == 0;
    if (size ? kvc_parse_size(text, &v) != 0 || v < min : !kvc_arg_int(text, min, INT64_MAX, &v)) {
        fprintf(stderr, "kvcache plan: %s expects %s >= %lld, got \"%s\"\n", flag,
                size ? "a byte count (64GiB, 512MiB, 1.5GB, 1e9)" : "an integer", (long long)min,
                text != NULL ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

static void human_bytes(int64_t b, char *out, size_t cap) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%lld B", (long long)b);
    else
        snprintf(out, cap, "%lld B (%.2f %s)", (long long)b, v, units[u]);
}

static void layer_caches_text(const kvc_plan_layer *L, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (int32_t c = 0; c < L->n_caches && n < cap; c++) {
        const kvc_plan_cache *pc = &L->caches[c];
        int w;
        if (pc->is_state) {
            char shape[96] = "";
            size_t k = 0;
            for (int32_t d = 0; d < pc->n_shape && k < sizeof shape; d++)
                k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? "x" : "", (long long)pc->shape[d]);
            w = snprintf(out + n, cap - n, "%s%s [%s] %s %lld B/state", c ? ", " : "", pc->name, shape,
                         kvc_dtype_name(pc->dtype), (long long)pc->bytes_per_block);
        } else {
            w = snprintf(out + n, cap - n, "%s%s %lldx%lld %s %lld B/tok", c ? ", " : "", pc->name,
                         (long long)pc->num_head, (long long)pc->dim, kvc_dtype_name(pc->dtype),
                         (long long)pc->bytes_per_token);
        }
        if (w < 0) break;
        n += (size_t)w;
    }
}

static bool same_row(const kvc_plan_layer *a, const kvc_plan_layer *b) {
    char ta[512], tb[512];
    if (a->attn_type != b->attn_type || a->sliding_window != b->sliding_window ||
        a->compress_ratio != b->compress_ratio || a->attention_chunk_size != b->attention_chunk_size ||
        a->sparse_prefill != b->sparse_prefill || a->sparse_decode != b->sparse_decode ||
        a->pre_tokens != b->pre_tokens)
        return false;
    layer_caches_text(a, ta, sizeof ta);
    layer_caches_text(b, tb, sizeof tb);
    return strcmp(ta, tb) == 0;
}

/* A layer's attention in plain words: "causal", "sliding window of 128", "chunks of 8192", "state (Mamba)",
 * ", sinks". */
static void plain_attention(const kvc_model_plan *p, const kvc_plan_layer *L, char *out, size_t cap) {
    if (L->attn_type == KVC_ATTN_SLIDING_WINDOW)
        snprintf(out, cap, "sliding window of %lld%s", (long long)L->sliding_window, p->sinks ? ", sinks" : "");
    else if (L->attn_type == KVC_ATTN_CHUNKED_LOCAL)
        snprintf(out, cap, "causal in chunks of %lld%s", (long long)L->attention_chunk_size, p->sinks ? ", sinks" : "");
    else if (L->attn_type == KVC_ATTN_FULL && L->compress_ratio > 0)
        snprintf(out, cap, "causal, 1 entry per %lld positions", (long long)L->compress_ratio);
    else if (L->attn_type == KVC_ATTN_FULL)
        snprintf(out, cap, "causal%s%s", p->mla ? ", MLA latent" : "", p->sinks ? ", sinks" : "");
    else
        snprintf(out, cap, "state (%s)", kvc_attn_type_name(L->attn_type));
}

/* The layer table, layers with the same plan on one row: in plain words and the caches per rank,
 * or (porting) the seed operator's parameters: attention type, window, sparse_mode for prefill /
 * decode, pre_tokens / next_tokens. done[n_layers]: zeroed scratch flags. */
static void print_layer_rows(const kvc_model_plan *p, bool *done, bool porting) {
    if (porting)
        printf("  %-9s %-14s %-10s %-11s %s\n", "layers", "attn_type", "window", "sparse_mode", "pre/next_tokens");
    else
        printf("  %-9s %-30s %s\n", "layers", "attention", "caches per rank");
    /* Layers grouped by pattern: a row lists every layer with the same plan. */
    for (int32_t i = 0; i < p->n_layers; i++) {
        if (done[i]) continue;
        char ids[160] = "";
        size_t n = 0;
        int32_t count = 0, first = -1, prev = -1, step = 0;
        bool regular = true; /* members evenly spaced: printed as a strided range */
        /* a run: entries j .. k of this row on consecutive model layers (a cache-less layer is not listed, a
         * parallel one has an attention and a state entry, each on its own row) */
        for (int32_t j = i; j < p->n_layers; j++) {
            if (done[j] || !same_row(&p->layers[i], &p->layers[j])) continue;
            done[j] = true;
            int32_t k = j;
            for (int32_t m = k + 1; m < p->n_layers && p->layers[m].layer <= p->layers[k].layer + 1; m++) {
                if (done[m] || !same_row(&p->layers[i], &p->layers[m])) continue;
                if (p->layers[m].layer != p->layers[k].layer + 1) break;
                done[m] = true;
                k = m;
            }
            const int32_t lj = p->layers[j].layer, lk = p->layers[k].layer;
            if (n < sizeof ids - 16) {
                int w = k > j ? snprintf(ids + n, sizeof ids - n, "%s%d-%d", count ? "," : "", lj, lk)
                              : snprintf(ids + n, sizeof ids - n, "%s%d", count ? "," : "", lj);
                if (w > 0) n += (size_t)w;
            }
            for (int32_t m = lj; m <= lk; m++) {
                if (first < 0) {
                    first = m;
                } else if (step == 0) {
                    step = m - prev;
                } else if (m - prev != step) {
                    regular = false;
                }
                prev = m;
            }
            count += lk - lj + 1;
            j = k;
        }
        if (regular && count > 2 && step > 1) snprintf(ids, sizeof ids, "%d-%d/%d", first, prev, step);
        const kvc_plan_layer *L = &p->layers[i];
        if (strlen(ids) > 9) {
            printf("  %s (%d layers)\n  %-9s", ids, count, "");
        } else {
            printf("  %-9s", ids);
        }
        if (porting) {
            char window[32] = "-", sparse[16] = "-", band[32] = "-";
            if (L->sliding_window > 0) snprintf(window, sizeof window, "%lld", (long long)L->sliding_window);
            if (L->attention_chunk_size > 0) /* the mask of each per-chunk virtual request (note below the table) */
                snprintf(window, sizeof window, "chunk %lld", (long long)L->attention_chunk_size);
            if (L->sparse_prefill != KVC_PLAN_NO_MODE)
                snprintf(sparse, sizeof sparse, "%d/%d", L->sparse_prefill, L->sparse_decode);
            if (L->pre_tokens != KVC_PLAN_NO_BAND)
                snprintf(band, sizeof band, "%lld/%lld", (long long)L->pre_tokens, (long long)L->next_tokens);
            printf(" %-14s %-10s %-11s %s\n", kvc_attn_type_name(L->attn_type), window, sparse, band);
        } else {
            char words[64], caches[512];
            plain_attention(p, L, words, sizeof words);
            layer_caches_text(L, caches, sizeof caches);
            printf(" %-30s %s\n", words, caches);
        }
    }
}

/* The model's attention in one line of plain words. */
static void print_attention_summary(const kvc_model_plan *p) {
    int32_t full = 0, sliding = 0, state = 0, chunked = 0, compressed = 0;
    int64_t window = 0, chunk = 0;
    for (int32_t i = 0; i < p->n_layers; i++) {
        const kvc_plan_layer *L = &p->layers[i];
        full += L->attn_type == KVC_ATTN_FULL && L->compress_ratio == 0;
        compressed += L->compress_ratio > 0;
        state += L->attn_type == KVC_ATTN_MAMBA;
        if (L->attn_type == KVC_ATTN_SLIDING_WINDOW) {
            sliding++;
            window = L->sliding_window;
        }
        if (L->attn_type == KVC_ATTN_CHUNKED_LOCAL) {
            chunked++;
            chunk = L->attention_chunk_size;
        }
    }
    printf("attention    ");
    if (full > 0) printf("causal on %d layer%s", full, full == 1 ? "" : "s");
    if (sliding > 0)
        printf("%ssliding window of %lld keys on %d layer%s", full ? ", " : "", (long long)window, sliding,
               sliding == 1 ? "" : "s");
    if (chunked > 0)
        printf("%scausal in chunks of %lld positions on %d layer%s", full + sliding ? ", " : "", (long long)chunk,
               chunked, chunked == 1 ? "" : "s");
    if (compressed > 0) /* DeepSeek-V4 */
        printf("%scompressed entries on %d layer%s", full + sliding + chunked ? ", " : "", compressed,
               compressed == 1 ? "" : "s");
    if (state > 0)
        printf("%sstate (Mamba) on %d layer%s", full + sliding + chunked + compressed ? ", " : "", state,
               state == 1 ? "" : "s");
    if (p->sinks) printf("; attention sinks");
    if (p->mla) printf("; MLA: one latent cache per token shared by every head%s", p->mla_absorb ? " (absorbed)" : "");
    printf("\n");
}

/* How to run the chunked layers: kvcache's operator's chunk, or on the vendor operator (no chunked mask). */
static void print_chunk_note(const kvc_model_plan *p) {
    for (int32_t i = 0; i < p->n_layers; i++) {
        const int64_t c = p->layers[i].attention_chunk_size;
        if (c == 0) continue;
        printf(
            "chunked      kvcache's operator: sparse_mode 3 with attention_chunk_size %lld; the vendor operator has no "
            "chunked mask: for a ChunkedLocal layer split each request into one virtual request per chunk of %lld "
            "positions (its queries in [k*%lld, (k+1)*%lld), its keys from k*%lld, over the request's block table) "
            "and run sparse_mode 3 on each\n",
            (long long)c, (long long)c, (long long)c, (long long)c, (long long)c);
        return;
    }
}

/* Prints the plan table; false (nothing printed) when memory ran out. */
/* The shared pool of group g, once (at its first key): its blocks, the bytes
 * of each (a page per entry slot) and the keys drawing from it, each with
 * its block size (equal pages: a key of fewer bytes per token has more). */
static void print_shared_pool(const kvc_block_plan *plan, int32_t g) {
    const kvc_group_plan *gp = &plan->groups[g];
    int64_t block_bytes = 0;
    char keys[KVC_MAX_MANAGERS * (KVC_NAME_MAX + 32)] = "", bytes[32];
    size_t used = 0;
    for (int32_t h = 0; h < plan->n_groups; h++) {
        if (plan->groups[h].pool_id != gp->pool_id) continue;
        if (h < g) return;
        block_bytes = plan->groups[h].block_bytes > block_bytes ? plan->groups[h].block_bytes : block_bytes;
        used += (size_t)snprintf(keys + used, sizeof keys - used, "%s%s (%lld tokens)", used > 0 ? ", " : "",
                                 plan->groups[h].key, (long long)plan->groups[h].block_size);
    }
    human_bytes(gp->block_num * block_bytes, bytes, sizeof bytes);
    printf("pool         shared by %s: %lld blocks (%s, ", keys, (long long)gp->block_num, bytes);
    if (gp->page_bytes > 0)
        printf("pages of %lld bytes)\n", (long long)gp->page_bytes);
    else
        printf("entry slots of equal pages)\n");
}

/* Why a state key keeps a pool of its own: the padding one pool would cost. */
static void print_state_padding(const kvc_plan_state_padding *pad) {
    if (pad->state_key[0] == '\0') return;
    char page[32], state[32], padded[32];
    human_bytes(pad->page_bytes, page, sizeof page);
    human_bytes(pad->state_bytes, state, sizeof state);
    human_bytes(pad->padded_bytes, padded, sizeof padded);
    printf("state pool   %s keeps its own: in the pool of %s every state page would pad to %s (%s blocks of %lld "
           "tokens), a sequence's state from %s to %s (+%.0f %%)\n",
           pad->state_key, pad->paged_key, page, pad->paged_key, (long long)pad->block_size, state, padded,
           100.0 * (double)(pad->padded_bytes - pad->state_bytes) / (double)pad->state_bytes);
}

static bool print_table(const kvc_model_plan *p) {
    bool *done = kvci_calloc((size_t)p->n_layers, sizeof *done);
    if (done == NULL) return false;
    const kvc_plan_options *o = &p->options;
    char b1[64], b2[64], b3[64];
    printf("model        %s (model_type %s, family %s)\n", p->architecture, p->model_type[0] ? p->model_type : "-",
           p->family);
    printf("setup        tp %lld, block size %lld tokens, kv dtype %s, ", (long long)o->tp, (long long)o->block_size,
           kvc_dtype_name(o->kv_dtype));
    if (p->plan_params.mode == KVC_PLAN_BUDGET) {
        human_bytes(o->kv_memory_bytes, b1, sizeof b1);
        printf("budget %s, concurrency %lld, next_n %lld\n", b1, (long long)o->max_concurrency, (long long)o->next_n);
    } else {
        printf("offline %lld tokens x %lld requests, next_n %lld\n", (long long)o->max_model_len,
               (long long)o->max_concurrency, (long long)o->next_n);
    }
    if (p->kv_mode == KVC_KV_PAGED)
        printf("caches       paged: blocks of %lld tokens, taken and returned as requests grow and end\n",
               (long long)o->block_size);
    else
        printf("caches       contiguous: one cache of max_model_len tokens per request (not paged: why under kv_mode "
               "below)\n");
    print_attention_summary(p);
    printf("heads        %lld query (%lld per rank), %lld kv, head_dim %lld\n", (long long)p->num_attention_heads,
           (long long)p->q_heads_per_rank, (long long)p->num_key_value_heads, (long long)p->head_dim);
    printf("scale        %.9g   (rope %s, factor %g, attention factor %.7g)\n", p->scale, p->rope_type, p->rope_factor,
           p->rope_attention_factor);
    print_layer_rows(p, done, false);
    human_bytes(p->blocks.per_token_bytes, b1, sizeof b1);
    human_bytes(p->blocks.fixed_bytes, b2, sizeof b2);
    printf("bytes/token  %s (full-attention caches, one rank)\n", b1);
    printf("fixed bytes  %s (window, chunk and state caches)\n", b2);
    for (int32_t g = 0; g < p->blocks.n_groups; g++) {
        const kvc_group_plan *gp = &p->blocks.groups[g];
        if (gp->pool_id > 0) {
            print_shared_pool(&p->blocks, g);
            continue;
        }
        human_bytes(gp->block_num * gp->block_bytes, b3, sizeof b3);
        printf("pool         %-16s %lld blocks of %lld tokens (%s%s)\n", gp->key, (long long)gp->block_num,
               (long long)gp->block_size, b3, gp->fixed ? ", fixed" : "");
    }
    print_state_padding(&p->state_padding);
    human_bytes(p->blocks.total_bytes, b1, sizeof b1);
    printf("max tokens   %lld   total %s\n", (long long)p->blocks.max_tokens, b1);
    for (int32_t w = 0; w < p->n_warnings; w++) printf("warning      %s\n", p->warnings[w]);
    printf("\noperator parameters (for porting to the fused attention operator; docs/ops.md, rule ids in "
           "docs/rules.md)\n");
    printf("kv_mode      %s: %s\n", kvc_kv_mode_name(p->kv_mode), p->kv_mode_reason);
    printf("fa_version   %d: %s\n", p->fa_version, p->fa_version_reason);
    printf("layout       %s   mla_absorb %s   hybrid %s   sinks %s\n", p->input_layout, p->mla_absorb ? "yes" : "no",
           p->hybrid ? "yes" : "no", p->sinks ? "yes" : "no");
    if (p->logit_softcap > 0.0)
        printf("softcap      logit_softcap %g: scores cap * tanh(s / cap) before the mask\n", p->logit_softcap);
    memset(done, 0, (size_t)p->n_layers * sizeof *done);
    print_layer_rows(p, done, true);
    print_chunk_note(p);
    kvci_free(done);
    return true;
}

typedef struct count_option {
    const char *flag;
    int64_t min;
    int64_t *dst;
} count_option;

/* The numeric options and where they go; false for another flag. */
static bool count_flag(const char *flag, kvc_plan_options *opt, count_option *out) {
    const count_option all[] = {{"--tp", 1, &opt->tp},
                                {"--block-size", 1, &opt->block_size},
                                {"--max-model-len", 1, &opt->max_model_len},
                                {"--max-concurrency", 1, &opt->max_concurrency},
                                {"--next-n", 0, &opt->next_n},
                                {"--kv-memory", 1, &opt->kv_memory_bytes}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(flag, all[i].flag) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

int kvc_cmd_plan(int argc, char **argv) {
    kvc_plan_options opt = kvc_plan_default_options();
    const char *path = NULL;
    bool json = false;
    const char *plot = NULL;
    kvc_arg_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        count_option count;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            plan_usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = true;
            continue;
        } else if (strcmp(a, "--plot") == 0) {
            if (val == NULL) {
                fprintf(stderr, "kvcache plan: --plot expects FILE.png\n");
                return 2;
            }
            if (!kvc_plot_path_ok("plan", val)) return 2;
            plot = val;
        } else if (count_flag(a, &opt, &count)) {
            rc = parse_count(a, val, count.min, count.dst);
        } else if (strcmp(a, "--kv-dtype") == 0) {
            if (val == NULL || kvc_dtype_parse(val, &opt.kv_dtype) != KVC_OK || !kvc_model_kv_dtype_ok(opt.kv_dtype)) {
                fprintf(stderr,
                        "kvcache plan: --kv-dtype expects f32, f16, bf16, i8 (int8), fp8_e4m3 (fp8) or fp8_e5m2, "
                        "got \"%s\"\n",
                        val ? val : "");
                return 2;
            }
            opt.kv_dtype_set = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "kvcache plan: unknown option %s\n", a);
            plan_usage(stderr);
            return 2;
        } else {
            if (path != NULL) {
                fprintf(stderr, "kvcache plan: one CONFIG.json or MODEL_DIR expected, got \"%s\" and \"%s\"\n", path,
                        a);
                return 2;
            }
            path = a;
            continue;
        }
        if (rc != 0 || kvc_arg_repeated(&seen, "plan", a)) return 2;
        i++; /* the option's value */
    }
    if (path == NULL) {
        plan_usage(stderr);
        return 2;
    }
    char in_dir[4096];
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a model directory: its config.json, as `run` reads it */
        if ((size_t)snprintf(in_dir, sizeof in_dir, "%s/config.json", path) >= sizeof in_dir) {
            fprintf(stderr, "kvcache plan: the path of %s/config.json is longer than %zu bytes\n", path,
                    sizeof in_dir - 1);
            return 2;
        }
        path = in_dir;
    }
    size_t len = 0;
    char *text = NULL;
    kvc_status st = kvci_read_file(path, KVC_MAX_INPUT_BYTES, &text, &len);
    if (st != KVC_OK) {
        fprintf(stderr, "kvcache plan: %s\n", kvc_last_error());
        return st == KVC_ENOMEM ? 1 : 2;
    }
    kvc_model_plan *plan = NULL;
    st = kvc_model_plan_create(text, len, &opt, &plan);
    kvci_free(text);
    if (st != KVC_OK) {
        fprintf(stderr, "kvcache plan: %s: %s\n", path, kvc_last_error());
        return st == KVC_EINVAL ? 2 : 1;
    }
    int rc = 0;
    if (json) {
        char *doc = NULL;
        if (kvc_model_plan_to_json(plan, &doc) != KVC_OK) {
            fprintf(stderr, "kvcache plan: %s\n", kvc_last_error());
            rc = 1;
        } else {
            printf("%s\n", doc);
            kvc_plan_json_free(doc);
        }
    } else if (!print_table(plan)) {
        fprintf(stderr, "kvcache plan: out of memory printing the table\n");
        rc = 1;
    }
    if (plot != NULL && rc == 0) {
        char *doc = NULL;
        if (kvc_model_plan_to_json(plan, &doc) != KVC_OK) {
            fprintf(stderr, "kvcache plan: %s\n", kvc_last_error());
            rc = 1;
        } else {
            rc = kvc_plot_emit("plan", doc, strlen(doc), plot, ".json");
            kvc_plan_json_free(doc);
        }
    }
    kvc_model_plan_destroy(plan);
    return rc;
}
