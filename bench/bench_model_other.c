/* The other build of `bench model --against LIB` (bench_model_other.h). */
#include "bench_model_other.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "shared_lib_check.h"

/* *slot = the address of `name` in o's library; false after a message naming it. */
static bool find(const char *path, kvc_other_model *o, const char *name, void **slot) {
    *slot = dlsym(o->handle, name);
    if (*slot == NULL)
        fprintf(stderr, "bench model: --against %s has no %s (a build too old or not libkvcache.so)\n", path, name);
    return *slot != NULL;
}

int kvc_other_model_open(const char *path, kvc_other_model *o) {
    memset(o, 0, sizeof *o);
    o->handle = kvc_shared_lib_open(path, "model");
    if (!o->handle) return 2;
    const char *(*version)(void) = NULL;
    *(void **)&version = dlsym(o->handle, "kvc_version_string");
    snprintf(o->version, sizeof o->version, "%s", version ? version() : "?");
    *(void **)&o->set_activations = dlsym(o->handle, "kvc_model_set_activations"); /* optional: f32 without it */
    if (find(path, o, "kvc_last_error", (void **)&o->last_error) &&
        find(path, o, "kvc_model_load_weights", (void **)&o->load) &&
        find(path, o, "kvc_model_destroy", (void **)&o->destroy) &&
        find(path, o, "kvc_runner_create", (void **)&o->create) &&
        find(path, o, "kvc_runner_destroy", (void **)&o->runner_destroy) &&
        find(path, o, "kvc_runner_generate", (void **)&o->generate))
        return 0;
    kvc_other_model_close(o);
    return 2;
}

int kvc_other_model_load(kvc_other_model *o, const char *dir, const char *weights) {
    if (o->load(dir, weights, &o->model) == KVC_OK) return 0;
    fprintf(stderr, "bench model: --against build: %s\n", o->last_error());
    return 1;
}

int kvc_other_model_activations(kvc_other_model *o, const char *activations) {
    if (!o->set_activations && strcmp(activations, "f32") == 0) return 0; /* its only precision */
    if (!o->set_activations) {
        fprintf(stderr, "bench model: --against build has no kvc_model_set_activations (--activations %s)\n",
                activations);
        return 2;
    }
    if (o->set_activations(o->model, activations) == KVC_OK) return 0;
    fprintf(stderr, "bench model: --against build: %s\n", o->last_error());
    return 2;
}

kvc_runner *kvc_other_model_runner(const kvc_other_model *o, const kvc_runner_params *p, int64_t batch,
                                   int64_t max_prompt_len) {
    kvc_other_params pp;
    memset(&pp, 0, sizeof pp);
    pp.p = *p;
    kvc_runner *r = NULL;
    if (o->create(o->model, &pp.p, batch, max_prompt_len, &r) == KVC_OK) return r;
    fprintf(stderr, "bench model: --against build: batch %lld x %lld tokens: %s\n", (long long)batch,
            (long long)max_prompt_len, o->last_error());
    return NULL;
}

void kvc_other_model_close(kvc_other_model *o) {
    if (o->model) o->destroy(o->model);
    if (o->handle) dlclose(o->handle);
    memset(o, 0, sizeof *o);
}
