/* The steps a request's logits go through before the draw (kvcache/engine.h,
 * kvc_sampling_params): the allowed-token mask, min_tokens, logit_bias, then the penalties. */
#ifndef KVC_ENGINE_LOGITS_STEPS_H
#define KVC_ENGINE_LOGITS_STEPS_H

#include "kvcache/engine.h"

/* Whether presence, frequency or repetition penalty changes logits (they need the request's tokens). */
bool kvci_sampling_penalties_on(const kvc_sampling_params *p);

/* KVC_EINVAL naming the field for a logit_bias or min_tokens_ids id outside [0, vocab). */
kvc_status kvci_sampling_check_ids(const kvc_sampling_params *p, int64_t vocab);

/* The logits the draw reads: logits itself when no step applies, else work [vocab] holding them
 * after the steps. allowed (NULL: none) is a bitmask [cdiv(vocab, 32)]: a token whose bit
 * (t % 32 of word t / 32) is clear gets -inf first. With hold (fewer than min_tokens tokens generated),
 * p->min_tokens_ids and eos_id (-1: none) are masked. The request's tokens: prompt tokens[0, n_prompt), generated
 * tokens[n_prompt, n_tokens); every id in [0, vocab). count [vocab] is all zero on entry and on return. Reads
 * O(n_tokens), copies O(vocab). */
const float *kvci_logits_steps(const float *logits /* [vocab] */, int64_t vocab, const kvc_sampling_params *p,
                               int32_t eos_id, bool hold, const uint32_t *allowed, const int32_t *tokens,
                               int64_t n_prompt, int64_t n_tokens, float *work, int32_t *count);

#endif /* KVC_ENGINE_LOGITS_STEPS_H */
