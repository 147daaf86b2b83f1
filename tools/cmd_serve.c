/* `kvcache serve`: replaces the process by `PYTHON -m kvcache.serve ARGS...`, the server of the
 * Python package (python/kvcache/serve, docs/serve.md). PYTHON is the one the plots use
 * (kvc_package_python: $KVC_PYTHON, else build/python-venv beside the command, else python3); the
 * kvcache package and its "serve" extra must be installed there (pip install "./python[serve]"). */
#include "cmd_serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "plot_data.h"

int kvc_cmd_serve(int argc, char **argv) {
    char venv_python[4096];
    const char *python = kvc_package_python(venv_python, sizeof venv_python);
    /* python -m kvcache.serve, then argv[1..argc) and the NULL execvp wants */
    char **args = kvci_calloc((size_t)argc + 3, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "kvcache serve: out of memory\n");
        return 1;
    }
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = "kvcache.serve";
    for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
    execvp(python, args);
    fprintf(stderr,
            "kvcache serve: cannot run %s: %s (set KVC_PYTHON to a Python where the kvcache package is installed "
            "with its \"serve\" extra: pip install \"./python[serve]\")\n",
            python, strerror(errno));
    kvci_free(args);
    return 1;
}
