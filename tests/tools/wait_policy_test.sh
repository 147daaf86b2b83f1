#!/bin/sh
# The kvcache command bounds how long its OpenMP threads spin before they sleep unless the user
# chose a policy (tools/main.c starts itself again with GOMP_SPINCOUNT=10000): the first line of
# `bench model --json` names the policy and spin count the process runs with.
# Usage: wait_policy_test.sh KVCACHE MODEL_DIR
set -eu
cli=$1 model=$2
policy() {
    "$@" "$cli" bench model "$model" --batches 1 --prompts 64 --json >"$out"
    head -n 1 "$out" | sed -n 's/.*"omp_wait_policy":"\([^"]*\)","gomp_spincount":"\([^"]*\)".*/\1 \2/p'
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
got=$(policy env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT)
[ "$got" = "unset 10000" ] || { echo "no policy set: bench model ran with \"$got\", want \"unset 10000\""; exit 1; }
got=$(policy env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active)
[ "$got" = "active unset" ] || { echo "OMP_WAIT_POLICY=active: bench model ran with \"$got\", want the user's choice"; exit 1; }
echo "wait policy: spin bounded to 10,000 pauses by default, the user's choice kept"
