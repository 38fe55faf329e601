#!/usr/bin/env bash
# Thread scaling and quiet single-thread rows on a many-core machine (issues 11, 13 and 17), as one
# script under one wall-clock budget, for a lent 16-core machine.
#
#   0. thread invariance: fixed-seed fits with n_jobs = 1 and 16 (every method) give the same digests.
#   1. (stage 1, side by side) on the first half of the cores, tools/bench_scale.py, one run after
#      another: partial and tomotopy with 1, 2, 4 and 8 threads/workers and collapsed on the
#      5.2M-token synthetic corpus at K = 100 and 400, then (while the budget lasts) partial and
#      tomotopy with 4 and 8 at 20.8M tokens, K = 100 and 400; on the other half, one process per
#      core (taskset): the one-thread rows at 20.8M tokens (collapsed, partial-1 and tomotopy-1 at
#      K = 100 and 400), tools/bench_gibbs.py on the Debian corpus with n_jobs 1 and 2 (the upper
#      layers' speed-up) and tools/bench_test_chain.py (digits, T = 1 and 3).
#   2. (stage 2, the machine to itself) 16 threads/workers: partial, tomotopy and blocked at 5.2M
#      tokens and K = 100, partial and tomotopy at K = 400 and at 20.8M tokens, K = 100 and 400.
#   3. (stage 3, RACE=1, the machine to itself) held-out perplexity against wall time
#      (tools/layer_one_race.py, one run per process so that a cut keeps the earlier ones): the man
#      pages at K = 100 and 400 and the whole Debian corpus at K = 100, collapsed on one thread
#      against partial (and blocked) on all cores and partial on 4; RACE_RESERVE seconds of the
#      budget are kept for it (default 0).
#
# Everything prints to stdout as it goes (rows stay in the log if the budget cuts a step); the
# JSON records and the logs are packed into $OUT/device_bench.tar.gz at the end.
#
# Variables: OUT (default ./device_out), BUDGET (seconds for the whole script, default 540),
# CACHE (the corpora, default .devdata/scale),
# STAGE2_RESERVE (seconds of the budget kept for stage 2, default 150), PYTHON (default python3),
# QUICK=1 (tiny corpora and iterations: a smoke run of the script).
#
# Before the call, from a checkout's root (the folders are ignored by .git/info/exclude):
#   mkdir -p .devdata/scale && cp -r ../shared/data/debian-descriptions ../shared/data/digits .devdata/
#   cp /tmp/pygbn_bench_scale/lda_5200000_seed0.npz .devdata/scale/    # else generated there
#   # tomotopy as a wheel in .whl/ (see tools/device_manpages.sh)
# and run it with carry [".devdata", ".whl"]: bash tools/device_bench.sh
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device_out}
BUDGET=${BUDGET:-540}
PY=${PYTHON:-python3}
start=$(date +%s)
deadline=$((start + BUDGET))
work=$OUT/bench
mkdir -p "$work"
CACHE=${CACHE:-$ROOT/.devdata/scale}
mkdir -p "$CACHE"
core() { echo $(( $1 % $(nproc) )); }   # a core number that exists (a smoke run on few cores)
left() { echo $((deadline - $(date +%s))); }
say() { echo "[device $(( $(date +%s) - start ))s] $*"; }

if [ "${QUICK:-0}" = "1" ]; then
    T5=200k; T20=400k; IT5="--early 2 --late 2 --late-iters 2"; IT20="--early 2 --late 0"
    IT400="--early 2 --late 0"; LATE20="--early 2 --late 2 --late-iters 2"; GIBBS="--first 3 --per-layer 2 --T 3"
    LATE20K4=$LATE20; IT20N=$IT20; CHAIN="--data digits --T 1 --fit 3 --repeat 2 --n-train 200"
else
    T5=5.2M; T20=20.8M; IT5="--early 3 --late 8 --late-iters 5"; IT20="--early 3 --late 0"
    IT400="--early 3 --late 5 --late-iters 3"; LATE20="--early 5 --late 15 --late-iters 5"
    GIBBS="--first 40 --per-layer 12 --T 5"; LATE20K4="--early 3 --late 10 --late-iters 3"
    IT20N="--early 3 --late 4 --late-iters 3"
    CHAIN="--data digits --T 1 3"
fi

export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
. "$ROOT/tools/_device_env.sh"
device_tomotopy || say "tomotopy is not available: its rows will say so"

# the 20.8M-token corpus is generated while the extensions build (single-threaded numpy)
{ $PY - "$CACHE" "$T5" "$T20" >"$work/corpora.log" 2>&1 <<'EOF'
import sys; from pathlib import Path
sys.path.insert(0, "tools")
import bench_scale as b
for t in sys.argv[2:]:
    b.corpus_path(Path(sys.argv[1]), b.parse_tokens(t), 0)
EOF
  touch "$work/corpora.done"; } &
gen_pid=$!
device_build || exit 1
say "built; $($PY -c 'import numpy, pygbn; print("pygbn", pygbn.__file__, "numpy", numpy.__version__)'); $(nproc) cores"
lscpu 2>/dev/null | grep -E "Model name|^CPU\(s\)|Thread|NUMA node\(s\)" | sed 's/^/    /'
device_facts

# A0. thread invariance at 1 and 16 threads (fixed seed: the same chain whatever n_jobs)
timeout 120 $PY - <<'EOF' 2>&1 | tee "$work/invariance.txt"
import sys
sys.path.insert(0, "tools")
import pygbn
from fit_digest import _data, _h, network_digest
X, obs, held, B, R = _data()
for method in ("partial", "blocked", "collapsed"):
    out = []
    for nj in (1, 16):
        m = pygbn.GBN(n_components=30, n_layers=3, burn_in=(40, 20), n_collect=5, transform_iter=(10, 10),
                      method=method, n_jobs=nj, random_state=7).fit(obs)
        out.append(" ".join(network_digest(n) for n in m.networks_) + " " + _h(m.transform(obs[:40])))
    print(f"invariance {method}: n_jobs=1 {out[0]} | n_jobs=16 {out[1]} | {'same' if out[0] == out[1] else 'DIFFERENT'}")
EOF

scale() {  # scale NAME CPUS TOKENS K ITERS RUNS...: one bench_scale call pinned to CPUS, to NAME.txt/.json
    local name=$1 cpus=$2 tokens=$3 K=$4 iters=$5; shift 5
    local t; t=$(( $(left) - ${RESERVE:-0} ))   # RESERVE: seconds kept for the later stage
    if [ "$t" -lt 30 ]; then say "skipped $name (budget)"; return; fi
    say "$name: $tokens K=$K on CPUs $cpus: $*"
    # shellcheck disable=SC2086
    taskset -c "$cpus" timeout -k 5 $((t - 20)) $PY tools/bench_scale.py --tokens "$tokens" --K "$K" --runs "$@" \
        $iters --cache "$CACHE" --json "$work/$name.json" >"$work/$name.txt" 2>&1
}
show() { for f in "$@"; do [ -f "$f" ] && { echo "== $(basename "$f")"; grep -E '^\||error|Error' "$f" | grep -v '^|---'; }; done; }
n=$(nproc)
half=$(( n / 2 ))
LOW="0-$(( half - 1 ))"                      # stage 1, the thread-scaling runs up to $half threads
HIGH="$half-$(( n - 1 ))"                   # stage 1, the one-thread rows beside them, one core each

# Stage 1: up to half the machine for the scaling runs (1, 2, 4, 8 threads, one after another), the
# other half for the one-thread rows side by side (memory bandwidth shared alike by both libraries)
say "stage 1: scaling on CPUs $LOW, one-thread rows on CPUs $HIGH"
S3=0; [ "${RACE:-0}" = "1" ] && S3=${RACE_RESERVE:-0}   # seconds kept for stage 3
S2=$(( ${STAGE2_RESERVE:-150} + S3 ))   # seconds kept for stages 2 and 3
p1=()
( RESERVE=$S2 scale a_5M_K100 "$LOW" $T5 100 "$IT5" partial-1 tomotopy-1 collapsed partial-2 tomotopy-2 partial-4 tomotopy-4 \
      partial-$half tomotopy-$half
  RESERVE=$S2 scale a_5M_K400 "$LOW" $T5 400 "$IT400" partial-1 tomotopy-1 collapsed partial-2 tomotopy-2 \
      partial-4 tomotopy-4 partial-$half tomotopy-$half
  while [ ! -e "$work/corpora.done" ]; do sleep 1; done
  RESERVE=$S2 scale a_20M_K100 "$LOW" $T20 100 "$IT20" partial-4 tomotopy-4 partial-$half tomotopy-$half
  RESERVE=$S2 scale a_20M_K400 "$LOW" $T20 400 "$IT20" partial-4 tomotopy-4 partial-$half tomotopy-$half ) &
p1+=($!)
wait $gen_pid; cat "$work/corpora.log"
i=$half
# one core each; the parts of one spec (";") follow each other on its core
for spec in "collapsed 100 LATE20" "partial-1 100 LATE20;chain" "tomotopy-1 100 LATE20" \
            "collapsed 400 LATE20K4;tomotopy-1 400 IT20" "partial-1 400 LATE20K4"; do
    ( IFS=';' read -r -a parts <<<"$spec"
      for part in "${parts[@]}"; do
          if [ "$part" != chain ]; then
              read -r run K itv <<<"$part"
              RESERVE=$S2 scale "b_20M_${run}_K$K" "$(core $i)" $T20 "$K" "${!itv}" "$run"
              continue
          fi
          t=$(( $(left) - 20 - S2 ))
          if [ "$t" -ge 30 ] && [ -d "$ROOT/.devdata/digits" ]; then
              say "test chain on CPU $(core $i)"
              # shellcheck disable=SC2086
              taskset -c "$(core $i)" timeout -k 5 "$t" $PY tools/bench_test_chain.py --data-dir "$ROOT/.devdata" \
                  $CHAIN >"$work/b_test_chain.txt" 2>&1
          fi
      done ) &
    p1+=($!); i=$((i + 1))
done
if [ -d "$ROOT/.devdata/debian-descriptions" ]; then
    t=$(( $(left) - 20 - S2 ))
    # shellcheck disable=SC2086
    taskset -c "$(core $i)" timeout -k 5 "$t" $PY tools/bench_gibbs.py --data "$ROOT/.devdata" --jobs 1 \
        --no-tomotopy $GIBBS >"$work/b_gibbs_j1.txt" 2>&1 &
    p1+=($!)
    # shellcheck disable=SC2086
    taskset -c "$(core $((i + 1))),$(core $((i + 2)))" timeout -k 5 "$t" $PY tools/bench_gibbs.py \
        --data "$ROOT/.devdata" --jobs 2 --no-tomotopy $GIBBS >"$work/b_gibbs_j2.txt" 2>&1 &
    p1+=($!)
fi
for p in "${p1[@]}"; do wait "$p"; done
show "$work"/a_*.txt "$work"/b_*.txt

# Stage 2: the whole machine, one run at a time
say "stage 2: $n threads on the whole machine"
ALL="0-$(( n - 1 ))"
RESERVE=$S3 scale c_5M_K100 "$ALL" $T5 100 "$IT5" partial-$n tomotopy-$n blocked-$n
RESERVE=$S3 scale c_5M_K400 "$ALL" $T5 400 "$IT400" partial-$n tomotopy-$n
RESERVE=$S3 scale c_20M_K100 "$ALL" $T20 100 "$IT20N" partial-$n tomotopy-$n
RESERVE=$S3 scale c_20M_K400 "$ALL" $T20 400 "$IT20N" partial-$n tomotopy-$n
show "$work"/c_*.txt

# Stage 3: perplexity against wall time, one run per process (the same split and seed in each)
if [ "${RACE:-0}" = "1" ]; then
    say "stage 3: layer_one_race"
    if [ "${QUICK:-0}" = "1" ]; then RM="--n-docs 300 --iters 4 --every 2"; RD="--n-docs 2000 --iters 4 --every 2"
    else RM="--n-docs 0 --iters 400 --every 40"; RD="--n-docs 0 --iters 200 --every 20"; fi
    for spec in "man 100 collapsed-1" "man 100 partial-$n" "deb 100 collapsed-1" "deb 100 partial-$n" \
                "man 400 collapsed-1" "man 400 partial-$n" "deb 100 blocked-$n" "man 100 partial-4" \
                "deb 100 partial-4"; do
        read -r ds K run <<<"$spec"
        t=$(( $(left) - 10 ))
        if [ "$t" -lt 20 ]; then say "skipped race $spec (budget)"; continue; fi
        if [ "$ds" = man ]; then args="--dataset linux-manpages $RM"; else args="--dataset debian $RD"; fi
        say "race $spec"
        # shellcheck disable=SC2086
        timeout -k 5 "$t" $PY tools/layer_one_race.py --data-dir "$ROOT/.devdata" $args --K "$K" \
            --runs "$run" >"$work/r_${ds}_K${K}_${run}.txt" 2>&1
        tail -n +3 "$work/r_${ds}_K${K}_${run}.txt"
    done
fi
say "done"
tar -czf "$OUT/device_bench.tar.gz" -C "$OUT" bench && rm -rf "$work"
ls -l "$OUT"
