/* KVC_SIMD caps every kernel choice (src/base/isa.h), read once per process: set here to avx2
 * before anything asks, the attention table, the f32, bf16/f16 and quantized GEMM lists hold only
 * AVX2 (when the CPU runs it) and portable kernels, best first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/isa.h"
#include "model/gemm.h"
#include "model/gemm_bf16.h"
#include "model/gemm_quant.h"
#include "ops/cpu/simd.h"

static bool avx2_or_portable(const char *name) {
    return strcmp(name, "avx2-fma") == 0 || strcmp(name, "avx2") == 0 || strcmp(name, "portable") == 0;
}

static void test_avx2_cap(void **state) {
    (void)state;
    assert_int_equal(kvci_isa_cap(), KVC_ISA_AVX2);
    const bool avx2 = kvci_simd_cpu_runs(kvci_simd_avx2_table());
    assert_ptr_equal(kvci_simd_select(), avx2 ? kvci_simd_avx2_table() : &kvc_simd_portable);
    const kvc_gemm_kernel *f32[3];
    int n = kvci_gemm_kernels(f32);
    for (int i = 0; i < n; i++) assert_true(avx2_or_portable(f32[i]->name));
    assert_string_equal(kvci_gemm_active()->name, avx2 ? "avx2-fma" : "portable");
    const kvc_gemm_bf16_kernel *b16[KVC_GEMM_BF16_MAX_KERNELS];
    n = kvci_gemm_bf16_kernels(b16);
    for (int i = 0; i < n; i++) assert_true(avx2_or_portable(b16[i]->name));
    assert_string_equal(kvci_gemm_bf16_active()->name, avx2 ? "avx2-fma" : "portable");
    assert_string_equal(kvci_gemm_f16_active()->name, avx2 ? "avx2-fma" : "portable");
    for (int f = KVC_WQ_Q8_0; f <= KVC_WQ_Q4_0; f++) {
        const kvc_wq_kernel *wq[KVC_WQ_MAX_KERNELS];
        n = kvci_wq_kernels((kvc_wq_format)f, wq);
        for (int i = 0; i < n; i++) assert_true(avx2_or_portable(wq[i]->name));
    }
}

/* The cap narrows what the CPU runs and nothing else; tiers nest (AVX-512 needs the AVX2 tier's AVX2, FMA and
 * F16C); unknown tiers run nowhere. */
static void test_cap_and_cpu(void **state) {
    (void)state;
    for (int t = KVC_ISA_PORTABLE; t <= KVC_ISA_AMX; t++)
        assert_int_equal(kvci_isa_runs((kvc_isa)t), t <= KVC_ISA_AVX2 && kvci_cpu_runs((kvc_isa)t));
    assert_true(kvci_cpu_runs(KVC_ISA_PORTABLE));
    if (kvci_cpu_runs(KVC_ISA_AVX512)) assert_true(kvci_cpu_runs(KVC_ISA_AVX2));
    assert_false(kvci_cpu_runs(KVC_ISA_AMX));
    assert_false(kvci_cpu_runs((kvc_isa)-1));
    assert_false(kvci_isa_runs((kvc_isa)(KVC_ISA_AMX + 1)));
    assert_int_equal(kvci_simd_cpu_runs(kvci_simd_avx512_table()), kvci_cpu_runs(KVC_ISA_AVX512));
}

int main(void) {
    setenv("KVC_SIMD", "avx2", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_avx2_cap), cmocka_unit_test(test_cap_and_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
