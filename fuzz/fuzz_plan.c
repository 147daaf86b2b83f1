/* libFuzzer target: arbitrary bytes as a Hugging Face config.json for the
 * `kvcache plan` analyzer. Any input must either plan or be refused with a
 * status and a message; a crash, a sanitizer report or a success without a
 * JSON rendering is a finding. The first byte picks the options (tensor
 * parallelism, budget or offline sizing, KV dtype), the rest is the config. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache/kvcache.h"
#include "kvcache/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    kvc_plan_options opt = kvc_plan_default_options();
    opt.tp = (int64_t)1 << (data[0] & 3);
    opt.kv_memory_bytes = data[0] & 4 ? (int64_t)1 << 30 : 0;
    opt.max_model_len = data[0] & 4 ? 0 : 4096;
    opt.max_concurrency = 1 + ((data[0] >> 3) & 3);
    if (data[0] & 32) {
        opt.kv_dtype_set = true;
        opt.kv_dtype = KVC_DTYPE_I8;
    }
    kvc_model_plan *plan = NULL;
    kvc_status st = kvc_model_plan_create((const char *)data + 1, size - 1, &opt, &plan);
    if (st == KVC_OK) {
        char *json = NULL;
        if (plan == NULL || kvc_model_plan_to_json(plan, &json) != KVC_OK || json == NULL || json[0] != '{') abort();
        kvc_plan_json_free(json);
    } else if (plan != NULL || kvc_last_error()[0] == '\0') {
        abort(); /* a refusal leaves no plan and says why */
    }
    kvc_model_plan_destroy(plan);
    return 0;
}
