/* kvc_test_run_command (kvc_test_util.h): a `kvcache` command in process, its output captured. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "commands.h"
#include "kvc_test_util.h"

kvc_test_command_result kvc_test_run_command(char *const *args, int argc, uint64_t fail_at) {
    char *argv[16];
    assert_true(argc >= 1 && argc < 16);
    memcpy(argv, args, (size_t)(argc + 1) * sizeof *argv);
    char path[] = "/tmp/kvc_cmd_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    assert_true(saved_out >= 0 && saved_err >= 0);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    const kvc_command *cmd = NULL;
    for (const kvc_command *c = kvc_commands; c->name != NULL; c++)
        if (strcmp(c->name, argv[0]) == 0) cmd = c;
    kvc_test_command_result r = {0};
    kvci_alloc_fail_at(fail_at);
    r.rc = cmd != NULL ? cmd->run(argc, argv) : 99;
    r.calls = kvci_alloc_calls();
    kvci_alloc_fail_at(0);
    fflush(stdout);
    fflush(stderr);
    clearerr(stdout);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    close(fd);
    r.out = kvc_test_read_text(path);
    unlink(path);
    return r;
}
