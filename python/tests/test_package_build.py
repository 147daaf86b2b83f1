"""`pip install ./python` builds the extension and the library objects it
links, nothing else of the C tree (no tests, command, examples or shared
libraries): checked on the build directory `make python-test` uses."""
import pytest

from conftest import BUILD

LIBRARY_OBJECTS = {"kvcache_core_objects.dir", "kvcache_core_threaded_objects.dir", "kvcache_runtime_objects.dir",
                   "_ffi.dir"}


def test_package_build_compiles_only_what_the_extension_links():
    build = BUILD / "python-cmake"
    if not (build / "CMakeCache.txt").exists():
        pytest.skip(f"{build} is missing (made by make python-test)")
    target_dirs = {obj.relative_to(build).parts for obj in build.rglob("*.o")}
    targets = {next(p for p in parts if p.endswith(".dir")) for parts in target_dirs}
    assert targets <= LIBRARY_OBJECTS, sorted(targets - LIBRARY_OBJECTS)
    c_tree = build / "kvcache_c"
    assert (c_tree / "libkvcache.a").exists()
    built = {p.name for p in c_tree.iterdir() if p.is_file()}
    assert not {n for n in built if n == "kvcache" or n.startswith(("test_", "example_")) or ".so" in n}, built
