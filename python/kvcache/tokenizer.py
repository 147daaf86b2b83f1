"""Text for a model directory: tokenizer.json through Hugging Face's
`tokenizers`, tokenizer_config.json's special tokens and chat template, and
the end-of-sequence ids of generation_config.json / config.json."""
import json
import pathlib
import re

from . import chat_template
from ._lib import invalid, read_regular

_SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


def read_json(path):
    """A model directory's JSON file: an object ({} when there is none)."""
    try:
        value = json.loads(read_regular(path).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise invalid(f"{path}: {exc}") from None
    except RecursionError:  # was a traceback
        raise invalid(f"{path}: nested too deeply") from None
    if not isinstance(value, dict):
        raise invalid(f"{path}: a JSON object is expected, not {type(value).__name__}")
    return value


def _byte_level_chars():
    """{character: byte} of byte-level BPE (GPT-2's alphabet): printable bytes stand for themselves, the
    others for the characters from U+0100 on, in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
            *range(ord("\u00ae"), ord("\u00ff") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {**{chr(b): b for b in kept}, **{chr(256 + i): b for i, b in enumerate(moved)}}


_BYTE_LEVEL = _byte_level_chars()
_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # SentencePiece's piece of one byte


def _is_byte_level(decoder):
    """Whether tokenizer.json's decoder (its JSON) turns byte-level pieces into bytes."""
    if not isinstance(decoder, dict):
        return False
    return decoder.get("type") == "ByteLevel" or any(_is_byte_level(d) for d in decoder.get("decoders") or [])


def _token_text(value):
    """A special token as tokenizer_config.json writes it: a string or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _eos_ids(path, vocab_size):
    """The eos_token_id of a JSON file (an id or a list of ids; none when the file or the key is missing or
    null), each a token id of the vocabulary: the sampler stops on them, and one outside it failed every request."""
    value = read_json(path).get("eos_token_id")
    ids = [] if value is None else value if isinstance(value, list) else [value]
    for v in ids:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < vocab_size:
            raise invalid(f"{path}: eos_token_id {v!r} is not a token id in [0, {vocab_size})")
    return ids


def _template_of(model_dir, config):
    """tokenizer_config.json's chat_template (a string, or named templates: "default"),
    else the chat_template.jinja file beside it; None when there is none."""
    source = config.get("chat_template")
    if isinstance(source, list):
        named = {t.get("name"): t.get("template") for t in source if isinstance(t, dict)}
        source = named.get("default")
    if isinstance(source, str):
        return source
    path = model_dir / "chat_template.jinja"
    if not path.exists():
        return None
    try:
        return read_regular(path).decode("utf-8")
    except (OSError, ValueError) as exc:  # a directory, unreadable, not UTF-8
        raise invalid(f"{path}: {exc}") from None


class Tokenizer:
    """The tokenizer of a model directory (tokenizer.json must be there).

    encode / decode go through `tokenizers`; apply_chat_template renders the
    chat template as transformers does; eos_token_ids are the ids that end
    generation: generation_config.json's eos_token_id (an id or a list),
    else config.json's, else the tokenizer's eos_token."""

    def __init__(self, model_dir):
        import tokenizers  # the "serve" extra

        if isinstance(model_dir, (str, bytes)) and not model_dir:  # Path("") is the working directory
            raise invalid("the model directory is an empty path")
        model_dir = pathlib.Path(model_dir)
        path = model_dir / "tokenizer.json"
        if not path.exists():
            raise invalid(f"{path}: no tokenizer.json in the model directory")
        try:  # read as the files below are: a sparse file of gigabytes was read whole, then parsed
            text = read_regular(path).decode("utf-8")
        except (OSError, ValueError) as exc:  # a directory, unreadable, not UTF-8
            raise invalid(f"{path}: {exc}") from None
        try:
            self._tok = tokenizers.Tokenizer.from_str(text)
        except Exception as exc:
            raise invalid(f"{path}: {exc}") from None
        config = read_json(model_dir / "tokenizer_config.json")
        self.special_tokens = {k: _token_text(config.get(k)) for k in _SPECIAL_KEYS if _token_text(config.get(k))}
        self.chat_template = _template_of(model_dir, config)
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        eos = _eos_ids(model_dir / "generation_config.json", self.vocab_size)
        eos = eos or _eos_ids(model_dir / "config.json", self.vocab_size)
        eos_text = self.special_tokens.get("eos_token")
        if not eos and eos_text is not None and self._tok.token_to_id(eos_text) is not None:
            eos = [self._tok.token_to_id(eos_text)]
        self.eos_token_ids = tuple(dict.fromkeys(eos))
        self._byte_level = _is_byte_level(json.loads(self._tok.to_str()).get("decoder"))

    def json(self):
        """The tokenizer as tokenizer.json text (what llguidance builds its token tables from)."""
        return self._tok.to_str()

    def encode(self, text, add_special_tokens=True):
        """The ids of text. (encode_batch of one text: the same ids, and unlike encode it lets other threads
        run meanwhile, so a server tokenizing a long prompt on a worker thread keeps serving.)"""
        return self._tok.encode_batch([text], add_special_tokens=add_special_tokens)[0].ids

    def decode(self, ids, skip_special_tokens=True):
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_piece(self, token_id):
        """A token's entry in the vocabulary (transformers' convert_ids_to_tokens: "Ġthe" in a byte-level BPE)."""
        return self._tok.id_to_token(token_id)

    def token_bytes(self, token_id):
        """The bytes one token stands for, also when they are part of a UTF-8 character (which decode
        writes as U+FFFD): a byte-level BPE piece's bytes, or SentencePiece's <0xNN> byte."""
        text = self.decode([token_id], skip_special_tokens=False)
        if "\ufffd" not in text:
            return text.encode()
        piece = self._tok.id_to_token(token_id) or ""
        if self._byte_level and all(c in _BYTE_LEVEL for c in piece):
            return bytes(_BYTE_LEVEL[c] for c in piece)
        fallback = _BYTE_FALLBACK.fullmatch(piece)
        return bytes([int(fallback.group(1), 16)]) if fallback else text.encode()

    def apply_chat_template(self, messages, add_generation_prompt=True, continue_final_message=False, **kwargs):
        """The prompt text of a conversation; TemplateError when the model has
        no template or the template refuses the conversation. continue_final_message: the text ends with the
        final message's (whose end-of-turn the template wrote is cut off), as transformers does, so a reply
        continues it."""
        if self.chat_template is None:
            raise chat_template.TemplateError("the model directory has no chat template "
                                              "(tokenizer_config.json's chat_template or chat_template.jinja)")
        text = chat_template.render(self.chat_template, messages, add_generation_prompt=add_generation_prompt,
                                    special_tokens=self.special_tokens, **kwargs)
        if not continue_final_message:
            return text
        final = messages[-1].get("content") if messages else None
        at = text.rfind(final.strip()) if isinstance(final, str) and final.strip() else -1
        if at < 0:
            raise chat_template.TemplateError("continue_final_message: the final message's text is not in the "
                                              "rendered conversation")
        kept = final.lstrip() if text.startswith(final.lstrip(), at) else final.strip()  # its trailing spaces too
        return text[:at + len(kept)]
