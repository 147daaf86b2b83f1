/* libFuzzer target: arbitrary argument vectors for the command-line parsers
 * of `kvcache trace`, `plan`, `run` and `demo --trace`. The first byte picks
 * the command, the rest is split at NUL and newline bytes into at most 15
 * arguments. Standard input reads as empty and the output goes to
 * /dev/null. What a command writes (the data file of --plot, the model
 * directory of run --save-weights) goes to a private temporary directory: the
 * argument after any "--plot" or "--save-weights" is replaced by a path there,
 * and KVC_PYTHON is `false` (the plotting step fails at once instead of
 * starting Python). Every command must end with exit status 0, 1 or 2 (with
 * nothing leaked): a crash, a sanitizer report, a hang or another status is a
 * finding. `bench` and the engine demo run for seconds or minutes by design
 * once their flags parse, so for them only the parser runs (kvc_bench_parse,
 * kvc_engine_demo_parse), which must give -1 (would run), 0 or 2. A `run` with --tp or
 * --role starts MPI in this process once its flags parse: Open MPI's start-up allocations, in
 * components it unloads at MPI_Finalize, would be reported as leaks no suppression can name (the
 * distributed tests run without LeakSanitizer for the same reason), so such a command runs with
 * leak tracking off (__lsan_disable: its allocations count as reachable); ASan and UBSan stay on. */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/lsan_interface.h>

#include "bench.h"
#include "commands.h"
#include "demo_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS      16
#define MAX_ARG_BYTES 256

static const char *const COMMANDS[][2] = {{"trace", NULL},     {"plan", NULL},  {"run", NULL},
                                          {"demo", "--trace"}, {"bench", NULL}, {"demo", NULL}};

/* The parsers of the long-running commands, run without running them. */
static int parse_only(const char *name, int argc, char **argv) {
    if (strcmp(name, "bench") == 0) {
        const kvc_bench_entry *bench = NULL;
        kvc_bench_opts opts;
        int rc = kvc_bench_parse(argc, argv, &bench, &opts);
        if (rc == -1 && bench == NULL) abort();
        return rc == -1 ? 0 : rc;
    }
    int64_t n = 0;
    int trace_at = 0;
    bool json = false;
    int rc = kvc_engine_demo_parse(argc, argv, &n, &trace_at, &json);
    if (rc == -1 && trace_at == 0 && (n < 1 || n > 100000)) abort();
    return rc == -1 ? 0 : rc;
}

static kvc_command_fn find(const char *name) {
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0) return c->run;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool quiet = false;
    static char plot_dir[] = "/tmp/kvc_fuzz_args.XXXXXX";
    static char plot_path[sizeof plot_dir + 16], save_path[sizeof plot_dir + 16];
    if (!quiet) {
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0) abort();
        close(null_fd);
        if (mkdtemp(plot_dir) == NULL || setenv("KVC_PYTHON", "false", 1) != 0) abort();
        snprintf(plot_path, sizeof plot_path, "%s/plot.png", plot_dir);
        snprintf(save_path, sizeof save_path, "%s/saved", plot_dir);
        quiet = true;
    }
    if (size == 0) return 0;
    const char *const *cmd = COMMANDS[data[0] % (sizeof COMMANDS / sizeof COMMANDS[0])];
    static char args[MAX_ARGS][MAX_ARG_BYTES];
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc] = args[argc];
    snprintf(args[argc++], MAX_ARG_BYTES, "%s", cmd[0]);
    if (cmd[1] != NULL) {
        argv[argc] = args[argc];
        snprintf(args[argc++], MAX_ARG_BYTES, "%s", cmd[1]);
    }
    size_t at = 1;
    while (at < size && argc < MAX_ARGS) {
        size_t n = 0;
        while (at < size && data[at] != '\0' && data[at] != '\n') {
            if (n + 1 < MAX_ARG_BYTES) args[argc][n++] = (char)data[at];
            at++;
        }
        args[argc][n] = '\0';
        argv[argc] = strcmp(args[argc - 1], "--plot") == 0           ? plot_path
                     : strcmp(args[argc - 1], "--save-weights") == 0 ? save_path
                                                                     : args[argc];
        argc++;
        at++;
    }
    argv[argc] = NULL;
    bool long_running = strcmp(cmd[0], "bench") == 0 || (strcmp(cmd[0], "demo") == 0 && cmd[1] == NULL);
    bool starts_mpi = false;
    for (int i = 1; i < argc && strcmp(cmd[0], "run") == 0; i++)
        starts_mpi = starts_mpi || strcmp(argv[i], "--tp") == 0 || strcmp(argv[i], "--role") == 0;
    if (starts_mpi) __lsan_disable();
    int rc = long_running ? parse_only(cmd[0], argc, argv) : find(cmd[0])(argc, argv);
    if (starts_mpi) __lsan_enable();
    fflush(stdout);
    clearerr(stdout);
    if (rc < 0 || rc > 2) abort();
    return 0;
}
