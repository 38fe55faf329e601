"""Exact samplers for the distributions of the augmentable gamma belief network."""
from pygbn.random._api import crt

__all__ = ["crt"]
