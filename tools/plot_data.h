/* `--plot FILE.png` of `kvcache trace`, `plan` and `bench engine`: the command
 * writes the data of the picture beside it (FILE.png.json, or .jsonl for a
 * trace) and has the Python package draw it:
 *   $KVC_PYTHON -m kvcache.plot KIND DATA FILE.png   (KVC_PYTHON: python3 by default)
 * The package comes from `pip install ./python[plot]` (docs/python.md). */
#ifndef KVC_TOOLS_PLOT_DATA_H
#define KVC_TOOLS_PLOT_DATA_H

#include <stddef.h>

/* Writes data[0..len) to png_path + suffix and runs the plotting on it.
 * Returns 0, or 1 after a message on stderr naming what failed (the data
 * file stays, so the picture can be drawn later). */
int kvc_plot_emit(const char *kind, const char *data, size_t len, const char *png_path, const char *suffix);

#endif
