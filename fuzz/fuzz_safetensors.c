/* libFuzzer target: arbitrary bytes as a .safetensors file. The file is a
 * memfd (a regular file without touching the disk), opened through
 * kvc_safetensors_open_file; when it opens, every tensor the header lists is
 * read back with its declared shape. Any input must either open or be
 * refused with a status and a message; a crash, a sanitizer report, a
 * refusal without a message or a tensor that opens but cannot be read as its
 * own shape (F32/F16/BF16), or viewed as its own shape and dtype (any dtype:
 * kvci_safetensors_view, the saved quantized copies' reader), is a finding;
 * so is "__metadata__" found, read or typed as a tensor. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "kvcache/model.h"
#include "model/weights_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every F32/F16/BF16 tensor of the header at its own shape. */
static void read_all(const kvc_safetensors *st, const uint8_t *data) {
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | data[i];
    cJSON *header = cJSON_ParseWithLength((const char *)data + 8, (size_t)hl);
    if (header == NULL) abort(); /* the library parsed it */
    const cJSON *e;
    cJSON_ArrayForEach(e, header) {
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        if (strcmp(e->string, "__metadata__") == 0 || !cJSON_IsString(dt)) continue;
        int64_t shape[KVC_MAX_DIMS], n = 1;
        int32_t ndim = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(e, "shape")) {
            shape[ndim] = (int64_t)d->valuedouble;
            n *= shape[ndim++];
        }
        bool readable = strcmp(dt->valuestring, "F32") == 0 || strcmp(dt->valuestring, "F16") == 0 ||
                        strcmp(dt->valuestring, "BF16") == 0;
        float *dst = malloc((size_t)n * sizeof *dst + 1); /* n elements lie in the input: small */
        if (dst == NULL) abort();
        kvc_status s = kvc_safetensors_read_f32(st, e->string, ndim, shape, dst);
        if (readable != (s == KVC_OK)) abort();
        free(dst);
        const void *view = NULL;
        if (kvci_safetensors_view(st, e->string, dt->valuestring, ndim, shape, &view) != KVC_OK || !view) abort();
    }
    (void)kvci_safetensors_meta(st, "kvcache.format");
    /* the header's own entry is never a tensor, whatever fields it holds */
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(header, "__metadata__");
    int64_t meta_shape[KVC_MAX_DIMS] = {0};
    int32_t meta_ndim = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(meta, "shape")) {
        if (meta_ndim < KVC_MAX_DIMS) meta_shape[meta_ndim++] = cJSON_IsNumber(d) ? (int64_t)d->valuedouble : 0;
    }
    float one;
    if (kvc_safetensors_has(st, "__metadata__") ||
        kvc_safetensors_read_f32(st, "__metadata__", meta_ndim, meta_shape, &one) == KVC_OK ||
        kvci_safetensors_dtype(st, "__metadata__") != NULL)
        abort();
    cJSON_Delete(header);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz_safetensors", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    kvc_safetensors *st = NULL;
    kvc_status s = kvc_safetensors_open_file(path, &st);
    if (s == KVC_OK) {
        read_all(st, data);
        kvc_safetensors_destroy(st);
    } else if (st != NULL || kvc_last_error()[0] == '\0') {
        abort();
    }
    close(fd);
    return 0;
}
