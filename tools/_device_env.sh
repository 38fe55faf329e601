# Sourced by the tools/device_*.sh scripts (needs ROOT, PY and work set): the environment of a
# lent machine's run.
#   device_tomotopy   tomotopy importable: installed, or from the carried wheel in .whl/ (to
#                     /tmp/site, added to PYTHONPATH), and threadpoolctl likewise where its wheel
#                     is there; returns 1 where tomotopy is not available
#   device_build      the extensions built in place unless they import already (the log in
#                     $work/build.log); returns 1 where the build fails

device_tomotopy() {
    if ! $PY -c "import tomotopy" 2>/dev/null && ls "$ROOT"/.whl/tomotopy-*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
            "$ROOT"/.whl/tomotopy-*.whl >"$work/pip.log" 2>&1 && export PYTHONPATH=$PYTHONPATH:/tmp/site
    fi
    if ! $PY -c "import threadpoolctl" 2>/dev/null && ls "$ROOT"/.whl/threadpoolctl-*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
            "$ROOT"/.whl/threadpoolctl-*.whl >>"$work/pip.log" 2>&1
        case ":$PYTHONPATH:" in *:/tmp/site:*) ;; *) export PYTHONPATH=$PYTHONPATH:/tmp/site;; esac
    fi
    $PY -c "import tomotopy" 2>/dev/null
}

device_build() {
    if ! $PY -c "import pygbn.inference._collapsed, pygbn.inference._partial, pygbn.inference._blocked" \
            2>/dev/null; then
        echo "[device] building pygbn ..."
        PYGBN_CYTHON_JOBS=$(nproc) $PY setup.py -q build_ext --inplace -j "$(nproc)" >"$work/build.log" 2>&1 \
            || { echo "error: build failed (see build.log)"; tail -20 "$work/build.log"; return 1; }
    fi
}

# What decides the speed of the kernels on a machine: the C compiler, the CPU's vector
# extensions (the gamma row kernel's target_clones pick avx512f, avx2 or the baseline at run
# time, as does the upper layers' Phi theta product kernel: AVX-512, AVX2 + FMA or portable C),
# numpy and scipy, and the BLAS numpy and scipy use with the kernel architecture OpenBLAS chose.
device_facts() {
    echo "    compiler: $( (${CC:-cc} --version 2>/dev/null || gcc --version 2>/dev/null) | head -n 1)"
    echo "    CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); flags:" \
        "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|fma|avx512_fp16)$' | tr '\n' ' ')"
    $PY - <<'PY' 2>&1 | sed 's/^/    /'
import numpy, scipy
print("numpy", numpy.__version__, "scipy", scipy.__version__)
try:
    import scipy.linalg  # noqa: F401  (loads the BLAS that cython_blas uses)
    from threadpoolctl import threadpool_info
    for lib in threadpool_info():
        print(lib.get("internal_api"), lib.get("version"), lib.get("architecture"),
              "threads", lib.get("num_threads"), lib.get("filepath", "").rsplit("/", 1)[-1])
except ImportError:
    print("threadpoolctl not installed: no BLAS architecture")
PY
}
