/* A random-weight model from config.json text, failing the test on refusal. */
#ifndef KVC_TEST_CONFIG_FIXTURE_H
#define KVC_TEST_CONFIG_FIXTURE_H

#include "model/model_internal.h"

static kvc_model *model_of(const char *json) {
    kvc_model_config c;
    if (kvc_model_config_parse(json, "cfg", &c) != KVC_OK) fail_msg("parse: %s", kvc_last_error());
    kvc_model *m = NULL;
    if (kvc_model_create_random(&c, 1, &m) != KVC_OK) fail_msg("create: %s", kvc_last_error());
    return m;
}

#endif /* KVC_TEST_CONFIG_FIXTURE_H */
