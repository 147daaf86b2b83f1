"""Shared fixtures: where the repository, its C build and its test data are,
and the C oracle of the attention tests (compiled once per session)."""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(os.environ.get("KVC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("KVC_BUILD_DIR", REPO / "build"))
DATA = REPO / "tests" / "data"
# `make test` sets KVC_REQUIRE_BUILD=1: the tests that compare with the C
# build (oracle, command line) then fail instead of skipping when it is absent.
REQUIRE_BUILD = os.environ.get("KVC_REQUIRE_BUILD") == "1"


def need_build(path):
    if not path.exists():
        message = f"{path} is missing: build the C library first (make build)"
        if REQUIRE_BUILD:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def attn_oracle(tmp_path_factory):
    """Path of the compiled attn_oracle.c (linked with the C build's libkvcache.a)."""
    lib = BUILD / "libkvcache.a"
    need_build(lib)
    exe = tmp_path_factory.mktemp("oracle") / "attn_oracle"
    libs = subprocess.run(["pkg-config", "--libs", "libcjson", "openblas"], capture_output=True, text=True, check=True)
    cmd = ["cc", "-O2", "-std=c11", "-fopenmp", f"-I{REPO / 'include'}", str(pathlib.Path(__file__).with_name("attn_oracle.c")),
           str(lib), *libs.stdout.split(), "-lm", "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


@pytest.fixture(scope="session")
def kvcache_cmd():
    exe = BUILD / "kvcache"
    need_build(exe)
    return exe
