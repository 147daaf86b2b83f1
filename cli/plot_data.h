/* `--plot FILE.png` of `kvcache trace`, `plan` and `bench engine`: the command
 * writes the data of the picture beside it (FILE.png.json, or .jsonl for a
 * trace) and has the Python package draw it:
 *   $KVC_PYTHON -m kvcache.plot KIND DATA FILE.png
 * (without KVC_PYTHON: python-venv/bin/python beside the command, as `make python-test` makes
 * it in build/, else python3)
 * The package comes from `pip install ./python[plot]` (docs/python.md). */
#ifndef KVC_CLI_PLOT_DATA_H
#define KVC_CLI_PLOT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The Python that runs the package (the plots, `kvcache serve`): $KVC_PYTHON; else the virtualenv
 * `make python-test` makes beside this command (build/python-venv, which has the package and its
 * test extra); else python3 from PATH. buf[cap]: room for the virtualenv's path. */
const char *kvc_package_python(char *buf, size_t cap);

/* Whether png_path (the value after --plot) names a file: true, or false after "kvcache CMD: --plot expects
 * FILE.png, got an empty path" on stderr (an empty one wrote the data to ".json" in the working directory). */
bool kvc_plot_path_ok(const char *cmd, const char *png_path);

/* png_path + suffix, kvci_malloc'ed (kvci_free it); NULL after a message when out of memory. */
char *kvc_plot_data_path(const char *png_path, const char *suffix);

/* Runs the plotting on a data file already written. Returns 0, or 1 after a
 * message on stderr naming what failed (the data file stays, so the picture
 * can be drawn later). */
int kvc_plot_run(const char *kind, const char *data_path, const char *png_path);

/* Writes data[0..len) to png_path + suffix, then kvc_plot_run. */
int kvc_plot_emit(const char *kind, const char *data, size_t len, const char *png_path, const char *suffix);

/* One latency pass as a line of the `latency` data (JSON Lines):
 * {"family": F, "run": R, "ttft_ms": [...], "tpot_ms": [...]}, from samples in seconds. */
void kvc_plot_latency_line(FILE *f, const char *family, const char *run, const double *ttft_s, int64_t n_ttft,
                           const double *tpot_s, int64_t n_tpot);

#endif
