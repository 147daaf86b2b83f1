#!/bin/sh
# `kvcache run ... --role prefill : ... --role decode` under mpirun (docs/pd.md):
#  - for each oracle family (and DeepSeek-V3's MLA latent caches, mode 3; Bamba: Mamba2 states beside
#    attention) the decode rank prints byte for byte what `kvcache run` prints alone;
#  - a dropped transfer (--pd-fault drop=1) fails prompt 1 within the timeout with the documented
#    message while prompts 0 and 2 are served as alone;
#  - a prefill rank that stops after one prompt (--pd-fault exit=1), or is killed there by SIGKILL
#    (--pd-fault kill=1, mpirun told to keep the survivor: orte_enable_recovery): prompts 1 and 2
#    fail with "no KV from the prefill rank", prompt 0 is served.
# usage: pd_cli_test.sh KVCACHE MPIEXEC DATA_DIR [quick]
#   quick (sanitizer builds, where each rank starts slowly): qwen3 only and no exit=1 case
. "$(dirname "$0")/pd_cli_common.sh"

# pd PREFILL_EXTRA ARGS...: runs one prefill and one decode rank, stdout/stderr to $TMP/out, err
# ($MPI_EXTRA: more mpirun options; $LIMIT: seconds mpirun may take; $TEARDOWN_MAY_HANG: see the kill case)
MPI_EXTRA=
LIMIT=40
TEARDOWN_MAY_HANG=
pd() {
    pre=$1
    shift
    timeout -k 2 $LIMIT "$MPI" --allow-run-as-root --oversubscribe $MPI_EXTRA -np 1 "$KVC" run "$@" --role prefill $pre : \
        -np 1 "$KVC" run "$@" --role decode >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        [ -n "$TEARDOWN_MAY_HANG" ] || fail "mpirun did not end within $LIMIT s ($pre)"
        echo "note: mpirun's teardown did not end within $LIMIT s after the killed rank; ended by the test"
    fi
    return $rc
}

for case in "qwen3" "gpt_oss" "deepseek_v3" "deepseek_v3 --mode 3" "bamba"; do
    set -- $case
    dir=$DATA/oracle/$1
    shift
    "$KVC" run "$dir" $PROMPTS --max-new-tokens 6 "$@" >"$TMP/single" 2>"$TMP/err" || fail "$case: kvcache run alone"
    pd "" "$dir" $PROMPTS --max-new-tokens 6 "$@" --pd-timeout-ms 20000 || fail "$case: P/D run"
    cmp -s "$TMP/single" "$TMP/out" || { diff "$TMP/single" "$TMP/out"; fail "$case: P/D output differs"; }
    echo "ok: $case"
    [ -n "$QUICK" ] && break
done

dir=$DATA/oracle/qwen3
"$KVC" run "$dir" $PROMPTS --max-new-tokens 6 >"$TMP/single" 2>/dev/null || fail "qwen3 alone"
start=$(date +%s)
pd "--pd-fault drop=1" "$dir" $PROMPTS --max-new-tokens 6 --pd-timeout-ms 800 && fail "drop: exit status 0"
grep -q "prompt 1: MPI transport: the payload of message 1 (.* bytes) from rank 0 did not arrive within 800 ms" "$TMP/err" ||
    fail "drop: no timeout message for prompt 1"
sed -n 1,2p "$TMP/single" >"$TMP/want"
echo >>"$TMP/want"
sed -n 4p "$TMP/single" >>"$TMP/want"
cmp -s "$TMP/want" "$TMP/out" || fail "drop: prompts 0 and 2 not served as alone, or prompt 1's line not empty"
echo "ok: dropped transfer"

sed -n 1,2p "$TMP/single" >"$TMP/want"
printf '\n\n' >>"$TMP/want"
if [ -z "$QUICK" ]; then
    pd "--pd-fault exit=1" "$dir" $PROMPTS --max-new-tokens 6 --pd-timeout-ms 800 &&
        fail "exit: exit status 0"
    for b in 1 2; do
        grep -q "prompt $b: no KV from the prefill rank within 800 ms" "$TMP/err" || fail "exit: prompt $b not failed"
    done
    cmp -s "$TMP/want" "$TMP/out" || fail "exit: prompt 0 not served as alone"
    echo "ok: prefill rank gone"
fi

# Open MPI ends every rank when one is killed, unless told to keep the others (and then mpirun's own
# status is 0: the decode rank's messages say what failed). Open MPI 4's parameters; skipped where
# they do not exist. In that mode Open MPI 4.1's teardown (MPI_Finalize's fence with a dead rank)
# sometimes never ends, after the decode rank has served and printed everything: the outputs are
# checked whether or not mpirun ends by itself within LIMIT.
if ! ompi_info --all 2>/dev/null | grep -q orte_enable_recovery; then
    echo "skip: prefill rank killed (this MPI has no orte_enable_recovery)"
    exit 0
fi
MPI_EXTRA="--mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0"
LIMIT=10
TEARDOWN_MAY_HANG=1
pd "--pd-fault kill=1" "$dir" $PROMPTS --max-new-tokens 6 --pd-timeout-ms 800
grep -q "killing itself after 1 of 3 prompts" "$TMP/err" || fail "kill: the prefill rank did not die"
for b in 1 2; do
    grep -q "prompt $b: no KV from the prefill rank within 800 ms" "$TMP/err" || fail "kill: prompt $b not failed"
done
cmp -s "$TMP/want" "$TMP/out" || fail "kill: prompt 0 not served as alone"
echo "ok: prefill rank killed"
# every case is bounded by its own LIMIT; all of them together by 30 s, or 90 s in a sanitizer build
# (ranks start several times slower there, and make test runs two tests at once beside them)
total=30
[ -n "$QUICK" ] && total=90
[ $(($(date +%s) - start)) -lt $total ] || fail "the fault cases took more than $total s"
