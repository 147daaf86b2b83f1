/* --plot: the data file and the Python plotting run (plot_data.h). */
#include "plot_data.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/internal.h"

extern char **environ;

bool kvc_plot_path_ok(const char *cmd, const char *png_path) {
    if (png_path != NULL && png_path[0] != '\0') return true;
    fprintf(stderr, "kvcache %s: --plot expects FILE.png, got an empty path\n", cmd);
    return false;
}

char *kvc_plot_data_path(const char *png_path, const char *suffix) {
    size_t n = strlen(png_path) + strlen(suffix) + 1;
    char *path = kvci_malloc(n);
    if (path == NULL) {
        fprintf(stderr, "kvcache: --plot: out of memory\n");
        return NULL;
    }
    snprintf(path, n, "%s%s", png_path, suffix);
    return path;
}

const char *kvc_package_python(char *buf, size_t cap) {
    const char *python = getenv("KVC_PYTHON");
    if (python != NULL && python[0] != '\0') return python;
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        const char venv[] = "/python-venv/bin/python";
        if (slash != NULL && (size_t)(slash - buf) + sizeof venv <= cap) {
            memcpy(slash, venv, sizeof venv);
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    return "python3";
}

int kvc_plot_run(const char *kind, const char *data_path, const char *png_path) {
    char venv_python[4096];
    const char *python = kvc_package_python(venv_python, sizeof venv_python);
    char *argv[] = {(char *)python, "-m", "kvcache.plot", (char *)kind, (char *)data_path, (char *)png_path, NULL};
    pid_t pid;
    int status = 0;
    int rc = posix_spawnp(&pid, python, NULL, NULL, argv, environ);
    if (rc == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        fprintf(stderr, "kvcache: --plot: wrote %s (data: %s)\n", png_path, data_path);
        return 0;
    }
    fprintf(stderr,
            "kvcache: --plot: \"%s -m kvcache.plot %s %s %s\" %s; the data is in %s. Set KVC_PYTHON to a Python "
            "with the package (pip install ./python[plot]; make python-test makes build/python-venv, found without "
            "it)\n",
            python, kind, data_path, png_path, rc != 0 ? "could not start" : "failed", data_path);
    return 1;
}

int kvc_plot_emit(const char *kind, const char *data, size_t len, const char *png_path, const char *suffix) {
    char *path = kvc_plot_data_path(png_path, suffix);
    if (path == NULL) return 1;
    FILE *f = fopen(path, "wb");
    int bad = f == NULL || fwrite(data, 1, len, f) != len;
    if (f != NULL && fclose(f) != 0) bad = 1;
    int rc = 1;
    if (bad)
        fprintf(stderr, "kvcache: --plot: cannot write %s\n", path);
    else
        rc = kvc_plot_run(kind, path, png_path);
    kvci_free(path);
    return rc;
}

static void ms_array(FILE *f, const char *name, const double *s, int64_t n) {
    fprintf(f, "\"%s\": [", name);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%s%.4f", i ? ", " : "", 1e3 * s[i]);
    fputc(']', f);
}

void kvc_plot_latency_line(FILE *f, const char *family, const char *run, const double *ttft_s, int64_t n_ttft,
                           const double *tpot_s, int64_t n_tpot) {
    fprintf(f, "{\"family\": \"%s\", \"run\": \"%s\", ", family, run);
    ms_array(f, "ttft_ms", ttft_s, n_ttft);
    fputs(", ", f);
    ms_array(f, "tpot_ms", tpot_s, n_tpot);
    fputs("}\n", f);
}
