"""What the extension's build compiles, checked on the build directory `make python-test` uses.

`make python-test` links the Release build's libkvcache.a (KVC_PREBUILT_LIBRARY): then only the
cffi wrapper is compiled there. `pip install ./python` alone compiles the library objects the
extension links, nothing else of the C tree (no tests, command, examples or shared libraries)."""
import pytest

from conftest import BUILD

LIBRARY_OBJECTS = {"kvcache_core_objects.dir", "kvcache_core_threaded_objects.dir", "kvcache_runtime_objects.dir",
                   "_ffi.dir"}


def prebuilt_library(build):
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("KVC_PREBUILT_LIBRARY:"):
            return line.split("=", 1)[1]
    return ""


def test_package_build_compiles_only_what_the_extension_links():
    build = BUILD / "python-cmake"
    if not (build / "CMakeCache.txt").exists():
        pytest.skip(f"{build} is missing (made by make python-test)")
    target_dirs = {obj.relative_to(build).parts for obj in build.rglob("*.o")}
    targets = {next(p for p in parts if p.endswith(".dir")) for parts in target_dirs}
    c_tree = build / "kvcache_c"
    built = {p.name for p in c_tree.iterdir() if p.is_file()} if c_tree.exists() else set()
    assert not {n for n in built if n == "kvcache" or n.startswith(("test_", "example_")) or ".so" in n}, built
    if prebuilt_library(build):
        assert targets == {"_ffi.dir"}, sorted(targets)
        assert "libkvcache.a" not in built
    else:
        assert targets <= LIBRARY_OBJECTS, sorted(targets - LIBRARY_OBJECTS)
        assert "libkvcache.a" in built
