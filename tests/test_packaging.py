"""The packaging configuration stays coherent: sdist contents, wheel matrix, release workflow.

Static checks of ``pyproject.toml``, ``MANIFEST.in`` and
``.github/workflows/wheels.yml`` (building is checked by
``tools/build_wheel.py`` and by the workflow itself).  Skipped where the
checkout is not beside the tests (an installed copy).
"""
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not (REPO / "MANIFEST.in").exists(), reason="checkout not beside the tests")


@pytest.fixture(scope="module")
def pyproject():
    tomllib = pytest.importorskip("tomllib")
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_runtime_dependencies_are_numpy_and_scipy_only(pyproject):
    deps = [re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in pyproject["project"]["dependencies"]]
    assert sorted(deps) == ["numpy", "scipy"]
    assert pyproject["project"]["optional-dependencies"]["dask"] == [
        "dask[array]>=2024.1", "distributed>=2024.1"]


def test_license_is_an_spdx_expression_with_its_text_shipped(pyproject):
    # setuptools >= 77 reads the SPDX string and puts LICENSE into the wheel and the sdist;
    # the old table form is deprecated there
    assert pyproject["project"]["license"] == "MIT"
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    pins = [re.fullmatch(r"setuptools>=(\d+)", r) for r in pyproject["build-system"]["requires"]]
    assert any(m and int(m.group(1)) >= 77 for m in pins)


def test_the_version_is_written_once(pyproject):
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pygbn._version.__version__"}


def test_build_requirements_and_package_data(pyproject):
    requires = " ".join(pyproject["build-system"]["requires"])
    for name in ("setuptools", "Cython", "numpy"):
        assert name in requires
    assert (REPO / "pygbn" / "random" / "kernels.pxd").is_file()
    data = pyproject["tool"]["setuptools"]["package-data"]
    # every .pxd (the public Cython API and what it cimports) and every data file ships in
    # the wheel, by its own package's patterns (no catch-all that would take stray files)
    assert "*" not in data
    for path in sorted((REPO / "pygbn").rglob("*")):
        if path.is_file() and path.suffix not in (".py", ".pyx", ".c", ".so", ".pyd", ".html") \
                and "__pycache__" not in path.parts:
            package = ".".join(path.parent.relative_to(REPO).parts)
            assert any(path.match(p) for p in data.get(package, [])), path
    assert {"*.pyx", "*.c"} <= set(pyproject["tool"]["setuptools"]["exclude-package-data"]["*"])


def test_sdist_manifest_carries_the_cython_sources_not_generated_c():
    text = (REPO / "MANIFEST.in").read_text(encoding="utf-8")
    assert re.search(r"^recursive-include pygbn .*\*\.pyx", text, flags=re.M)
    assert re.search(r"^recursive-include pygbn .*\*\.pxd", text, flags=re.M)
    assert re.search(r"^recursive-exclude pygbn \*\.c\b", text, flags=re.M)
    for folder in ("tests", "docs", "tools"):
        assert re.search(rf"^graft {folder}$", text, flags=re.M), folder


def test_cibuildwheel_covers_every_platform_and_tests_the_wheel(pyproject):
    cfg = pyproject["tool"]["cibuildwheel"]
    assert {"x86_64", "aarch64"} <= set(cfg["linux"]["archs"])
    assert "musllinux" in cfg["linux"]["musllinux-aarch64-image"]
    assert "delvewheel repair" in cfg["windows"]["repair-wheel-command"]
    selects = {o["select"]: o for o in cfg["overrides"]}
    arm = selects["*-macosx_arm64"]
    assert "libomp" in arm["before-all"] and arm["inherit"]["environment"] == "append"
    assert "libomp" in arm["environment"]["CPPFLAGS"] and "libomp" in arm["environment"]["LDFLAGS"]
    assert selects["*-macosx_x86_64"]["environment"]["PYGBN_NO_OPENMP"] == "1"
    command = " && ".join(cfg["test-command"])
    files = re.findall(r"\{project\}/(tests/\w+\.py)", command)
    assert "tests/test_cython_api.py" in files
    for f in files:
        assert (REPO / f).is_file(), f
    assert "pygbn demo" in command
    for req in ("pytest", "Cython"):
        assert any(r.startswith(req) for r in cfg["test-requires"])


@pytest.mark.skipif(not (REPO / ".github").is_dir(), reason="the release workflow is not in the sdist")
def test_release_workflow_builds_every_platform_and_publishes_on_tags():
    text = (REPO / ".github" / "workflows" / "wheels.yml").read_text(encoding="utf-8")
    for runner in ("ubuntu-latest", "ubuntu-24.04-arm", "macos-14", "macos-15-intel", "windows-latest"):
        assert re.search(rf"os: {re.escape(runner)}\b", text), runner
    assert "pypa/cibuildwheel@" in text
    assert "tools/build_wheel.py --sdist --tests" in text
    assert "id-token: write" in text and "pypa/gh-action-pypi-publish" in text
    assert "startsWith(github.ref, 'refs/tags/v')" in text


def test_setup_py_translates_nothing_outside_a_build():
    """``python setup.py --version`` (and the sdist, the metadata) neither runs Cython nor
    probes OpenMP: both happen in build_ext only.  Cython and numpy are made unimportable
    in the subprocess; setup.py cythonized on import before, which then failed."""
    import subprocess
    import sys

    pytest.importorskip("setuptools")
    code = ("import runpy, sys\n"
            "for name in ('Cython', 'Cython.Build', 'Cython.Compiler.Main', 'numpy'):\n"
            "    sys.modules[name] = None\n"
            "sys.argv = ['setup.py', '--version']\n"
            "runpy.run_path('setup.py', run_name='__main__')\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    version = re.search(r'__version__ = "([^"]+)"', (REPO / "pygbn" / "_version.py").read_text()).group(1)
    assert res.stdout.strip().splitlines()[-1] == version
    assert "OpenMP" not in res.stdout and "Cythoniz" not in res.stdout + res.stderr


def test_tests_copied_out_of_the_checkout_pass_or_skip(tmp_path):
    """The tests run against an installed package from a copy of ``tests/`` alone (as a wheel's
    tests run): those that read the checkout (docs/, tools/, pyproject.toml) skip with a reason
    instead of failing, and the marker ``slow`` is known without the checkout's pytest settings.
    Collects every module, and runs those that read ``tools/`` and ``pyproject.toml``."""
    import shutil
    import subprocess
    import sys

    import pygbn

    shutil.copytree(REPO / "tests", tmp_path / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]"))
    env = {**os.environ, "PYTHONPATH": str(Path(pygbn.__file__).resolve().parent.parent)}
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "not slow",
            "-W", "error::pytest.PytestUnknownMarkWarning"]
    runs = [["--collect-only", "tests"],
            ["-rs", "tests/test_datasets.py", "tests/test_cli.py::test_jobs_help_says_auto_depends_on_it"]]
    for args in runs:
        res = subprocess.run(base + args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "not beside the tests" in res.stdout or "--collect-only" in args
