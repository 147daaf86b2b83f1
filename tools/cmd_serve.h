/* `kvcache serve MODEL_DIR [ARGS]`: the Python package's OpenAI-compatible server (python -m kvcache.serve). */
#ifndef KVC_TOOLS_CMD_SERVE_H
#define KVC_TOOLS_CMD_SERVE_H

int kvc_cmd_serve(int argc, char **argv);

#endif
