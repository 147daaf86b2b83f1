"""python -m kvcache.random_model: a servable model directory in a config's shapes."""
import json
import os
import threading

import pytest

pytest.importorskip("tokenizers")

import kvcache  # noqa: E402
from conftest import DATA  # noqa: E402
from kvcache import random_model  # noqa: E402
from kvcache.tokenizer import Tokenizer  # noqa: E402


def test_a_random_model_loads_runs_and_has_text(tmp_path):
    config = json.loads((DATA / "oracle" / "qwen3" / "config.json").read_text())
    config["vocab_size"] = 1500  # more ids than the trained BPE: placeholders fill the rest
    (tmp_path / "c.json").write_text(json.dumps(config))
    out = random_model.make(tmp_path / "c.json", tmp_path / "m", dtype="bf16")
    names = {line.split("\t")[0] for line in (DATA / "oracle" / "qwen3" / "tensors.txt").read_text().splitlines()}
    assert set(random_model.tensor_shapes(config)) == names  # the real checkpoint's tensors, no more, no less
    e = kvcache.Engine(out, kv_memory="4MiB", block_size=4)
    assert e.kv_dtype == "bf16" and e.vocab_size == 1500
    assert len(e.generate([[5, 6, 7]], kvcache.SamplingParams(max_tokens=4))[0]) == 4
    tok = Tokenizer(out)
    assert tok.vocab_size == 1500 and tok.eos_token_ids == (2,)
    assert tok.decode(tok.encode("Hello café 🙂")) == "Hello café 🙂"
    assert tok.decode([1499]).startswith("<|t")  # a placeholder: every id of the model decodes
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}])
    assert chat == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(SystemExit, match="dense Llama-shaped"):
        random_model.make(DATA / "configs" / "gpt-oss-20b.json", tmp_path / "x")


@pytest.mark.parametrize("text, needle", [
    ("[]", "a JSON object is expected, not list"),  # was AttributeError
    ('{"model_type": "qwen3"}', "num_hidden_layers is missing"),  # (plan's own refusal)
    (None, "No such file"),  # was FileNotFoundError
    ("[" * 100000, "nested too deeply"),  # was RecursionError
    ("fifo", "a regular file of at most"),  # blocked for ever
])
def test_a_bad_config_is_a_usage_error_naming_it(tmp_path, capsys, text, needle):
    if text == "fifo":
        os.mkfifo(tmp_path / "c.json")
        threading.Timer(5, _unblock, [tmp_path / "c.json"]).start()  # should it block: it reads an end and fails
    elif text is not None:
        (tmp_path / "c.json").write_text(text)
    with pytest.raises(SystemExit) as exit_:
        random_model.main([str(tmp_path / "c.json"), str(tmp_path / "m")])
    assert exit_.value.code == 2
    assert needle in capsys.readouterr().err


def test_a_shape_of_another_type_is_refused_naming_it(tmp_path):
    config = json.loads((DATA / "oracle" / "qwen3" / "config.json").read_text())
    for key, value in (("vocab_size", "512"), ("intermediate_size", None)):  # UFuncNoLoopError, KeyError
        (tmp_path / "c.json").write_text(json.dumps({**config, key: value}))
        with pytest.raises(kvcache.InvalidArgument, match=f"{key} must be an integer of at least 1"):
            random_model.make(tmp_path / "c.json", tmp_path / "m")


def test_a_config_without_kv_heads_gets_its_class_default(tmp_path):
    # MistralConfig's num_key_value_heads is 8: the checkpoint is written with 8 KV heads and the file says so
    config = {"model_type": "mistral", "vocab_size": 300, "hidden_size": 64, "intermediate_size": 32,
              "num_hidden_layers": 1, "num_attention_heads": 16, "max_position_embeddings": 64}
    (tmp_path / "c.json").write_text(json.dumps(config))
    out = random_model.make(tmp_path / "c.json", tmp_path / "m", dtype="f32")
    assert json.loads((out / "config.json").read_text())["num_key_value_heads"] == 8
    shapes = random_model.tensor_shapes(json.loads((out / "config.json").read_text()))
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (8 * 4, 64)
    e = kvcache.Engine(out, kv_memory="1MiB", block_size=4)
    assert len(e.generate([[5, 6, 7]], kvcache.SamplingParams(max_tokens=2))[0]) == 2


def _unblock(fifo):
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader (refused as it should be)
        pass
