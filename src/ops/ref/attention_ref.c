/* float64 reference of the fused attention operator (AO 3.1), written for
 * clarity: one (request, head, query row) at a time, every key visited in
 * order, dequantised and masked exactly as docs/ops.md states, NaN and Inf
 * by its rules ("NaN and Inf": IEEE arithmetic, except that a key scoring
 * -inf is left out like a masked key, a sink of -inf is no sink, and a
 * scale or offset that is not finite dequantises to NaN). Used by tests. */
#include <math.h>
#include <stdlib.h>

#include "base/internal.h"
#include "ops/attn_problem.h"
#include "ops/elem.h"

/* Element qi of an f32 dequantisation scale or offset tensor; NaN when it is not finite. */
static double quant_param(const kvc_tensor *t, int64_t qi) {
    const double x = ((const float *)t->data)[qi];
    return isfinite(x) ? x : NAN;
}

/* Dequantised K (or V) element: x = scale * (q + offset) for int8, else the value. */
static double kv_elem(const kvc_attn_problem *pb, bool is_v, int64_t b, int64_t k0, int64_t j, int64_t g, int64_t d) {
    const kvc_attention_params *p = pb->p;
    const kvc_tensor *t = is_v ? &p->v : &p->k;
    const int64_t dim = is_v ? pb->Dv : pb->D;
    const kvci_kv_view *v = is_v ? &pb->vv : &pb->vk;
    const int64_t idx = kvci_attn_kv_index(pb, v, b, k0, j, g) + kvci_attn_kv_chan(v, d);
    const double x = kvci_elem_load(t->data, t->dtype, idx);
    if (!pb->kv_quant) return x;
    const kvc_qidx q = is_v ? pb->vq : pb->kq;
    const int64_t qi = kvci_attn_quant_index(pb, q, b, j, g, d, dim);
    const double s = quant_param(is_v ? &p->value_scale : &p->key_scale, qi);
    const double o =
        (is_v ? pb->v_has_off : pb->k_has_off) ? quant_param(is_v ? &p->value_offset : &p->key_offset, qi) : 0.0;
    return s * (x + o);
}

/* Score of key j for query row (b, q0 + i, head n), already scaled and, with logit_softcap c > 0, soft-capped:
 * c * tanh(s / c) (-inf stays -inf: left out as before; +inf becomes c). */
static double score(const kvc_attn_problem *pb, int64_t b, int64_t q0, int64_t i, int64_t n, int64_t k0, int64_t j) {
    const kvc_attention_params *p = pb->p;
    const int64_t g = n / pb->G;
    const int64_t qi = kvci_attn_q_index(pb, b, q0, i, n, pb->D);
    double dot = 0.0;
    for (int64_t d = 0; d < pb->D; d++)
        dot += (double)kvci_elem_load(p->q.data, p->q.dtype, qi + d) * kv_elem(pb, false, b, k0, j, g, d);
    if (pb->Dr) {
        const int64_t ri = kvci_attn_q_index(pb, b, q0, i, n, pb->Dr);
        const int64_t ki = kvci_attn_kv_index(pb, &pb->vr, b, k0, j, g);
        /* an int8/fp8 rope part is dequantised with its key's scale (per tensor, head or key) */
        const double rs = pb->rope_quant && pb->kv_quant
                              ? quant_param(&p->key_scale, kvci_attn_quant_index(pb, pb->kq, b, j, g, 0, pb->D))
                              : 1.0;
        for (int64_t d = 0; d < pb->Dr; d++)
            dot += (double)kvci_elem_load(p->q_rope.data, p->q_rope.dtype, ri + d) *
                   (rs * kvci_elem_load(p->k_rope.data, p->k_rope.dtype, ki + kvci_attn_kv_chan(&pb->vr, d)));
    }
    const double sc = p->scale * dot, c = p->logit_softcap;
    return c > 0.0 && sc != -INFINITY ? c * tanh(sc / c) : sc;
}

/* One output row: s [Skv] scratch, acc [Dv] scratch. */
static void ref_row(const kvc_attn_problem *pb, int64_t b, int64_t q0, int64_t sq, int64_t i, int64_t n, int64_t k0,
                    int64_t skv, double *s, double *acc) {
    const kvc_attention_params *p = pb->p;
    int64_t lo, hi;
    kvci_attn_row_interval(pb, i, sq, skv, &lo, &hi);
    bool any = false;
    double m = -INFINITY;
    for (int64_t j = lo; j < hi; j++) {
        s[j] = kvci_attn_masked(pb, b, i, j) ? -INFINITY : score(pb, b, q0, i, n, k0, j);
        if (p->alibi_slopes.data && s[j] != -INFINITY) { /* ALiBi after the cap: slope times the key's distance */
            const float sl = ((const float *)p->alibi_slopes.data)[n];
            s[j] += p->alibi_bf16 ? (double)kvci_attn_alibi_bf16(sl, j) * p->scale
                                  : (double)sl * (double)(j - (i + skv - sq));
        }
        if (s[j] == -INFINITY) continue; /* masked, or scoring -inf: left out alike */
        if (s[j] > m) m = s[j];
        any = true;
    }
    const double sigma = p->sinks.data ? kvci_elem_load(p->sinks.data, p->sinks.dtype, n) : -INFINITY;
    const bool sink = sigma != -INFINITY;
    const int64_t oi = kvci_attn_out_index(pb, b, q0, i, n);
    double lse = INFINITY;
    for (int64_t d = 0; d < pb->Dv; d++) acc[d] = 0.0;
    if (any || sink) {
        if (sink && sigma > m) m = sigma;
        double den = sink ? exp(sigma - m) : 0.0;
        for (int64_t j = lo; j < hi; j++) {
            if (s[j] == -INFINITY) continue; /* selection, never exp(garbage) * 0 */
            const double w = exp(s[j] - m);
            den += w;
            for (int64_t d = 0; d < pb->Dv; d++) acc[d] += w * kv_elem(pb, true, b, k0, j, n / pb->G, d);
        }
        for (int64_t d = 0; d < pb->Dv; d++) acc[d] /= den;
        lse = m + log(den);
    }
    for (int64_t d = 0; d < pb->Dv; d++) kvci_elem_store(p->out.data, p->out.dtype, oi + d, (float)acc[d]);
    if (p->lse.data) ((float *)p->lse.data)[kvci_attn_lse_index(pb, b, q0, i, n)] = (float)lse;
}

kvc_status kvc_attention_ref(const kvc_attention_params *p) {
    kvc_attn_problem pb;
    kvc_status st = kvci_attn_resolve(p, &pb);
    if (st != KVC_OK) return st;
    double *s = kvci_malloc(sizeof(double) * (size_t)(pb.max_skv + 1));
    double *acc = kvci_malloc(sizeof(double) * (size_t)(pb.Dv + 1));
    if (!s || !acc) {
        kvci_free(s);
        kvci_free(acc);
        return kvci_fail(KVC_ENOMEM, "attention_ref: no memory for %lld scores", (long long)pb.max_skv);
    }
    for (int64_t b = 0; b < pb.B; b++) {
        int64_t q0, sq, k0, skv;
        kvci_attn_q_range(&pb, b, &q0, &sq);
        kvci_attn_kv_range(&pb, b, &k0, &skv);
        for (int64_t n = 0; n < pb.Nq; n++)
            for (int64_t i = 0; i < sq; i++) ref_row(&pb, b, q0, sq, i, n, k0, skv, s, acc);
    }
    kvci_free(s);
    kvci_free(acc);
    return KVC_OK;
}
