"""Cache salts of kvcache.Manager (issue 23 #1, #2): a salt is fixed by a
request's first allocate_slots, whatever its computed tokens and with or
without a prompt; salts are bytes (a str is its UTF-8 bytes) in which NUL
counts; other types are refused; names refuse NUL bytes."""
import pytest

import kvcache

ENTRY = {"name": "k", "num_head": 1, "dim": 8, "block_size": 4}


def caching_manager():
    return kvcache.Manager([[ENTRY]], block_num=40, max_model_len=64, prefix_caching=True)


def test_salt_fixed_when_computed_goes_beyond_the_hit():
    m = caching_manager()
    tokens = list(range(1, 13))
    assert m.allocate_slots(1, 8, 4, cache_salt="tenant-a")  # no prompt: tokens computed elsewhere
    m.cache_computed(1, tokens)
    m.free(1)
    longer = tokens + [13]
    assert m.find_prefix(longer)["n_tokens"] == 0  # no salt: another tenant
    assert m.find_prefix(longer, cache_salt="tenant-b")["n_tokens"] == 0
    assert m.find_prefix(longer, cache_salt="tenant-a")["n_tokens"] == 12
    assert m.find_prefix(longer, cache_salt=b"tenant-a")["n_tokens"] == 12  # the same bytes
    m.check()


def test_salt_restated_or_changed_later():
    m = caching_manager()
    assert m.allocate_slots(1, 0, 4, cache_salt=b"t\0a")
    assert m.allocate_slots(1, 4, 4, cache_salt=b"t\0a")
    with pytest.raises(kvcache.InvalidArgument, match="not the salt its first allocation fixed"):
        m.allocate_slots(1, 8, 1, cache_salt=b"t\0b")
    m.cache_computed(1, list(range(8)))
    assert m.find_prefix(list(range(9)), cache_salt=b"t\0a")["n_tokens"] == 8
    assert m.find_prefix(list(range(9)), cache_salt=b"t")["n_tokens"] == 0


def test_salts_differ_after_a_nul_byte():
    m = caching_manager()
    prompt = list(range(20, 30))
    assert m.allocate_slots(1, 0, len(prompt), prompt=prompt, cache_salt="a\0x")
    m.cache_computed(1, prompt)
    assert m.find_prefix(prompt, cache_salt="a\0y")["n_tokens"] == 0
    assert m.find_prefix(prompt, cache_salt="a")["n_tokens"] == 0
    assert m.find_prefix(prompt, cache_salt="a\0x")["n_tokens"] == 8


def test_bytes_salt_is_not_its_repr():
    m = caching_manager()
    prompt = list(range(20, 30))
    assert m.allocate_slots(1, 0, len(prompt), prompt=prompt, cache_salt=b"x")
    m.cache_computed(1, prompt)
    assert m.find_prefix(prompt, cache_salt="b'x'")["n_tokens"] == 0
    assert m.find_prefix(prompt, cache_salt="x")["n_tokens"] == 8


@pytest.mark.parametrize("salt", [7, 1.5, bytearray(b"x"), ["x"], object()])
def test_other_salt_types_refused(salt):
    m = caching_manager()
    with pytest.raises(kvcache.InvalidArgument, match="cache_salt: expected str or bytes"):
        m.find_prefix(list(range(8)), cache_salt=salt)
    with pytest.raises(kvcache.InvalidArgument, match="cache_salt: expected str or bytes"):
        m.allocate_slots(1, 0, 8, prompt=list(range(8)), cache_salt=salt)
    with pytest.raises(kvcache.InvalidArgument, match="cache_salt: expected str or bytes"):
        m.allocate_slots(1, 0, 8, cache_salt=salt)
    assert not m.has_request(1)


def test_unencodable_salt_refused():
    with pytest.raises(kvcache.InvalidArgument, match="UTF-8"):
        caching_manager().find_prefix(list(range(8)), cache_salt="\ud800")


@pytest.mark.parametrize("layers, block_num", [
    ([[dict(ENTRY, name="k\0x")]], 8),
    ([[dict(ENTRY, manager_key="a\0b")]], 8),
    ([[dict(ENTRY, attn_type="FullAttention\0x")]], 8),
    ([[ENTRY]], {"FullAttention\0x": 8}),
])
def test_names_with_nul_refused(layers, block_num):
    with pytest.raises(kvcache.InvalidArgument, match="contains a NUL byte"):
        kvcache.Manager(layers, block_num=block_num, max_model_len=64)


def test_key_with_nul_refused():
    m = kvcache.Manager([[ENTRY]], block_num=8, max_model_len=64)
    with pytest.raises(kvcache.InvalidArgument, match="contains a NUL byte"):
        m.block_table(1, "FullAttention\0x")
