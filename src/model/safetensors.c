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
#include "model/json_nul.h"
#include "model/safetensors_index.h"
#include "model/weights_internal.h"
#include "kvcache/half.h"
#include "kvcache/model.h"
#include "model/json_read.h"

#define ST_MAX_FILES KVCI_ST_MAX_SHARDS
#define ST_PATH_MAX  4096

typedef struct st_file {
    char path[ST_PATH_MAX];
    const uint8_t *map; /* [size] */
    size_t size;
    cJSON *header;
    const uint8_t *data; /* map + 8 + header length */
    size_t data_size;
} st_file;

/* A tensor's header entry in one file of a set. */
typedef struct st_named {
    const char *name;
    int32_t file;
    const cJSON *entry;
} st_named;

struct kvc_safetensors {
    int32_t n_files;
    st_file files[ST_MAX_FILES];
    st_named *index; /* [n_index] every tensor of every file, by name: one lookup is a binary search */
    size_t n_index;
    bool *used; /* [n_index] looked up with a shape to read or check (find_shaped): what the loader takes */
};

static void file_close(st_file *f) {
    cJSON_Delete(f->header);
    if (f->map) munmap((void *)f->map, f->size);
    memset(f, 0, sizeof *f);
}

static size_t dtype_bytes(const char *dt) {
    if (strcmp(dt, "F32") == 0 || strcmp(dt, "I32") == 0 || strcmp(dt, "U32") == 0) return 4;
    if (strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0 || strcmp(dt, "I16") == 0 || strcmp(dt, "U16") == 0) return 2;
    if (strcmp(dt, "F64") == 0 || strcmp(dt, "I64") == 0 || strcmp(dt, "U64") == 0) return 8;
    if (strcmp(dt, "I8") == 0 || strcmp(dt, "U8") == 0 || strcmp(dt, "BOOL") == 0 || strncmp(dt, "F8", 2) == 0)
        return 1;
    return 0;
}

/* Largest header the format allows (the reference implementation's limit). */
#define ST_MAX_HEADER_BYTES ((uint64_t)100 << 20)

/* A JSON number that is an integer in [0, 2^53] (exact in a double); false
 * for anything else, 1e300 included. */
static bool as_size(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    const double d = v->valuedouble;
    if (!(d >= 0 && d <= 0x1p53) || d != (double)(int64_t)d) return false;
    *out = (int64_t)d;
    return true;
}

/* Where one tensor's bytes lie in the data section. */
typedef struct st_span {
    int64_t begin, end;
    const char *name;
} st_span;

/* Checks one header entry: dtype known, shape and offsets exact integers,
 * the span as long as shape and dtype need, inside the data, aligned to the
 * element size; *span is where it lies. */
static kvc_status check_entry(const st_file *f, const cJSON *e, st_span *span) {
    const char *name = e->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": header entry needs dtype, shape and data_offsets [begin, end]",
                         f->path, name);
    const int64_t es = (int64_t)dtype_bytes(dt->valuestring);
    if (es == 0)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": unknown dtype \"%s\"", f->path, name, dt->valuestring);
    if (cJSON_GetArraySize(sh) > KVC_MAX_DIMS)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": %d dimensions, more than %d", f->path, name,
                         cJSON_GetArraySize(sh), KVC_MAX_DIMS);
    int64_t bytes = es;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) {
        int64_t dim = 0;
        if (!as_size(d, &dim))
            return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": shape entries must be integers in [0, 2^53]", f->path,
                             name);
        if (!kvci_mul64(bytes, dim, &bytes))
            return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": the bytes of its shape overflow 64 bits", f->path, name);
    }
    int64_t b = 0, en = 0;
    if (!as_size(cJSON_GetArrayItem(off, 0), &b) || !as_size(cJSON_GetArrayItem(off, 1), &en) || en < b)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": data_offsets must be an increasing pair of integers", f->path,
                         name);
    if (en > (int64_t)f->data_size)
        return kvci_fail(KVC_EINVAL,
                         "%s: tensor \"%s\": truncated file: data ends at byte %lld but the file holds %zu data bytes",
                         f->path, name, (long long)en, f->data_size);
    if (en - b != bytes)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": data_offsets span %lld bytes, shape and dtype %s need %lld",
                         f->path, name, (long long)(en - b), dt->valuestring, (long long)bytes);
    if (b % es != 0)
        return kvci_fail(
            KVC_EINVAL,
            "%s: tensor \"%s\": data_offsets begin at byte %lld, not a multiple of the %lld-byte %s element", f->path,
            name, (long long)b, (long long)es, dt->valuestring);
    *span = (st_span){b, en, name};
    return KVC_OK;
}

static int cmp_span(const void *a, const void *b) {
    const st_span *x = a, *y = b;
    return x->begin != y->begin ? (x->begin < y->begin ? -1 : 1) : (x->end < y->end ? -1 : x->end > y->end);
}

/* The format's rule: the tensors tile the data section exactly, in some
 * order, with no byte shared and none left over. */
static kvc_status check_tiling(const st_file *f, st_span *spans, int n) {
    qsort(spans, (size_t)n, sizeof *spans, cmp_span);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (spans[i].begin < at)
            return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\": data_offsets [%lld, %lld] overlap tensor \"%s\"", f->path,
                             spans[i].name, (long long)spans[i].begin, (long long)spans[i].end, spans[i - 1].name);
        if (spans[i].begin > at)
            return kvci_fail(
                KVC_EINVAL,
                "%s: tensor \"%s\": data_offsets begin at byte %lld, leaving bytes %lld..%lld of the data unused",
                f->path, spans[i].name, (long long)spans[i].begin, (long long)at, (long long)spans[i].begin - 1);
        at = spans[i].end;
    }
    if (at != (int64_t)f->data_size)
        return kvci_fail(KVC_EINVAL, "%s: the tensors end at data byte %lld, the data section holds %zu bytes", f->path,
                         (long long)at, f->data_size);
    return KVC_OK;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A tensor named twice in one header is ambiguous (which one would a read
 * find?): refused. Sorting keeps this O(n log n) for headers of 10^5 tensors. */
static kvc_status check_names(const st_file *f, const st_span *spans, int n) {
    const char **names = kvci_calloc((size_t)n, sizeof *names);
    if (!names) return kvci_fail(KVC_ENOMEM, "%s: out of memory checking %d tensor names", f->path, n);
    for (int i = 0; i < n; i++) names[i] = spans[i].name;
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    kvc_status st = KVC_OK;
    for (int i = 1; i < n && st == KVC_OK; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            st = kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" is named twice in the header", f->path, names[i]);
    kvci_free(names);
    return st;
}

/* The header's "__metadata__" is a map of strings to strings (the format's rule): a value of another
 * type would read as absent (kvci_safetensors_meta), so a copy marked kvcache.format 5 would load as a
 * checkpoint, missing every tensor. */
static kvc_status check_metadata(const st_file *f, const cJSON *meta) {
    if (!cJSON_IsObject(meta))
        return kvci_fail(KVC_EINVAL, "%s: header entry \"__metadata__\" must be an object of strings", f->path);
    const cJSON *v;
    cJSON_ArrayForEach(v, meta) {
        if (!cJSON_IsString(v))
            return kvci_fail(KVC_EINVAL, "%s: __metadata__.%s must be a string", f->path, v->string);
    }
    return KVC_OK;
}

static kvc_status check_entries(const st_file *f) {
    const int n = cJSON_GetArraySize(f->header);
    st_span *spans = kvci_calloc((size_t)n, sizeof *spans);
    if (!spans) return kvci_fail(KVC_ENOMEM, "%s: out of memory checking %d header entries", f->path, n);
    int n_spans = 0;
    kvc_status st = KVC_OK;
    const cJSON *e;
    cJSON_ArrayForEach(e, f->header) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if ((st = check_metadata(f, e)) != KVC_OK) break;
            continue;
        }
        if ((st = check_entry(f, e, &spans[n_spans])) != KVC_OK) break;
        n_spans++;
    }
    if (st == KVC_OK) st = check_names(f, spans, n_spans);
    if (st == KVC_OK) st = check_tiling(f, spans, n_spans);
    kvci_free(spans);
    return st;
}

static kvc_status file_open(st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = -1;
    kvc_status st = kvci_open_regular(path, &fd, &f->size);
    if (st != KVC_OK) return st;
    if (f->size < 8) {
        close(fd);
        return kvci_fail(KVC_EINVAL, "%s: truncated file: %zu bytes, shorter than the 8-byte header length", path,
                         f->size);
    }
    void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return kvci_fail(KVC_EINVAL, "%s: mmap failed (%s)", path, strerror(errno));
    f->map = map;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | f->map[i];
    if (hl > f->size - 8 || hl > ST_MAX_HEADER_BYTES) {
        st = kvci_fail(
            KVC_EINVAL,
            "%s: header out of bounds: header length %llu exceeds the %zu bytes after it or the %llu-byte limit", path,
            (unsigned long long)hl, f->size - 8, (unsigned long long)ST_MAX_HEADER_BYTES);
        file_close(f);
        return st;
    }
    st = kvci_json_parse((const char *)f->map + 8, (size_t)hl, "", &f->header);
    if (st != KVC_OK || !cJSON_IsObject(f->header)) {
        char why[160];
        snprintf(why, sizeof why, "%s", st != KVC_OK ? kvc_last_error() : "another JSON value");
        st = kvci_fail(st == KVC_ENOMEM ? KVC_ENOMEM : KVC_EINVAL, "%s: header is not a JSON object: %s", path, why);
    }
    char nul[600];
    if (st == KVC_OK && !kvci_json_check_nuls((const char *)f->map + 8, (size_t)hl, f->header, NULL, nul, sizeof nul))
        st = kvci_fail(KVC_EINVAL, "%s: header: %s (a name would read as its part before it)", path, nul);
    if (st == KVC_OK) {
        f->data = f->map + 8 + hl;
        f->data_size = f->size - 8 - (size_t)hl;
        st = check_entries(f);
    }
    if (st != KVC_OK) file_close(f);
    return st;
}

static int cmp_named(const void *a, const void *b) {
    const st_named *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->file > y->file) - (x->file < y->file);
}

/* The header entry of tensor `name` (its file into *file); "__metadata__" is the header's own entry,
 * never a tensor (its fields were not checked as one), and is not in the index. */
static const cJSON *find_at(const kvc_safetensors *st, const char *name, const st_file **file, size_t *at) {
    const st_named key = {.name = name, .file = -1};
    size_t lo = 0, hi = st->n_index; /* the first entry not before (name, -1) */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (cmp_named(&st->index[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == st->n_index || strcmp(st->index[lo].name, name) != 0) return NULL;
    *file = &st->files[st->index[lo].file];
    *at = lo;
    return st->index[lo].entry;
}

static const cJSON *find(const kvc_safetensors *st, const char *name, const st_file **file) {
    size_t at;
    return find_at(st, name, file, &at);
}

/* Sorts every tensor name of every file into st->index; a tensor in two files is ambiguous: refused
 * (names are unique within a file, check_names). One sort: a name looked up file by file was
 * quadratic (two shards of 2 * 10^5 tensors took minutes). */
static kvc_status build_index(kvc_safetensors *st) {
    size_t n = 0;
    for (int32_t i = 0; i < st->n_files; i++) n += (size_t)cJSON_GetArraySize(st->files[i].header);
    st->index = kvci_calloc(n, sizeof *st->index);
    st->used = kvci_calloc(n ? n : 1, sizeof *st->used);
    if (!st->index || !st->used)
        return kvci_fail(KVC_ENOMEM, "safetensors: out of memory indexing %zu tensor names", n);
    size_t k = 0;
    for (int32_t i = 0; i < st->n_files; i++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, st->files[i].header) {
            if (strcmp(e->string, "__metadata__") != 0) st->index[k++] = (st_named){e->string, i, e};
        }
    }
    st->n_index = k;
    qsort(st->index, k, sizeof *st->index, cmp_named);
    for (size_t i = 1; i < k; i++)
        if (strcmp(st->index[i - 1].name, st->index[i].name) == 0)
            return kvci_fail(KVC_EINVAL, "tensor \"%s\" is in both %s and %s", st->index[i].name,
                             st->files[st->index[i - 1].file].path, st->files[st->index[i].file].path);
    return KVC_OK;
}

kvc_status kvc_safetensors_open_file(const char *path, kvc_safetensors **out) {
    if (!path || !out) return kvci_fail(KVC_EINVAL, "safetensors_open_file: path and out must not be NULL");
    *out = NULL;
    kvc_safetensors *st = kvci_calloc(1, sizeof *st);
    if (!st) return kvci_fail(KVC_ENOMEM, "safetensors_open_file: out of memory");
    kvc_status s = file_open(&st->files[0], path);
    if (s != KVC_OK) {
        kvci_free(st);
        return s;
    }
    st->n_files = 1;
    if ((s = build_index(st)) != KVC_OK) {
        kvc_safetensors_destroy(st);
        return s;
    }
    *out = st;
    return KVC_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.safetensors files of dir into names[0..*n) (copies), at most ST_MAX_FILES. */
static kvc_status list_dir(const char *dir, char **names, int *n) {
    DIR *d = opendir(dir);
    if (!d) return kvci_fail(KVC_EINVAL, "%s: cannot open directory (%s)", dir, strerror(errno));
    struct dirent *de;
    kvc_status s = KVC_OK;
    while ((de = readdir(d)) != NULL) {
        const size_t len = strlen(de->d_name);
        if (len < 12 || strcmp(de->d_name + len - 12, ".safetensors") != 0) continue;
        if (*n == ST_MAX_FILES) {
            s = kvci_fail(KVC_EINVAL, "%s: more than %d .safetensors files", dir, ST_MAX_FILES);
            break;
        }
        if (!(names[*n] = kvci_strdup(de->d_name))) {
            s = kvci_fail(KVC_ENOMEM, "safetensors_open_dir: out of memory");
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (s == KVC_OK && *n == 0) s = kvci_fail(KVC_EINVAL, "%s: no *.safetensors file", dir);
    return s;
}

/* Every tensor of the index's weight map is in the shard it names. */
static kvc_status check_weight_map(const kvc_safetensors *st, const kvci_st_index *idx) {
    const cJSON *e;
    cJSON_ArrayForEach(e, idx->weight_map) {
        const st_file *f = NULL;
        const char *base = NULL;
        if (find(st, e->string, &f)) base = strrchr(f->path, '/') + 1; /* the files are DIR/NAME */
        if (!base)
            return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" is in shard %s by its weight_map, but %s does not hold it",
                             idx->path, e->string, e->valuestring, e->valuestring);
        if (strcmp(base, e->valuestring) != 0)
            return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" is in shard %s by its weight_map, but is in %s", idx->path,
                             e->string, e->valuestring, base);
    }
    return KVC_OK;
}

kvc_status kvc_safetensors_open_dir(const char *dir, kvc_safetensors **out) {
    if (!dir || !out) return kvci_fail(KVC_EINVAL, "safetensors_open_dir: dir and out must not be NULL");
    *out = NULL;
    kvci_st_index idx;
    KVC_TRY(kvci_st_index_open(dir, &idx));
    char *names[ST_MAX_FILES];
    int n = 0;
    kvc_status s = KVC_OK;
    for (; n < idx.n_shards && s == KVC_OK; n++) /* model.safetensors or an index's shards: those, none else */
        if (!(names[n] = kvci_strdup(idx.shards[n]))) s = kvci_fail(KVC_ENOMEM, "safetensors_open_dir: out of memory");
    if (idx.n_shards == 0) s = list_dir(dir, names, &n);
    kvc_safetensors *st = NULL;
    if (s == KVC_OK) {
        st = kvci_calloc(1, sizeof *st);
        if (!st) s = kvci_fail(KVC_ENOMEM, "safetensors_open_dir: out of memory");
    }
    if (s == KVC_OK) {
        qsort(names, (size_t)n, sizeof names[0], cmp_str);
        for (int i = 0; i < n && s == KVC_OK; i++) {
            char path[ST_PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
                s = kvci_fail(KVC_EINVAL, "%s: path too long", dir);
            else if ((s = file_open(&st->files[st->n_files], path)) == KVC_OK)
                st->n_files++;
        }
        if (s == KVC_OK) s = build_index(st);
        if (s == KVC_OK && idx.root) s = check_weight_map(st, &idx);
    }
    for (int i = 0; i < n; i++) kvci_free(names[i]);
    kvci_st_index_close(&idx);
    if (s != KVC_OK) {
        kvc_safetensors_destroy(st);
        return s;
    }
    *out = st;
    return KVC_OK;
}

void kvc_safetensors_destroy(kvc_safetensors *st) {
    if (!st) return;
    for (int32_t i = 0; i < st->n_files; i++) file_close(&st->files[i]);
    kvci_free(st->index);
    kvci_free(st->used);
    kvci_free(st);
}

bool kvc_safetensors_has(const kvc_safetensors *st, const char *name) {
    const st_file *f;
    return st && name && find(st, name, &f) != NULL;
}

static void shape_text(const int64_t *s, int32_t n, char *buf, size_t cap) {
    size_t w = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < n && w < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, i ? ", %lld" : "%lld", (long long)s[i]);
    if (w < cap) snprintf(buf + w, cap - w, "]");
}

/* The entry of tensor `name` whose shape is shape[0..ndim), its file into *f; NULL after a message
 * naming what is wrong (missing, wrong shape). */
static const cJSON *find_shaped(const kvc_safetensors *st, const char *name, int32_t ndim, const int64_t *shape,
                                const st_file **f) {
    size_t at;
    const cJSON *e = find_at(st, name, f, &at);
    if (e) st->used[at] = true; /* read or checked: a wrong shape or dtype is refused anyway */
    if (!e) {
        kvci_fail(KVC_EINVAL, "missing tensor \"%s\" (not in %s%s)", name, st->files[0].path,
                  st->n_files > 1 ? " or the other shards" : "");
        return NULL;
    }
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    int64_t got[KVC_MAX_DIMS];
    int32_t gn = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) got[gn++] = (int64_t)d->valuedouble; /* integers of at most KVC_MAX_DIMS (file_open) */
    bool same = gn == ndim;
    for (int32_t i = 0; same && i < ndim; i++) same = got[i] == shape[i];
    /* E experts' [E, rows, cols] stored with the first two dims merged, [E * rows, cols] (DBRX's): the same bytes */
    if (!same && ndim == 3 && gn == 2) same = got[0] == shape[0] * shape[1] && got[1] == shape[2];
    if (!same) {
        char a[160], b[160];
        shape_text(got, gn, a, sizeof a);
        shape_text(shape, ndim, b, sizeof b);
        kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" has wrong shape %s, expected %s", (*f)->path, name, a, b);
        return NULL;
    }
    return e;
}

kvc_status kvc_safetensors_read_f32(const kvc_safetensors *st, const char *name, int32_t ndim, const int64_t *shape,
                                    float *dst) {
    return kvci_safetensors_read_part(st, name, ndim, shape, -1, 0, 0, dst);
}

/* n elements of dtype dt (F32, F16 or BF16, little-endian) at s into f32 out. */
static void convert(const char *dt, const uint8_t *s, int64_t n, float *out) {
    if (dt[0] == 'F' && dt[1] == '3') {
        memcpy(out, s, (size_t)n * 4);
    } else if (dt[0] == 'B') { /* kvc_bf16_to_f32's bits, a shift the compiler vectorises */
        for (int64_t i = 0; i < n; i++) {
            const uint32_t u = ((uint32_t)s[2 * i] | ((uint32_t)s[2 * i + 1] << 8)) << 16;
            memcpy(out + i, &u, sizeof u);
        }
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = kvc_f16_to_f32((uint16_t)(s[2 * i] | (s[2 * i + 1] << 8)));
    }
}

#define READ_PIECE (INT64_C(1) << 16) /* elements one thread converts at a time */

kvc_status kvci_safetensors_read_part(const kvc_safetensors *st, const char *name, int32_t ndim, const int64_t *part,
                                      int32_t dim, int64_t full, int64_t start, float *dst) {
    if (!st || !name || (ndim > 0 && !part) || ndim < 0 || ndim > KVC_MAX_DIMS || dim < -1 || dim >= ndim)
        return kvci_fail(KVC_EINVAL, "safetensors_read_f32: NULL argument or ndim %d outside [0, %d]", (int)ndim,
                         KVC_MAX_DIMS);
    int64_t shape[KVC_MAX_DIMS];
    for (int32_t i = 0; i < ndim; i++) shape[i] = part[i];
    if (dim >= 0) {
        if (start < 0 || part[dim] < 1 || start > full - part[dim])
            return kvci_fail(KVC_EINVAL, "safetensors: part [%lld, +%lld) of dim %d of \"%s\" outside its %lld entries",
                             (long long)start, (long long)part[dim], (int)dim, name, (long long)full);
        shape[dim] = full;
    }
    const st_file *f = NULL;
    const cJSON *e = find_shaped(st, name, ndim, shape, &f);
    if (!e) return KVC_EINVAL;
    const char *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    const uint8_t *src = f->data + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    const bool known = strcmp(dt, "F32") == 0 || strcmp(dt, "F16") == 0 || strcmp(dt, "BF16") == 0;
    if (!known)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" has wrong dtype %s, expected F32, F16 or BF16", f->path, name,
                         dt);
    if (!dst) return KVC_OK;
    /* the part: `outer` runs of part[dim] * inner elements, `full * inner` apart in the file (sizes equal
     * to the file's shape, whose bytes it holds) */
    int64_t outer = 1, inner = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (dim >= 0 && i < dim) outer *= shape[i];
        if (dim >= 0 && i > dim) inner *= shape[i];
        if (dim < 0) inner *= shape[i];
    }
    const int64_t run = dim >= 0 ? part[dim] * inner : inner, stride = dim >= 0 ? full * inner : inner;
    const int64_t first = dim >= 0 ? start * inner : 0;
    const size_t es = dt[0] == 'F' && dt[1] == '3' ? 4 : 2;
    const int64_t pieces = kvci_cdiv(run, READ_PIECE); /* each run in pieces, the pieces on the threads */
#pragma omp parallel for schedule(static) if (outer * run >= READ_PIECE * 4)
    for (int64_t u = 0; u < outer * pieces; u++) {
        const int64_t o = u / pieces, at = u % pieces * READ_PIECE, n = kvci_min64(READ_PIECE, run - at);
        convert(dt, src + (size_t)(o * stride + first + at) * es, n, dst + o * run + at);
    }
    return KVC_OK;
}

const char *kvci_safetensors_dtype(const kvc_safetensors *st, const char *name) {
    const st_file *f;
    const cJSON *e = st && name ? find(st, name, &f) : NULL;
    return e ? cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring : NULL;
}

int64_t kvci_safetensors_dim0(const kvc_safetensors *st, const char *name) {
    const st_file *f;
    const cJSON *e = st && name ? find(st, name, &f) : NULL;
    const cJSON *d0 = e ? cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "shape"), 0) : NULL;
    return d0 ? (int64_t)d0->valuedouble : -1; /* an integer (file_open) */
}

kvc_status kvci_safetensors_view(const kvc_safetensors *st, const char *name, const char *dtype, int32_t ndim,
                                 const int64_t *shape, const void **data) {
    const st_file *f = NULL;
    const cJSON *e = find_shaped(st, name, ndim, shape, &f);
    if (!e) return KVC_EINVAL;
    const char *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring;
    if (strcmp(dt, dtype) != 0)
        return kvci_fail(KVC_EINVAL, "%s: tensor \"%s\" has wrong dtype %s, expected %s", f->path, name, dt, dtype);
    *data = f->data + (size_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), 0)->valuedouble;
    return KVC_OK;
}

const char *kvci_safetensors_meta(const kvc_safetensors *st, const char *key) {
    for (int32_t i = 0; i < st->n_files; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(st->files[i].header, "__metadata__"), key);
        if (cJSON_IsString(v)) return v->valuestring;
    }
    return NULL;
}

const char *kvci_safetensors_nth(const kvc_safetensors *st, size_t i, bool *used) {
    if (i >= st->n_index) return NULL;
    *used = st->used[i];
    return st->index[i].name;
}
