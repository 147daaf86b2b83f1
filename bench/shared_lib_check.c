/* kvc_shared_lib_check (shared_lib_check.h): the ELF header, the tables it
 * points at and every segment with file bytes, each within the file. */
#define _GNU_SOURCE /* RTLD_DEEPBIND */
#include "shared_lib_check.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "model/json_read.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE /* not compared */
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

/* bytes [off, off + len) inside a file of `size` bytes */
static bool within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

/* The header's own fields: class, byte order, type, machine, table extents. */
static kvc_status check_header(const char *path, const Elf64_Ehdr *h, uint64_t size) {
    if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != HOST_DATA)
        return kvci_fail(KVC_EINVAL, "%s: an ELF file of another class or byte order (this build is 64-bit, %s)", path,
                         HOST_DATA == ELFDATA2LSB ? "little-endian" : "big-endian");
    if (h->e_type != ET_DYN)
        return kvci_fail(KVC_EINVAL, "%s: an ELF file but not a shared library (e_type %d)", path, h->e_type);
    if (HOST_MACHINE != EM_NONE && h->e_machine != HOST_MACHINE)
        return kvci_fail(KVC_EINVAL, "%s: built for another machine (e_machine %d, this one is %d)", path, h->e_machine,
                         HOST_MACHINE);
    if (h->e_phnum == 0 || h->e_phentsize != sizeof(Elf64_Phdr))
        return kvci_fail(KVC_EINVAL, "%s: no program headers of the 64-bit size (%d of %d bytes)", path, h->e_phnum,
                         h->e_phentsize);
    if (!within(h->e_phoff, (uint64_t)h->e_phnum * h->e_phentsize, size))
        return kvci_fail(KVC_EINVAL,
                         "%s: its program headers (%d at byte %llu) pass the end of the file (%llu bytes): truncated?",
                         path, h->e_phnum, (unsigned long long)h->e_phoff, (unsigned long long)size);
    /* e_shnum 0 with a table: the count sits in the first entry, which must be there */
    const uint64_t sections = h->e_shnum ? h->e_shnum : 1;
    if (h->e_shoff != 0 && !within(h->e_shoff, sections * h->e_shentsize, size))
        return kvci_fail(KVC_EINVAL,
                         "%s: its section headers (at byte %llu) pass the end of the file (%llu bytes): truncated?",
                         path, (unsigned long long)h->e_shoff, (unsigned long long)size);
    return KVC_OK;
}

/* Every segment's file bytes within the file: the loader maps them. */
static kvc_status check_segments(const char *path, int fd, const Elf64_Ehdr *h, uint64_t size) {
    for (int i = 0; i < h->e_phnum; i++) {
        Elf64_Phdr ph;
        errno = 0;
        if (pread(fd, &ph, sizeof ph, (off_t)(h->e_phoff + (uint64_t)i * sizeof ph)) != (ssize_t)sizeof ph)
            return kvci_fail(KVC_EINVAL, "%s: cannot read program header %d (%s)", path, i,
                             errno ? strerror(errno) : "short read");
        if (ph.p_type != PT_NULL && ph.p_filesz > 0 && !within(ph.p_offset, ph.p_filesz, size))
            return kvci_fail(KVC_EINVAL,
                             "%s: segment %d (file bytes %llu..%llu) passes the end of the file (%llu bytes): "
                             "truncated?",
                             path, i, (unsigned long long)ph.p_offset, (unsigned long long)(ph.p_offset + ph.p_filesz),
                             (unsigned long long)size);
    }
    return KVC_OK;
}

kvc_status kvc_shared_lib_check(const char *path) {
    int fd = -1;
    size_t size = 0;
    kvc_status st = kvci_open_regular(path, &fd, &size); /* regular files only: a FIFO would block dlopen */
    if (st != KVC_OK) return st;
    Elf64_Ehdr h;
    memset(&h, 0, sizeof h);
    errno = 0;
    const ssize_t got = pread(fd, &h, sizeof h, 0);
    if (got < 0)
        st = kvci_fail(KVC_EINVAL, "%s: cannot read it (%s)", path, strerror(errno));
    else if (got < SELFMAG || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
        st = kvci_fail(KVC_EINVAL, "%s: not an ELF file (no ELF magic at its start)", path);
    else if (got < (ssize_t)sizeof h)
        st = kvci_fail(KVC_EINVAL, "%s: %zu bytes, shorter than an ELF header: truncated?", path, size);
    if (st == KVC_OK) st = check_header(path, &h, (uint64_t)size);
    if (st == KVC_OK) st = check_segments(path, fd, &h, (uint64_t)size);
    close(fd);
    return st;
}

void *kvc_shared_lib_open(const char *path, const char *bench) {
    if (kvc_shared_lib_check(path) != KVC_OK) { /* dlopen of a truncated file dies with SIGBUS */
        fprintf(stderr, "bench %s: --against %s\n", bench, kvc_last_error());
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    kvci_json_route_allocations(); /* its constructor pointed cJSON's hooks at its allocator */
    if (!h) fprintf(stderr, "bench %s: cannot load --against %s: %s\n", bench, path, dlerror());
    return h;
}
