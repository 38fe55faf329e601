"""Build the Cython extensions of pygbn.

Every ``.pyx`` file under ``pygbn/`` becomes one extension module.  They are
compiled against numpy's C random API (``numpy.random.c_distributions``,
linked to ``npyrandom`` and ``npymath``) and, where the compiler supports it,
with OpenMP so that ``prange`` loops run in parallel.  Where OpenMP is missing
the same code compiles serially (``prange`` degrades to ``range``).

Set ``PYGBN_NO_OPENMP=1`` to force a serial build.  ``CPPFLAGS``, ``CFLAGS``
and ``LDFLAGS`` from the environment apply to the OpenMP probe as to the build
(for example the include and library folders of Homebrew's libomp on macOS).
``PYGBN_CYTHON_JOBS=N`` translates N ``.pyx`` files in parallel.  Cython,
numpy and the OpenMP probe are only used when the extensions are built
(:class:`BuildExt`): ``python setup.py --version``, ``egg_info`` or ``sdist``
do not translate anything.  Building wheels: ``docs/install.md``.
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent


def _compiler_command():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return cc.split()


def _env_flags(*names):
    """Flags from environment variables (CPPFLAGS, CFLAGS, LDFLAGS), as the real build uses them.

    setuptools adds these to every compile and link; the OpenMP probe must see
    them too (on macOS they point at Homebrew's libomp, see docs/install.md).
    """
    return [flag for name in names for flag in shlex.split(os.environ.get(name, ""))]


def openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or ([], []) if unavailable."""
    if os.environ.get("PYGBN_NO_OPENMP", "").strip().lower() in ("1", "true", "yes", "on"):
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    candidates = [(["-fopenmp"], ["-fopenmp"])]
    if sys.platform == "darwin":
        candidates.insert(0, (["-Xpreprocessor", "-fopenmp"], ["-lomp"]))
    src = "#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n"
    cc = _compiler_command()
    if shutil.which(cc[0]) is None:
        return [], []
    with tempfile.TemporaryDirectory() as tmp:
        c_file = Path(tmp) / "check_openmp.c"
        c_file.write_text(src)
        for cflags, lflags in candidates:
            try:
                res = subprocess.run(
                    cc + _env_flags("CPPFLAGS", "CFLAGS") + cflags
                    + [str(c_file), "-o", str(Path(tmp) / "a.out")] + _env_flags("LDFLAGS") + lflags,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=60,
                )
            except (OSError, subprocess.SubprocessError):
                continue
            if res.returncode == 0:
                return cflags, lflags
    return [], []


#: Cython's compiler directives for every extension
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "embedsignature": True,
}


def extensions():
    """One Extension per ``.pyx`` under ``pygbn/``, by name and source only: what they are
    compiled with is set by :class:`BuildExt` when they are built."""
    exts = []
    for pyx in sorted((HERE / "pygbn").rglob("*.pyx")):
        rel = pyx.relative_to(HERE)
        exts.append(Extension(".".join(rel.with_suffix("").parts), [str(rel)]))
    return exts


def configure(exts):
    """The build options of ``exts`` (numpy's C random API, the OpenMP flags), then the
    extensions translated by Cython (:func:`Cython.Build.cythonize`)."""
    import numpy as np
    from Cython.Build import cythonize

    omp_c, omp_l = openmp_flags()
    if omp_c:
        print("pygbn: building with OpenMP", omp_c)
    else:
        print("pygbn: OpenMP not available, building serial kernels")
    np_inc = np.get_include()
    np_root = Path(np_inc).parent.parent  # .../numpy
    lib_dirs = [str(np_root / "random" / "lib"), str(np_root / "_core" / "lib")]
    # -ffp-contract=off: no multiply-add is fused into an FMA, so the run-time
    # dispatched versions of a kernel (AVX-512 has FMA, the others not) give the same results
    extra_c = ["-O3", "-ffp-contract=off"] if sys.platform != "win32" else ["/O2"]
    for ext in exts:
        ext.include_dirs = [np_inc]
        ext.library_dirs = lib_dirs
        ext.libraries = ["npyrandom", "npymath"] + ([] if sys.platform == "win32" else ["m"])
        ext.define_macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
        ext.extra_compile_args = extra_c + omp_c
        ext.extra_link_args = omp_l
    return cythonize(exts, compiler_directives=DIRECTIVES,
                     nthreads=int(os.environ.get("PYGBN_CYTHON_JOBS", "0")) or None)


class BuildExt(build_ext):
    """setuptools' build_ext, with the extensions configured and translated by Cython
    (:func:`configure`) first: only a build probes OpenMP and runs Cython."""

    def run(self):
        # cythonize returns new Extension objects; the ones setuptools has finalized (with
        # their output paths) take their settings and C sources
        made = {ext.name: ext for ext in configure(self.extensions)}
        for ext in self.extensions:
            vars(ext).update(vars(made[ext.name]))
        super().run()


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
