/* LLaVA and LLaVA-NeXT (LlavaForConditionalGeneration, LlavaNextForConditionalGeneration; model_type llava /
 * llava_next) run their text model on text-only prompts: the CLIP vision tower, the projector and LLaVA-NeXT's
 * image_newline are never read, and an image token in a prompt is an ordinary id (transformers 5.25 without pixel
 * values computes the same: lm_head(language_model(embed(ids)))). The text model is text_config's, Llama (its
 * model_type absent: LlavaConfig's default), Mistral or Qwen2 (LLaVA-Interleave), run by the dense family under its
 * own type. */
#include <string.h>

#include "base/internal.h"
#include "model/family.h"

bool kvci_family_is_llava(const char *outer) {
    return outer != NULL && (strcmp(outer, "llava") == 0 || strcmp(outer, "llava_next") == 0);
}

/* The keys of the outer config `outer` (llava or llava_next) over its text model's: text_config required (without
 * it transformers builds a default Llama whatever the top level says), its model_type llama, mistral or qwen2 (any
 * other refused by name); the head tied by LlavaConfig's rule, the top level's tie_word_embeddings (false when absent)
 * or text_config's, LlavaNextConfig's the top level's alone. */
kvc_status kvci_family_parse_llava(const kvc_hparams *hp, const char *outer, kvc_model_config *cfg) {
    const kvc_json_obj root = {.obj = hp->doc, .doc = hp->cfg.doc, .path = ""};
    if (hp->cfg.obj == hp->doc)
        return kvci_fail(KVC_EINVAL,
                         "%s: %s without text_config is not supported (transformers then builds its default Llama, "
                         "not the top level's)",
                         hp->cfg.doc, outer);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(hp->cfg.obj, "model_type");
    if (mt != NULL &&
        !(cJSON_IsString(mt) && (strcmp(mt->valuestring, "llama") == 0 || strcmp(mt->valuestring, "mistral") == 0 ||
                                 strcmp(mt->valuestring, "qwen2") == 0)))
        return kvci_fail(KVC_EINVAL, "%s: %s with text_config.model_type %s is not supported (llama, mistral, qwen2)",
                         hp->cfg.doc, outer, cJSON_IsString(mt) ? mt->valuestring : "(not a string)");
    bool tied = false;
    KVC_TRY(kvci_family_opt_bool(&root, "tie_word_embeddings", false, &tied));
    if (strcmp(outer, "llava") == 0)
        KVC_TRY(kvci_family_opt_bool(&hp->cfg, "tie_word_embeddings", false, &cfg->tie_word_embeddings));
    cfg->tie_word_embeddings = strcmp(outer, "llava") == 0 ? cfg->tie_word_embeddings || tied : tied;
    return KVC_OK;
}
