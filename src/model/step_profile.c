/* The decode-step profile (step_profile.h). */
#include "model/step_profile.h"

#include <string.h>
#include <time.h>

bool kvci_step_profile_live;
double kvci_step_profile_s[KVC_SP_PARTS];
static bool enabled;
static int64_t steps;

double kvci_step_profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void kvci_step_profile_enable(bool on) { enabled = on, kvci_step_profile_live = false; }

void kvci_step_profile_step(int64_t n_tokens, int64_t n_rows) {
    kvci_step_profile_live = enabled && n_tokens == n_rows;
    steps += kvci_step_profile_live;
}

void kvci_step_profile_reset(void) {
    memset(kvci_step_profile_s, 0, sizeof kvci_step_profile_s);
    steps = 0;
}

int64_t kvci_step_profile_read(double *s) {
    memcpy(s, kvci_step_profile_s, sizeof kvci_step_profile_s);
    return steps;
}

const char *kvci_step_part_name(kvc_step_part p) {
    static const char *const names[KVC_SP_PARTS] = {"embed",    "norm",    "qkv",    "qk_rope", "attn", "o_proj",
                                                    "residual", "gate_up", "swiglu", "down",    "head", "sample"};
    return names[p];
}
