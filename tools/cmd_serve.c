/* `kvcache serve`: replaces the process by PYTHON running the server of the Python package
 * (python/kvcache/serve, docs/serve.md) as `python -m kvcache.serve ARGS...` would, through a
 * few lines that first say which package or library is missing, and for which Python (a bare
 * "No module named ..." left a new user guessing). PYTHON is the one the plots use
 * (kvc_package_python: $KVC_PYTHON, else build/python-venv beside the command, else python3); the
 * kvcache package and its "serve" extra must be installed there (pip install "./python[serve]").
 * With --tensor-parallel-size N > 1 it runs that under `mpirun -np N` (docs/serve.md, "Tensor parallel"),
 * so one command starts every rank. */
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

/* The value of --tensor-parallel-size (or -tp, --tensor-parallel-size=N) among the server's arguments; 1 when
 * it is not given or is no number (the server then refuses the value by name). */
static long tp_size(int argc, char **argv) {
    static const char LONG_EQ[] = "--tensor-parallel-size=";
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--tensor-parallel-size") == 0 || strcmp(argv[i], "-tp") == 0)
            v = i + 1 < argc ? argv[i + 1] : "";
        else if (strncmp(argv[i], LONG_EQ, sizeof LONG_EQ - 1) == 0)
            v = argv[i] + sizeof LONG_EQ - 1;
        else
            continue;
        char *end = NULL;
        errno = 0;
        const long n = strtol(v, &end, 10);
        return *v != '\0' && *end == '\0' && errno == 0 ? n : 1;
    }
    return 1;
}

/* args[0..n) = mpirun's launch of `tp` ranks (one OpenMP thread set per rank: OMP_NUM_THREADS as given, else
 * the cores shared out), before the Python command; n = 0 when tp is 1; -1 (said) when it cannot be. */
static int mpirun_prefix(long tp, char **args, char *np, size_t np_size) {
    if (tp <= 1) return 0;
#ifndef KVC_HAVE_MPI
    (void)args, (void)np, (void)np_size;
    fprintf(stderr,
            "kvcache serve: --tensor-parallel-size %ld needs MPI, and this kvcache was built without it (install "
            "Open MPI, libopenmpi-dev, and rebuild: docs/distributed.md)\n",
            tp);
    return -1;
#else
    char threads[32];
    if (getenv("OMP_NUM_THREADS") == NULL) {
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(threads, sizeof threads, "%ld", cores > tp ? cores / tp : 1);
        setenv("OMP_NUM_THREADS", threads, 1);
    }
    snprintf(np, np_size, "%ld", tp);
    const char *mpirun = getenv("KVC_MPIRUN");
    int n = 0;
    args[n++] = (char *)(mpirun && *mpirun ? mpirun : "mpirun");
    args[n++] = "-np";
    args[n++] = np;
    args[n++] = "--oversubscribe"; /* the ranks share this machine's cores */
    if (geteuid() == 0) args[n++] = "--allow-run-as-root";
    args[n++] = "-x";
    args[n++] = "OMP_NUM_THREADS";
    return n;
#endif
}

int kvc_cmd_serve(int argc, char **argv) {
    char venv_python[4096], np[32];
    const char *python = kvc_package_python(venv_python, sizeof venv_python);
    /* [mpirun ...] python -c SERVE_BOOT, then argv[1..argc) and the NULL execvp wants */
    char **args = kvci_calloc((size_t)argc + 16, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "kvcache serve: out of memory\n");
        return 1;
    }
    const int n = mpirun_prefix(tp_size(argc, argv), args, np, sizeof np);
    if (n < 0) {
        kvci_free(args);
        return 1;
    }
    args[n] = (char *)python;
    args[n + 1] = "-c";
    args[n + 2] = (char *)SERVE_BOOT;
    for (int i = 1; i < argc; i++) args[n + i + 2] = argv[i];
    execvp(args[0], args);
    if (n > 0)
        fprintf(stderr,
                "kvcache serve: cannot run %s for --tensor-parallel-size: %s (install Open MPI's mpirun, "
                "openmpi-bin, or set KVC_MPIRUN)\n",
                args[0], strerror(errno));
    else
        fprintf(stderr,
                "kvcache serve: cannot run %s: %s (set KVC_PYTHON to a Python where the kvcache package is installed "
                "with its \"serve\" extra: pip install \"./python[serve]\")\n",
                python, strerror(errno));
    kvci_free(args);
    return 1;
}
