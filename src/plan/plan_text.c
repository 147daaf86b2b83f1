/* The plan's text helpers: warnings and copied names. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

void kvci_plan_warn(kvc_model_plan *plan, const char *fmt, ...) {
    if (plan->n_warnings >= KVC_PLAN_MAX_WARNINGS) return;
    char *slot = plan->warnings[plan->n_warnings];
    if (plan->n_warnings == KVC_PLAN_MAX_WARNINGS - 1) {
        snprintf(slot, KVC_PLAN_TEXT_MAX, "further warnings omitted");
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(slot, KVC_PLAN_TEXT_MAX, fmt, ap);
        va_end(ap);
    }
    plan->n_warnings++;
}

void kvci_plan_warn_text(void *plan, const char *msg) { kvci_plan_warn(plan, "%s", msg); }

void kvci_plan_copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src != NULL ? src : ""); }
