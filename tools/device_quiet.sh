#!/usr/bin/env bash
# The device rows that need a quiet machine, after tools/device_bench.sh (whose stage 1 shares the
# memory system with eight other processes): (A) tools/bench_gibbs.py on the Debian corpus, one
# layer to five, with n_jobs 1 (core 0) and 2 (cores 1-2), the two processes alone on the machine
# (issue 13: T = 5 against T = 1, the upper layers against their gamma floor, and n_jobs 2
# against 1); then (B) the partial and tomotopy rows at 5.2M tokens with 8 threads/workers
# (K = 100 and 400) and with one (K = 400), one run after another (issue 17); then (C) the
# collapsed sweep and tomotopy's one worker side by side at 5.2M tokens, K = 100 (issue 11).
#
# Stages: STAGES (default "A A2 B C"); "P" first times the upper layers' Phi theta product on this
# machine's BLAS (tools/bench_product.py, also with OPENBLAS_CORETYPE=$ALT_CORE when ALT_CORE is
# set) beside the gamma row kernel against numpy (tools/bench_samplers.py --rows); with ALT_CORE
# set, A2 also runs under OPENBLAS_CORETYPE=$ALT_CORE (on core 3, beside the default on core 0).
# B_SPECS ("K:runs;K:runs", default the 8-thread rows below) sets B's runs, on B_TOKENS tokens
# (default the 5.2M corpus; "K@TOKENS:runs" for one spec, e.g. "100@20.8M:partial-2 tomotopy-2";
# a corpus missing from CACHE is generated there) and B_ITERS its iterations (default "--early 3
# --late 5 --late-iters 3"); B runs on CPUs
# 0-(n/2 - 1), or on every CPU when a run asks for more threads than that.
#
# Variables: OUT (default ./device_out), BUDGET (seconds, default 400), CACHE (default
# .devdata/scale), PYTHON (default python3), QUICK=1 (tiny sizes: a smoke run).
# Before the call: as for tools/device_bench.sh (.devdata with debian-descriptions and the 5.2M
# corpus, tomotopy's wheel in .whl); run with carry [".devdata", ".whl"].
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device_out}
BUDGET=${BUDGET:-400}
PY=${PYTHON:-python3}
CACHE=${CACHE:-$ROOT/.devdata/scale}
start=$(date +%s)
deadline=$((start + BUDGET))
work=$OUT/quiet
mkdir -p "$work" "$CACHE"
left() { echo $((deadline - $(date +%s))); }
say() { echo "[device $(( $(date +%s) - start ))s] $*"; }
if [ "${QUICK:-0}" = "1" ]; then
    T5=200k; GIBBS="--first 3 --per-layer 2 --T 3"; IT="--early 2 --late 2 --late-iters 2"; LATE=$IT
else
    T5=5.2M; GIBBS="--first 40 --per-layer 12 --T 5"; IT="--early 3 --late 5 --late-iters 3"
    LATE="--early 5 --late 15 --late-iters 5"
fi
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
. "$ROOT/tools/_device_env.sh"
device_tomotopy || say "tomotopy is not available: its rows will say so"
device_build || exit 1
say "built; $(git rev-parse --short HEAD 2>/dev/null); $(nproc) cores"
device_facts
show() { for f in "$@"; do [ -f "$f" ] && { echo "== $(basename "$f")"; grep -E '^\||^#|error|Error' "$f" | grep -v '^|---'; }; done; }
STAGES=" ${STAGES:-A A2 B C} "
has() { case "$STAGES" in *" $1 "*) return 0;; esac; return 1; }
ncpu=$(nproc)
cpu() { echo $(( $1 % ncpu )); }

# P. the Phi theta product on this BLAS (and another OpenBLAS kernel), beside the gamma row kernel
if has P; then
    say "P: bench_product (core 0) and bench_samplers --rows (core $(cpu 3))"
    taskset -c "$(cpu 3)" timeout -k 5 120 $PY tools/bench_samplers.py --rows >"$work/samplers_rows.txt" 2>&1 &
    ps=$!
    taskset -c 0 timeout -k 5 60 $PY tools/bench_product.py >"$work/product.txt" 2>&1
    if [ -n "${ALT_CORE:-}" ]; then
        OPENBLAS_CORETYPE=$ALT_CORE taskset -c 0 timeout -k 5 60 $PY tools/bench_product.py \
            >"$work/product_$ALT_CORE.txt" 2>&1
    fi
    wait $ps
    show "$work"/product*.txt
    echo "== samplers_rows.txt"; cat "$work/samplers_rows.txt"
fi

# A. bench_gibbs, n_jobs 1 and 2, nothing else running
t=$(( $(left) - 100 ))
if has A; then
say "A: bench_gibbs --jobs 1 (core 0) and --jobs 2 (cores 1-2)"
# shellcheck disable=SC2086
taskset -c 0 timeout -k 5 "$t" $PY tools/bench_gibbs.py --data "$ROOT/.devdata" --jobs 1 --no-tomotopy \
    $GIBBS >"$work/gibbs_j1.txt" 2>&1 &
p1=$!
# shellcheck disable=SC2086
taskset -c "$(cpu 1),$(cpu 2)" timeout -k 5 "$t" $PY tools/bench_gibbs.py --data "$ROOT/.devdata" --jobs 2 --no-tomotopy \
    $GIBBS >"$work/gibbs_j2.txt" 2>&1 &
p2=$!
wait $p1 $p2
show "$work"/gibbs_j*.txt
fi
# A2. the same chain at T = 3 part by part (the Phi theta product by BLAS and the gamma draws of
# each theta^(t) apart), one thread: which part makes an upper layer slower here than on the
# 2-core machine (docs/benchmarks.md, "Upper layers depth by depth")
t=$(( $(left) - 100 ))
if has A2 && [ "$t" -ge 60 ] && [ "${QUICK:-0}" != "1" ]; then
    say "A2: bench_gibbs --parts --T 3 (core 0${ALT_CORE:+; OPENBLAS_CORETYPE=$ALT_CORE on core $(cpu 3)})"
    A2="--data $ROOT/.devdata --jobs 1 --no-tomotopy --first 40 --per-layer 12 --T 3 --parts"
    if [ -n "${ALT_CORE:-}" ]; then
        # shellcheck disable=SC2086
        OPENBLAS_CORETYPE=$ALT_CORE taskset -c "$(cpu 3)" timeout -k 5 "$t" $PY tools/bench_gibbs.py $A2 \
            >"$work/gibbs_parts_$ALT_CORE.txt" 2>&1 &
    fi
    # shellcheck disable=SC2086
    taskset -c 0 timeout -k 5 "$t" $PY tools/bench_gibbs.py $A2 >"$work/gibbs_parts.txt" 2>&1
    wait
    show "$work"/gibbs_parts*.txt
fi

# B. the 8-thread rows and the one-thread rows at K = 400, one run after another
half=$(( ncpu / 2 )); [ "$half" -ge 1 ] || half=1
B_SPECS=${B_SPECS:-"100:partial-$half tomotopy-$half;400:partial-1 tomotopy-1 partial-$half tomotopy-$half"}
IFS=';' read -r -a specs <<<"$B_SPECS"
BT=${B_TOKENS:-$T5}
BIT=${B_ITERS:-$IT}
for spec in "${specs[@]}"; do
    has B || break
    IFS=: read -r K runs <<<"$spec"
    tok=$BT; case "$K" in *@*) tok=${K#*@}; K=${K%@*};; esac
    t=$(( $(left) - 5 ))
    if [ "$t" -lt 30 ]; then say "skipped K=$K (budget)"; continue; fi
    most=$(echo "$runs" | tr ' ' '\n' | sed -n 's/.*-\([0-9]*\)$/\1/p' | sort -n | tail -n 1)
    cpus="0-$(( half - 1 ))"; [ "${most:-1}" -gt "$half" ] && cpus="0-$(( ncpu - 1 ))"
    say "B: $tok K=$K on CPUs $cpus: $runs"
    # shellcheck disable=SC2086
    taskset -c "$cpus" timeout -k 5 "$t" $PY tools/bench_scale.py --tokens "$tok" --K "$K" \
        --runs $runs $BIT --cache "$CACHE" --json "$work/scale_${tok}_K$K.json" >"$work/scale_${tok}_K$K.txt" 2>&1
    show "$work/scale_${tok}_K$K.txt"
done
# C. the collapsed sweep against tomotopy's one worker at 5.2M, K = 100 (issue 11), side by side on
# two cores, nothing else running
t=$(( $(left) - 5 ))
if has C && [ "$t" -ge 40 ]; then
    say "C: $T5 K=100 collapsed (core 0) and tomotopy-1 (core 1)"
    for c in "0 collapsed" "$(cpu 1) tomotopy-1"; do
        read -r core run <<<"$c"
        # shellcheck disable=SC2086
        taskset -c "$core" timeout -k 5 "$t" $PY tools/bench_scale.py --tokens "$T5" --K 100 --runs "$run" \
            $LATE --cache "$CACHE" --json "$work/one_$run.json" >"$work/one_$run.txt" 2>&1 &
    done
    wait
    show "$work"/one_*.txt
else
    say "skipped C (budget)"
fi
say "done"
tar -czf "$OUT/device_quiet.tar.gz" -C "$OUT" quiet && rm -rf "$work"
