/* `kvcache bench WHAT [--json] [--against LIB] [--only TEXT] [--pages 4k|2m|both] [--plot FILE.png]`
 * (`kvcache bench model MODEL_DIR [--batches LIST] [--prompts LIST] [--long] [--weights DTYPE] [--against LIB]`):
 * finds the benchmark and runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "bench.h"
#include "kvcache/kvcache.h"
#include "model/model_internal.h"
#include "plot_data.h"

double kvc_bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double kvc_bench_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double kvc_bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void bench_usage(FILE *f) {
    fprintf(f, "usage: kvcache bench WHAT [--json] [--against LIB] [--only TEXT] [--pages 4k|2m|both] [--plot "
               "FILE.png]\n\nbenchmarks:\n");
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++) fprintf(f, "  %-10s %s\n", b->name, b->summary);
    fprintf(f,
            "\n--against LIB (attention; model: below): also time kvc_attention_cpu of another build's libkvcache.so,\n"
            "alternating call by call on the same caches, and print the ratio (a fair A/B on a noisy machine);\n"
            "LIB avx512, avx2 or portable: this build's kernel with that SIMD path forced (e.g. AMX vs AVX-512)\n"
            "--only TEXT (attention): run only the rows whose label (phase/bBATCH/qQ/kvKV/gGQA/DTYPE/STORAGE,\n"
            "e.g. decode/b8/q1/kv16384/g4/f16/BnBsH) contains TEXT; a TEXT that matches no row is refused,\n"
            "listing the labels (LIB is checked before it is loaded: a whole ELF shared library of this machine)\n"
            "--only TEXT (gemm): run only the tables whose name (f32, bf16, bf16-decode, quant) contains TEXT,\n"
            "e.g. decode for the bf16 GEMV of decode against the read bandwidth\n"
            "--pages 4k|2m|both (attention): the pages of the caches and read buffers: 2 MiB transparent huge\n"
            "pages (default, as the library's cache storage), 4 KiB pages, or both, decode calls alternating\n"
            "--plot FILE.png (engine): also draw the TTFT/TPOT distributions of the latency passes (writes\n"
            "the samples to FILE.png.jsonl and runs PYTHON -m kvcache.plot: $KVC_PYTHON, else build/python-venv's\n"
            "beside this command, else python3)\n"
            "\nkvcache bench model MODEL_DIR [--batches LIST] [--prompts LIST] [--long] [--weights DTYPE]\n"
            "[--activations f32|bf16|f32,bf16] [--profile] [--against LIB] [--json]:\n"
            "batches (default 1,8,32) x prompt lengths (default 64,512; --long adds 2048) through the runner\n"
            "(paged, bf16 KV), prefill and decode next to their rooflines; --weights checkpoint|f32|bf16|q8_0|q4_0:\n"
            "the GEMM matrices' dtype at load (default checkpoint: as stored; f32 widens, bf16 rounds, q8_0 and\n"
            "q4_0 quantize, docs/runtime.md), a column of every row; --activations bf16: bf16 matrices round\n"
            "the activations to bf16, one product per weight (default f32: exact split; docs/runtime.md);\n"
            "f32,bf16 runs every row both ways in turn (\"+bf16act\" in the weights column);\n"
            "tools/make_random_model.py writes a model;\n"
            "--profile: after each row, the wall-clock ms of its prefill and of a decode step by kind of work\n"
            "(GEMMs by matrix, attention, norms, RoPE, residuals, the head, sampling) and their sums;\n"
            "--against LIB: also load the model in another build's libkvcache.so (checked first: a whole ELF\n"
            "shared library of this machine with the model and runner entry points) and alternate its generate\n"
            "calls with ours on the same prompts; each row adds its prefill and decode ms, ours over its (below\n"
            "1: this build is faster) and whether the greedy tokens agree\n");
}

int kvc_bench_parse(int argc, char **argv, const kvc_bench_entry **bench, kvc_bench_opts *opts) {
    const char *what = NULL;
    bool pages_given = false, model_only = false;
    *bench = NULL;
    *opts = (kvc_bench_opts){.json = false};
    static const char *const VALUED[] = {"--against", "--plot",    "--only",    "--pages",
                                         "--batches", "--prompts", "--weights", "--activations"};
    kvc_arg_seen seen = {0};
    for (int i = 1; i < argc; i++) {
        for (size_t k = 0; k < sizeof VALUED / sizeof VALUED[0]; k++)
            if (strcmp(argv[i], VALUED[k]) == 0 && kvc_arg_repeated(&seen, "bench", VALUED[k])) return 2;
        if (strcmp(argv[i], "--json") == 0) {
            opts->json = true;
        } else if (strcmp(argv[i], "--against") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "kvcache bench: --against needs the path of another build's libkvcache.so\n");
                return 2;
            }
            opts->against = argv[++i];
        } else if (strcmp(argv[i], "--plot") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "kvcache bench: --plot needs FILE.png\n");
                return 2;
            }
            if (!kvc_plot_path_ok("bench", argv[i + 1])) return 2;
            opts->plot = argv[++i];
        } else if (strcmp(argv[i], "--only") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "kvcache bench: --only needs the text of the row labels to run (e.g. decode/b8/)\n");
                return 2;
            }
            opts->only = argv[++i];
        } else if (strcmp(argv[i], "--pages") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "2m") == 0)
                opts->pages = KVC_BENCH_PAGES_2M;
            else if (strcmp(v, "4k") == 0)
                opts->pages = KVC_BENCH_PAGES_4K;
            else if (strcmp(v, "both") == 0)
                opts->pages = KVC_BENCH_PAGES_BOTH;
            else {
                fprintf(stderr, "kvcache bench: --pages needs 4k, 2m or both (got \"%s\")\n", v);
                return 2;
            }
            pages_given = true;
        } else if (strcmp(argv[i], "--batches") == 0 || strcmp(argv[i], "--prompts") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "kvcache bench: %s needs a list of numbers (e.g. 1,8,32)\n", argv[i]);
                return 2;
            }
            *(argv[i][2] == 'b' ? &opts->batches : &opts->prompts) = argv[i + 1];
            i++;
            model_only = true;
        } else if (strcmp(argv[i], "--long") == 0) {
            opts->long_prompts = model_only = true;
        } else if (strcmp(argv[i], "--profile") == 0) {
            opts->profile = model_only = true;
        } else if (strcmp(argv[i], "--weights") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            kvc_wmat_dtype d;
            if (kvci_wmat_dtype_parse(v, &d) != KVC_OK) {
                fprintf(stderr, "kvcache bench: --weights: %s\n", kvc_last_error());
                return 2;
            }
            opts->weights = v;
            model_only = true;
        } else if (strcmp(argv[i], "--activations") == 0) {
            opts->activations = i + 1 < argc ? argv[++i] : ""; /* checked by kvc_model_set_activations */
            model_only = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (what == NULL) {
            what = argv[i];
        } else if (strcmp(what, "model") == 0 && opts->model_dir == NULL) {
            opts->model_dir = argv[i];
        } else {
            fprintf(stderr, "kvcache bench: unexpected argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (what == NULL) {
        bench_usage(stderr);
        return 2;
    }
    if (model_only && strcmp(what, "model") != 0) {
        fprintf(
            stderr,
            "kvcache bench: --batches, --prompts, --long, --weights, --activations and --profile apply to the model "
            "benchmark only\n");
        return 2;
    }
    if (opts->plot && strcmp(what, "engine") != 0) {
        fprintf(stderr, "kvcache bench: --plot applies to the engine benchmark only\n");
        return 2;
    }
    if (opts->against && strcmp(what, "attention") != 0 && strcmp(what, "model") != 0) {
        fprintf(stderr, "kvcache bench: --against applies to the attention and model benchmarks only\n");
        return 2;
    }
    if (pages_given && strcmp(what, "attention") != 0) {
        fprintf(stderr, "kvcache bench: --pages applies to the attention benchmark only\n");
        return 2;
    }
    if (opts->only && strcmp(what, "attention") != 0 && strcmp(what, "gemm") != 0) {
        fprintf(stderr, "kvcache bench: --only applies to the attention and gemm benchmarks only\n");
        return 2;
    }
    for (const kvc_bench_entry *b = kvc_benches; b->name != NULL; b++)
        if (strcmp(what, b->name) == 0) {
            *bench = b;
            return -1;
        }
    fprintf(stderr, "kvcache bench: unknown benchmark \"%s\"\n", what);
    bench_usage(stderr);
    return 2;
}

int kvc_cmd_bench(int argc, char **argv) {
    const kvc_bench_entry *bench = NULL;
    kvc_bench_opts opts;
    int rc = kvc_bench_parse(argc, argv, &bench, &opts);
    return rc >= 0 ? rc : bench->run(&opts);
}
