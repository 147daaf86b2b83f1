/* Internal helpers of the weight loaders. Virtual tensor names of the routed experts (DeepseekV3, Qwen3-MoE): the
 * loader fills them from per-expert modules (mlp.experts.{e}.{gate,up,down}_proj.weight)
 * or from the fused form (mlp.experts.gate_up_proj [E, 2I, H], gate rows first / down_proj [E, H, I]), MF 4.5;
 * Mixtral's from its hub modules (block_sparse_moe.experts.{e}.w1 = gate, w3 = up, w2 = down). */
#ifndef KVC_MODEL_WEIGHTS_INTERNAL_H
#define KVC_MODEL_WEIGHTS_INTERNAL_H

#define KVC_DS_EXPERTS_GATE "mlp.experts.*.gate_proj.weight"
#define KVC_DS_EXPERTS_UP   "mlp.experts.*.up_proj.weight"
#define KVC_DS_EXPERTS_DOWN "mlp.experts.*.down_proj.weight"

#define KVC_MIXTRAL_EXPERTS_GATE "block_sparse_moe.experts.*.w1.weight"
#define KVC_MIXTRAL_EXPERTS_UP   "block_sparse_moe.experts.*.w3.weight"
#define KVC_MIXTRAL_EXPERTS_DOWN "block_sparse_moe.experts.*.w2.weight"

/* LFM2-MoE's hub modules: feed_forward.experts.{e}.w1 = gate, w3 = up, w2 = down */
#define KVC_LFM2_EXPERTS_GATE "feed_forward.experts.*.w1.weight"
#define KVC_LFM2_EXPERTS_UP   "feed_forward.experts.*.w3.weight"
#define KVC_LFM2_EXPERTS_DOWN "feed_forward.experts.*.w2.weight"

/* Llama 4's: the fused form only, stored transposed (feed_forward.experts.gate_up_proj [E, H, 2I], gate columns
 * first / down_proj [E, I, H]) */
/* Qwen3-Next's gated norm weight (a Gated DeltaNet layer's), applied as w: the one norm its 1 + w rule leaves out */
#define KVC_GDN_NORM            "linear_attn.norm.weight"
#define KVC_LLAMA4_EXPERTS_GATE "feed_forward.experts.*.gate_proj.weight"
#define KVC_LLAMA4_EXPERTS_UP   "feed_forward.experts.*.up_proj.weight"
#define KVC_LLAMA4_EXPERTS_DOWN "feed_forward.experts.*.down_proj.weight"
#include <stddef.h>

#include "kvcache/model.h"

/* The dtype string ("F32", "BF16", ...) of a tensor of st; NULL when absent. */
const char *kvci_safetensors_dtype(const kvc_safetensors *st, const char *name);
/* The length of dim 0 of a tensor of st; -1 when absent or of no dims. */
int64_t kvci_safetensors_dim0(const kvc_safetensors *st, const char *name);
/* kvc_safetensors_read_f32 of a part of a tensor: along `dim` (-1: the whole tensor, as
 * kvc_safetensors_read_f32), the part[dim] entries from `start` of the file's `full`; the file's
 * shape is part with part[dim] = full. dst [prod(part)] (NULL: check names, shapes, dtype only). */
kvc_status kvci_safetensors_read_part(const kvc_safetensors *st, const char *name, int32_t ndim, const int64_t *part,
                                      int32_t dim, int64_t full, int64_t start, float *dst);

/* The bytes of tensor `name` in the map (*data), after checking its shape is shape[0..ndim)
 * and its dtype `dtype` exactly; KVC_EINVAL naming the tensor otherwise. */
kvc_status kvci_safetensors_view(const kvc_safetensors *st, const char *name, const char *dtype, int32_t ndim,
                                 const int64_t *shape, const void **data);
/* The i-th tensor name of st in name order, NULL past the last; *used: whether a read or a shape check
 * (kvc_safetensors_read_f32, kvci_safetensors_read_part, kvci_safetensors_view) looked it up. */
const char *kvci_safetensors_nth(const kvc_safetensors *st, size_t i, bool *used);
/* Refuses (KVC_EINVAL, naming the tensor and model_type) a tensor of st nobody read beside one that was read
 * (the same name up to its last dot: a bias or a norm's bias of a module the loader reads, which would change the
 * math); logs the others (vision towers, MTP layers, buffers) in one line at debug level (unread.c). */
kvc_status kvci_check_unread(const kvc_safetensors *st, const char *model_type);
/* The string `key` of a file's "__metadata__" (the first file that has it); NULL when none has. */
const char *kvci_safetensors_meta(const kvc_safetensors *st, const char *key);

/* The name under which a checkpoint of model_type holds the tensor weights.c calls `name` (Llama's module
 * names): name itself, or the renamed one in buf[cap] (ckpt_names.c). */
const char *kvci_checkpoint_name(const char *model_type, const char *name, char *buf, size_t cap);
/* The name a checkpoint of model_type may hold in its place, the one transformers renames on load (ckpt_names.c's
 * `either` rules left out) or a tied BERT head's bias, into buf[cap]; NULL when no such rule applies. */
const char *kvci_checkpoint_unconverted(const char *model_type, const char *name, char *buf, size_t cap);
/* That name under the base model's other prefix into buf[cap], which some of the type's checkpoints leave out
 * (GPT-2's transformer.) or name otherwise (Nemotron-H's backbone.); NULL when the type has none or name is not
 * under it. */
const char *kvci_checkpoint_bare(const char *model_type, const char *name, char *buf, size_t cap);

#endif
