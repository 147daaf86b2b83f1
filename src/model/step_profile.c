/* The per-step profile of prefill and decode steps (step_profile.h). */
#include "model/step_profile.h"

#include <string.h>
#include <time.h>

bool kvci_step_profile_live;
kvc_step_kind kvci_step_profile_kind;
double kvci_step_profile_s[KVC_SK_KINDS][KVC_SP_PARTS];
static bool enabled;
static int64_t steps[KVC_SK_KINDS];

double kvci_step_profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kvci_step_profile_enable(bool on) { enabled = on, kvci_step_profile_live = false; }

void kvci_step_profile_step(bool is_prefill, int64_t n_tokens, int64_t n_rows) {
    kvci_step_profile_kind = is_prefill ? KVC_SK_PREFILL : KVC_SK_DECODE;
    kvci_step_profile_live = enabled && (is_prefill || n_tokens == n_rows);
    steps[kvci_step_profile_kind] += kvci_step_profile_live;
}

void kvci_step_profile_reset(void) {
    memset(kvci_step_profile_s, 0, sizeof kvci_step_profile_s);
    memset(steps, 0, sizeof steps);
}

int64_t kvci_step_profile_read(kvc_step_kind k, double *s) {
    memcpy(s, kvci_step_profile_s[k], sizeof kvci_step_profile_s[k]);
    return steps[k];
}

const char *kvci_step_part_name(kvc_step_part p) {
    static const char *const names[KVC_SP_PARTS] = {"embed", "norm",   "qkv",      "qk_rope", "kv_write",
                                                    "attn",  "o_proj", "residual", "gate_up", "swiglu",
                                                    "down",  "head",   "sample"};
    return names[p];
}
