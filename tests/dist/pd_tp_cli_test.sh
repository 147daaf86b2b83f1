#!/bin/sh
# P/D with tensor parallelism under mpirun (docs/pd.md): 2 prefill ranks (--tp 2) and 2 decode ranks
# (--tp 2), 4 in all, prefill rank r sending its KV shard to decode rank r (the MLA latent from prefill
# rank 0 to both decode ranks):
#  - qwen3 (KV heads split), DeepSeek-V3 in mode 3 (the latent, whole on every rank) and FalconMamba (each
#    rank's shard of the Mamba-1 states): decode rank 0 prints byte for byte what
#    `mpirun -np 2 kvcache run ... --tp 2` prints;
#  - one prefill rank drops prompt 1's KV (--pd-fault drop=1 on it only): both decode ranks fail
#    prompt 1 (the one that received it releases it), prompts 0 and 2 are served as by --tp 2;
#  - a job whose roles have other rank counts than --tp is refused, naming the counts.
# usage: pd_tp_cli_test.sh KVCACHE MPIEXEC DATA_DIR [quick]   (quick: qwen3 only)
. "$(dirname "$0")/pd_cli_common.sh"
MPI="$MPI --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1"
# pd2 PREFILL0_EXTRA ARGS...: prefill ranks 0 and 1 (rank 0 with PREFILL0_EXTRA), decode ranks 0 and 1
pd2() {
    pre=$1
    shift
    timeout -k 2 40 $MPI -np 1 "$KVC" run "$@" --tp 2 --role prefill $pre : -np 1 "$KVC" run "$@" --tp 2 --role prefill \
        : -np 2 "$KVC" run "$@" --tp 2 --role decode >"$TMP/out" 2>"$TMP/err"
}

for case in "qwen3" "deepseek_v3 --mode 3" "falcon_mamba"; do
    set -- $case
    dir=$DATA/oracle/$1
    shift
    timeout 40 $MPI -np 2 "$KVC" run "$dir" $PROMPTS --max-new-tokens 6 "$@" --tp 2 >"$TMP/tp" 2>"$TMP/err" ||
        fail "$case: --tp 2 alone"
    pd2 "" "$dir" $PROMPTS --max-new-tokens 6 "$@" --pd-timeout-ms 20000 || fail "$case: P/D with --tp 2"
    cmp -s "$TMP/tp" "$TMP/out" || { diff "$TMP/tp" "$TMP/out"; fail "$case: P/D with --tp 2 differs from --tp 2"; }
    echo "ok: $case"
    [ -n "$QUICK" ] && break
done

dir=$DATA/oracle/qwen3
timeout 40 $MPI -np 2 "$KVC" run "$dir" $PROMPTS --max-new-tokens 6 --tp 2 >"$TMP/tp" 2>/dev/null || fail "qwen3 --tp 2"
pd2 "--pd-fault drop=1" "$dir" $PROMPTS --max-new-tokens 6 --pd-timeout-ms 800 && fail "drop: exit status 0"
grep -q "prompt 1: MPI transport: the payload of message 1 (.* bytes) from rank 0 did not arrive within 800 ms" \
    "$TMP/err" || fail "drop: no timeout message for prompt 1 on decode rank 0"
grep -q "prompt 1: its transfer failed on another decode rank" "$TMP/err" || fail "drop: decode rank 1 kept prompt 1"
{ sed -n 1,2p "$TMP/tp"; echo; sed -n 4p "$TMP/tp"; } >"$TMP/want"
cmp -s "$TMP/want" "$TMP/out" || fail "drop: prompts 0 and 2 not served as by --tp 2, or prompt 1's line not empty"
echo "ok: one prefill rank's dropped transfer"

timeout 40 $MPI -np 2 "$KVC" run "$dir" --prompt-ids 1,2 --tp 2 --role prefill : -np 1 "$KVC" run "$dir" \
    --prompt-ids 1,2 --tp 2 --role decode >"$TMP/out" 2>"$TMP/err" && fail "2 + 1 ranks: exit status 0"
grep -q "this job has 2 rank(s) of this role, 1 of the other, 3 in all" "$TMP/err" || fail "2 + 1 ranks: no message"
echo "ok: rank counts refused"
