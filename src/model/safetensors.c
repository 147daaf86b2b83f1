/* safetensors by mmap: 8-byte little-endian header length, JSON header
 * {name: {dtype, shape, data_offsets: [begin, end]}}, then the data. Every
 * error names the file (and the tensor when there is one). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/internal.h"
#include "kvcache/half.h"
#include "kvcache/model.h"

#define ST_MAX_FILES 64
#define ST_PATH_MAX 4096

typedef struct st_file {
    char path[ST_PATH_MAX];
    const uint8_t *map; /* [size] */
    size_t size;
    cJSON *header;
    const uint8_t *data; /* map + 8 + header length */
    size_t data_size;
} st_file;

struct kvc_safetensors {
    int32_t n_files;
    st_file files[ST_MAX_FILES];
};

static void file_close(st_file *f)
{
    cJSON_Delete(f->header);
    if (f->map) munmap((void *)f->map, f->size);
    memset(f, 0, sizeof *f);
}

static size_t dtype_bytes(const char *dt)
{
    if (strcmp(dt, "F32") == 0 || strcmp(dt, "I32") == 0 || strcmp(dt, "U32") == 0) return 4;
    if (strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0 || strcmp(dt, "I16") == 0 || strcmp(dt, "U16") == 0) return 2;
    if (strcmp(dt, "F64") == 0 || strcmp(dt, "I64") == 0 || strcmp(dt, "U64") == 0) return 8;
    if (strcmp(dt, "I8") == 0 || strcmp(dt, "U8") == 0 || strcmp(dt, "BOOL") == 0 || strncmp(dt, "F8", 2) == 0) return 1;
    return 0;
}

/* Checks one header entry: dtype known, shape non-negative, offsets inside the data. */
static kvc_status check_entry(const st_file *f, const cJSON *e)
{
    const char *name = e->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2)
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": header entry needs dtype, shape and data_offsets [begin, end]",
                        f->path, name);
    const size_t es = dtype_bytes(dt->valuestring);
    if (es == 0) return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": unknown dtype \"%s\"", f->path, name, dt->valuestring);
    double numel = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh)
    {
        if (!cJSON_IsNumber(d) || d->valuedouble < 0)
            return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": shape entries must be non-negative integers", f->path, name);
        numel *= d->valuedouble;
    }
    const double b = cJSON_GetArrayItem(off, 0)->valuedouble, en = cJSON_GetArrayItem(off, 1)->valuedouble;
    if (!(b >= 0) || !(en >= b))
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": data_offsets [%.0f, %.0f] are not an increasing pair", f->path,
                        name, b, en);
    if (en > (double)f->data_size)
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": truncated file: data ends at byte %.0f but the file holds %zu data bytes",
                        f->path, name, en, f->data_size);
    if (en - b != numel * (double)es)
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\": data_offsets span %.0f bytes, shape and dtype %s need %.0f",
                        f->path, name, en - b, dt->valuestring, numel * (double)es);
    return KVC_OK;
}

static kvc_status file_open(st_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return kvc_fail(KVC_EINVAL, "%s: cannot open (%s)", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return kvc_fail(KVC_EINVAL, "%s: cannot stat (%s)", path, strerror(errno));
    }
    f->size = (size_t)sb.st_size;
    if (f->size < 8) {
        close(fd);
        return kvc_fail(KVC_EINVAL, "%s: truncated file: %zu bytes, shorter than the 8-byte header length", path, f->size);
    }
    void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return kvc_fail(KVC_EINVAL, "%s: mmap failed (%s)", path, strerror(errno));
    f->map = map;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | f->map[i];
    if (hl > f->size - 8) {
        kvc_status st = kvc_fail(KVC_EINVAL, "%s: header out of bounds: header length %llu exceeds the %zu bytes after it",
                                 path, (unsigned long long)hl, f->size - 8);
        file_close(f);
        return st;
    }
    f->header = cJSON_ParseWithLength((const char *)f->map + 8, (size_t)hl);
    if (!f->header || !cJSON_IsObject(f->header)) {
        file_close(f);
        return kvc_fail(KVC_EINVAL, "%s: header is not a JSON object", path);
    }
    f->data = f->map + 8 + hl;
    f->data_size = f->size - 8 - (size_t)hl;
    const cJSON *e;
    cJSON_ArrayForEach(e, f->header)
    {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        kvc_status st = check_entry(f, e);
        if (st != KVC_OK) {
            file_close(f);
            return st;
        }
    }
    return KVC_OK;
}

static const cJSON *find(const kvc_safetensors *st, const char *name, const st_file **file)
{
    for (int32_t i = 0; i < st->n_files; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(st->files[i].header, name);
        if (e) {
            *file = &st->files[i];
            return e;
        }
    }
    return NULL;
}

static kvc_status check_duplicates(const kvc_safetensors *st)
{
    for (int32_t i = 1; i < st->n_files; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, st->files[i].header)
        {
            if (strcmp(e->string, "__metadata__") == 0) continue;
            for (int32_t j = 0; j < i; j++)
                if (cJSON_GetObjectItemCaseSensitive(st->files[j].header, e->string))
                    return kvc_fail(KVC_EINVAL, "tensor \"%s\" is in both %s and %s", e->string, st->files[j].path,
                                    st->files[i].path);
        }
    }
    return KVC_OK;
}

kvc_status kvc_safetensors_open_file(const char *path, kvc_safetensors **out)
{
    if (!path || !out) return kvc_fail(KVC_EINVAL, "safetensors_open_file: path and out must not be NULL");
    *out = NULL;
    kvc_safetensors *st = kvc_calloc(1, sizeof *st);
    if (!st) return kvc_fail(KVC_ENOMEM, "safetensors_open_file: out of memory");
    kvc_status s = file_open(&st->files[0], path);
    if (s != KVC_OK) {
        kvc_free(st);
        return s;
    }
    st->n_files = 1;
    *out = st;
    return KVC_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

kvc_status kvc_safetensors_open_dir(const char *dir, kvc_safetensors **out)
{
    if (!dir || !out) return kvc_fail(KVC_EINVAL, "safetensors_open_dir: dir and out must not be NULL");
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return kvc_fail(KVC_EINVAL, "%s: cannot open directory (%s)", dir, strerror(errno));
    char *names[ST_MAX_FILES];
    int n = 0;
    struct dirent *de;
    kvc_status s = KVC_OK;
    while ((de = readdir(d)) != NULL) {
        const size_t len = strlen(de->d_name);
        if (len < 12 || strcmp(de->d_name + len - 12, ".safetensors") != 0) continue;
        if (n == ST_MAX_FILES) {
            s = kvc_fail(KVC_EINVAL, "%s: more than %d .safetensors files", dir, ST_MAX_FILES);
            break;
        }
        names[n] = kvc_strdup(de->d_name);
        if (!names[n]) {
            s = kvc_fail(KVC_ENOMEM, "safetensors_open_dir: out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (s == KVC_OK && n == 0) s = kvc_fail(KVC_EINVAL, "%s: no *.safetensors file", dir);
    kvc_safetensors *st = NULL;
    if (s == KVC_OK) {
        st = kvc_calloc(1, sizeof *st);
        if (!st) s = kvc_fail(KVC_ENOMEM, "safetensors_open_dir: out of memory");
    }
    if (s == KVC_OK) {
        qsort(names, (size_t)n, sizeof names[0], cmp_str);
        for (int i = 0; i < n && s == KVC_OK; i++) {
            char path[ST_PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
                s = kvc_fail(KVC_EINVAL, "%s: path too long", dir);
            else if ((s = file_open(&st->files[st->n_files], path)) == KVC_OK)
                st->n_files++;
        }
        if (s == KVC_OK) s = check_duplicates(st);
    }
    for (int i = 0; i < n; i++) kvc_free(names[i]);
    if (s != KVC_OK) {
        kvc_safetensors_destroy(st);
        return s;
    }
    *out = st;
    return KVC_OK;
}

void kvc_safetensors_destroy(kvc_safetensors *st)
{
    if (!st) return;
    for (int32_t i = 0; i < st->n_files; i++) file_close(&st->files[i]);
    kvc_free(st);
}

bool kvc_safetensors_has(const kvc_safetensors *st, const char *name)
{
    const st_file *f;
    return st && name && find(st, name, &f) != NULL;
}

static void shape_text(const int64_t *s, int32_t n, char *buf, size_t cap)
{
    size_t w = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < n && w < cap; i++) w += (size_t)snprintf(buf + w, cap - w, i ? ", %lld" : "%lld", (long long)s[i]);
    if (w < cap) snprintf(buf + w, cap - w, "]");
}

kvc_status kvc_safetensors_read_f32(const kvc_safetensors *st, const char *name, int32_t ndim, const int64_t *shape,
                                    float *dst)
{
    if (!st || !name || !dst || (ndim > 0 && !shape) || ndim < 0 || ndim > KVC_MAX_DIMS)
        return kvc_fail(KVC_EINVAL, "safetensors_read_f32: NULL argument or ndim %d outside [0, %d]", (int)ndim,
                        KVC_MAX_DIMS);
    const st_file *f = NULL;
    const cJSON *e = find(st, name, &f);
    if (!e)
        return kvc_fail(KVC_EINVAL, "missing tensor \"%s\" (not in %s%s)", name, st->files[0].path,
                        st->n_files > 1 ? " or the other shards" : "");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    int64_t got[KVC_MAX_DIMS + 1];
    int32_t gn = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh)
    {
        if (gn <= KVC_MAX_DIMS) got[gn] = (int64_t)d->valuedouble;
        gn++;
    }
    bool same = gn == ndim;
    for (int32_t i = 0; same && i < ndim; i++) same = got[i] == shape[i];
    if (!same) {
        char a[160], b[160];
        shape_text(got, gn <= KVC_MAX_DIMS ? gn : KVC_MAX_DIMS, a, sizeof a);
        shape_text(shape, ndim, b, sizeof b);
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\" has wrong shape %s, expected %s", f->path, name, a, b);
    }
    const char *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    const uint8_t *src = f->data + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) n *= shape[i];
    if (strcmp(dt, "F32") == 0) {
        memcpy(dst, src, (size_t)n * 4);
    } else if (strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0) {
        const bool bf = dt[0] == 'B';
        for (int64_t i = 0; i < n; i++) {
            const uint16_t h = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = bf ? kvc_bf16_to_f32(h) : kvc_f16_to_f32(h);
        }
    } else {
        return kvc_fail(KVC_EINVAL, "%s: tensor \"%s\" has wrong dtype %s, expected F32, F16 or BF16", f->path, name, dt);
    }
    return KVC_OK;
}
