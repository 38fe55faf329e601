"""Gibbs sampling for the gamma belief network (paper Appendix B, Algorithms 1-2)."""
from pygbn.inference.gibbs import FitResult, GibbsSampler, check_invariants, fit_layerwise

__all__ = ["GibbsSampler", "fit_layerwise", "FitResult", "check_invariants"]
