"""pygbn: exact, fast inference for the augmentable gamma belief network.

Zhou, Cong & Chen, "Augmentable Gamma Belief Networks", JMLR 17 (2016).
"""
import logging

__version__ = "0.1.0.dev0"

logging.getLogger("pygbn").addHandler(logging.NullHandler())

from pygbn import random  # noqa: E402

__all__ = ["random", "__version__"]
