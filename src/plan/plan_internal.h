/* Internal pieces of the plan layer shared by its source files. */
#ifndef KVC_PLAN_INTERNAL_H
#define KVC_PLAN_INTERNAL_H

#include <cjson/cJSON.h>

#include "kvcache/plan.h"

/* Reading config.json fields. A field is looked up in the text config first
 * (text_config of multimodal configs, else the root), then in the root.
 * "Absent" covers a missing key and a JSON null. Errors name the field. */
typedef struct kvc_cfg {
    const cJSON *root;
    const cJSON *text; /* == root when there is no text_config */
} kvc_cfg;

const cJSON *kvc_cfg_item(const kvc_cfg *cfg, const char *name);
bool kvc_cfg_has(const kvc_cfg *cfg, const char *name);
/* Integer field (a JSON number with an integral value). *present = false when
 * absent; required fields fail instead. */
kvc_status kvc_cfg_int(const kvc_cfg *cfg, const char *name, bool required, int64_t *out, bool *present);
kvc_status kvc_cfg_num(const kvc_cfg *cfg, const char *name, bool required, double *out, bool *present);
kvc_status kvc_cfg_bool(const kvc_cfg *cfg, const char *name, bool *out, bool *present);
/* String field; *out points into the JSON tree (NULL when absent). */
kvc_status kvc_cfg_str(const kvc_cfg *cfg, const char *name, const char **out);
/* Number inside an object (rope dicts); `where` names the object in errors. */
kvc_status kvc_obj_num(const cJSON *obj, const char *where, const char *name, bool required, double *out,
                       bool *present);

/* Appends a warning to the plan (the last slot says when more were dropped). */
void kvc_plan_warn(kvc_model_plan *plan, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* KVC_PLAN_INTERNAL_H */
