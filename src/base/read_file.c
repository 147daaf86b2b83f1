/* Whole-file input for every command and reader (config.json, traces):
 * regular files only (a FIFO or device would block or never end), one size
 * limit, and a message that names the actual fault. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

kvc_status kvci_open_regular(const char *path, int *fd_out, size_t *size_out) {
    *fd_out = -1;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before fstat sees it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return kvci_fail(KVC_EINVAL, "%s: cannot open (%s)", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return kvci_fail(KVC_EINVAL, "%s: cannot stat (%s)", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return kvci_fail(KVC_EINVAL, "%s: is %s; only regular files are read", path, file_kind(sb.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *fd_out = fd;
    *size_out = (size_t)sb.st_size;
    return KVC_OK;
}

/* Reads fd to its end into a NUL-terminated buffer of at most max_bytes. */
static kvc_status read_fd(int fd, const char *name, size_t max_bytes, size_t size_hint, char **out, size_t *len) {
    size_t cap = size_hint < max_bytes ? size_hint + 1 : max_bytes + 1;
    if (cap < 4096) cap = 4096;
    char *buf = kvci_malloc(cap + 1);
    if (buf == NULL) return kvci_fail(KVC_ENOMEM, "%s: out of memory reading the file", name);
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            size_t grown = cap > max_bytes / 2 ? max_bytes + 1 : cap * 2;
            char *bigger = kvci_realloc(buf, grown + 1);
            if (bigger == NULL) {
                kvci_free(buf);
                return kvci_fail(KVC_ENOMEM, "%s: out of memory reading %zu bytes", name, n);
            }
            buf = bigger;
            cap = grown;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            kvci_free(buf);
            return kvci_fail(KVC_EINVAL, "%s: read error after %zu bytes (%s)", name, n, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max_bytes) {
            kvci_free(buf);
            return kvci_fail(KVC_EINVAL, "%s: larger than the input limit of %zu bytes", name, max_bytes);
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KVC_OK;
}

kvc_status kvci_read_file(const char *path, size_t max_bytes, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (strcmp(path, "-") == 0) return read_fd(STDIN_FILENO, "stdin", max_bytes, 0, out, len);
    int fd = -1;
    size_t size = 0;
    kvc_status st = kvci_open_regular(path, &fd, &size);
    if (st != KVC_OK) return st;
    if (size > max_bytes)
        st = kvci_fail(KVC_EINVAL, "%s: %zu bytes, larger than the input limit of %zu bytes", path, size, max_bytes);
    else
        st = read_fd(fd, path, max_bytes, size, out, len);
    close(fd);
    return st;
}
