/* The sampler: the logits steps (logits_steps.c), then greedy argmax, or
 * temperature / min-p / top-k / top-p with a
 * counter-based generator (splitmix64 of seed and draw index), so that a
 * request's k-th draw never depends on what else ran. With top-k the k best
 * tokens are found by a radix select over the vocabulary (O(V), no
 * data-dependent branches in the passes) and sorted (O(k log k)); top-p alone
 * orders the candidates with a heap over the whole vocabulary, popped until
 * the mass is reached (O(V + m log V) for m kept tokens). Nothing allocates;
 * when nothing is cut the draw walks the tokens in id order. min-p gives the
 * tokens below its cut weight 0; they rank after every kept token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "engine/engine_internal.h"

struct kvc_sampler {
    int64_t vocab;
    int32_t
        *heap; /* [vocab] token ids: the top-k best first, or a max-heap in [0, n) with the popped tokens after it */
    double *w; /* [vocab] weight of the j-th best token */
    uint32_t *keys; /* [vocab] rank keys of the top-k selection */
    uint64_t *pick; /* [vocab] the selected (key, ~id) pairs being sorted */
    float *work;    /* [vocab] the logits after the logits steps */
    int32_t *count; /* [vocab] zero between draws: the penalties' token counts */
};

kvc_sampling_params kvc_sampling_default_params(void) {
    return (kvc_sampling_params){.temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 0, .repetition_penalty = 1.0f};
}

kvc_status kvc_sampling_params_check(const kvc_sampling_params *p) {
    if (p == NULL) return kvci_fail(KVC_EINVAL, "sampling params are NULL");
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return kvci_fail(KVC_EINVAL, "sampling: temperature %g must be finite and >= 0 (0 = greedy)",
                         (double)p->temperature);
    if (p->top_k < 0) return kvci_fail(KVC_EINVAL, "sampling: top_k %d must be >= 0 (0 = no cut)", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return kvci_fail(KVC_EINVAL, "sampling: top_p %g must be in (0, 1] (1 = no cut)", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return kvci_fail(KVC_EINVAL, "sampling: min_p %g must be in [0, 1] (0 = no cut)", (double)p->min_p);
    if (!(p->presence_penalty >= -2.0f && p->presence_penalty <= 2.0f))
        return kvci_fail(KVC_EINVAL, "sampling: presence_penalty %g must be in [-2, 2]", (double)p->presence_penalty);
    if (!(p->frequency_penalty >= -2.0f && p->frequency_penalty <= 2.0f))
        return kvci_fail(KVC_EINVAL, "sampling: frequency_penalty %g must be in [-2, 2]", (double)p->frequency_penalty);
    if (!(p->repetition_penalty >= 0.0f && p->repetition_penalty <= 2.0f))
        return kvci_fail(KVC_EINVAL, "sampling: repetition_penalty %g must be in (0, 2] (1 = none; 0 reads as 1)",
                         (double)p->repetition_penalty);
    if (p->min_tokens < 0)
        return kvci_fail(KVC_EINVAL, "sampling: min_tokens %lld must be >= 0", (long long)p->min_tokens);
    if (p->n_min_tokens_ids < 0 || p->n_min_tokens_ids > KVC_SAMPLING_MAX_STOP_IDS ||
        (p->n_min_tokens_ids > 0) != (p->min_tokens_ids != NULL))
        return kvci_fail(KVC_EINVAL,
                         "sampling: n_min_tokens_ids %d must be in [0, %d], 0 exactly when min_tokens_ids is NULL",
                         p->n_min_tokens_ids, KVC_SAMPLING_MAX_STOP_IDS);
    for (int32_t i = 0; i < p->n_min_tokens_ids; i++)
        if (p->min_tokens_ids[i] < 0)
            return kvci_fail(KVC_EINVAL, "sampling: min_tokens_ids[%d] %d is not a token id", i, p->min_tokens_ids[i]);
    if (p->n_logit_bias < 0 || p->n_logit_bias > KVC_SAMPLING_MAX_LOGIT_BIAS ||
        (p->n_logit_bias > 0) != (p->logit_bias != NULL))
        return kvci_fail(KVC_EINVAL, "sampling: n_logit_bias %d must be in [0, %d], 0 exactly when logit_bias is NULL",
                         p->n_logit_bias, KVC_SAMPLING_MAX_LOGIT_BIAS);
    for (int32_t i = 0; i < p->n_logit_bias; i++) {
        const kvc_logit_bias b = p->logit_bias[i];
        if (b.token < 0)
            return kvci_fail(KVC_EINVAL, "sampling: logit_bias[%d].token %d is not a token id", i, b.token);
        if (!(b.bias >= -100.0f && b.bias <= 100.0f))
            return kvci_fail(KVC_EINVAL, "sampling: logit_bias[%d].bias %g must be in [-100, 100]", i, (double)b.bias);
    }
    return KVC_OK;
}

static float rank_value(float l) { return isnan(l) ? -INFINITY : l; }

int32_t kvc_sample_greedy(const float *logits, int64_t vocab) {
    if (logits == NULL || vocab < 1 || vocab > INT32_MAX) return -1; /* no token ids to choose from */
    int32_t best = 0;
    float best_v = -INFINITY;
    for (int64_t i = 0; i < vocab; i++) {
        if (logits[i] > best_v) { /* strict: the lowest index wins ties; NaN never compares greater */
            best_v = logits[i];
            best = (int32_t)i;
        }
    }
    return best;
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

double kvc_sample_uniform(uint64_t seed, uint64_t k) {
    uint64_t x = splitmix64(splitmix64(seed) ^ (k * 0xd1b54a32d192ed03ULL));
    return (double)(x >> 11) * 0x1.0p-53;
}

kvc_status kvc_sampler_create(int64_t vocab_size, kvc_sampler **out) {
    if (out == NULL) return kvci_fail(KVC_EINVAL, "kvc_sampler_create: out is NULL");
    *out = NULL;
    if (vocab_size < 1 || vocab_size > INT32_MAX)
        return kvci_fail(KVC_EINVAL, "kvc_sampler_create: vocab_size %lld must be in [1, 2^31)", (long long)vocab_size);
    kvc_sampler *s = kvci_calloc(1, sizeof *s);
    if (s == NULL) return kvci_fail(KVC_ENOMEM, "kvc_sampler_create: out of host memory");
    s->vocab = vocab_size;
    s->heap = kvci_malloc((size_t)vocab_size * sizeof *s->heap);
    s->w = kvci_malloc((size_t)vocab_size * sizeof *s->w);
    s->keys = kvci_malloc((size_t)vocab_size * sizeof *s->keys);
    s->pick = kvci_malloc((size_t)vocab_size * sizeof *s->pick);
    s->work = kvci_malloc((size_t)vocab_size * sizeof *s->work);
    s->count = kvci_calloc((size_t)vocab_size, sizeof *s->count);
    if (s->heap == NULL || s->w == NULL || s->keys == NULL || s->pick == NULL || s->work == NULL || s->count == NULL) {
        kvc_sampler_destroy(s);
        return kvci_fail(KVC_ENOMEM, "kvc_sampler_create: no host memory for a vocabulary of %lld",
                         (long long)vocab_size);
    }
    *out = s;
    return KVC_OK;
}

void kvc_sampler_destroy(kvc_sampler *s) {
    if (s == NULL) return;
    kvci_free(s->heap);
    kvci_free(s->w);
    kvci_free(s->keys);
    kvci_free(s->pick);
    kvci_free(s->work);
    kvci_free(s->count);
    kvci_free(s);
}

/* Token a is ranked before token b: larger logit, then lower id. */
static bool before(const float *logits, int32_t a, int32_t b) {
    float la = rank_value(logits[a]), lb = rank_value(logits[b]);
    return la > lb || (la == lb && a < b);
}

static void sift_down(int32_t *heap, int64_t n, int64_t i, const float *logits) {
    for (;;) {
        int64_t best = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(logits, heap[l], heap[best])) best = l;
        if (r < n && before(logits, heap[r], heap[best])) best = r;
        if (best == i) return;
        int32_t t = heap[i];
        heap[i] = heap[best];
        heap[best] = t;
        i = best;
    }
}

/* Moves the best token of heap[0..n) to heap[n-1]; returns it. */
static int32_t heap_pop(int32_t *heap, int64_t n, const float *logits) {
    int32_t top = heap[0];
    heap[0] = heap[n - 1];
    heap[n - 1] = top;
    sift_down(heap, n - 1, 0, logits);
    return top;
}

/* Sorts v[0..n) descending in place (a heap sort: no allocation, unlike qsort). */
static void sort_descending(uint64_t *v, int64_t n) {
    for (int64_t start = n / 2 - 1, end = n; end > 1;) {
        int64_t i;
        if (start >= 0) { /* heapify: a min-heap, so that popping to the end leaves v descending */
            i = start--;
        } else {
            const uint64_t t = v[0];
            v[0] = v[--end];
            v[end] = t;
            i = 0;
        }
        for (;;) {
            int64_t c = 2 * i + 1;
            if (c >= end) break;
            if (c + 1 < end && v[c + 1] < v[c]) c++;
            if (v[i] <= v[c]) break;
            const uint64_t t = v[i];
            v[i] = v[c];
            v[c] = t;
            i = c;
        }
    }
}

/* An unsigned key that orders like rank_value (larger logit, larger key;
 * NaN as -inf; -0 as +0, which compare equal). */
static uint32_t rank_key(float l) {
    float v = rank_value(l);
    if (v == 0.0f) v = 0.0f;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* The kk best tokens of logits[0..v) (1 <= kk < v), best first, into
 * s->heap[0..kk): the kk-th largest key K by a radix select (8 bits at a
 * time from the top, a histogram of the keys still in range per pass), then
 * one pass in id order takes the keys above K and the lowest ids equal to
 * it, and a sort orders the kk by key, then id (insertion up to 64 tokens,
 * a heap sort above). About 5 V simple steps whatever the logits, plus the sort. */
static void select_top_k(kvc_sampler *s, const float *logits, int64_t v, int64_t kk) {
    uint32_t *key = s->keys;
    for (int64_t t = 0; t < v; t++) key[t] = rank_key(logits[t]);
    uint32_t prefix = 0, mask = 0;
    int64_t above = 0; /* keys above the range [prefix, prefix | ~mask] */
    for (int shift = 24; shift >= 0; shift -= 8) {
        int32_t hist[256] = {0};
        for (int64_t t = 0; t < v; t++) hist[(key[t] >> shift) & 255u] += (key[t] & mask) == prefix;
        int d = 255;
        while (above + hist[d] < kk) above += hist[d--];
        prefix |= (uint32_t)d << shift;
        mask |= 255u << shift;
    }
    /* (key, ~id) packed: descending order is key descending, then id ascending */
    uint64_t *pick = s->pick;
    int64_t n = 0, equal = kk - above;
    for (int64_t t = 0; t < v && n < kk; t++)
        if (key[t] > prefix || (key[t] == prefix && equal-- > 0))
            pick[n++] = (uint64_t)key[t] << 32 | (uint32_t) ~(uint32_t)t;
    if (n > 64) {
        sort_descending(pick, n);
    } else {
        for (int64_t i = 1; i < n; i++) {
            const uint64_t x = pick[i];
            int64_t j = i;
            for (; j > 0 && pick[j - 1] < x; j--) pick[j] = pick[j - 1];
            pick[j] = x;
        }
    }
    for (int64_t i = 0; i < n; i++) s->heap[i] = (int32_t) ~(uint32_t)pick[i];
}

/* The weight of token t: its probability over the best token's after the
 * temperature, 0 below min_p. */
static double weight(const float *logits, int32_t t, float mx, double inv_t, double min_p) {
    const double w = exp(((double)rank_value(logits[t]) - (double)mx) * inv_t);
    return w >= min_p ? w : 0.0;
}

/* Draw over every token in id order (no top-k / top-p cut). */
static int32_t draw_all(const float *logits, int64_t vocab, float mx, double inv_t, double min_p, double u) {
    double total = 0.0;
    for (int64_t t = 0; t < vocab; t++) total += weight(logits, (int32_t)t, mx, inv_t, min_p);
    double target = u * total, acc = 0.0;
    int32_t last = 0;
    for (int64_t t = 0; t < vocab; t++) {
        double w = weight(logits, (int32_t)t, mx, inv_t, min_p);
        if (w <= 0.0) continue;
        acc += w;
        last = (int32_t)t;
        if (target < acc) return last;
    }
    return last;
}

/* The draw on logits after the logits steps. */
static int32_t draw(kvc_sampler *s, const float *logits, const kvc_sampling_params *p, uint64_t k) {
    int64_t v = s->vocab;
    int32_t best = kvc_sample_greedy(logits, v);
    float mx = rank_value(logits[best]);
    if (p->temperature == 0.0f || p->top_k == 1 || !isfinite(mx)) return best;
    double inv_t = 1.0 / (double)p->temperature, min_p = (double)p->min_p;
    double u = kvc_sample_uniform(p->seed, k);
    int64_t kk = p->top_k > 0 ? kvci_min64(p->top_k, v) : v;
    if (kk == v && p->top_p >= 1.0f) return draw_all(logits, v, mx, inv_t, min_p, u);
    /* w[j] is the weight of the j-th best token; total the mass the top-p
     * cut is measured against: the top-k set, or every token (after min-p) */
    double total = 0.0;
    if (kk < v) {
        select_top_k(s, logits, v, kk); /* the j-th best at heap[j] */
        for (int64_t j = 0; j < kk; j++) {
            s->w[j] = weight(logits, s->heap[j], mx, inv_t, min_p);
            total += s->w[j];
        }
    } else {
        /* top-p alone: a max-heap over every token, popped below (the j-th best lands at heap[v - 1 - j]) */
        for (int64_t i = 0; i < v; i++) s->heap[i] = (int32_t)i;
        for (int64_t i = v / 2 - 1; i >= 0; i--) sift_down(s->heap, v, i, logits);
        for (int64_t t = 0; t < v; t++) total += weight(logits, (int32_t)t, mx, inv_t, min_p);
    }
    double cut = (double)p->top_p * total, kept = 0.0;
    int64_t m = 0;
    while (m < kk) {
        if (kk == v) s->w[m] = weight(logits, heap_pop(s->heap, v - m, logits), mx, inv_t, min_p);
        if (s->w[m] == 0.0 && m > 0) break; /* below min-p, as every token after it (never drawn) */
        kept += s->w[m++];
        if (kept >= cut) break;
    }
    double target = u * kept, acc = 0.0;
    int64_t j = 0;
    while (j < m - 1) {
        acc += s->w[j];
        if (target < acc) break;
        j++;
    }
    return kk < v ? s->heap[j] : s->heap[v - 1 - j];
}

int32_t kvci_sampler_draw(kvc_sampler *s, const float *logits, const kvc_sampling_params *p, int32_t eos_id,
                          const uint32_t *allowed, const int32_t *tokens, int64_t n_prompt, int64_t n_tokens) {
    const bool hold = p->min_tokens > n_tokens - n_prompt;
    const float *l =
        kvci_logits_steps(logits, s->vocab, p, eos_id, hold, allowed, tokens, n_prompt, n_tokens, s->work, s->count);
    const int32_t tok = draw(s, l, p, (uint64_t)(n_tokens - n_prompt));
    /* the draw takes a token above -inf whenever there is one: this one is masked, so all are */
    return allowed != NULL && !(l[tok] > -INFINITY) ? -1 : tok;
}

kvc_status kvc_sampler_sample_tokens(kvc_sampler *s, const float *logits, const kvc_sampling_params *p,
                                     const int32_t *tokens, int64_t n_prompt, int64_t n_tokens, int32_t *token_out) {
    if (s == NULL || logits == NULL || token_out == NULL || (tokens == NULL && n_tokens > 0))
        return kvci_fail(KVC_EINVAL,
                         "kvc_sampler_sample_tokens: sampler, logits, token_out and (with n_tokens "
                         "%lld > 0) tokens must not be NULL",
                         (long long)n_tokens);
    if (n_prompt < 0 || n_tokens < n_prompt)
        return kvci_fail(KVC_EINVAL, "kvc_sampler_sample_tokens: need 0 <= n_prompt %lld <= n_tokens %lld",
                         (long long)n_prompt, (long long)n_tokens);
    kvc_status st = kvc_sampling_params_check(p);
    if (st == KVC_OK) st = kvci_sampling_check_ids(p, s->vocab);
    if (st != KVC_OK) return st;
    for (int64_t i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= s->vocab)
            return kvci_fail(KVC_EINVAL,
                             "kvc_sampler_sample_tokens: tokens[%lld] %d is outside the vocabulary [0, %lld)",
                             (long long)i, tokens[i], (long long)s->vocab);
    *token_out = kvci_sampler_draw(s, logits, p, -1, NULL, tokens, n_prompt, n_tokens);
    return KVC_OK;
}

kvc_status kvc_sampler_sample(kvc_sampler *s, const float *logits, const kvc_sampling_params *p, uint64_t k,
                              int32_t *token_out) {
    if (s == NULL || logits == NULL || token_out == NULL)
        return kvci_fail(KVC_EINVAL, "kvc_sampler_sample: sampler, logits and token_out must not be NULL");
    kvc_status st = kvc_sampling_params_check(p);
    if (st == KVC_OK) st = kvci_sampling_check_ids(p, s->vocab);
    if (st != KVC_OK) return st;
    if (kvci_sampling_penalties_on(p))
        return kvci_fail(KVC_EINVAL, "kvc_sampler_sample: presence_penalty, frequency_penalty and "
                                     "repetition_penalty need the request's tokens (kvc_sampler_sample_tokens)");
    const bool hold = p->min_tokens > 0 && (uint64_t)p->min_tokens > k; /* k tokens were generated */
    *token_out = draw(s, kvci_logits_steps(logits, s->vocab, p, -1, hold, NULL, NULL, 0, 0, s->work, s->count), p, k);
    return KVC_OK;
}
