/* The config.json text of a tiny GptOss model (4 layers, sliding window 4 on
 * the even layers, 8 experts of which 2 per token) shared by the model tests
 * that run it through the managers. */
#ifndef KVC_TEST_TINY_GPT_OSS_H
#define KVC_TEST_TINY_GPT_OSS_H

#define KVC_TEST_TINY_GPT_OSS_JSON                                                                                     \
    "{\"model_type\":\"gpt_oss\",\"vocab_size\":128,\"hidden_size\":64,\"intermediate_size\":32,"                      \
    "\"num_hidden_layers\":4,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"head_dim\":16,"                     \
    "\"sliding_window\":4,\"num_local_experts\":8,\"num_experts_per_tok\":2}"

#endif /* KVC_TEST_TINY_GPT_OSS_H */
