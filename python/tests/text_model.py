"""A model directory with text: the Qwen3-shaped test model (vocab 512) plus a
byte-level BPE trained here on a few kilobytes of text (the hubs are out of
reach), the chat templates of data/chat_templates.json and a
generation_config.json naming two end-of-sequence ids."""
import json
import pathlib

from conftest import DATA

MODEL = DATA / "oracle" / "qwen3"
TEMPLATES = pathlib.Path(__file__).with_name("data") / "chat_templates.json"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = """The quick brown fox jumps over the lazy dog. A cache of keys and values keeps what attention read.
Blocks of sixteen tokens, a pool of blocks, a table per request: paged attention in a few words.
Prefix caching shares the blocks of a prompt that many requests begin with, such as a system prompt.
Numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000, punctuation ,.;:!? and (brackets) [lists] {maps}.
Unicode: café, naïve, Ünïcödé, Straße, déjà vu; 日本語のテキスト、中文文本；한국어 텍스트; Ελληνικά; русский текст.
Emoji: 🙂 🚀 🎉 👍🏽 ❤️ and symbols € £ ¥ ✓ → ∞.
"""


def tokenizer_json(vocab_size):
    """A byte-level BPE of vocab_size ids (specials first), as tokenizer.json text."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([CORPUS] * 20, trainer)
    assert tok.get_vocab_size() <= vocab_size
    return tok.to_str()


def make_model_dir(path, template="chatml", model=MODEL):
    """path/ as a model directory (config and weights linked from `model`, the test model by default);
    returns path."""
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    config = json.loads((model / "config.json").read_text())
    (path / "config.json").write_text(json.dumps(config))
    (path / "model.safetensors").symlink_to(model / "model.safetensors")
    (path / "tokenizer.json").write_text(tokenizer_json(config["vocab_size"]))
    t = json.loads(TEMPLATES.read_text())["templates"][template]
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": t["source"], "bos_token": t["bos_token"], "eos_token": t["eos_token"],
         "tokenizer_class": "PreTrainedTokenizerFast"}))
    (path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    return path
