/* BERT-style encoders that transformers also builds as causal LMs (BertLMHeadModel, RobertaForCausalLM, ...; run by
 * the dense family). Their attention is causal only with is_decoder true; the config classes' false makes every
 * token see the later ones (bidirectional), which no KV cache can serve, so is_decoder false is refused by name by
 * the runtime and the planner alike, and so is add_cross_attention true (the encoder-decoder's cross-attention).
 *
 * The model, as transformers 5.25 builds it: the embeddings' sum (word + token type 0 + learned absolute position;
 * ERNIE with use_task_id + task type 0 after them; BertGeneration without token types), through a LayerNorm with
 * bias (embed_norm; not Megatron-BERT's nor XLM-RoBERTa-XL's); post-norm layers, h = LN(h + attn(h)),
 * h = LN(h + mlp(h)) (norm_after_add), no final norm, or for Megatron-BERT, XLM-RoBERTa-XL and RoBERTa-PreLayerNorm
 * pre-norm layers and a final LayerNorm; q/k/v (query, key, value) and attention.output.dense with biases, head_dim
 * hidden_size / heads, one KV head per head, softmax scale head_dim^-1/2; the MLP output.dense(act(intermediate.dense
 * x)) with biases, act by hidden_act (gelu: erf); every LayerNorm at layer_norm_eps (1e-12; XLM-RoBERTa-XL's 1e-5).
 * The head: LN(act(dense x)) (head_transform; BertGeneration has none) then the decoder with its own bias
 * (head_bias), tied to the word embeddings by default. The head's act is hidden_act for BERT, ERNIE and
 * Megatron-BERT, GELU by erf whatever hidden_act says for the RoBERTa types (RobertaLMHead and its copies).
 *
 * Positions: BERT, ERNIE, BertGeneration and Megatron-BERT take position p's row (positions from the cache length
 * on). The RoBERTa types compute theirs from the tokens (create_position_ids_from_input_ids): a non-padding token's
 * is padding_idx + 1 + its index (pad_token_id, 1; null refused: transformers' forward fails on it), so row p +
 * pad_token_id + 1 of a table of max_position_embeddings rows, and at most max_position_embeddings - pad_token_id - 1
 * positions (the runtime's max_position_embeddings). A token equal to pad_token_id takes position padding_idx there
 * and shifts the later ones of the same forward call; kvcache counts every token (a generated sequence has no
 * padding; transformers' own generate passes 0-based position_ids instead, another model: see docs/model.md). */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

typedef struct bert_type {
    const char *model_type, *architecture;
    bool runs;      /* the runtime runs it (the others are planned only, with is_decoder true) */
    bool roberta;   /* positions offset by pad_token_id + 1, the head's act GELU (erf) */
    bool tasks;     /* ERNIE's task type embeddings under use_task_id */
    bool pre_norm;  /* a LayerNorm before each sub-layer and a final one, instead of post-norm layers */
    bool embed_ln;  /* the embeddings' LayerNorm */
    bool transform; /* the head's dense + act + LayerNorm (BertGeneration's head is its decoder alone) */
    int64_t types;  /* type_vocab_size when absent (its config class's); 0: no token types */
    double eps;     /* layer_norm_eps when absent */
    int64_t rows;   /* max_position_embeddings when absent */
} bert_type;

/* Every transformers 5.25 causal-LM type whose class is causal only with is_decoder true. */
static const bert_type TYPES[] = {
    {"bert", "BertLMHeadModel", true, false, false, false, true, true, 2, 1e-12, 512},
    {"roberta", "RobertaForCausalLM", true, true, false, false, true, true, 2, 1e-12, 512},
    {"xlm-roberta", "XLMRobertaForCausalLM", true, true, false, false, true, true, 2, 1e-12, 512},
    {"camembert", "CamembertForCausalLM", true, true, false, false, true, true, 2, 1e-12, 512},
    {"data2vec-text", "Data2VecTextForCausalLM", true, true, false, false, true, true, 2, 1e-12, 512},
    {"ernie", "ErnieForCausalLM", true, false, true, false, true, true, 2, 1e-12, 512},
    {"bert-generation", "BertGenerationDecoder", true, false, false, false, true, false, 0, 1e-12, 512},
    {"megatron-bert", "MegatronBertForCausalLM", true, false, false, true, false, true, 2, 1e-12, 512},
    {"xlm-roberta-xl", "XLMRobertaXLForCausalLM", true, true, false, true, false, true, 1, 1e-5, 514},
    {"roberta-prelayernorm", "RobertaPreLayerNormForCausalLM", true, true, false, true, true, true, 2, 1e-12, 512},
    {.model_type = "electra", .architecture = "ElectraForCausalLM"},   /* planned only */
    {.model_type = "rembert", .architecture = "RemBertForCausalLM"},   /* planned only */
    {.model_type = "xmod", .architecture = "XmodForCausalLM"},         /* planned only */
    {.model_type = "roformer", .architecture = "RoFormerForCausalLM"}, /* planned only */
    {.model_type = "big_bird", .architecture = "BigBirdForCausalLM"},  /* planned only */
    {.model_type = "roc_bert", .architecture = "RoCBertForCausalLM"},  /* planned only */
};

static const bert_type *type_of(const char *mt) {
    for (size_t i = 0; mt != NULL && i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strcmp(mt, TYPES[i].model_type) == 0) return &TYPES[i];
    return NULL;
}

bool kvci_family_is_bert(const char *model_type) {
    const bert_type *t = type_of(model_type);
    return t != NULL && t->runs;
}

int64_t kvci_family_bert_rows(const char *model_type) {
    const bert_type *t = type_of(model_type);
    return t != NULL && t->runs ? t->rows : 0;
}

/* The BERT type of a config without model_type, by its architecture (the planner's second look-up), or NULL. */
static const bert_type *type_by_architecture(const char *arch) {
    for (size_t i = 0; arch != NULL && i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (strcmp(arch, TYPES[i].architecture) == 0) return &TYPES[i];
    return NULL;
}

kvc_status kvci_family_bert_decoder(const kvc_hparams *hp) {
    const kvc_json_obj *c = &hp->cfg;
    bool decoder = false, cross = false;
    const bert_type *t = hp->model_type != NULL ? type_of(hp->model_type) : type_by_architecture(hp->architecture);
    if (t == NULL) return KVC_OK;
    KVC_TRY(kvci_family_opt_bool(c, "is_decoder", false, &decoder));
    KVC_TRY(kvci_family_opt_bool(c, "add_cross_attention", false, &cross));
    if (!decoder)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with is_decoder false (or absent: its config class's default) is not supported: its "
                         "attention is bidirectional, every token attends to the later ones too, so no KV cache "
                         "serves it (transformers' ForCausalLM class runs causally only with is_decoder true)",
                         c->doc, t->model_type);
    if (cross)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with add_cross_attention true is not supported: its layers also attend over an "
                         "encoder's output (cross-attention), whose keys and values kvcache neither plans nor runs",
                         c->doc, t->model_type);
    return KVC_OK;
}

kvc_status kvci_family_bert_positions(const kvc_hparams *hp, int64_t *max_pos, int64_t *offset) {
    const kvc_json_obj *c = &hp->cfg;
    const bert_type *t = type_of(hp->model_type);
    *offset = 0;
    if (t == NULL || !t->roberta) return KVC_OK;
    /* an explicit null (kvci_json_find reads null as absent) has no padding_idx to offset from */
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(c->obj, "pad_token_id");
    if (pad != NULL && cJSON_IsNull(pad))
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with pad_token_id null is not supported (its positions start at pad_token_id + 1; "
                         "transformers' forward fails without one)",
                         c->doc, t->model_type);
    int64_t pad_id = 1;
    KVC_TRY(kvci_family_opt_int(c, "pad_token_id", 1, 0, KVC_HP_MAX_POSITIONS, &pad_id));
    if (max_pos != NULL && pad_id + 1 >= *max_pos)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with pad_token_id %lld leaves no position of max_position_embeddings %lld (its "
                         "positions start at pad_token_id + 1)",
                         c->doc, t->model_type, (long long)pad_id, (long long)*max_pos);
    if (max_pos != NULL) *max_pos -= pad_id + 1; /* the positions; the table keeps max_position_embeddings rows */
    *offset = pad_id + 1;
    return KVC_OK;
}

kvc_status kvci_family_parse_bert(const kvc_hparams *hp, kvc_model_config *cfg) {
    const kvc_json_obj *c = &hp->cfg;
    const kvc_json_range eps = {0.0, 1.0, false};
    const bert_type *t = type_of(cfg->model_type);
    const char *pos_type = "absolute";
    bool have = false, tasks = false;
    if (t == NULL) return kvci_fail(KVC_EINVAL, "%s: model_type \"%s\" is not a BERT type", c->doc, cfg->model_type);
    /* is_decoder and add_cross_attention: kvci_family_bert_decoder, at the family's look-up (config.c) */
    /* older configs' key, which transformers 5.25 no longer reads (its embeddings are absolute whatever it says) */
    KVC_TRY(kvci_json_str(c, "position_embedding_type", KVC_HP_NAME_MAX, &pos_type, &have));
    if (strcmp(pos_type, "absolute") != 0)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s with position_embedding_type \"%s\" is not supported (transformers 5.25 ignores the "
                         "key and runs absolute positions, another model than the checkpoint's)",
                         c->doc, t->model_type, pos_type);
    KVC_TRY(kvci_family_gelu_act(c, "hidden_act", t->model_type, "gelu", cfg)); /* the classic types' */
    cfg->head_act = t->roberta ? KVC_MLP_GELU : cfg->mlp_act;
    KVC_TRY(kvci_hparams_head_dim(hp, &cfg->head_dim)); /* hidden / heads: hparams.c */
    if (t->types > 0)
        KVC_TRY(kvci_family_opt_int(c, "type_vocab_size", t->types, 1, KVC_HP_MAX_VOCAB, &cfg->type_vocab_size));
    if (t->tasks) KVC_TRY(kvci_family_opt_bool(c, "use_task_id", false, &tasks));
    if (tasks)
        KVC_TRY(kvci_family_opt_int(c, "task_type_vocab_size", 3, 1, KVC_HP_MAX_VOCAB, &cfg->task_type_vocab_size));
    KVC_TRY(kvci_family_bert_positions(hp, NULL, &cfg->pos_offset)); /* hparams.c took it off max_pos */
    cfg->pos_learned = true;
    for (int64_t l = 0; l < cfg->num_layers; l++) cfg->layer_nope[l] = true;
    cfg->qkv_bias = cfg->o_bias = cfg->mlp_bias = cfg->head_bias = true;
    cfg->layer_norm = cfg->norm_bias = cfg->mlp_plain = true;
    cfg->embed_norm = t->embed_ln, cfg->head_transform = t->transform;
    cfg->norm_after_add = cfg->final_norm_none = !t->pre_norm;
    KVC_TRY(kvci_family_opt_bool(c, "tie_word_embeddings", true, &cfg->tie_word_embeddings));
    return kvci_family_opt_num(c, "layer_norm_eps", t->eps, eps, &cfg->rms_norm_eps);
}
