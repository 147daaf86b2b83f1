#!/bin/sh
# One libFuzzer target of `make fuzz-test` for SECONDS, over its corpus in
# BUILD_DIR/corpus/NAME and its seeds in fuzz/corpus/NAME (when there are any);
# the run's log is BUILD_DIR/NAME.log. The Makefile runs JOBS of these at once,
# one core each, and fails when any does. ASAN_OPTIONS / UBSAN_OPTIONS come
# from the caller.
# usage: tools/fuzz_one.sh FUZZER SECONDS BUILD_DIR
set -u
f=$1 secs=$2 out=$3
name=$(basename "$f")
mkdir -p "$out/corpus/$name"
seeds=fuzz/corpus/$name
[ -d "$seeds" ] || seeds=""
if ! "$f" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 "$out/corpus/$name" $seeds \
    > "$out/$name.log" 2>&1; then
  tail -n 60 "$out/$name.log"
  echo "FAIL: $name"
  exit 1
fi
echo "fuzzed $name for $secs s"
tail -n 6 "$out/$name.log"
