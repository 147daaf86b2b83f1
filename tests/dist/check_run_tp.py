#!/usr/bin/env python3
"""`mpirun -np N kvcache run MODEL_DIR --tp N ...` prints on rank 0 what `kvcache run MODEL_DIR ...` prints
(the kv cache line aside, which counts one rank's caches), the other ranks print nothing, and a --tp
the job or the model cannot take is refused with a message naming why.
usage: check_run_tp.py KVCACHE MPIEXEC DATA_DIR"""
import subprocess
import sys

kvcache, mpiexec, data = sys.argv[1:4]
MPI = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-x", "OMP_NUM_THREADS=1"]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=50)


def body(out):
    """stdout without the kv cache line (per rank under --tp)"""
    return [l for l in out.splitlines() if not l.startswith("kv cache ")]


def check(family, args):
    model = f"{data}/oracle/{family}"
    one = run([kvcache, "run", model] + args)
    assert one.returncode == 0, one.stderr
    for n in (2, 4):
        tp = run(MPI + ["-np", str(n), kvcache, "run", model, "--tp", str(n)] + args)
        assert tp.returncode == 0, tp.stderr
        assert body(tp.stdout) == body(one.stdout), (family, n, tp.stdout, one.stdout)
        assert len(tp.stdout.splitlines()) == len(one.stdout.splitlines()), tp.stdout  # rank 0 only
        assert tp.stderr.count("loaded ") == 1, tp.stderr  # one report per job
        if args[0] != "--temperature":
            kv = [l for l in tp.stdout.splitlines() if l.startswith("kv cache ")]
            assert kv and kv[0].endswith("bytes per token (all layers)"), tp.stdout


def refused(np_, family, tp, why):
    r = run(MPI + ["-np", str(np_), kvcache, "run", f"{data}/oracle/{family}", "--prompt-ids", "1,2", "--tp", str(tp)])
    assert r.returncode != 0 and why in r.stderr, (why, r.returncode, r.stderr)


check("qwen3", ["--prompt-ids", "1,2,3,4,5,6,7", "--prompt-ids", "9,4", "--max-new-tokens", "6"])
check("deepseek_v3", ["--prompt-ids", "3,1,4,1,5", "--mode", "3", "--max-new-tokens", "5"])
check("qwen3", ["--prompt-ids", "1,2,3,4,5,6,7", "--max-new-tokens", "6", "--weights", "q8_0"])
check("qwen3/bf16", ["--prompt-ids", "1,2,3,4,5,6,7", "--max-new-tokens", "6", "--activations", "bf16"])
check("gpt_oss", ["--temperature", "0.8", "--seed", "7", "--prompt-ids", "5,6,7", "--prompt-ids", "8", "--eos", "none"])
refused(2, "qwen3", 3, "--tp 3 but mpirun started 2 ranks")
refused(3, "qwen3", 3, "tensor parallelism 3 does not divide num_attention_heads 4")
print("ok")
