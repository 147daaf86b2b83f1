"""kvcache.serve: an OpenAI-compatible HTTP server over kvcache.Engine.

    python -m kvcache.serve MODEL_DIR [--host 127.0.0.1] [--port 8000] [--api-key K ...]

/v1/completions, /v1/chat/completions and /v1/responses (streamed as
server-sent events or not), /v1/models, /health and /metrics (Prometheus). Needs the "serve"
extra (tokenizers, jinja2, starlette, uvicorn, prometheus_client).
docs/serve.md describes the API, its limits and its errors."""
from .app import Server

__all__ = ["Server", "main"]


def main(argv=None):
    from .cli import main as run

    return run(argv)
