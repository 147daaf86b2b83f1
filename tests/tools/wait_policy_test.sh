#!/bin/sh
# The kvcache command runs its OpenMP threads with passive waiting unless the user chose a policy
# (tools/main.c starts itself again with OMP_WAIT_POLICY=passive): the first line of
# `bench model --json` names the policy the process runs with.
# Usage: wait_policy_test.sh KVCACHE MODEL_DIR
set -eu
cli=$1 model=$2
policy() {
    "$@" "$cli" bench model "$model" --batches 1 --prompts 64 --json >"$out"
    head -n 1 "$out" | sed -n 's/.*"omp_wait_policy":"\([^"]*\)".*/\1/p'
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
got=$(policy env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT)
[ "$got" = passive ] || { echo "no policy set: bench model ran with \"$got\", want passive"; exit 1; }
got=$(policy env OMP_WAIT_POLICY=active)
[ "$got" = active ] || { echo "OMP_WAIT_POLICY=active: bench model ran with \"$got\", want the user's choice"; exit 1; }
echo "wait policy: passive by default, the user's choice kept"
