/* What every transport shares (transport.h). */
#include "dist/transport.h"

void kvc_transport_close(kvc_transport *t) {
    if (t == NULL || t->ops == NULL) return;
    t->ops->destroy(t->self);
    *t = (kvc_transport){0};
}
