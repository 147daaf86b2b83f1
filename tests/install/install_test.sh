#!/usr/bin/env bash
# Installs the build into a temporary prefix and uses it the way someone else
# would: the export list of the shared libraries, the core's dependencies,
# programs built through pkg-config and through find_package(kvcache).
# usage: install_test.sh SOURCE_DIR BUILD_DIR C_COMPILER
set -euo pipefail
src=$1 build=$2 cc=$3
work=$build/install-test
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
libdir=$(dirname "$(find "$prefix" -name libkvcache.so -print -quit)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "libkvcache.so was not installed"
for f in "$prefix/include/kvcache/kvcache.h" "$prefix/bin/kvcache" "$libdir/libkvcache.a" "$libdir/libkvcache_core.a" \
         "$libdir/libkvcache_core.so" "$libdir/pkgconfig/kvcache.pc" "$libdir/pkgconfig/kvcache-core.pc" \
         "$libdir/cmake/kvcache/kvcacheConfig.cmake" "$libdir/cmake/kvcache/kvcacheConfigVersion.cmake"; do
  [ -e "$f" ] || fail "missing $f"
done
version=$(grep -E '^#define KVC_VERSION_(MAJOR|MINOR|PATCH) ' "$prefix/include/kvcache/version.h" | awk '{print $3}' | paste -sd.)
[ "$("$prefix/bin/kvcache" --version)" = "kvcache $version" ] || fail "bin/kvcache --version: $("$prefix/bin/kvcache" --version)"
soname=$(readelf -d "$libdir/libkvcache.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libkvcache.so.${version%%.*}" ] || fail "SONAME $soname, expected libkvcache.so.${version%%.*}"

# The shared library exports exactly the functions declared in the public
# headers (each declaration carries KVC_API; internal helpers stay hidden).
# (a declaration starts in column 0; typedefs, macros and struct bodies do not count)
grep -hE '^[A-Za-z]' "$prefix"/include/kvcache/*.h | grep -vE '^(typedef|extern|struct|enum)\b' |
  sed -E 's/^[^(]*\b(kvc_[A-Za-z0-9_]*) *\(.*/\1/' | sort -u > "$work/declared"
nm -D --defined-only "$libdir/libkvcache.so" | awk '$2 == "T" {print $3}' | sort -u > "$work/exported"
if ! diff "$work/declared" "$work/exported" > "$work/export.diff"; then
  echo "< declared in include/kvcache but not exported (add KVC_API), > exported but not declared:" >&2
  cat "$work/export.diff" >&2
  fail "libkvcache.so's export list differs from the public headers"
fi
# Naming: every global function of the library named kvc_* is public; the
# internal ones are named kvci_* (so a name tells which side it is on).
nm -g --defined-only "$libdir/libkvcache.a" 2>/dev/null | awk '$2 == "T" && $3 ~ /^kvc_/ {print $3}' | sort -u > "$work/static_kvc"
internal=$(comm -23 "$work/static_kvc" "$work/declared")
[ -z "$internal" ] || fail "libkvcache.a defines kvc_ functions that are not public (name internal ones kvci_): $internal"
nm -D --defined-only "$libdir/libkvcache_core.so" | awk '$2 == "T" {print $3}' | sort -u > "$work/core_exported"
extra=$(comm -13 "$work/declared" "$work/core_exported")
[ -z "$extra" ] || fail "libkvcache_core.so exports undeclared symbols: $extra"
grep -qx kvc_manager_allocate_slots "$work/core_exported" && grep -qx kvc_attention_cpu "$work/core_exported" ||
  fail "libkvcache_core.so lacks the manager or the attention operator"
# the core links no JSON, BLAS or OpenMP library
needed=$(readelf -d "$libdir/libkvcache_core.so" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in *cjson* | *blas* | *gomp* | *omp*) fail "libkvcache_core.so needs: $needed" ;; esac

# pkg-config: the examples against the core, the consumer against everything
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion kvcache)" = "$version" ] || fail "kvcache.pc says $(pkg-config --modversion kvcache), headers $version"
export LD_LIBRARY_PATH=$libdir
for ex in "$src"/examples/*.c; do
  name=$(basename "$ex" .c)
  # shellcheck disable=SC2046
  "$cc" -std=c11 -o "$work/$name" "$ex" $(pkg-config --cflags --libs kvcache-core) -lm
  "$work/$name" > "$work/$name.log" || fail "$name (pkg-config kvcache-core) failed: $(tail -3 "$work/$name.log")"
done
# shellcheck disable=SC2046
"$cc" -std=c11 -o "$work/consumer" "$src/tests/install/consumer.c" $(pkg-config --cflags --libs kvcache)
"$work/consumer" "$src/tests/data/configs/Llama-3.1-8B.json" || fail "consumer (pkg-config kvcache) failed"
unset LD_LIBRARY_PATH

# CMake: find_package(kvcache) from the prefix (imported targets carry the rpath)
cmake -S "$src/tests/install/consumer" -B "$work/cmake" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
      -DKVC_SOURCE_DIR="$src" -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" || { cat "$work/cmake.log"; fail "consumer configure"; }
cmake --build "$work/cmake" > "$work/cmake-build.log" || { cat "$work/cmake-build.log"; fail "consumer build"; }
"$work/cmake/consumer" "$src/tests/data/configs/Llama-3.1-8B.json" || fail "consumer (CMake kvcache::kvcache) failed"
"$work/cmake/paged_attention_core" > /dev/null || fail "paged_attention (CMake kvcache::core) failed"
"$work/cmake/manager_block_tables_static" > /dev/null || fail "manager_block_tables (CMake kvcache::core_static) failed"
echo "install test: prefix $prefix, version $version, $(wc -l < "$work/exported") exported functions"
