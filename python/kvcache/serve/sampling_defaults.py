"""The sampling defaults of a model directory's generation_config.json, as vLLM takes them (its default
`--generation-config auto`): temperature, top_p, top_k, min_p and repetition_penalty there are what a request
that leaves the field out (or null) samples with (Qwen2.5's file: temperature 0.7, top_p 0.8, top_k 20,
repetition_penalty 1.05). docs/serve.md, "Endpoints"."""
from .._lib import invalid
from ..tokenizer import read_json  # a model directory's JSON file, read as the tokenizer reads its own
from .protocol import ApiError, sampling_fields

KEYS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")


def read(model_dir, vocab_size):
    """{field: value} of generation_config.json's sampling settings (none when there is no file); a value out of
    the request field's range is refused naming the file and the key."""
    path = model_dir / "generation_config.json"
    config = read_json(path)
    given = {k: config[k] for k in KEYS if config.get(k) is not None}
    try:
        sampling_fields(given, vocab_size)
    except ApiError as exc:
        raise invalid(f"{path}: {exc.message}") from None
    return given


def applied(defaults, body):
    """body (a request's JSON object) with the defaults in the fields it leaves out or null."""
    if not defaults or not isinstance(body, dict):
        return body
    return {**body, **{k: v for k, v in defaults.items() if body.get(k) is None}}
