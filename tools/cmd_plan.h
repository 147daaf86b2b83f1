/* `kvcache plan`: the cache plan of a Hugging Face config.json. */
#ifndef KVC_TOOLS_CMD_PLAN_H
#define KVC_TOOLS_CMD_PLAN_H

#include <stdint.h>

int kvc_cmd_plan(int argc, char **argv);

/* Parses "123", "64GiB", "512MiB", "1.5GB", "1e9", "4K": 0 and *out on
 * success, -1 for text that is not a non-negative whole count. */
int kvc_parse_size(const char *text, int64_t *out);

#endif
