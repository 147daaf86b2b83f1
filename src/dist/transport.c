/* What every transport shares (transport.h). */
#include "dist/transport.h"

void kvci_transport_close(kvci_transport *t) {
    if (t == NULL || t->ops == NULL) return;
    t->ops->destroy(t->self);
    *t = (kvci_transport){0};
}
