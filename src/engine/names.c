/* Names of the engine's request states and finish reasons (a leaf: it
 * calls nothing). */
#include "kvcache/engine.h"

const char *kvc_engine_request_state_name(kvc_engine_request_state s) {
    switch (s) {
    case KVC_REQ_WAITING: return "waiting";
    case KVC_REQ_RUNNING: return "running";
    case KVC_REQ_FINISHED: return "finished";
    }
    return "?";
}

const char *kvc_engine_finish_reason_name(kvc_engine_finish_reason r) {
    switch (r) {
    case KVC_FINISH_NONE: return "none";
    case KVC_FINISH_EOS: return "eos";
    case KVC_FINISH_MAX_NEW: return "max_new_tokens";
    case KVC_FINISH_MAX_MODEL_LEN: return "max_model_len";
    case KVC_FINISH_PREFILLED: return "prefilled";
    case KVC_FINISH_NO_ALLOWED_TOKEN: return "no_allowed_token";
    }
    return "?";
}
