/* Typed access to config.json fields with errors that name the field, and
 * the plan's text helpers (warnings, copied names). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "plan/plan_internal.h"

static const char *json_type_name(const cJSON *item) {
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    return "null";
}

const cJSON *kvc_cfg_item(const kvc_cfg *cfg, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(cfg->text, name);
    if ((item == NULL || cJSON_IsNull(item)) && cfg->text != cfg->root)
        item = cJSON_GetObjectItemCaseSensitive(cfg->root, name);
    if (item == NULL || cJSON_IsNull(item)) return NULL;
    return item;
}

bool kvc_cfg_has(const kvc_cfg *cfg, const char *name) { return kvc_cfg_item(cfg, name) != NULL; }

static kvc_status number_of(const cJSON *item, const char *where, const char *name, bool required, double *out,
                            bool *present) {
    if (present != NULL) *present = false;
    if (item == NULL || cJSON_IsNull(item)) {
        if (required) return kvc_fail(KVC_EINVAL, "config.json: %s%s is missing", where, name);
        return KVC_OK;
    }
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
        return kvc_fail(KVC_EINVAL, "config.json: %s%s must be a number, got %s", where, name, json_type_name(item));
    *out = item->valuedouble;
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvc_cfg_num(const kvc_cfg *cfg, const char *name, bool required, double *out, bool *present) {
    return number_of(kvc_cfg_item(cfg, name), "", name, required, out, present);
}

kvc_status kvc_obj_num(const cJSON *obj, const char *where, const char *name, bool required, double *out,
                       bool *present) {
    return number_of(cJSON_GetObjectItemCaseSensitive(obj, name), where, name, required, out, present);
}

kvc_status kvc_cfg_int(const kvc_cfg *cfg, const char *name, bool required, int64_t *out, bool *present) {
    double v = 0.0;
    bool have = false;
    kvc_status st = kvc_cfg_num(cfg, name, required, &v, &have);
    if (present != NULL) *present = false;
    if (st != KVC_OK || !have) return st;
    if (v != floor(v) || fabs(v) > 9.0e15)
        return kvc_fail(KVC_EINVAL, "config.json: %s must be an integer, got %g", name, v);
    *out = (int64_t)v;
    if (present != NULL) *present = true;
    return KVC_OK;
}

kvc_status kvc_cfg_bool(const kvc_cfg *cfg, const char *name, bool *out, bool *present) {
    const cJSON *item = kvc_cfg_item(cfg, name);
    *present = false;
    if (item == NULL) return KVC_OK;
    if (!cJSON_IsBool(item))
        return kvc_fail(KVC_EINVAL, "config.json: %s must be true or false, got %s", name, json_type_name(item));
    *out = cJSON_IsTrue(item);
    *present = true;
    return KVC_OK;
}

kvc_status kvc_cfg_str(const kvc_cfg *cfg, const char *name, const char **out) {
    const cJSON *item = kvc_cfg_item(cfg, name);
    *out = NULL;
    if (item == NULL) return KVC_OK;
    if (!cJSON_IsString(item) || item->valuestring == NULL)
        return kvc_fail(KVC_EINVAL, "config.json: %s must be a string, got %s", name, json_type_name(item));
    *out = item->valuestring;
    return KVC_OK;
}

void kvc_plan_warn(kvc_model_plan *plan, const char *fmt, ...) {
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

void kvc_plan_copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src != NULL ? src : ""); }
