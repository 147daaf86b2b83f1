"""The command line of `python -m kvcache.serve` (and `kvcache serve`)."""
import argparse
import os
import re
import signal
import socket
import sys

from ..engine import (ACTIVATIONS, WEIGHT_DTYPES, Engine, tensor_parallel_check, tensor_parallel_end,
                      tensor_parallel_start)
from ..errors import Error
from ..plan import parse_bytes
from .reasoning import PARSERS as REASONING_PARSERS
from .tool_parsers import PARSERS

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _integer(text):
    """A decimal integer: an optional '-' then digits (int() also takes ' 5', '+5' and '1_000')."""
    if not re.fullmatch(r"-?[0-9]+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(text)


class _Once(argparse.Action):
    """An option's value, refused when the option was given before: which of the two was meant?"""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", set())
        if option_string in given:
            parser.error(f"{option_string} given twice (give each option once)")
        given.add(option_string)
        setattr(namespace, self.dest, values)


def _port(text):
    """A TCP port, 0 to 65535 (0: a free one)."""
    port = int(text) if re.fullmatch(r"[0-9]+", text) else -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0 to 65535)")
    return port


def _host(text):
    """An address to listen on: an IP address or a name this machine resolves (checked before the model loads;
    uvicorn would exit with status 3 after the load without naming the option)."""
    try:
        socket.getaddrinfo(text, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an address to listen on ({exc})") from None
    return text


def _seconds(text):
    """A non-negative number of seconds, in decimal (float() also takes ' 5', '+5' and '1_0', as kvcache run's
    number flags no longer do)."""
    value = float(text) if re.fullmatch(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", text) else -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def _stopped(signum, frame):
    sys.exit(0)


def parser():
    p = argparse.ArgumentParser(prog="python -m kvcache.serve",
                                description="Serve a Hugging Face model directory (config.json, *.safetensors, "
                                            "tokenizer.json, tokenizer_config.json) over an OpenAI-compatible HTTP "
                                            "API: /v1/completions, /v1/chat/completions, /v1/models, /tokenize, "
                                            "/detokenize, /health, /ping, /version, /metrics.")
    p.add_argument("model_dir", help="the model directory")
    p.add_argument("--host", action=_Once, type=_host, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", action=_Once, type=_port, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    p.add_argument("--api-key", action="append", default=[],
                   help="a bearer token /v1/ accepts (repeatable; also $KVCACHE_API_KEY); each key is its own "
                        "prefix-cache tenant. Without keys, no authentication")
    p.add_argument("--served-model-name", action=_Once,
                   help="the model's name in the API (default: the directory's name)")
    p.add_argument("--kv-dtype", action=_Once,
                   help="KV cache dtype: f32, f16, bf16, i8, fp8_e4m3, fp8_e5m2 (default: the checkpoint's)")
    p.add_argument("--weights", action=_Once, default="checkpoint", choices=WEIGHT_DTYPES,
                   help="dtype of the weight matrices: checkpoint (default: as stored), f32, bf16, q8_0 or q4_0 "
                        "(quantized at load; the embedding and output head in q8_0)")
    p.add_argument("--activations", action=_Once, default="f32", choices=ACTIVATIONS,
                   help="f32 (default: f32-level results) or bf16: bf16 matrices round the activations to bf16, "
                        "as PyTorch bf16 does (faster; its measured error: docs/runtime.md)")
    p.add_argument("--block-size", action=_Once, type=_integer, default=16, help="tokens per KV block (default 16)")
    p.add_argument("--kv-memory", action=_Once, default="1GiB",
                   help="KV cache budget, e.g. 512MiB, 4GiB (default 1GiB)")
    p.add_argument("--max-model-len", action=_Once, type=_integer,
                   help="tokens per request, prompt and output (default: the model's max_position_embeddings)")
    p.add_argument("--max-num-seqs", action=_Once, type=_integer, default=16,
                   help="requests running at once (default 16)")
    p.add_argument("--max-num-batched-tokens", action=_Once, type=_integer, default=0,
                   help="tokens per engine step (default: the engine's, max(2048, max-num-seqs))")
    p.add_argument("--max-requests", action=_Once, type=_integer, default=0,
                   help="requests held at once, waiting ones included; beyond, 503 (default 4 x max-num-seqs)")
    p.add_argument("--no-prefix-caching", action="store_true", help="turn prefix caching off")
    p.add_argument("--enable-prompt-tokens-details", action="store_true",
                   help="usage carries prompt_tokens_details.cached_tokens, the prompt tokens the prefix cache "
                        "supplied (off by default, as in vLLM)")
    p.add_argument("--enable-auto-tool-choice", action="store_true",
                   help="chat requests with tools (tool_choice auto, the default) get the calls the reply makes as "
                        "message.tool_calls, parsed by --tool-call-parser (as vLLM's option)")
    p.add_argument("--tool-call-parser", action=_Once, choices=PARSERS,
                   help="how replies write tool calls: hermes (<tool_call>{...}</tool_call> blocks: Hermes 2 Pro, "
                        "Qwen 2.5 and 3), mistral ([TOOL_CALLS][{...}, ...]: Mistral 7B Instruct v0.3), llama3_json "
                        "({...}; {...} objects: Llama 3.1 to 3.3), pythonic ([f(a=1), ...]: Llama 3.2 and 4), "
                        "qwen3_coder (<tool_call><function=f><parameter=a>...: Qwen3-Coder)")
    p.add_argument("--reasoning-parser", action=_Once, choices=REASONING_PARSERS,
                   help="chat replies' reasoning (<think>...</think>) goes to message.reasoning apart from its "
                        "content, and to a reasoning item in /v1/responses (as vLLM's option): deepseek_r1 "
                        "(DeepSeek R1 and its distills), deepseek_v3 (V3.1+, chat_template_kwargs thinking), "
                        "glm45 (GLM-4.5+), minimax_m2, qwen3 (Qwen3, QwQ), seed_oss (<seed:think>)")
    p.add_argument("--max-body-bytes", action=_Once, default="1MiB",
                   help="largest request body (default 1MiB; beyond, 413)")
    p.add_argument("--read-timeout", action=_Once, type=_seconds, default=30.0,
                   help="seconds a request's headers, and then its body, may take to arrive (default 30; beyond, the "
                        "connection is closed, or the answer is 408)")
    p.add_argument("--write-timeout", action=_Once, type=_seconds, default=30.0,
                   help="seconds an answer's bytes may wait for a client that stopped reading them (default 30; "
                        "beyond, the connection is dropped and its request aborted)")
    p.add_argument("--max-connections", action=_Once, type=_integer, default=256,
                   help="connections open at once (default 256); the request of one more is answered 503 and its "
                        "connection closed")
    p.add_argument("--seed", action=_Once, type=_integer, default=0, help="mixed into every request's sampling seed")
    p.add_argument("--tensor-parallel-size", "-tp", action=_Once, type=_integer, default=1, metavar="N",
                   help="processes the model is split over (tensor parallelism over MPI, docs/serve.md): run under "
                        "mpirun -np N (kvcache serve starts mpirun itself); rank 0 serves, the others follow it")
    p.add_argument("--shutdown-timeout", action=_Once, type=_seconds, default=5.0,
                   help="on SIGINT / SIGTERM, seconds the requests in flight may take to finish before they are "
                        "aborted (default 5)")
    p.add_argument("--log-level", action=_Once, default="info", choices=LOG_LEVELS,
                   help="uvicorn's log level (default info)")
    return p


def main(argv=None):
    cli = parser()
    args = cli.parse_args(argv)
    tp = args.tensor_parallel_size
    engine_kwargs = dict(kv_dtype=args.kv_dtype, weights=args.weights, activations=args.activations,
                         block_size=args.block_size, kv_memory=args.kv_memory, max_model_len=args.max_model_len,
                         max_num_seqs=args.max_num_seqs, max_num_batched_tokens=args.max_num_batched_tokens,
                         max_requests=args.max_requests, prefix_caching=not args.no_prefix_caching, seed=args.seed,
                         tensor_parallel_size=tp)
    if tp < 1:
        cli.error(f"--tensor-parallel-size {tp} must be >= 1")
    if tp == 1:
        return _serve(cli, args, engine_kwargs, [])
    try:  # before MPI starts: every rank refuses alike, rank 0 (Open MPI's OMPI_COMM_WORLD_RANK) says why
        tensor_parallel_check(args.model_dir, tp)
    except (Error, OSError) as exc:
        if os.environ.get("OMPI_COMM_WORLD_RANK", "0") != "0":
            sys.exit(2)
        cli.error(str(exc))
    # under mpirun -np tp: rank 0 serves, the others follow; any failure ends the whole job (MPI_Abort), and a
    # rank 0 that stops closes its engine first, whose end lets the others return
    opened, status = [], 1
    try:
        rank = tensor_parallel_start(tp)
        status = (_serve if rank == 0 else _follow)(cli, args, engine_kwargs, opened)
    except Error as exc:
        print(f"{cli.prog}: error: {exc}", file=sys.stderr, flush=True)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        raise
    finally:
        for engine in opened:
            engine.close()
        tensor_parallel_end(status)
    return status


def _follow(cli, args, engine_kwargs, opened):
    """A rank > 0: its shard and an engine over it, replaying rank 0's until rank 0's engine closes."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # rank 0 gets them too (mpirun sends SIGTERM to every rank):
        signal.signal(sig, signal.SIG_IGN)       # its shutdown ends this rank, which must stay for it
    engine = Engine(args.model_dir, **engine_kwargs)
    opened.append(engine)
    engine.follow()
    return 0


def _serve(cli, args, engine_kwargs, opened):
    import uvicorn

    from .app import Server

    keys = args.api_key + ([os.environ["KVCACHE_API_KEY"]] if os.environ.get("KVCACHE_API_KEY") else [])
    try:  # a bad option value or model directory is a usage error naming it, not a traceback
        server = Server(args.model_dir, served_model_name=args.served_model_name, api_keys=keys,
                        max_body_bytes=parse_bytes(args.max_body_bytes, "--max-body-bytes"),
                        read_timeout=args.read_timeout,
                        write_timeout=args.write_timeout, max_connections=args.max_connections,
                        enable_prompt_tokens_details=args.enable_prompt_tokens_details,
                        enable_auto_tool_choice=args.enable_auto_tool_choice, tool_call_parser=args.tool_call_parser,
                        reasoning_parser=args.reasoning_parser, **engine_kwargs)
    except (Error, OSError, ValueError) as exc:
        cli.error(str(exc))
    opened.append(server.engine)
    caching = "on" if server.engine.engine.prefix_caching else "off"
    print(f"kvcache serve: {server.model_name} (weights {args.weights}, activations {args.activations}, KV {server.engine.engine.kv_dtype}, "
          f"max_model_len {server.max_model_len}, prefix caching {caching}) on http://{args.host}:{args.port}", flush=True)
    # uvicorn stops on SIGTERM as on SIGINT (graceful, bounded by --shutdown-timeout), then raises the
    # signal again: a stop that was asked for ends the process with status 0, not killed by the signal
    signal.signal(signal.SIGTERM, _stopped)
    uvicorn.run(server.app, host=args.host, port=args.port, log_level=args.log_level, http=server.http_protocol,
                timeout_graceful_shutdown=args.shutdown_timeout)
    return 0
