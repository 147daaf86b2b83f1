"""kvcache.plan returns the document `kvcache plan --json` prints."""
import json
import re
import subprocess

import pytest

import kvcache
from conftest import DATA

CONFIGS = sorted((DATA / "configs").glob("*.json"))
OPTIONS = [dict(), dict(tp=2, block_size=16, max_model_len=8192, max_concurrency=4),
           dict(kv_dtype="f16", kv_memory="8GiB", block_size=64)]


def _cli_args(opts):
    flags = {"tp": "--tp", "block_size": "--block-size", "max_model_len": "--max-model-len",
             "max_concurrency": "--max-concurrency", "kv_dtype": "--kv-dtype", "kv_memory": "--kv-memory"}
    args = []
    for k, v in opts.items():
        args += [flags[k], str(v)]
    return args


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
@pytest.mark.parametrize("opts", range(len(OPTIONS)))
def test_same_document_as_the_command(kvcache_cmd, config, opts):
    o = OPTIONS[opts]
    r = subprocess.run([str(kvcache_cmd), "plan", str(config), "--json", *_cli_args(o)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert dict(kvcache.plan(config, **o)) == json.loads(r.stdout)


def test_llama4_chunked_layers():
    """Llama 4: three of four layers ChunkedLocal of 8192 positions, every fourth full; the chunked key's
    pool is fixed per request, so long contexts pay bytes per token for the full layers only."""
    plan = kvcache.plan(DATA / "configs" / "Llama-4-Scout-shaped.json", max_model_len=131072, max_concurrency=4)
    assert plan["family"] == "llama4"
    kinds = [(layer["attn_type"], layer["attention_chunk_size"]) for layer in plan["layers"]]
    assert kinds == [("FullAttention", None) if i % 4 == 3 else ("ChunkedLocal", 8192) for i in range(48)]
    assert plan["bytes_per_token"] == 12 * 2 * 8 * 128 * 2
    assert not any("attention_chunk_size" in w for w in plan["warnings"])


def test_dict_path_and_directory_agree():
    qwen = DATA / "oracle" / "qwen3"
    from_dir = kvcache.plan(qwen, block_size=16)
    assert from_dir == kvcache.plan(qwen / "config.json", block_size=16)
    assert from_dir == kvcache.plan(json.loads((qwen / "config.json").read_text()), block_size=16)


def test_sizes_parse_like_the_command():
    assert kvcache.parse_bytes("64GiB") == 64 << 30
    assert kvcache.parse_bytes("1.5GB") == 1_500_000_000
    assert kvcache.parse_bytes("1e9") == 10**9
    assert kvcache.parse_bytes(4096) == 4096
    for bad in ("lots", "12QB", "", "1e999", "1e300TiB"):  # the last: infinite once scaled (was OverflowError)
        with pytest.raises(kvcache.InvalidArgument, match="kv_memory"):
            kvcache.parse_bytes(bad)
    with pytest.raises(kvcache.InvalidArgument, match="--max-body-bytes \"5x\" is not a size"):  # was "kv_memory"
        kvcache.parse_bytes("5x", "--max-body-bytes")


@pytest.mark.parametrize("config, needle", [
    ("/nonexistent/config.json", "/nonexistent/config.json: cannot open"),  # was FileNotFoundError
    ({"model_type": "llama", "x": object()}, "config: the dict is not JSON"),  # was TypeError
    ({"model_type": "llama", "rope_theta": float("nan")}, "config: the dict is not JSON: Out of range float"),
])
def test_a_config_that_cannot_be_read_is_an_invalid_argument(config, needle):
    with pytest.raises(kvcache.InvalidArgument, match=re.escape(needle)):
        kvcache.plan(config)


def test_manager_of_a_huge_plan_follows_use():
    """issue 23 #6: 8M blocks of one token (1 TiB of Llama-3.1-8B) and the
    default 65,536 requests of 131,072 positions: the manager's tables grow
    with use instead of being sized max_requests x max_model_len up front."""
    plan = kvcache.plan(DATA / "configs" / "Llama-3.1-8B.json", block_size=1, kv_memory="1TiB")
    assert plan["block_num"]["FullAttention"] == 8 << 20
    m = plan.manager()
    assert m.allocate_slots(1, 0, 1000)
    assert m.allocate_slots(2, 0, 131072)
    usage = m.stats()["keys"]["FullAttention"]
    assert usage["used"] == 1 + 1000 + 131072
    m.free(2)
    assert m.stats()["keys"]["FullAttention"]["used"] == 1 + 1000


def test_manager_of_a_hybrid_plan_shares_one_pool():
    """issue 24: plan.manager() serves the plan's shared pool: gpt-oss's
    full and sliding keys draw from one id space and free queue, so blocks
    one key takes are gone for the other; block_num= keeps the pool and
    refuses unequal counts for its keys."""
    plan = kvcache.plan(DATA / "configs" / "gpt-oss-20b.json", max_model_len=256, max_concurrency=4)
    m = plan.manager()
    usage = m.usage()
    assert {u["pool"] for u in usage.values()} == {m.keys[0]}
    total = usage["FullAttention"]["total"]
    assert usage["SlidingWindow"]["total"] == total
    assert m.allocate_slots(1, 0, 256, keys=["FullAttention"])  # 2 blocks of 128 tokens
    assert m.usage()["SlidingWindow"]["free"] == total - 1 - 2
    assert set(m.free_queue("SlidingWindow").tolist()) == set(m.free_queue("FullAttention").tolist())
    m.check()
    bigger = plan.manager(block_num=40)
    assert all(u["total"] == 40 and u["pool"] == m.keys[0] for u in bigger.usage().values())
    with pytest.raises(kvcache.InvalidArgument, match="pool"):
        plan.manager(block_num={"FullAttention": 40, "SlidingWindow": 30})
    dense = kvcache.plan(DATA / "configs" / "Llama-3.1-8B.json", max_model_len=256).manager()
    assert dense.usage()["FullAttention"]["pool"] == "FullAttention"
