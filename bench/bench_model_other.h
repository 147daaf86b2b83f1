/* `kvcache bench model MODEL_DIR --against LIB`: another build's whole model
 * (its libkvcache.so, checked and then loaded with dlopen) on the same model
 * directory, prompts and runner parameters, so that bench_model.c can
 * alternate its generate calls with this build's and print the ratio of the
 * two. The two builds must agree on kvc_runner_params and kvc_runner_stats up
 * to the members the older one knows (ABI structs: members are only added
 * last); the structs passed to it have zeroed room after them, so a newer
 * build reads its added members as 0 (their defaults) instead of past the end. */
#ifndef KVC_BENCH_MODEL_OTHER_H
#define KVC_BENCH_MODEL_OTHER_H

#include "kvcache/runner.h"

typedef struct kvc_other_model {
    void *handle;
    kvc_model *model; /* the other build's: passed back to it only */
    char version[32]; /* its kvc_version_string, "?" when it has none */
    kvc_status (*load)(const char *dir, const char *weights, kvc_model **out);
    void (*destroy)(kvc_model *m);
    kvc_status (*set_activations)(kvc_model *m, const char *activations); /* NULL when it has none */
    kvc_status (*create)(const kvc_model *m, const kvc_runner_params *p, int64_t batch, int64_t max_prompt_len,
                         kvc_runner **out);
    void (*runner_destroy)(kvc_runner *r);
    kvc_status (*generate)(kvc_runner *r, const int32_t *ids, const int64_t *lens, int64_t n, int32_t *tokens,
                           float *logits, kvc_runner_stats *stats);
    const char *(*last_error)(void);
} kvc_other_model;

/* kvc_runner_params and kvc_runner_stats with zeroed room for a newer build's added members. */
typedef struct kvc_other_params {
    kvc_runner_params p;
    unsigned char room[1024];
} kvc_other_params;
typedef struct kvc_other_stats {
    kvc_runner_stats s;
    unsigned char room[1024];
} kvc_other_stats;

/* Checks path (kvc_shared_lib_check: a whole ELF shared library of this
 * machine), opens it (RTLD_DEEPBIND: its functions call its own internals,
 * not this build's of the same names) and finds the entry points; 0, or 2
 * after a message on stderr naming the path and what is wrong (the first
 * symbol it lacks). */
int kvc_other_model_open(const char *path, kvc_other_model *o);
/* The other build's model of dir with weights (kvc_model_load_weights); 0,
 * or 1 after a message with its error. */
int kvc_other_model_load(kvc_other_model *o, const char *dir, const char *weights);
/* Its activations set as this build's ("f32" or "bf16"); 0, or 2 after a
 * message (a build without kvc_model_set_activations runs "f32" only). */
int kvc_other_model_activations(kvc_other_model *o, const char *activations);
/* Its runner for batch x max_prompt_len with the parameters p (copied, the
 * room after them zeroed); NULL after a message with its error. */
kvc_runner *kvc_other_model_runner(const kvc_other_model *o, const kvc_runner_params *p, int64_t batch,
                                   int64_t max_prompt_len);
/* The model destroyed and the library closed; o may be half open. */
void kvc_other_model_close(kvc_other_model *o);

#endif
