/* Prompt scoring (kvc_runner_score_chunk): a prompt fed to row 0 of a cached runner chunk after chunk,
 * every fed token's logits kept: what the log-probabilities of a prompt's tokens (an OpenAI completions
 * request with echo and logprobs, vLLM's prompt_logprobs) are computed from, one bounded chunk of
 * [q, V] logits at a time. */
#include <string.h>

#include "base/internal.h"
#include "runner/runner_internal.h"

/* A NaN or Inf logit leaves no log-probability (docs/runner.md): refused naming its position. */
static kvc_status finite_rows(const float *logits, int64_t q, int64_t V, int64_t first) {
    for (int64_t i = 0; i < q; i++) {
        const int64_t bad = kvci_first_nonfinite(logits + i * V, V);
        if (bad >= 0)
            return kvci_fail(KVC_ERANGE, "runner_score_chunk: non-finite logits at position %lld: logit %lld is %g",
                             (long long)(first + i), (long long)bad, (double)logits[i * V + bad]);
    }
    return KVC_OK;
}

kvc_status kvc_runner_score_chunk(kvc_runner *r, const int32_t *ids, int64_t first, int64_t q,
                                  float *logits /* [q, V] */) {
    if (!r || !ids || !logits) return kvci_fail(KVC_EINVAL, "runner_score_chunk: NULL argument");
    if (r->caches.kind != KVC_MCACHE_CONTIGUOUS)
        return kvci_fail(KVC_EINVAL, "runner_score_chunk: the runner must hold contiguous caches (mode 1, or mode 3 "
                                     "with mla_paged false)");
    if (q < 1 || q > r->max_tokens)
        return kvci_fail(KVC_EINVAL, "runner_score_chunk: q %lld outside [1, %lld] (the runner's max_prompt_len)",
                         (long long)q, (long long)r->max_tokens);
    if (first < 0 || first > r->seq_len[0])
        return kvci_fail(KVC_EINVAL,
                         "runner_score_chunk: first %lld outside [0, %lld] (the tokens row 0 holds: a chunk "
                         "continues them or starts over)",
                         (long long)first, (long long)r->seq_len[0]);
    if (q > r->S - first)
        return kvci_fail(KVC_ERANGE, "runner_score_chunk: positions %lld..%lld beyond the runner's %lld",
                         (long long)first, (long long)(first + q - 1), (long long)r->S);
    const int64_t V = kvc_model_config_of(r->m)->vocab_size;
    for (int64_t i = 0; i < q; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return kvci_fail(KVC_ERANGE, "runner_score_chunk: ids[%lld] = %d outside the vocabulary [0, %lld)",
                             (long long)i, (int)ids[i], (long long)V);
    kvc_status st = kvci_runner_fill_md(r, 1, true, &first, &q);
    if (st != KVC_OK) return st;
    memcpy(r->ids, ids, (size_t)q * sizeof(int32_t));
    const kvc_forward_args a = {
        .token_ids = r->ids, .md = &r->md, .caches = &r->caches, .all_logits = true, .logits = logits};
    r->seq_len[0] = first; /* until the chunk is in: a failed one leaves only what came before it */
    st = kvc_model_forward(r->m, r->ws, &a);
    if (st == KVC_OK) st = finite_rows(logits, q, V, first);
    if (st == KVC_OK) r->seq_len[0] = first + q;
    return st;
}
