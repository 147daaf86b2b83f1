/* libFuzzer target: arbitrary bytes as a JSON trace for kvc_trace_replay.
 * Any input must either replay or be refused with an error line; a broken
 * manager invariant (exit status 1) or a sanitizer report is a finding.
 * Limits keep the pools and tables small enough for the fuzzer's memory. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink = NULL;
    if (sink == NULL) sink = fopen("/dev/null", "w");
    if (sink == NULL) abort();
    kvc_trace_options opts = {
        .print_usage = true, .check_invariants = true, .max_model_len = 1 << 12, .max_blocks = 1 << 12};
    if (kvc_trace_replay((const char *)data, size, sink, &opts) == KVC_TRACE_EXIT_FAILED) abort();
    return 0;
}
