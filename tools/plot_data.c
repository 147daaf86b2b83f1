/* --plot: the data file and the Python plotting run (plot_data.h). */
#include "plot_data.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/internal.h"

extern char **environ;

static int write_data(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return 1;
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fclose(f) != 0;
    return bad;
}

int kvc_plot_emit(const char *kind, const char *data, size_t len, const char *png_path, const char *suffix) {
    size_t n = strlen(png_path) + strlen(suffix) + 1;
    char *data_path = kvc_malloc(n);
    if (data_path == NULL) {
        fprintf(stderr, "kvcache: --plot: out of memory\n");
        return 1;
    }
    snprintf(data_path, n, "%s%s", png_path, suffix);
    if (write_data(data_path, data, len) != 0) {
        fprintf(stderr, "kvcache: --plot: cannot write %s\n", data_path);
        kvc_free(data_path);
        return 1;
    }
    const char *python = getenv("KVC_PYTHON");
    if (python == NULL || python[0] == '\0') python = "python3";
    char *argv[] = {(char *)python, "-m", "kvcache.plot", (char *)kind, data_path, (char *)png_path, NULL};
    pid_t pid;
    int status = 0;
    int rc = posix_spawnp(&pid, python, NULL, NULL, argv, environ);
    if (rc == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        fprintf(stderr, "kvcache: --plot: wrote %s (data: %s)\n", png_path, data_path);
        kvc_free(data_path);
        return 0;
    }
    fprintf(stderr,
            "kvcache: --plot: \"%s -m kvcache.plot %s %s %s\" %s; the data is in %s (install the Python package: "
            "pip install ./python[plot], or set KVC_PYTHON to a Python that has it)\n",
            python, kind, data_path, png_path, rc != 0 ? "could not start" : "failed", data_path);
    kvc_free(data_path);
    return 1;
}
