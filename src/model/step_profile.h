/* Opt-in wall-clock time of each kind of work in a step, summed over steps in
 * two tables: the prefill steps (the metadata's is_prefill) and the decode
 * steps (not prefill, each row bringing one token): where a step's time goes.
 * Off unless kvci_step_profile_enable(true) was called (`kvcache bench model
 * --profile`); when off every probe is one load and one branch, and nothing is
 * ever allocated. The probes run on the calling thread between parallel
 * regions (a region's time is the GEMM's or the attention's that opened it),
 * one model at a time (a process-wide table). */
#ifndef KVC_MODEL_STEP_PROFILE_H
#define KVC_MODEL_STEP_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum kvc_step_part {
    KVC_SP_EMBED,    /* embedding rows, RoPE cos/sin of the step */
    KVC_SP_NORM,     /* the layers' input / post-attention RMSNorm (copy included) */
    KVC_SP_QKV,      /* q/k/v projections */
    KVC_SP_QK_ROPE,  /* Qwen3 q/k norm and RoPE */
    KVC_SP_KV_WRITE, /* K/V rows into the cache's dtype and the cache write */
    KVC_SP_ATTN,     /* attention */
    KVC_SP_O,        /* o_proj */
    KVC_SP_RESIDUAL, /* residual adds */
    KVC_SP_GATE_UP,  /* MLP gate/up projections */
    KVC_SP_SWIGLU,   /* silu(gate) * up */
    KVC_SP_DOWN,     /* MLP down projection */
    KVC_SP_HEAD,     /* final norm and the output head */
    KVC_SP_SAMPLE,   /* the runner's choice of the next tokens */
    KVC_SP_PARTS
} kvc_step_part;

typedef enum kvc_step_kind { KVC_SK_DECODE, KVC_SK_PREFILL, KVC_SK_KINDS } kvc_step_kind;

extern bool kvci_step_profile_live;                            /* the current step is timed */
extern kvc_step_kind kvci_step_profile_kind;                   /* its kind, when timed */
extern double kvci_step_profile_s[KVC_SK_KINDS][KVC_SP_PARTS]; /* seconds per part over the timed steps */

/* Seconds on CLOCK_MONOTONIC when the step is timed, else 0. */
double kvci_step_profile_now(void);
static inline double kvci_sp_begin(void) { return kvci_step_profile_live ? kvci_step_profile_now() : 0.0; }
/* Adds the time since t0 (kvci_sp_begin's) to part p of the step's kind when the step is timed. */
static inline void kvci_sp_end(kvc_step_part p, double t0) {
    if (kvci_step_profile_live) kvci_step_profile_s[kvci_step_profile_kind][p] += kvci_step_profile_now() - t0;
}

void kvci_step_profile_enable(bool on);
/* Called by the forward pass at the start of each step: when enabled, times it as a prefill step
 * when is_prefill, as a decode step when every one of its n_rows rows brings one token (else not
 * at all), counting the steps timed of each kind. The runner's sampling after the forward pass
 * counts with the step. */
void kvci_step_profile_step(bool is_prefill, int64_t n_tokens, int64_t n_rows);
/* Zeroes the sums and the step counts. */
void kvci_step_profile_reset(void);
/* Seconds per part summed over the timed steps of kind k (s[KVC_SP_PARTS]); returns those steps. */
int64_t kvci_step_profile_read(kvc_step_kind k, double *s);
/* "embed", "norm", "qkv", ... */
const char *kvci_step_part_name(kvc_step_part p);

#endif
