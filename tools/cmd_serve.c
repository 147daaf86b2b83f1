/* `kvcache serve`: replaces the process by PYTHON running the server of the Python package
 * (python/kvcache/serve, docs/serve.md) as `python -m kvcache.serve ARGS...` would, through a
 * few lines that first say which package or library is missing, and for which Python (a bare
 * "No module named ..." left a new user guessing). PYTHON is the one the plots use
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

/* Run by `PYTHON -c`: argv[1:] are the server's arguments. */
static const char SERVE_BOOT[] =
    "import importlib.util, runpy, sys\n"
    "if importlib.util.find_spec('kvcache') is None:\n"
    "    sys.exit('kvcache serve: the kvcache Python package is not installed for ' + sys.executable +\n"
    "             ': pip install \"./python[serve]\" there, or set KVC_PYTHON to a Python that has it')\n"
    "try:\n"
    "    import kvcache.serve\n"
    "except ModuleNotFoundError as exc:\n"
    "    if exc.name is None or exc.name.split('.')[0] == 'kvcache':\n"
    "        raise\n"
    "    sys.exit('kvcache serve: ' + exc.name + ', a library of the package\\'s serve extra, is missing for ' +\n"
    "             sys.executable + ': pip install \"./python[serve]\" there')\n"
    "sys.argv[0] = 'kvcache serve'\n"
    "runpy.run_module('kvcache.serve', run_name='__main__', alter_sys=False)\n";

int kvc_cmd_serve(int argc, char **argv) {
    char venv_python[4096];
    const char *python = kvc_package_python(venv_python, sizeof venv_python);
    /* python -c SERVE_BOOT, then argv[1..argc) and the NULL execvp wants */
    char **args = kvci_calloc((size_t)argc + 3, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "kvcache serve: out of memory\n");
        return 1;
    }
    args[0] = (char *)python;
    args[1] = "-c";
    args[2] = (char *)SERVE_BOOT;
    for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
    execvp(python, args);
    fprintf(stderr,
            "kvcache serve: cannot run %s: %s (set KVC_PYTHON to a Python where the kvcache package is installed "
            "with its \"serve\" extra: pip install \"./python[serve]\")\n",
            python, strerror(errno));
    kvci_free(args);
    return 1;
}
