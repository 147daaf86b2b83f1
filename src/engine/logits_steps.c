/* Steps 0-3 of the sampler (kvcache/engine.h): the allowed-token mask, the min_tokens mask, the logit
 * bias, then the repetition, frequency and presence penalties, in vLLM v1's
 * order, all in float32 on a copy of the logits. The penalties find the
 * request's tokens by scanning them (O(n_tokens) a step, no allocation): a
 * counter per vocabulary entry is raised, read and set back to zero. */
#include <math.h>
#include <string.h>

#include "base/internal.h"
#include "engine/logits_steps.h"

kvc_status kvci_sampling_check_ids(const kvc_sampling_params *p, int64_t vocab) {
    for (int32_t i = 0; i < p->n_logit_bias; i++)
        if (p->logit_bias[i].token >= vocab)
            return kvci_fail(KVC_EINVAL, "sampling: logit_bias[%d].token %d is outside the vocabulary [0, %lld)", i,
                             p->logit_bias[i].token, (long long)vocab);
    for (int32_t i = 0; i < p->n_min_tokens_ids; i++)
        if (p->min_tokens_ids[i] >= vocab)
            return kvci_fail(KVC_EINVAL, "sampling: min_tokens_ids[%d] %d is outside the vocabulary [0, %lld)", i,
                             p->min_tokens_ids[i], (long long)vocab);
    return KVC_OK;
}

static bool repetition_on(const kvc_sampling_params *p) {
    return p->repetition_penalty != 0.0f && p->repetition_penalty != 1.0f;
}

bool kvci_sampling_penalties_on(const kvc_sampling_params *p) {
    return p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f || repetition_on(p);
}

/* repetition_penalty r on each distinct token of tokens[0, n): positive logits divided, others multiplied. */
static void repetition(float *w, float r, const int32_t *tokens, int64_t n, int32_t *count) {
    for (int64_t i = 0; i < n; i++) {
        const int32_t t = tokens[i];
        if (count[t] != 0) continue;
        count[t] = 1;
        w[t] = w[t] > 0.0f ? w[t] / r : w[t] * r;
    }
    for (int64_t i = 0; i < n; i++) count[tokens[i]] = 0;
}

/* logit -= frequency * count, then -= presence, for each token of out[0, n). */
static void output_penalties(float *w, const kvc_sampling_params *p, const int32_t *out, int64_t n, int32_t *count) {
    for (int64_t i = 0; i < n; i++) count[out[i]]++;
    for (int64_t i = 0; i < n; i++) {
        const int32_t t = out[i];
        if (count[t] == 0) continue; /* done already */
        w[t] -= p->frequency_penalty * (float)count[t];
        w[t] -= p->presence_penalty;
        count[t] = 0;
    }
}

const float *kvci_logits_steps(const float *logits, int64_t vocab, const kvc_sampling_params *p, int32_t eos_id,
                               bool hold, const uint32_t *allowed, const int32_t *tokens, int64_t n_prompt,
                               int64_t n_tokens, float *work, int32_t *count) {
    hold = hold && (p->n_min_tokens_ids > 0 || eos_id >= 0);
    const bool out_pen = (p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f) && n_tokens > n_prompt;
    if (allowed == NULL && !hold && p->n_logit_bias == 0 && !repetition_on(p) && !out_pen) return logits;
    if (allowed != NULL) {
        for (int64_t t = 0; t < vocab; t++) work[t] = (allowed[t >> 5] >> (t & 31)) & 1u ? logits[t] : -INFINITY;
    } else {
        memcpy(work, logits, (size_t)vocab * sizeof *work);
    }
    if (hold) {
        for (int32_t i = 0; i < p->n_min_tokens_ids; i++) work[p->min_tokens_ids[i]] = -INFINITY;
        if (eos_id >= 0) work[eos_id] = -INFINITY;
    }
    for (int32_t i = 0; i < p->n_logit_bias; i++) work[p->logit_bias[i].token] += p->logit_bias[i].bias;
    if (repetition_on(p)) repetition(work, p->repetition_penalty, tokens, n_tokens, count);
    if (out_pen) output_penalties(work, p, tokens + n_prompt, n_tokens - n_prompt, count);
    return work;
}
