/* A program built against an installed kvcache (see install_test.sh): checks
 * that the library it runs with is the one its headers describe, then plans
 * the caches of a model config given as argv[1] (which needs the full
 * library: the config reader uses cJSON). Exit status 0 on success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvcache/kvcache.h>

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) != NULL) {
            *len = fread(text, 1, (size_t)n, f);
            text[*len] = '\0';
        }
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv) {
    if (kvc_version() != KVC_VERSION) {
        fprintf(stderr, "library version %d, headers %d\n", (int)kvc_version(), KVC_VERSION);
        return 1;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONFIG_JSON\n", argv[0]);
        return 2;
    }
    size_t len = 0;
    char *config = read_file(argv[1], &len);
    if (config == NULL) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    kvc_plan_options opt = kvc_plan_default_options();
    kvc_model_plan *plan = NULL;
    kvc_status st = kvc_model_plan_create(config, len, &opt, &plan);
    free(config);
    char *json = NULL;
    if (st == KVC_OK) st = kvc_model_plan_to_json(plan, &json);
    kvc_model_plan_destroy(plan);
    if (st != KVC_OK) {
        fprintf(stderr, "plan: %s: %s\n", kvc_status_str(st), kvc_last_error());
        return 1;
    }
    const int ok = json[0] == '{';
    printf("kvcache %s planned %s (%zu bytes of plan JSON)\n", kvc_version_string(), argv[1], strlen(json));
    kvc_plan_json_free(json);
    return ok ? 0 : 1;
}
