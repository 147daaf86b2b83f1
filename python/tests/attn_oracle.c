/* Test oracle of the Python binding: runs kvc_attention_cpu from C on a case
 * the test wrote, with every parameter stated explicitly, and writes the
 * output bytes. The test compiles it against include/ and the repository's
 * libkvcache.a, then compares the binding's output with it byte for byte.
 *
 * usage: attn_oracle DIR   (DIR/params.txt, DIR/<tensor>.bin -> DIR/out.bin)
 * params.txt, one item per line:
 *   layout|num_heads|num_kv_heads|sparse_mode|pre_tokens|next_tokens|batch|bidirectional|
 *   kv_len_form|kv_storage|block_layout|block_size|key_quant|value_quant VALUE
 *   scale DOUBLE
 *   q_lens V...   kv_lens V...
 *   tensor NAME DTYPE NDIM D0 D1 ...   (NAME: q k v out block_table key_scale value_scale) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/kvcache.h"

#define MAX_B 64

static void *read_file(const char *dir, const char *name, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    void *buf = NULL;
    if (f != NULL && kvc_aligned_alloc(64, bytes ? bytes : 64, &buf) == KVC_OK && fread(buf, 1, bytes, f) != bytes) {
        kvc_aligned_free(buf);
        buf = NULL;
    }
    if (f != NULL) fclose(f);
    return buf;
}

static kvc_tensor *tensor_field(kvc_attention_params *p, const char *name) {
    if (strcmp(name, "q") == 0) return &p->q;
    if (strcmp(name, "k") == 0) return &p->k;
    if (strcmp(name, "v") == 0) return &p->v;
    if (strcmp(name, "out") == 0) return &p->out;
    if (strcmp(name, "block_table") == 0) return &p->block_table;
    if (strcmp(name, "key_scale") == 0) return &p->key_scale;
    if (strcmp(name, "value_scale") == 0) return &p->value_scale;
    return NULL;
}

static int read_lens(char *rest, int64_t *out) {
    int n = 0;
    for (char *tok = strtok(rest, " \n"); tok != NULL && n < MAX_B; tok = strtok(NULL, " \n")) out[n++] = atoll(tok);
    return n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: attn_oracle DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "attn_oracle: cannot open %s\n", path);
        return 2;
    }
    kvc_attention_params p = kvc_attention_default_params();
    static int64_t q_lens[MAX_B], kv_lens[MAX_B];
    size_t out_bytes = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char key[64], rest[4000] = "";
        if (sscanf(line, "%63s %3999[^\n]", key, rest) < 1) continue;
        long long v = atoll(rest);
        if (strcmp(key, "layout") == 0)
            p.layout = (kvc_attn_layout)v;
        else if (strcmp(key, "num_heads") == 0)
            p.num_heads = (int32_t)v;
        else if (strcmp(key, "num_kv_heads") == 0)
            p.num_kv_heads = (int32_t)v;
        else if (strcmp(key, "scale") == 0)
            p.scale = strtod(rest, NULL);
        else if (strcmp(key, "sparse_mode") == 0)
            p.sparse_mode = (int32_t)v;
        else if (strcmp(key, "pre_tokens") == 0)
            p.pre_tokens = v;
        else if (strcmp(key, "next_tokens") == 0)
            p.next_tokens = v;
        else if (strcmp(key, "batch") == 0)
            p.batch = v;
        else if (strcmp(key, "bidirectional") == 0)
            p.bidirectional = v != 0;
        else if (strcmp(key, "kv_len_form") == 0)
            p.kv_len_form = (kvc_attn_kv_form)v;
        else if (strcmp(key, "kv_storage") == 0)
            p.kv_storage = (kvc_kv_storage)v;
        else if (strcmp(key, "block_layout") == 0)
            p.block_layout = (kvc_block_layout)v;
        else if (strcmp(key, "block_size") == 0)
            p.block_size = (int32_t)v;
        else if (strcmp(key, "key_quant") == 0)
            p.key_quant_mode = (kvc_quant_mode)v;
        else if (strcmp(key, "value_quant") == 0)
            p.value_quant_mode = (kvc_quant_mode)v;
        else if (strcmp(key, "q_lens") == 0)
            read_lens(rest, q_lens);
        else if (strcmp(key, "kv_lens") == 0)
            read_lens(rest, kv_lens);
        else if (strcmp(key, "tensor") == 0) {
            char name[32], dt[16];
            int ndim = 0, used = 0;
            long long d[KVC_MAX_DIMS] = {0};
            if (sscanf(rest, "%31s %15s %d%n", name, dt, &ndim, &used) != 3 || ndim < 0 || ndim > KVC_MAX_DIMS) {
                fprintf(stderr, "attn_oracle: bad tensor line: %s", line);
                return 2;
            }
            kvc_tensor *t = tensor_field(&p, name);
            if (t == NULL || kvc_dtype_parse(dt, &t->dtype) != KVC_OK) {
                fprintf(stderr, "attn_oracle: bad tensor name or dtype: %s", line);
                return 2;
            }
            char *s = rest + used;
            size_t bytes = kvc_dtype_size(t->dtype);
            t->ndim = ndim;
            for (int i = 0; i < ndim; i++) {
                d[i] = strtoll(s, &s, 10);
                t->shape[i] = d[i];
                bytes *= (size_t)d[i];
            }
            if (strcmp(name, "out") == 0) {
                out_bytes = bytes;
                if (kvc_aligned_alloc(64, bytes ? bytes : 64, &t->data) != KVC_OK) return 2;
                memset(t->data, 0, bytes);
            } else if ((t->data = read_file(dir, name, bytes)) == NULL) {
                fprintf(stderr, "attn_oracle: cannot read %s/%s.bin (%zu bytes)\n", dir, name, bytes);
                return 2;
            }
        }
    }
    fclose(f);
    p.q_lens = q_lens;
    p.kv_lens = kv_lens;
    size_t ws_bytes = 0;
    void *ws = NULL;
    if (kvc_attention_cpu_workspace_size(&p, omp_get_max_threads(), &ws_bytes) != KVC_OK ||
        kvc_aligned_alloc(64, ws_bytes ? ws_bytes : 64, &ws) != KVC_OK ||
        kvc_attention_cpu(&p, ws, ws_bytes) != KVC_OK) {
        fprintf(stderr, "attn_oracle: %s\n", kvc_last_error());
        return 1;
    }
    snprintf(path, sizeof path, "%s/out.bin", dir);
    FILE *o = fopen(path, "wb");
    if (o == NULL || fwrite(p.out.data, 1, out_bytes, o) != out_bytes || fclose(o) != 0) {
        fprintf(stderr, "attn_oracle: cannot write %s\n", path);
        return 2;
    }
    return 0;
}
