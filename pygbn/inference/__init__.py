"""Gibbs sampling for the gamma belief network (paper Appendix B, Algorithms 1-2).

:mod:`~pygbn.inference.gibbs` holds the chain and its conditionals,
:mod:`~pygbn.inference.layerwise` the layer-wise training schedule,
:mod:`~pygbn.inference.testchain` the test-time chain for new samples and the
held-out predictive, :mod:`~pygbn.inference.geweke` Geweke's test harness.
"""
from pygbn.inference.gibbs import GibbsSampler
from pygbn.inference.invariants import check_invariants
from pygbn.inference.layerwise import FitResult, Schedule, fit_layerwise
from pygbn.inference.testchain import HeldoutPredictive, LocalInference, infer_local

__all__ = ["GibbsSampler", "fit_layerwise", "FitResult", "Schedule", "infer_local",
           "LocalInference", "HeldoutPredictive", "check_invariants"]
