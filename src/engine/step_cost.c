/* The cost model of the stall-free limit (kvc_engine_params.step_cost_ratio):
 * what a row costs under the model's cost fields, and how many tokens of a
 * chunk a given cost allows. Shared by the scheduler and the step check. */
#include "engine/engine_internal.h"

double kvci_engine_row_cost(const kvc_engine *e, int64_t start, int64_t n) {
    const double q = (double)n, pairs = q * (double)start + q * (q + 1.0) / 2.0;
    return e->model.cost_row + e->cost_token * q + e->model.cost_context * pairs;
}

int64_t kvci_engine_tokens_for_cost(const kvc_engine *e, int64_t start, int64_t n_max, double allowance) {
    int64_t lo = 0, hi = n_max; /* the cost grows with n: the largest n with cost(n) <= allowance */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (kvci_engine_row_cost(e, start, mid) <= allowance)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

bool kvci_engine_is_decode_row(const kvc_engine_req *r, const kvc_step_request *row) {
    return row->num_new_tokens == 1 && row->computed_tokens + 1 == r->n_tokens;
}
