/* The checkpoint tensors the loader left unread: one beside a tensor it read (a module it runs) would change the
 * math, so the load is refused; the others (modules it does not run) are only logged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/weights_internal.h"

/* A module: a tensor name's prefix up to and with its last dot. */
typedef struct module_name {
    const char *s;
    size_t n;
} module_name;

static int module_cmp(const void *a, const void *b) {
    const module_name *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static module_name module_of(const char *name) {
    const char *dot = strrchr(name, '.');
    return (module_name){name, dot ? (size_t)(dot - name) + 1 : 0};
}

kvc_status kvci_check_unread(const kvc_safetensors *st, const char *model_type) {
    bool used;
    const char *name;
    size_t n = 0, n_read = 0;
    while (kvci_safetensors_nth(st, n, &used)) n++;
    /* the modules of the tensors read, sorted: one binary search per unread tensor, O(n log n) in all however a
     * hostile checkpoint names its tensors */
    module_name *read = kvci_malloc((n ? n : 1) * sizeof *read);
    if (!read) return kvci_fail(KVC_ENOMEM, "model_load: out of memory listing the modules of %zu tensors", n);
    for (size_t i = 0; (name = kvci_safetensors_nth(st, i, &used)) != NULL; i++) {
        module_name m = module_of(name);
        if (used && m.n) read[n_read++] = m;
    }
    qsort(read, n_read, sizeof *read, module_cmp);
    char line[400]; /* the first names, as many as fit */
    size_t w = 0, skipped = 0;
    kvc_status s = KVC_OK;
    for (size_t i = 0; (name = kvci_safetensors_nth(st, i, &used)) != NULL; i++) {
        if (used) continue;
        module_name m = module_of(name);
        if (m.n && bsearch(&m, read, n_read, sizeof *read, module_cmp)) {
            s = kvci_fail(KVC_EINVAL,
                          "model_load: tensor \"%s\" is not read, though its module is: %s here has no use for it "
                          "and its outputs would differ from the checkpoint's",
                          name, model_type);
            break;
        }
        if (w < sizeof line) w += (size_t)snprintf(line + w, sizeof line - w, "%s%s", skipped ? ", " : "", name);
        skipped++;
    }
    kvci_free(read);
    if (s == KVC_OK && skipped)
        kvci_log(KVC_LOG_DEBUG, "model_load: %s: %zu tensors not read: %s", model_type, skipped, line);
    return s;
}
