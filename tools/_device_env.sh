# Sourced by the tools/device_*.sh scripts (needs ROOT, PY and work set): the environment of a
# lent machine's run.
#   device_tomotopy   tomotopy importable: installed, or from the carried wheel in .whl/ (to
#                     /tmp/site, added to PYTHONPATH); returns 1 where it is not available
#   device_build      the extensions built in place unless they import already (the log in
#                     $work/build.log); returns 1 where the build fails

device_tomotopy() {
    if ! $PY -c "import tomotopy" 2>/dev/null && ls "$ROOT"/.whl/tomotopy-*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
            "$ROOT"/.whl/tomotopy-*.whl >"$work/pip.log" 2>&1 && export PYTHONPATH=$PYTHONPATH:/tmp/site
    fi
    $PY -c "import tomotopy" 2>/dev/null
}

device_build() {
    if ! $PY -c "import pygbn.inference._collapsed, pygbn.inference._partial, pygbn.inference._blocked" \
            2>/dev/null; then
        echo "[device] building pygbn ..."
        PYGBN_CYTHON_JOBS=$(nproc) $PY setup.py -q build_ext --inplace >"$work/build.log" 2>&1 \
            || { echo "error: build failed (see build.log)"; tail -20 "$work/build.log"; return 1; }
    fi
}
