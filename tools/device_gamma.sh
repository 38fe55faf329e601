#!/usr/bin/env bash
# The gamma row kernel (pygbn/random/_gamma.pxd) built several ways on a lent machine, for a
# machine whose compiler makes its shapes-below-one path slow (issue 13: on a 16-core machine with
# GCC 13.3 the row kernel took 75-121 ns a draw at a < 1, before commit 85bc445, where GCC 12.2 on
# the 2-core machine gives 15-47): tools/bench_samplers.py --rows for each build, one core each,
# side by side, and how each build compiled the vectorised passes (pygbn_gs_lead, pygbn_gs_tail)
# and the product paths.
#
#   default      as setup.py builds it (target_clones avx512f, avx2, default)
#   noavx512     CFLAGS=-DPYGBN_GS_LEAD_NO_AVX512 (avx2 and default only)
#   noclones     CFLAGS=-DPYGBN_GS_LEAD_NO_CLONES (the baseline x86-64 version only)
#   notrap       CFLAGS=-fno-trapping-math (for the whole module, beside the kernels' pragma)
#   info         (built, not timed) GCC's -fopt-info reports: the loops vectorised per module, and
#                on the lines of pygbn_gs_lead in pygbn/random/_gamma.c whether its loop was
#                vectorised, and why not
# For each build: the instructions of each version of pygbn_gs_lead (objdump), how many use
# ymm/zmm registers (0: not vectorised).
#
# Variables: OUT (default ./device_out), PYTHON (default python3), VARIANTS (default all five).
# Run from a checkout's root; every variant builds in its own copy under /tmp.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device_out}
PY=${PYTHON:-python3}
work=$OUT/gamma
mkdir -p "$work"
start=$(date +%s)
say() { echo "[device $(( $(date +%s) - start ))s] $*"; }
. "$ROOT/tools/_device_env.sh"
device_build || exit 1
say "built default; $(nproc) cores; $( (${CC:-cc} --version 2>/dev/null || gcc --version) | head -n 1)"
declare -A FLAGS=([noavx512]="-DPYGBN_GS_LEAD_NO_AVX512" [noclones]="-DPYGBN_GS_LEAD_NO_CLONES"
                  [notrap]="-fno-trapping-math" [info]="-fopt-info-vec-all")
VARIANTS=${VARIANTS:-"default notrap noavx512 noclones info"}
for v in $VARIANTS; do
    [ "$v" = default ] && continue
    rm -rf "/tmp/gv_$v" && mkdir -p "/tmp/gv_$v"
    tar -C "$ROOT" --exclude=./.devdata --exclude=./.whl --exclude=./device_out --exclude=./build -cf - . \
        | tar -C "/tmp/gv_$v" -xf -
    find "/tmp/gv_$v/pygbn" -name '*.so' -delete
    ( cd "/tmp/gv_$v" && CFLAGS="${FLAGS[$v]}" PYGBN_CYTHON_JOBS=4 $PY setup.py -q build_ext --inplace -j 4 \
        >"$work/build_$v.log" 2>&1 || echo "error: build $v failed" ) &
done
wait
say "variants built"
core=0
for v in $VARIANTS; do
    [ "$v" = info ] && continue
    dir=$ROOT; [ "$v" = default ] || dir=/tmp/gv_$v
    ( cd "$dir" && PYTHONPATH=$dir taskset -c "$core" timeout -k 5 150 $PY tools/bench_samplers.py --rows \
        >"$work/rows_$v.txt" 2>&1 ) &
    core=$(( (core + 2) % $(nproc) ))
done
wait
for v in $VARIANTS; do [ "$v" = info ] || { echo "== rows_$v"; sed -n '1,24p' "$work/rows_$v.txt"; }; done

lead_counts() {   # the versions of the vectorised passes in one build's modules
    local so dis body c f
    so=$(ls "$1"/pygbn/random/_gamma*.so 2>/dev/null | head -n 1)
    [ -n "$so" ] || { echo "    (no _gamma module)"; return; }
    dis=$(objdump -d --no-show-raw-insn "$so" 2>/dev/null)
    for f in pygbn_gs_lead pygbn_gs_tail; do
        for c in avx512f avx2 default; do
            body=$(awk -v n="<$f.$c>:" '$2==n{f=1;next} /^$/{f=0} f' <<<"$dis")
            [ -n "$body" ] || body=$(awk -v n="<$f>:" '$2==n{f=1;next} /^$/{f=0} f' <<<"$dis")
            echo "    ${f#pygbn_}.$c: $(grep -c . <<<"$body") instructions, $(grep -c call <<<"$body") calls," \
                "$(grep -c zmm <<<"$body") with zmm, $(grep -c ymm <<<"$body") with ymm"
        done
    done
    # the Phi theta product's paths (pygbn/inference/_upper.pyx: intrinsics, so always vector code)
    so=$(ls "$1"/pygbn/inference/_upper*.so 2>/dev/null | head -n 1)
    [ -n "$so" ] || return
    dis=$(objdump -d --no-show-raw-insn "$so" 2>/dev/null)
    for f in pygbn_product_avx512 pygbn_product_avx2; do
        body=$(awk -v n="<$f>:" '$2==n{f=1;next} /^$/{f=0} f' <<<"$dis")
        echo "    ${f#pygbn_}: $(grep -c . <<<"$body") instructions, $(grep -c 'vfmadd' <<<"$body") FMAs"
    done
}
if command -v objdump >/dev/null; then
    for v in $VARIANTS; do
        dir=$ROOT; [ "$v" = default ] || dir=/tmp/gv_$v
        echo "== $v"; lead_counts "$dir"
    done
fi
if [ -f "$work/build_info.log" ]; then
    # loops GCC vectorised, per generated C file (compare with another compiler's build)
    grep -oE "pygbn/[a-z_/]+\.c:[0-9]+:[0-9]+: optimized: loop vectorized" "$work/build_info.log" \
        | cut -d: -f1 | sort | uniq -c >"$work/vec_counts.txt"
    echo "== loops vectorised per module ($(awk '{s += $1} END {print s}' "$work/vec_counts.txt") in all)"
    cat "$work/vec_counts.txt"
    for f in pygbn_gs_lead_body pygbn_gs_tail_body; do
        lo=$(grep -n "void $f(const double" "$ROOT/pygbn/random/_gamma.c" | head -n 1 | cut -d: -f1)
        [ -n "$lo" ] || continue
        echo "== info: -fopt-info-vec-all on _gamma.c lines $lo-$(( lo + 30 )) ($f)"
        grep -E "_gamma\.c:[0-9]+" "$work/build_info.log" | awk -F: -v lo="$lo" '$2 >= lo && $2 <= lo + 30' \
            | sort | uniq -c | head -n 60
    done
fi
so=$(ls "$ROOT"/pygbn/random/_gamma*.so | head -n 1)
cp "$so" "$ROOT/pygbn/random/_gamma.c" "$work/" 2>/dev/null
say "done"
