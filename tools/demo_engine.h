/* `kvcache demo`: the engine on the built-in models (demo_engine.c). */
#ifndef KVC_TOOLS_DEMO_ENGINE_H
#define KVC_TOOLS_DEMO_ENGINE_H

int kvc_cmd_engine_demo(int argc, char **argv);

#endif
