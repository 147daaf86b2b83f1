"""kvcache.serve's vLLM request fields that restrict or cut what the model sees and samples, through the `openai`
client: allowed_token_ids (only those tokens sampled), bad_words (a word's token sequence never completed, with
and without a leading space) and truncate_prompt_tokens (the prompt's last k tokens); each field checked (400
naming it)."""
import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "openai", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402
import openai  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from serve_fixture import running  # noqa: E402
from text_model import make_model_dir  # noqa: E402

VOCAB = 512  # the test model's
MAX_LEN = 512  # its max_position_embeddings
PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = make_model_dir(tmp_path_factory.mktemp("model"))
    with running(model) as (base, _), \
            openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=60) as client:
        yield base, client, Tokenizer.from_file(str(model / "tokenizer.json"))


def complete(client, prompt=PROMPT, **extra):
    kw = {k: extra.pop(k) for k in ("max_tokens", "temperature", "n", "seed", "stream", "logprobs") if k in extra}
    kw = {"max_tokens": 12, "temperature": 0, **kw}
    return client.completions.create(model="test", prompt=prompt, extra_body={"return_token_ids": True, **extra}, **kw)


def ids_of(client, **kw):
    return complete(client, **kw).choices[0].token_ids


def streamed_ids(client, **kw):
    ids = []
    for chunk in complete(client, stream=True, **kw):
        for c in chunk.choices:
            ids += c.token_ids or []
    return ids


def test_allowed_token_ids_are_the_only_ones_sampled(server):
    _, client, _ = server
    plain = ids_of(client, ignore_eos=True)
    allowed = [t for t in range(40, 400, 37) if t not in plain][:4]
    got = ids_of(client, allowed_token_ids=allowed)
    assert set(got) <= set(allowed) and len(got) == 12  # no end-of-sequence id allowed: the length ends it
    assert streamed_ids(client, allowed_token_ids=allowed) == got
    for c in complete(client, allowed_token_ids=allowed, temperature=1.5, n=3, seed=5).choices:
        assert set(c.token_ids) <= set(allowed)
    assert ids_of(client, allowed_token_ids=[7], max_tokens=3) == [7, 7, 7]
    # logprobs stay the model's raw ones (vLLM's allowed-token mask comes after them): the best alternative is the
    # unrestricted greedy token
    r = complete(client, allowed_token_ids=allowed, logprobs=1, max_tokens=1).choices[0].logprobs
    assert max(r.top_logprobs[0].values()) > r.token_logprobs[0]
    chat = client.chat.completions.create(model="test", messages=[{"role": "user", "content": "hi"}], max_tokens=6,
                                          temperature=0, extra_body={"allowed_token_ids": allowed,
                                                                     "return_token_ids": True})
    assert set(chat.choices[0].token_ids) <= set(allowed)


def sequences(tok, word):
    """The token sequences bad_words bans for a word: as the text begins with it, and after a space."""
    bare, spaced = (tok.encode(p + word.lstrip(), add_special_tokens=False).ids for p in ("", " "))
    return [bare] + ([spaced] if len(spaced) == len(bare) and spaced[0] != bare[0] else [])


def holds(ids, seq):
    return any(ids[i:i + len(seq)] == seq for i in range(len(ids) - len(seq) + 1))


def test_bad_words_are_never_completed(server):
    _, client, tok = server
    # a word that is one token at the text's beginning and another after a space: both forms banned, even when
    # logit_bias pushes them
    word = next(w for w in (tok.decode([t]) for t in range(VOCAB)) if w.startswith(" ") and len(w) > 3 and
                w[1:].isalpha() and len(tok.encode(w[1:], add_special_tokens=False).ids) == 1)
    seqs = sequences(tok, word)
    assert len(seqs) == 2 and all(len(s) == 1 for s in seqs)
    bias = {str(s[0]): 100 for s in seqs}
    assert set(ids_of(client, ignore_eos=True, logit_bias=bias)) <= {s[0] for s in seqs}
    got = ids_of(client, ignore_eos=True, logit_bias=bias, bad_words=[word])
    assert len(got) == 12 and not {s[0] for s in seqs} & set(got)
    assert streamed_ids(client, ignore_eos=True, logit_bias=bias, bad_words=[word]) == got
    # a word of two tokens: its first stays allowed, the second is banned right after the first only (the random
    # model repeats one token: "77" is two tokens "7")
    seven = tok.encode("7", add_special_tokens=False).ids
    assert sequences(tok, "77")[0] == seven * 2
    plain = ids_of(client, prompt="A cache of keys", ignore_eos=True)
    assert plain[:2] == seven * 2
    got = ids_of(client, prompt="A cache of keys", ignore_eos=True, bad_words=["77"])
    assert got[0] == seven[0] and not holds(got, seven * 2)


def test_truncate_prompt_tokens_keeps_the_last_ones(server):
    _, client, tok = server
    ids = list(range(10, 40))
    r = complete(client, prompt=ids, truncate_prompt_tokens=5)
    assert r.usage.prompt_tokens == 5 and r.choices[0].token_ids == ids_of(client, prompt=ids[-5:])
    assert complete(client, prompt=ids, truncate_prompt_tokens=-1).usage.prompt_tokens == 30  # -1: max_model_len
    assert complete(client, prompt=ids, truncate_prompt_tokens=100).usage.prompt_tokens == 30
    text = "The quick brown fox jumps over the lazy dog. A cache of keys"
    r = complete(client, prompt=text, truncate_prompt_tokens=4, echo=True)
    kept = tok.encode(text, add_special_tokens=False).ids[-4:]
    assert r.usage.prompt_tokens == 4 and r.choices[0].text.startswith(tok.decode(kept))  # the echo is what was kept
    chat = client.chat.completions.create(model="test", messages=[{"role": "user", "content": text}], max_tokens=2,
                                          extra_body={"truncate_prompt_tokens": 7})
    assert chat.usage.prompt_tokens == 7
    # vLLM's truncation_side "right" keeps the first tokens (was ignored: the last ones were kept); "left" the last
    for side, kept in (("right", ids[:4]), ("left", ids[-4:])):
        assert complete(client, prompt=ids, truncate_prompt_tokens=4, truncation_side=side,
                        max_tokens=1).choices[0].prompt_token_ids == kept
    first = tok.encode(text, add_special_tokens=False).ids[:4]
    r = complete(client, prompt=text, truncate_prompt_tokens=4, truncation_side="right", echo=True, max_tokens=1)
    assert r.choices[0].prompt_token_ids == first and r.choices[0].text.startswith(tok.decode(first))
    full = client.chat.completions.create(model="test", messages=[{"role": "user", "content": text}], max_tokens=1,
                                          extra_body={"return_token_ids": True}).prompt_token_ids
    chat = client.chat.completions.create(model="test", messages=[{"role": "user", "content": text}], max_tokens=1,
                                          extra_body={"truncate_prompt_tokens": 7, "truncation_side": "right",
                                                      "return_token_ids": True})
    assert chat.prompt_token_ids == full[:7]


BAD = [("allowed_token_ids", []), ("allowed_token_ids", [VOCAB]), ("allowed_token_ids", [-1]),
       ("allowed_token_ids", "1"), ("allowed_token_ids", [1.5]), ("allowed_token_ids", [True]),
       ("allowed_token_ids", list(range(VOCAB)) * 2),
       ("bad_words", "fox"), ("bad_words", [""]), ("bad_words", ["  "]), ("bad_words", [3]),
       ("bad_words", ["x" * 257]), ("bad_words", ["w"] * 129), ("bad_words", {"a": 1}),
       ("truncate_prompt_tokens", 0), ("truncate_prompt_tokens", -2), ("truncate_prompt_tokens", MAX_LEN + 1),
       ("truncate_prompt_tokens", "5"), ("truncate_prompt_tokens", 2**80), ("truncate_prompt_tokens", True),
       ("truncation_side", "middle"), ("truncation_side", 1)]


def test_each_field_is_checked(server):
    base = server[0]
    with httpx.Client(base_url=base, timeout=30) as http:
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        for i, (field, value) in enumerate(BAD):  # chat with the first value of each field
            for path, body in [("/v1/completions", {"prompt": PROMPT})] + \
                    [("/v1/chat/completions", chat)] * (BAD[i - 1][0] != field):
                r = http.post(path, json={"model": "test", "max_tokens": 2, **body, field: value})
                assert r.status_code == 400 and r.json()["error"]["param"] == field, (field, r.text)
        r = http.post("/v1/completions", json={"model": "test", "prompt": PROMPT,
                                                "truncate_prompt_tokens": MAX_LEN + 1})
        assert "cannot be greater than max_model_len (512)" in r.json()["error"]["message"]
