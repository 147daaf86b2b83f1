"""kvcache.run against Hugging Face transformers' greedy ids and logits
(tests/data/oracle, made by tools/oracle/make_oracle.py) and the command."""
import json
import subprocess

import numpy as np
import pytest

import kvcache
from conftest import DATA

QWEN3 = DATA / "oracle" / "qwen3"
EXPECTED = json.loads((QWEN3 / "expected.json").read_text())


def test_greedy_ids_and_logits_match_transformers():
    prompts = [p["ids"] for p in EXPECTED["prompts"]]
    n = EXPECTED["num_new_tokens"]
    ids, logits = kvcache.run(QWEN3, prompts, n, logits=True)
    assert ids.shape == (len(prompts), n) and logits.shape == (len(prompts), n, EXPECTED["vocab_size"])
    for b, p in enumerate(EXPECTED["prompts"]):
        assert ids[b].tolist() == p["greedy_ids"]
        assert np.allclose(logits[b], np.array(p["step_logits"], dtype=np.float32), atol=2e-3)


def test_modes_agree():
    """Paged and contiguous caches read the same keys in the same order: the
    same bits. Recomputation runs whole sequences through the dense layers
    (other GEMM shapes): the same ids, logits within rounding."""
    prompts = [[5, 9, 200, 3], [7, 7]]
    paged, paged_logits = kvcache.run(QWEN3, prompts, 5, logits=True)
    contiguous, contiguous_logits = kvcache.run(QWEN3, prompts, 5, mode="contiguous", logits=True)
    assert np.array_equal(paged, contiguous) and np.array_equal(paged_logits, contiguous_logits)
    again, again_logits = kvcache.run(QWEN3, prompts, 5, mode="recompute", logits=True)
    assert np.array_equal(paged, again) and np.allclose(paged_logits, again_logits, atol=1e-4)


def test_same_ids_as_the_command(kvcache_cmd):
    r = subprocess.run([str(kvcache_cmd), "run", str(QWEN3), "--prompt-ids", "1,2,3", "--prompt-ids", "40,41",
                        "--max-new-tokens", "4", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = [p["generated_ids"] for p in json.loads(r.stdout)["prompts"]]
    assert kvcache.run(QWEN3, [[1, 2, 3], [40, 41]], 4).tolist() == want


def test_positions_are_the_runners_check():
    """issue 23 #8: run() passes through the C runner's one position check
    (the command's too), and raises its message as InvalidArgument."""
    with pytest.raises(kvcache.InvalidArgument,
                       match=r"a prompt of 2 ids \+ 600 new tokens passes the model's max_position_embeddings 512"):
        kvcache.run(QWEN3, [[1, 2]], max_new_tokens=600)
    with pytest.raises(kvcache.InvalidArgument, match="passes max_positions 20"):
        kvcache.run(QWEN3, [[1, 2]], 19, max_positions=20)
    with pytest.raises(kvcache.InvalidArgument, match=r"max_positions 1048577 must be in \[1, 1048576\]"):
        kvcache.run(QWEN3, [[1, 2]], 2, max_positions=2**20 + 1)
    assert kvcache.run(QWEN3, [[1, 2]], 3, max_positions=5).shape == (1, 3)


def test_sampling_stream_and_eos_go_through_the_engine_as_the_command_does(kvcache_cmd):
    """kvcache.run(..., temperature/top_k/seed/eos/stream) gives the ids
    `kvcache run` prints for the same flags (both through the engine)."""
    prompts = [[39, 287, 494, 494, 14], [5, 6]]
    flags = ["--max-new-tokens", "8", "--temperature", "0.8", "--top-k", "20", "--seed", "3", "--eos", "none"]
    cmd = [str(kvcache_cmd), "run", str(QWEN3)] + [a for p in prompts for a in ("--prompt-ids", ",".join(map(str, p)))]
    out = subprocess.run(cmd + flags, capture_output=True, text=True, check=True).stdout.splitlines()
    expect = [[int(t) for t in line.split(",")] for line in out[-2:]]
    assert kvcache.run(QWEN3, prompts, 8, temperature=0.8, top_k=20, seed=3, eos=()) == expect
    streamed = list(kvcache.run(QWEN3, prompts, 8, temperature=0.8, top_k=20, seed=3, eos=(), stream=True))
    assert [[t for i, t in streamed if i == b] for b in range(2)] == expect
    greedy = kvcache.run(QWEN3, prompts, 8).tolist()
    assert kvcache.run(QWEN3, prompts, 8, eos=()) == greedy
    stop = greedy[0][3]
    assert kvcache.run(QWEN3, prompts[:1], 8, eos=stop) == [greedy[0][:greedy[0].index(stop) + 1]]
    with pytest.raises(kvcache.InvalidArgument, match="through the engine"):
        kvcache.run(QWEN3, prompts, 8, stream=True, logits=True)
    for eos in (1.5, {stop: 1}):  # a TypeError, and a dict taken as its keys
        with pytest.raises(kvcache.InvalidArgument, match="eos: an id or a list of ids is expected"):
            kvcache.run(QWEN3, prompts, 8, eos=eos)


def test_quantized_weights_as_the_command(kvcache_cmd):
    """weights= loads the matrices in that dtype, as `kvcache run --weights`: q8_0 logits stay
    within the bound docs/runtime.md measures (0.26 on this model) yet differ from the checkpoint's,
    the ids are the command's, and the engine path takes the same option."""
    prompts = [p["ids"] for p in EXPECTED["prompts"]]
    exact_ids, exact = kvcache.run(QWEN3, prompts, 4, logits=True)
    ids, q8 = kvcache.run(QWEN3, prompts, 4, logits=True, weights="q8_0")
    assert ids.shape == exact_ids.shape
    # teacher-forcing differs once a token flips: compare the first step, computed on the same prompt
    err = np.abs(q8[:, 0] - exact[:, 0]).max()
    assert 0 < err < 0.6
    flags = [a for p in prompts for a in ("--prompt-ids", ",".join(map(str, p)))]
    out = subprocess.run([str(kvcache_cmd), "run", str(QWEN3), "--weights", "q8_0", "--max-new-tokens", "4", *flags],
                         capture_output=True, text=True, check=True).stdout.split("\n")[1:1 + len(prompts)]
    assert [list(map(int, line.split(","))) for line in out] == ids.tolist()
    streamed = kvcache.run(QWEN3, prompts, 4, eos=(), weights="q8_0")
    assert [list(s) for s in streamed] == ids.tolist()


def test_bf16_activations_as_the_command(kvcache_cmd):
    """activations="bf16" rounds the activations of bf16 matrices (weights="bf16": the oracle
    checkpoint is f32): the first step's logits move by a little (docs/runtime.md measures it),
    the ids are the command's, and f32 weights refuse it by name."""
    prompts = [p["ids"] for p in EXPECTED["prompts"]]
    _, exact = kvcache.run(QWEN3, prompts, 1, logits=True, weights="bf16")
    ids, rounded = kvcache.run(QWEN3, prompts, 4, logits=True, weights="bf16", activations="bf16")
    err = np.abs(rounded[:, 0] - exact[:, 0]).max()
    assert 0 < err < 0.1
    flags = [a for p in prompts for a in ("--prompt-ids", ",".join(map(str, p)))]
    out = subprocess.run([str(kvcache_cmd), "run", str(QWEN3), "--weights", "bf16", "--activations", "bf16",
                          "--max-new-tokens", "4", *flags],
                         capture_output=True, text=True, check=True).stdout.split("\n")[1:1 + len(prompts)]
    assert [list(map(int, line.split(","))) for line in out] == ids.tolist()
    with pytest.raises(kvcache.InvalidArgument, match="activations \"bf16\" needs bf16 weights"):
        kvcache.run(QWEN3, [[1, 2]], 2, activations="bf16")
    with pytest.raises(kvcache.InvalidArgument, match="activations"):
        kvcache.run(QWEN3, [[1, 2]], 2, eos=(), weights="bf16", activations="f16")


def test_bad_weights_refused():
    with pytest.raises(kvcache.InvalidArgument, match="weights"):
        kvcache.run(QWEN3, [[1, 2]], 2, weights="q3_k")
    with pytest.raises(kvcache.InvalidArgument, match="weights"):
        kvcache.run(QWEN3, [[1, 2]], 2, weights=8)
    with pytest.raises(kvcache.InvalidArgument, match="weights"):
        kvcache.run(QWEN3, [[1, 2]], 2, eos=(), weights="q3_k")


GEMMA3 = DATA / "oracle" / "gemma3"
GEMMA2 = DATA / "oracle" / "gemma2"


def test_gemma2_greedy_ids_and_logits_match_transformers():
    """Gemma 2: soft-capped attention scores and logits, alternating sliding and full layers."""
    expected = json.loads((GEMMA2 / "expected.json").read_text())
    prompts = [p["ids"] for p in expected["prompts"]]
    ids, logits = kvcache.run(GEMMA2, prompts, expected["num_new_tokens"], logits=True)
    for b, p in enumerate(expected["prompts"]):
        assert ids[b].tolist() == p["greedy_ids"]
        assert np.allclose(logits[b], np.array(p["step_logits"], dtype=np.float32), rtol=1e-4, atol=2e-5)


def test_gemma3_greedy_ids_and_logits_match_transformers():
    """Gemma 3's text model and the same weights in its multimodal checkpoint (vision tower unread)."""
    expected = json.loads((GEMMA3 / "expected.json").read_text())
    prompts = [p["ids"] for p in expected["prompts"]]
    n = expected["num_new_tokens"]
    ids, logits = kvcache.run(GEMMA3, prompts, n, logits=True)
    for b, p in enumerate(expected["prompts"]):
        assert ids[b].tolist() == p["greedy_ids"]
        assert np.allclose(logits[b], np.array(p["step_logits"], dtype=np.float32), rtol=1e-4, atol=2e-5)
    assert np.array_equal(kvcache.run(GEMMA3 / "multimodal", prompts, n, mode="contiguous"), ids)
