/* libFuzzer target: arbitrary bytes as a model directory for kvc_model_load_weights. The input is
 *   [flags] [config.json text] NUL [model.safetensors.index.json text NUL, with flags bit 4] [weights]
 * flags bits 0-1: the weights asked (checkpoint, bf16, q8_0, q4_0); bit 2: the weights are two
 * shards (their first 4 bytes, little-endian, give the first shard's length, the rest is the
 * second: model-00001-of-00002.safetensors and model-00002-of-00002.safetensors), else one
 * model.safetensors; bit 3: with q8_0 or q4_0, a loaded model is saved as a quantized copy
 * (kvci_model_save) and that copy loaded back; bit 4: the directory has an index, the text after the
 * config. The files go to a private directory under /dev/shm (or /tmp) made once per process,
 * rewritten for each input and removed at exit. Any input must either load or be refused with a
 * status and a message; a saved copy of a model that loaded must load again. A crash, a sanitizer
 * report, a leak, a refusal without a message, or a saved copy that does not load back is a finding.
 * The seeds (fuzz/corpus/fuzz_model_dir) are tiny models of each family the runtime runs and saved
 * quantized copies, written by tools/make_fuzz_model_seeds.py. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvcache/model.h"
#include "model/model_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], copy[96];
static const char INDEX[] = "model.safetensors.index.json";
static const char *const SHARDS[] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};

/* dir/name holding bytes [0, n) of p; n 0 with p NULL: dir/name removed. */
static void put(const char *name, const uint8_t *p, size_t n) {
    char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    if (!p) return;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) abort();
}

/* The saved copy's directory removed (its files are the ones kvci_model_save writes). */
static void remove_copy(void) {
    static const char *const files[] = {"model.safetensors", "config.json"};
    char path[160];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", copy, files[i]);
        unlink(path);
    }
    rmdir(copy);
}

/* The private directory removed when the fuzzer exits. */
static void remove_dir(void) {
    put("config.json", NULL, 0);
    put(INDEX, NULL, 0);
    put("model.safetensors", NULL, 0);
    put(SHARDS[0], NULL, 0);
    put(SHARDS[1], NULL, 0);
    remove_copy();
    rmdir(dir);
}

/* Loads dir with `weights`; a refusal must say why. */
static kvc_model *load(const char *from, const char *weights) {
    kvc_model *m = NULL;
    const kvc_status s = kvc_model_load_weights(from, weights, &m);
    if (s == KVC_OK && !m) abort();
    if (s != KVC_OK && (m || kvc_last_error()[0] == '\0')) abort();
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const WEIGHTS[] = {"checkpoint", "bf16", "q8_0", "q4_0"};
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/kvc_fuzz_model.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(copy, sizeof copy, "%s.q", dir);
        atexit(remove_dir);
    }
    if (size < 1) return 0;
    const uint8_t flags = data[0];
    const uint8_t *cfg = data + 1, *nul = memchr(cfg, '\0', size - 1);
    const size_t cfg_n = nul ? (size_t)(nul - cfg) : size - 1;
    const uint8_t *w = nul ? nul + 1 : data + size;
    put("config.json", cfg, cfg_n);
    put(INDEX, NULL, 0);
    if (flags & 16) {
        const uint8_t *end = memchr(w, '\0', (size_t)(data + size - w));
        const size_t n = end ? (size_t)(end - w) : (size_t)(data + size - w);
        put(INDEX, w, n);
        w += end ? n + 1 : n;
    }
    const size_t w_n = (size_t)(data + size - w);
    if (flags & 4) {
        uint32_t first = 0;
        for (size_t i = 0; i < 4 && i < w_n; i++) first |= (uint32_t)w[i] << (8 * i);
        const size_t rest = w_n < 4 ? 0 : w_n - 4, a = first < rest ? first : rest;
        put("model.safetensors", NULL, 0);
        put(SHARDS[0], w + (w_n - rest), a);
        put(SHARDS[1], w + (w_n - rest) + a, rest - a);
    } else {
        put(SHARDS[0], NULL, 0);
        put(SHARDS[1], NULL, 0);
        put("model.safetensors", w, w_n);
    }
    const char *weights = WEIGHTS[flags & 3];
    kvc_model *m = load(dir, weights);
    if (m && (flags & 8) && (flags & 3) >= 2) {
        remove_copy();
        const kvc_status s = kvci_model_save(m, dir, copy);
        if (s != KVC_OK && kvc_last_error()[0] == '\0') abort();
        if (s == KVC_OK) {
            kvc_model *again = load(copy, "checkpoint");
            if (!again) abort(); /* a saved copy loads back */
            kvc_model_destroy(again);
        }
        remove_copy();
    }
    kvc_model_destroy(m);
    return 0;
}
