# What the P/D command-line tests share (sourced by pd_cli_test.sh and pd_tp_cli_test.sh): their
# arguments KVCACHE MPIEXEC DATA_DIR [quick] as KVC, MPI, DATA, QUICK; a scratch directory TMP (gone at
# exit) where each run leaves its stdout in out and stderr in err; the prompts; fail MESSAGE.
set -u
KVC=$1
MPI=$2
DATA=$3
QUICK=${4:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PROMPTS="--prompt-ids 3,17,42,9,100,5,77 --prompt-ids 12,1,99 --prompt-ids 5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21"
fail() {
    echo "FAIL: $*"
    echo "--- stdout"; cat "$TMP/out"
    echo "--- stderr"; cat "$TMP/err"
    exit 1
}
