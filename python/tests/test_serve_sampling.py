"""kvcache.serve's sampling options beyond temperature / top_k / top_p: logit_bias, presence_penalty,
frequency_penalty, repetition_penalty, min_p and min_tokens, each accepted, checked (400 naming the field)
and changing what greedy (or sampled) generation gives; logprobs stay the model's raw ones."""
import collections

import pytest

for module in ("tokenizers", "jinja2", "starlette", "uvicorn", "prometheus_client", "httpx"):
    pytest.importorskip(module)

import httpx  # noqa: E402

from serve_fixture import running  # noqa: E402
from text_model import make_model_dir  # noqa: E402

VOCAB = 512  # the test model's
EOS = 2  # one of its end-of-sequence ids (generation_config: 2 and 0)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with running(make_model_dir(tmp_path_factory.mktemp("model"))) as (base, _):
        yield base + "/v1/completions"


def post(url, **kw):
    body = {"model": "test", "prompt": "The quick", "max_tokens": 16, "temperature": 0, "return_token_ids": True,
            **kw}
    return httpx.post(url, json=body, timeout=60)


def ids_of(url, **kw):
    r = post(url, **kw)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["token_ids"]


def most_repeated(ids):
    return collections.Counter(ids).most_common(1)[0][1]


def test_logit_bias_forces_and_bans_tokens(url):
    assert ids_of(url, logit_bias={"42": 100}, max_tokens=6) == [42] * 6
    plain = ids_of(url, ignore_eos=True)
    banned = ids_of(url, ignore_eos=True, logit_bias={str(t): -100 for t in set(plain)})
    assert not set(banned) & set(plain)


def test_min_tokens_keeps_the_end_of_sequence_back(url):
    r = post(url, logit_bias={str(EOS): 100}).json()  # greedy ends at once
    assert r["choices"][0]["token_ids"] == [EOS] and r["choices"][0]["finish_reason"] == "stop"
    r = post(url, logit_bias={str(EOS): 100}, min_tokens=5).json()  # both EOS ids held back for 5 tokens
    ids = r["choices"][0]["token_ids"]
    assert len(ids) == 6 and ids[-1] == EOS and not {0, 2} & set(ids[:5])
    assert r["choices"][0]["finish_reason"] == "stop" and r["usage"]["completion_tokens"] == 6
    stop = ids_of(url, ignore_eos=True)[0]  # a stop_token_ids id waits too
    assert ids_of(url, ignore_eos=True, stop_token_ids=[stop]) == [stop]
    held = ids_of(url, ignore_eos=True, stop_token_ids=[stop], min_tokens=3)
    assert len(held) > 3 and stop not in held[:3]


def test_penalties_change_a_repetitive_greedy_output(url):
    plain = ids_of(url, ignore_eos=True, max_tokens=24)
    assert most_repeated(plain) >= 8  # the test model repeats itself
    for field, value in (("frequency_penalty", 2.0), ("presence_penalty", 2.0), ("repetition_penalty", 2.0)):
        got = ids_of(url, ignore_eos=True, max_tokens=24, **{field: value})
        assert got != plain and most_repeated(got) < most_repeated(plain), field
    # a negative frequency penalty rewards repeats: never less repetitive
    assert most_repeated(ids_of(url, ignore_eos=True, max_tokens=24, frequency_penalty=-2.0)) >= most_repeated(plain)


def test_min_p_one_keeps_only_the_best_token(url):
    plain = ids_of(url, ignore_eos=True)
    sampled = [ids_of(url, ignore_eos=True, temperature=1.5, seed=s) for s in range(3)]
    assert any(s != plain for s in sampled)
    assert all(ids_of(url, ignore_eos=True, temperature=1.5, seed=s, min_p=1.0) == plain for s in range(3))


def test_logprobs_are_the_raw_models(url):
    """As vLLM's default (logprobs_mode raw_logprobs): before logit_bias and the penalties."""
    plain = post(url, max_tokens=1, logprobs=2).json()["choices"][0]["logprobs"]
    forced = post(url, max_tokens=1, logprobs=2, logit_bias={"42": 100},
                  return_tokens_as_token_ids=True).json()["choices"][0]["logprobs"]
    assert forced["tokens"] == ["token_id:42"]
    assert forced["token_logprobs"][0] < max(forced["top_logprobs"][0].values())  # 42 is not the model's best
    assert max(forced["top_logprobs"][0].values()) == pytest.approx(plain["token_logprobs"][0])


def test_out_of_range_values_are_refused_naming_the_field(url):
    for field, value in (("logit_bias", {"x": 1}), ("logit_bias", {"-1": 1}), ("logit_bias", {"1.5": 1}),
                         ("logit_bias", {str(VOCAB): 1}), ("logit_bias", {"5": 100.5}), ("logit_bias", {"5": "a"}),
                         ("logit_bias", {"5": True}), ("logit_bias", [[5, 1]]),
                         ("logit_bias", {"9" * 5000: 1}),  # was 500: int() takes at most 4300 digits
                         ("logit_bias", {str(t): 1 for t in range(301)}),
                         ("presence_penalty", 2.5), ("presence_penalty", -3), ("frequency_penalty", 2.01),
                         ("frequency_penalty", "1"), ("repetition_penalty", 0), ("repetition_penalty", 2.5),
                         ("repetition_penalty", -1), ("min_p", -0.1), ("min_p", 1.5), ("min_tokens", -1),
                         ("min_tokens", 2.5), ("min_tokens", 17)):  # 17 > max_tokens 16
        r = post(url, **{field: value})
        assert r.status_code == 400, (field, value, r.text)
        assert r.json()["error"]["param"] == field, (field, value)
    # the messages name the values, as vLLM's (tests/entrypoints/openai/chat_completion/
    # test_chat_logit_bias_validation.py, test_chat_stop_token_ids_validation.py): every bad key, the id and the size
    err = post(url, logit_bias={"bad1": 50.0, "bad2": 20.0, "7": 1}).json()["error"]
    assert "'bad1', 'bad2' are not token ids" in err["message"], err
    for ids in ([VOCAB + 1], [3, None]):
        err = post(url, stop_token_ids=ids).json()["error"]
        assert err["param"] == "stop_token_ids" and f"{str(ids[-1]).replace('None', 'null')} is not one" in \
            err["message"] and str(VOCAB) in err["message"], err
    r = post(url, min_tokens=1, stop_token_ids=list(range(3, 70)))  # 67 + the 2 EOS ids to hold back: > 64
    assert r.status_code == 400 and r.json()["error"]["param"] == "stop_token_ids"
    neutral = dict(logit_bias={}, presence_penalty=0, frequency_penalty=0, repetition_penalty=1, min_p=0,
                   min_tokens=0)
    assert ids_of(url, **neutral) == ids_of(url)
    assert ids_of(url, logit_bias={"0" * 5000 + "42": 100}, max_tokens=2) == [42, 42]  # leading zeros: token 42


def test_stop_strings_wait_for_min_tokens(url):
    """As vLLM: a stop string is looked for from the min_tokens-th token on; one that came earlier stays."""
    full = post(url, ignore_eos=True, max_tokens=8).json()["choices"][0]["text"]
    stop = full[:2]
    assert post(url, ignore_eos=True, max_tokens=8, stop=[stop]).json()["choices"][0]["text"] == ""
    got = post(url, ignore_eos=True, max_tokens=8, stop=[stop], min_tokens=4).json()["choices"][0]
    assert got["text"].startswith(stop) and len(got["text"]) > len(stop), (full, got)


def test_generation_config_gives_the_sampling_defaults(url, tmp_path):
    """As vLLM (--generation-config auto): generation_config.json's temperature, top_p, top_k, min_p and
    repetition_penalty are a request's defaults, in completions and chat, for a field left out or null; one out of
    its range is refused at start naming the file and the key. They were ignored (temperature 1 whatever the
    model's file said)."""
    import json

    import kvcache
    from kvcache.serve import Server

    plain = dict(ignore_eos=True, max_tokens=12, seed=1)
    expected = ids_of(url, **plain, repetition_penalty=1.5)  # greedy with the penalty: what the defaults ask
    assert expected != ids_of(url, **plain) != ids_of(url, **plain, temperature=1)
    d = make_model_dir(tmp_path / "m")
    config = json.loads((d / "generation_config.json").read_text())
    (d / "generation_config.json").write_text(json.dumps({**config, "temperature": 0.0, "repetition_penalty": 1.5,
                                                          "top_k": 20, "do_sample": True}))
    with running(d) as (base, _):
        for field in ({}, {"temperature": None}):
            r = httpx.post(base + "/v1/completions", json={"model": "test", "prompt": "The quick", **plain, **field,
                                                           "return_token_ids": True}, timeout=60)
            assert r.json()["choices"][0]["token_ids"] == expected, r.text
        chat = {"model": "test", "messages": [{"role": "user", "content": "hi"}], **plain, "return_token_ids": True}
        ids = [httpx.post(base + "/v1/chat/completions", json={**chat, **kw}, timeout=60).json()["choices"][0]
               ["token_ids"] for kw in ({}, {"temperature": 0, "repetition_penalty": 1.5, "top_k": 20})]
        assert ids[0] == ids[1]
    (d / "generation_config.json").write_text(json.dumps({**config, "temperature": 5}))
    with pytest.raises(kvcache.InvalidArgument, match="generation_config.json: temperature"):
        Server(d)
