/* kvc_shared_lib_check (bench/shared_lib_check.h, issue 23 #10): the file
 * `bench attention --against` would dlopen, checked first. Copies of this
 * test's own ELF file, cut or patched one way each, must be refused with
 * the reason; the whole file (as a shared object) passes. */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kvcache/base.h"
#include "shared_lib_check.h"

static char dir[] = "/tmp/kvc_solib_XXXXXX";
static unsigned char *elf; /* this test's executable, e_type set to ET_DYN */
static size_t elf_len;

static int setup(void **state) {
    (void)state;
    FILE *f = fopen("/proc/self/exe", "rb");
    assert_non_null(f);
    size_t cap = 1 << 20;
    elf = malloc(cap);
    assert_non_null(elf);
    for (size_t got; (got = fread(elf + elf_len, 1, cap - elf_len, f)) > 0;) {
        elf_len += got;
        if (elf_len == cap) {
            elf = realloc(elf, cap *= 2);
            assert_non_null(elf);
        }
    }
    fclose(f);
    assert_true(elf_len > sizeof(Elf64_Ehdr));
    ((Elf64_Ehdr *)elf)->e_type = ET_DYN; /* a PIE or not: only the layout of the file matters here */
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(elf);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* Writes bytes[0..len) as dir/name and checks it. */
static kvc_status check_bytes(const char *name, const void *bytes, size_t len) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return kvc_shared_lib_check(path);
}

static void expect_message(const char *text) {
    if (!strstr(kvc_last_error(), text)) fail_msg("\"%s\" lacks \"%s\"", kvc_last_error(), text);
}

static void expect_refused(const char *name, const void *bytes, size_t len, const char *text) {
    assert_int_equal(check_bytes(name, bytes, len), KVC_EINVAL);
    expect_message(name); /* the message names the file */
    expect_message(text);
}

static void test_whole_file_passes(void **state) {
    (void)state;
    assert_int_equal(check_bytes("whole.so", elf, elf_len), KVC_OK);
}

static void test_truncated(void **state) {
    (void)state;
    expect_refused("cut_1000.so", elf, 1000, "pass the end of the file (1000 bytes): truncated?");
    expect_refused("cut_header.so", elf, 10, "10 bytes, shorter than an ELF header");
    /* without a section table the segments themselves must be whole: cut the last one with file bytes in half */
    unsigned char *copy = malloc(elf_len);
    assert_non_null(copy);
    memcpy(copy, elf, elf_len);
    Elf64_Ehdr *h = (Elf64_Ehdr *)copy;
    h->e_shoff = 0, h->e_shnum = 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(copy + h->e_phoff), *last = NULL;
    for (int i = 0; i < h->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_filesz > 2 && (!last || ph[i].p_offset > last->p_offset)) last = &ph[i];
    assert_non_null(last);
    char text[64];
    snprintf(text, sizeof text, "segment %d (file bytes %llu..", (int)(last - ph), (unsigned long long)last->p_offset);
    expect_refused("cut_segment.so", copy, (size_t)(last->p_offset + last->p_filesz / 2), text);
    free(copy);
}

static void test_patched_header(void **state) {
    (void)state;
    unsigned char *copy = malloc(elf_len);
    assert_non_null(copy);
    Elf64_Ehdr *h = (Elf64_Ehdr *)copy;
    memcpy(copy, elf, elf_len);
    copy[0] = 'X';
    expect_refused("not_elf.so", copy, elf_len, "not an ELF file");
    memcpy(copy, elf, elf_len);
    h->e_ident[EI_CLASS] = ELFCLASS32;
    expect_refused("class32.so", copy, elf_len, "another class or byte order");
    memcpy(copy, elf, elf_len);
    h->e_type = ET_EXEC;
    expect_refused("exec.so", copy, elf_len, "not a shared library (e_type 2)");
#if defined(__x86_64__) || defined(__aarch64__)
    memcpy(copy, elf, elf_len);
    h->e_machine = EM_RISCV;
    expect_refused("riscv.so", copy, elf_len, "built for another machine");
#endif
    memcpy(copy, elf, elf_len);
    h->e_phoff = (Elf64_Off)elf_len;
    expect_refused("phoff.so", copy, elf_len, "its program headers");
    free(copy);
}

static void test_not_a_file(void **state) {
    (void)state;
    char path[128];
    assert_int_equal(kvc_shared_lib_check(dir), KVC_EINVAL);
    expect_message("is a directory");
    snprintf(path, sizeof path, "%s/fifo.so", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(kvc_shared_lib_check(path), KVC_EINVAL); /* without blocking in open */
    expect_message("is a FIFO");
    snprintf(path, sizeof path, "%s/missing.so", dir);
    assert_int_equal(kvc_shared_lib_check(path), KVC_EINVAL);
    expect_message("cannot open (No such file or directory)");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_whole_file_passes), cmocka_unit_test(test_truncated),
                                       cmocka_unit_test(test_patched_header), cmocka_unit_test(test_not_a_file)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
