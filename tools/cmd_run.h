/* `kvcache run MODEL_DIR --prompt-ids ...`: the standalone runner on a Hugging Face model directory. */
#ifndef KVC_TOOLS_CMD_RUN_H
#define KVC_TOOLS_CMD_RUN_H

int kvc_cmd_run(int argc, char **argv);

#endif
