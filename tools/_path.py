"""How the scripts in tools/ find pygbn: the importable one, else this checkout's.

``import _path`` first thing (the script's own folder, tools/, is on ``sys.path``
when it runs as ``python tools/<name>.py``).  When no ``pygbn`` can be imported
(none installed, no ``PYTHONPATH``), the checkout above tools/ goes first on
``sys.path``, for its in-place build (``python setup.py build_ext --inplace``);
otherwise the importable one (``PYTHONPATH=.``, an installed wheel) is used.
Only the standard library: importing this costs nothing a script measures.
"""
import importlib.util
import sys
from pathlib import Path

#: the checkout holding tools/
REPO = Path(__file__).resolve().parent.parent

if importlib.util.find_spec("pygbn") is None:  # an in-place build of this checkout, without PYTHONPATH
    sys.path.insert(0, str(REPO))
