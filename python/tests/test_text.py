"""Text around the engine: tokenizer.json round trips, chat templates as
transformers renders them, end-of-sequence ids, incremental detokenization
and stop strings."""
import json
import os
import re
import threading

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

import kvcache  # noqa: E402
from kvcache import chat_template  # noqa: E402
from kvcache.detokenize import TextPlace, TextStream, open_tail, prompt_text  # noqa: E402
from kvcache.tokenizer import Tokenizer  # noqa: E402
from text_model import TEMPLATES, make_model_dir  # noqa: E402

MULTI = ["café naïve Straße", "日本語のテキスト、中文文本", "emoji 🙂🚀🎉 👍🏽 ❤️", "한국어 텍스트 Ελληνικά", "mixed: é日🙂x"]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return Tokenizer(make_model_dir(tmp_path_factory.mktemp("model")))


def test_tokenizer_round_trips_multibyte_text(tok):
    assert tok.vocab_size == 512
    for text in MULTI:
        ids = tok.encode(text)
        assert all(0 <= i < 512 for i in ids)
        assert tok.decode(ids) == text
    assert tok.encode("<|im_start|>user") [0] == 1  # a special token is one id
    assert tok.decode(tok.encode("<|im_end|>hi")) == "hi"  # skipped when decoding


def test_eos_ids_come_from_generation_config(tok, tmp_path):
    assert tok.eos_token_ids == (2, 0)
    d = make_model_dir(tmp_path / "m")
    (d / "generation_config.json").unlink()
    config = json.loads((d / "config.json").read_text())
    config["eos_token_id"] = 7
    (d / "config.json").write_text(json.dumps(config))
    assert Tokenizer(d).eos_token_ids == (7,)
    config["eos_token_id"] = None
    (d / "config.json").write_text(json.dumps(config))
    assert Tokenizer(d).eos_token_ids == (2,)  # tokenizer_config's eos_token "<|im_end|>"


@pytest.mark.parametrize("name, data, needle", [
    ("tokenizer_config.json", b"[]", "a JSON object is expected, not list"),  # was AttributeError
    ("generation_config.json", b'"x"', "a JSON object is expected, not str"),  # was AttributeError
    ("generation_config.json", b'{"eos_token_id": 512}', "eos_token_id 512 is not a token id"),  # failed each request
    ("generation_config.json", b'{"eos_token_id": [2, -1]}', "eos_token_id -1 is not"),
    ("generation_config.json", b'{"eos_token_id": 1e30}', "eos_token_id 1e"),
    ("generation_config.json", b'{"eos_token_id": ["</s>"]}', "eos_token_id '</s>'"),  # was dropped silently
    ("config.json", b'{"eos_token_id": true}', "eos_token_id True"),  # (generation_config names none)
    ("chat_template.jinja", b"\xff{{ x }}", "can't decode byte 0xff"),  # was UnicodeDecodeError
    ("chat_template.jinja", None, "a regular file"),  # was IsADirectoryError
    # a FIFO or a device under a file's name blocked the start for ever or read without end; deep nesting was a
    # RecursionError
    ("generation_config.json", "fifo", "a regular file of at most 67108864 bytes"),
    ("chat_template.jinja", "fifo", "a regular file"),
    ("tokenizer_config.json", "/dev/null", "a regular file"),
    ("generation_config.json", b"[" * 100000, "nested too deeply"),
    # tokenizer.json was read whole whatever its size (a sparse file of 2 GB: 21 s and 2 GB at the start)
    ("tokenizer.json", "sparse", "a regular file of at most 67108864 bytes"),
    ("tokenizer.json", "fifo", "a regular file"),
    ("tokenizer.json", b"\xff{}", "can't decode byte 0xff"),
])
def test_a_hostile_text_file_of_the_model_directory_is_refused_naming_it(tmp_path, name, data, needle):
    d = make_model_dir(tmp_path / "m")
    if name == "config.json":
        (d / "generation_config.json").unlink()
    if name == "chat_template.jinja":  # read when tokenizer_config.json has no template
        (d / "tokenizer_config.json").write_text("{}")
    (d / name).unlink(missing_ok=True)
    if data is None:
        (d / name).mkdir()
    elif data == "fifo":
        os.mkfifo(d / name)
        threading.Timer(5, _unblock, [d / name]).start()  # should the reader block: it sees an end, and fails
    elif data == "sparse":  # one byte over the limit, no disk used
        with open(d / name, "wb") as f:
            f.truncate((64 << 20) + 1)
    elif data == "/dev/null":
        (d / name).symlink_to(data)
    else:
        (d / name).write_bytes(data)
    with pytest.raises(kvcache.InvalidArgument, match=re.escape(str(d / name)) + ".*" + re.escape(needle)):
        Tokenizer(d)


def _unblock(fifo):
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader (refused as it should be)
        pass


@pytest.mark.parametrize("case", json.loads(TEMPLATES.read_text())["cases"], ids=lambda c: c["template"])
def test_chat_template_renders_as_transformers(case):
    t = json.loads(TEMPLATES.read_text())["templates"][case["template"]]
    specials = {k: t[k] for k in ("bos_token", "eos_token") if t[k]}
    expected = case["expected"]
    if "error" in expected:
        with pytest.raises(chat_template.TemplateError, match=expected["error"].replace("(", r"\(")[:40]):
            chat_template.render(t["source"], case["messages"], add_generation_prompt=case["add_generation_prompt"],
                                 special_tokens=specials, tools=case.get("tools"))
    else:
        assert chat_template.render(t["source"], case["messages"], add_generation_prompt=case["add_generation_prompt"],
                                    special_tokens=specials, tools=case.get("tools")) == expected["text"]


def test_a_template_that_does_not_compile_is_refused():
    with pytest.raises(chat_template.TemplateError, match="does not compile"):
        chat_template.render("{% for %}", [])


# A Qwen-like template's tool-call loop, and one that formats a caller's argument as a number
TOOL_CALLS = "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.name }}{% endfor %}{% endfor %}"


@pytest.mark.parametrize("source, messages, kwargs", [
    (TOOL_CALLS, [{"role": "assistant", "content": "", "tool_calls": 5}], {}),  # TypeError: not iterable
    ("{{ '%d' % n }}", [], {"n": "x"}),  # TypeError
    ("{{ 1 // n }}", [], {"n": 0}),  # ZeroDivisionError
    ("{{ range(n) | list | length }}", [], {"n": 10**9}),  # OverflowError: the sandbox's range limit
    ("{{ s.encode('ascii') }}", [], {"s": "\u00e9"}),  # UnicodeEncodeError
])
def test_a_template_failing_on_the_callers_values_refuses_the_conversation(source, messages, kwargs):
    """Was the template's own TypeError, ZeroDivisionError ... (a 500 from the server); now TemplateError (a 400)."""
    with pytest.raises(chat_template.TemplateError, match="failed on the conversation"):
        chat_template.render(source, messages, **kwargs)


def stream(tok, ids, stop=(), prompt=(5,)):
    s = TextStream(tok, list(prompt), stop)
    deltas = [s.add([t]) for t in ids] + [s.finish()]
    assert "".join(deltas) == s.text
    return s, deltas


def test_deltas_never_split_a_character_and_join_to_the_text(tok):
    for text in MULTI:
        ids = tok.encode(text)
        s, deltas = stream(tok, ids)
        assert s.text == text and not any("\ufffd" in d for d in deltas)
        assert len([d for d in deltas if d]) > 1


def test_incomplete_bytes_at_the_end_are_flushed_as_decode_gives_them(tok):
    ids = tok.encode("ok 🙂")
    for cut in range(1, len(ids) + 1):
        s, _ = stream(tok, ids[:cut])
        assert s.text == tok.decode(ids[:cut])


def test_stop_strings_end_the_text_and_are_never_streamed(tok):
    text = "The quick brown fox jumps over the lazy dog."
    s, deltas = stream(tok, tok.encode(text), stop=["brown fox", "lazy"])
    assert s.text == "The quick " and s.stopped == "brown fox"
    assert not any("brown" in d or "bro" in d[-3:] for d in deltas)
    s, _ = stream(tok, tok.encode("日本語のテキスト"), stop=["テキ"])
    assert s.text == "日本語の"
    s, _ = stream(tok, tok.encode("no stop here"), stop=["zzz"])
    assert s.text == "no stop here" and s.stopped is None


def test_invalid_bytes_come_out_at_once_and_as_decode_gives_them(tok):
    """Byte-level tokens that never form UTF-8 (a lone continuation byte) do
    not hold the stream back to its end; the text still equals decode."""
    ids = tok.encode("🙂")
    cont = ids[-1]  # the emoji's last token ends in continuation bytes
    stray = [cont, cont, cont]
    s, deltas = stream(tok, stray)
    assert s.text == tok.decode(stray)
    assert "".join(deltas[:len(stray)]).count("\ufffd") >= 2  # before finish


def test_a_prompt_that_ends_inside_a_character_lends_it_to_the_output(tok):
    """Token ids given as the prompt can end inside a character (not in the corpus: one token per byte); the
    output that completes it begins with it, nothing lost, no U+FFFD in any delta (the character was dropped:
    the prompt's U+FFFD and the whole character have the same length)."""
    text = "ok 😀 漢字 ☃"
    ids = tok.encode(text)
    split = 0
    for cut in range(1, len(ids)):
        prompt = ids[:cut]
        s, deltas = stream(tok, ids[cut:], prompt=prompt)
        assert prompt_text(tok, prompt) + s.text == text
        assert not any("\ufffd" in d for d in deltas)
        split += open_tail(tok, prompt) > 0
        lead = s.lent  # the lent bytes, then the output's tokens: each at the offset of the character it is in
        place = TextPlace(0, lead)
        offsets = [place.advance(tok.token_bytes(t)) for t in ids[cut:]]
        assert offsets == sorted(offsets) and place.offset == len(s.text)
    assert split >= 4
    # a prompt ending in bytes that can never be UTF-8 lends nothing
    assert open_tail(tok, tok.encode("😀")[-1:]) == 0


def test_an_empty_model_directory_path_is_refused():
    """Tokenizer("") read the working directory's tokenizer.json (pathlib.Path("") is ".")."""
    with pytest.raises(kvcache.InvalidArgument, match="the model directory is an empty path"):
        Tokenizer("")
