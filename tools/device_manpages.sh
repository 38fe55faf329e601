#!/usr/bin/env bash
# The paper's perplexity grid on the Linux man pages (tools/reproduce_perplexity.py --dataset
# linux-manpages --mode full: B = (1000, 500), C = 500, T = 1..5, the 30% protocol) as independent
# single-threaded processes on a many-core machine, all stopped by one wall-clock deadline.
#
# Each cell KIND:K1MAX:SEED[:THREADS] is one process (THREADS: its --n-jobs, default 1; the
# results do not depend on it; the threads of all cells together may not exceed JOBS):
#   lw   the layer-wise fit to T = 5 (no LDA):
#        reproduce_perplexity.py --dataset linux-manpages --mode full --widths K --seed S --no-lda
#   ctl  the single-layer control for the same 5,500 iterations, and LDA (tomotopy) at the same K:
#        reproduce_perplexity.py ... --control-only
# Every process writes under $OUT/manpages/: its --verbose log (<name>.log), its partial record
# (<name>.partial.json: every finished depth, kept if the process is killed) and, when it ends,
# its record (<name>.json, .md, .svg).  At the deadline the processes still going are killed
# (SIGTERM, then SIGKILL); their partial records and logs stay.  Then the seed-spread page of
# everything finished so far is written (perplexity_spread.py) and the folder is packed into
# $OUT/manpages_device.tar.gz (the folder is removed, so that few files come back).
#
# Variables (all optional):
#   OUT      output folder (default ./device_out)
#   BUDGET   seconds of wall time for the whole script, build included (default 540)
#   CELLS    the cells to run (default: the plan below; at most JOBS of them)
#   JOBS     the most threads at once, over all processes (default 16)
#   PYTHON   the interpreter (default python3)
#   EXTRA    more options for every process (e.g. "--burn-in 20 10 --collect 10" for a smoke run)
#   PYGBN_DATA_DIR  the folder holding linux-manpages/ (default: .devdata, ../shared/data,
#            /work/shared/data, the first that has it)
#   DRY_RUN=1  print the commands and exit
#
# On the device machine (16 cores, no network, python3 3.12 with numpy, scipy, Cython and
# scikit-learn, without tomotopy), from a checkout's root, before the call:
#   mkdir -p .devdata && cp -r ../shared/data/linux-manpages .devdata/
#   echo /.devdata/ >> .git/info/exclude
#   # LDA baselines need tomotopy there, carried as a wheel (see /work/.library/device/README.md):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 -d .whl tomotopy==0.14.0   # 14.7 MB, abi3; needs only numpy
# and run it with carry [".devdata", ".whl"] and timeout_s 600:
#   bash tools/device_manpages.sh
# Without tomotopy the ctl processes run with --no-lda (the log says so).
#
# Afterwards, here: tar -xzf manpages_device.tar.gz, then one page per seed and the spread, e.g.
#   python tools/reproduce_perplexity.py --merge manpages/ppl_manpages_full_seed0_K*.json \
#       --name perplexity_manpages_full_seed0
#   python tools/perplexity_spread.py manpages/*.json manpages/ppl_*.log --name perplexity_manpages_full_seeds
# (records, partial records and logs may be mixed: a record beats a log, the deeper run wins, and
# each ctl record becomes the control and LDA baseline of the lw run with the same K1max and seed).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device_out}
BUDGET=${BUDGET:-540}
JOBS=${JOBS:-16}
PY=${PYTHON:-python3}
# The default plan (costs measured on a 2-core box: docs/results/README.md, "Cost of the man-page grid", and the
# report of the man-pages branch): the cells whose full schedule is expected to end within a
# 9-minute single-threaded process: K1max = 25 and 50, layer-wise and control + LDA, five seeds at
# 25 and three at 50 (the layer-wise K1max = 50 fit is the tightest, about 8 min of CPU; if it is
# stopped, its partial record keeps T = 1..4).  Wider cells do not fit in 9 minutes on one thread.
CELLS=${CELLS:-"lw:25:0 ctl:25:0 lw:25:1 ctl:25:1 lw:25:2 ctl:25:2 lw:25:3 ctl:25:3 lw:25:4 ctl:25:4 \
lw:50:0 ctl:50:0 lw:50:1 ctl:50:1 lw:50:2 ctl:50:2"}

start=$(date +%s)
deadline=$((start + BUDGET))
work=$OUT/manpages

data=${PYGBN_DATA_DIR:-}
if [ -z "$data" ]; then
    for d in "$ROOT/.devdata" "$ROOT/../shared/data" /work/shared/data; do
        if [ -f "$d/linux-manpages/counts.npz" ]; then data=$d; break; fi
    done
fi

lda_flag=""
commands=()
n=0
for cell in $CELLS; do
    IFS=: read -r kind K seed threads <<<"$cell"
    threads=${threads:-1}
    name="ppl_manpages_full_seed${seed}_K${K}"
    case $kind in
        lw) extra="--no-lda" ;;
        ctl) extra="--control-only"; name="${name}_control" ;;
        *) echo "error: unknown cell kind in $cell (lw or ctl)" >&2; exit 2 ;;
    esac
    n=$((n + threads))
    if [ "$n" -gt "$JOBS" ]; then echo "error: the cells need more than JOBS=$JOBS threads" >&2; exit 2; fi
    commands+=("tools/reproduce_perplexity.py --dataset linux-manpages --mode full --widths $K --seed $seed \
$extra --n-jobs $threads --verbose 100 --data-dir ${data:-MISSING} --out-dir $work --name $name ${EXTRA:-}|$name")
done

if [ "${DRY_RUN:-0}" = "1" ]; then
    for c in "${commands[@]}"; do echo "$PY ${c%|*} > $work/${c#*|}.log 2>&1"; done
    exit 0
fi
mkdir -p "$work"
if [ -z "$data" ]; then
    echo "error: no linux-manpages data folder (set PYGBN_DATA_DIR or copy it to .devdata/)" >&2; exit 1
fi

# tomotopy for the LDA baselines: installed, or from carried wheels, or none (then --no-lda)
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
. "$ROOT/tools/_device_env.sh"
if ! device_tomotopy; then
    echo "[device] tomotopy is not available: the ctl processes run without the LDA baseline"
    lda_flag="--no-lda"
fi

# build the extensions in place (they are not part of the checkout)
device_build || exit 1
echo "[device] build and setup took $(( $(date +%s) - start )) s; $($PY -c 'import pygbn; print(pygbn.__file__)')"

# one single-threaded process per cell; all stop at the deadline less a margin for packing
left=$((deadline - $(date +%s) - 25))
if [ "$left" -lt 60 ]; then echo "error: only $left s left after the build" >&2; exit 1; fi
echo "[device] ${#commands[@]} processes ($n threads), $left s each at most, $(nproc) cores"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONUNBUFFERED=1  # BLAS: one thread
pids=()
for c in "${commands[@]}"; do
    cmd=${c%|*}
    name=${c#*|}
    case $cmd in *--control-only*) cmd="$cmd $lda_flag" ;; esac
    # shellcheck disable=SC2086
    timeout -k 10 "$left" $PY $cmd >"$work/$name.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$((status + 1)); done
echo "[device] processes done after $(( $(date +%s) - start )) s; $status stopped early or failed"

# what each process reached, then the spread page of everything there
for f in "$work"/*.log; do
    case $f in */build.log|*/pip.log) continue ;; esac
    printf '%s: %s\n' "$(basename "$f" .log)" "$(grep -E 'held-out perplexity|control T=1|LDA K=|wrote|Error|error' "$f" \
        | sed -e 's/^pygbn: //' | tail -n 3 | tr '\n' ' ')"
done
shopt -s nullglob
inputs=("$work"/ppl_*.json)
logs=()
for f in "$work"/ppl_*.log; do case $f in *_control.log) ;; *) logs+=("$f") ;; esac; done
if [ ${#inputs[@]} -gt 0 ] || [ ${#logs[@]} -gt 0 ]; then
    $PY tools/perplexity_spread.py "${inputs[@]}" "${logs[@]}" --out-dir "$work" \
        --name perplexity_manpages_full_seeds --title "Seed-to-seed spread of the man-page perplexity grid (device)" \
        >"$work/spread.log" 2>&1 && sed -n '/paired within each seed/,/^!\[/p' "$work/perplexity_manpages_full_seeds.md" \
        || tail -5 "$work/spread.log"
fi
tar -czf "$OUT/manpages_device.tar.gz" -C "$OUT" manpages && rm -rf "$work"
ls -l "$OUT"
echo "[device] total $(( $(date +%s) - start )) s"
