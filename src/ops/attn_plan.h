/* Attention planned once per step, run per layer (docs/ops.md "Plan and
 * run"). kvci_attention_plan validates a call's step-level metadata
 * (lengths, block table, mask mode, shapes and dtypes) once and builds the
 * kernel's work items into the workspace; kvci_attention_run then runs one
 * layer, checking only that the layer's tensors have the planned shapes and
 * dtypes. kvc_attention_cpu is the front end that plans and runs once. */
#ifndef KVC_OPS_ATTN_PLAN_H
#define KVC_OPS_ATTN_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/cpu/attn_cpu.h"

/* The tensors of one layer's run; the rest of kvc_attention_params (lengths,
 * block table, mask, mode, heads, scale, quant modes) is the step's. */
typedef struct kvci_attn_layer {
    kvc_tensor q, q_rope, k, v, k_rope, out, lse, sinks, alibi_slopes;
    kvc_tensor key_scale, value_scale, key_offset, value_offset;
} kvci_attn_layer;

/* Workspace layout: items, per-thread scratch, optional split-K partials (bytes). */
typedef struct kvc_cpu_ws_layout {
    size_t items, per_thread, partials, total;
} kvc_cpu_ws_layout;

/* A planned call. It points into itself (pb.p == &p, cx.pb == &pb) and
 * at its workspace: plan in place, do not copy; runs of one plan are
 * sequential (they share the workspace's scratch). */
typedef struct kvci_attn_plan {
    kvc_attention_params p; /* as planned: the step's metadata, and the planning layer's tensors as the shapes and
                               dtypes every run must have */
    kvc_attn_problem pb;
    kvc_cpu_ctx cx;
    kvc_cpu_item *items; /* [cx.n_items] at the start of the workspace */
    char *ws;
    int64_t n_tasks; /* split-K tasks (chunks over all items) */
    int threads;
    bool split;
    kvc_cpu_ws_layout lay;
} kvci_attn_plan;

/* Causal attention in plain terms, mapped onto the seed's vocabulary: over
 * every earlier key (window 0: sparse_mode 3, or 0 when every request has
 * one query row, where the two agree), or over the last `window` keys
 * including the query's own (sparse_mode 4, pre_tokens window - 1,
 * next_tokens 0, bound as a sliding-window layer). Sinks are p->sinks. */
void kvci_attention_causal(kvc_attention_params *p, int64_t window, bool one_row);

/* Validates p (kvc_attention_check's rules) and plans it over the
 * workspace (kvc_attention_cpu_workspace_size bytes, 64-byte aligned),
 * which the plan uses until it is planned again. */
kvc_status kvci_attention_plan(kvci_attn_plan *plan, const kvc_attention_params *p, void *workspace, size_t bytes);

/* The layer tensors of p. */
kvci_attn_layer kvci_attn_layer_of(const kvc_attention_params *p);

/* True when p is plan's call with other layer tensors of the same shapes
 * and dtypes: the same step metadata (by pointer: the caller guarantees
 * that the arrays it points to are unchanged since planning) and scalars. */
bool kvci_attention_plan_fits(const kvci_attn_plan *plan, const kvc_attention_params *p);

/* KVC_OK when every layer tensor has the plan's presence, dtype and shape;
 * else a refusal naming the tensor. */
kvc_status kvci_attn_layer_check(const kvci_attn_plan *plan, const kvci_attn_layer *layer);

/* Runs the planned call over the layer's tensors; refuses (naming the
 * tensor) a tensor whose presence, dtype or shape differs from the plan. */
kvc_status kvci_attention_run(const kvci_attn_plan *plan, const kvci_attn_layer *layer);

#endif
