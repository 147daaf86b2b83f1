/* The checkpoint tensors the loader left unread: one beside a tensor it read (a module it runs) would change the
 * math, so the load is refused; the others (modules it does not run) are only logged. */
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "model/weights_internal.h"

/* Whether a tensor other than the i-th (name, its module's prefix name[0..plen) up to and with the last dot) sits
 * directly in that module and was read. The names of one module lie together in name order. */
static bool sibling_read(const kvc_safetensors *st, size_t i, const char *name, size_t plen) {
    for (int dir = -1; dir <= 1; dir += 2)
        for (size_t j = i + (size_t)dir; j != (size_t)-1; j += (size_t)dir) {
            bool used;
            const char *n = kvci_safetensors_nth(st, j, &used);
            if (!n || strncmp(n, name, plen) != 0) break;
            if (used && !strchr(n + plen, '.')) return true;
        }
    return false;
}

kvc_status kvci_check_unread(const kvc_safetensors *st, const char *model_type) {
    char line[400]; /* the first names, as many as fit */
    size_t w = 0, skipped = 0;
    bool used;
    const char *name;
    for (size_t i = 0; (name = kvci_safetensors_nth(st, i, &used)) != NULL; i++) {
        if (used) continue;
        const char *dot = strrchr(name, '.');
        if (dot && sibling_read(st, i, name, (size_t)(dot - name) + 1))
            return kvci_fail(KVC_EINVAL,
                             "model_load: tensor \"%s\" is not read, though its module is: %s here has no use "
                             "for it and its outputs would differ from the checkpoint's",
                             name, model_type);
        if (w < sizeof line) w += (size_t)snprintf(line + w, sizeof line - w, "%s%s", skipped ? ", " : "", name);
        skipped++;
    }
    if (skipped) kvci_log(KVC_LOG_DEBUG, "model_load: %s: %zu tensors not read: %s", model_type, skipped, line);
    return KVC_OK;
}
