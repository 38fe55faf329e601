"""Evaluation: held-out perplexity, convergence diagnostics and topic quality.

Modules
-------
:mod:`pygbn.evaluation.heldout`
    The token split and the held-out perplexity of the paper's protocol
    (Section 4.1).
:mod:`pygbn.evaluation.convergence`
    Split-R-hat and effective sample size of several chains' traces.
:mod:`pygbn.evaluation.coherence`
    Topic coherence (UMass, UCI, NPMI, C_V) and topic diversity.

Every public name of these modules (their ``__all__``) is importable from here.
"""
from pygbn.evaluation.coherence import (DEFAULT_WINDOWS, EPSILON, MEASURES, Cooccurrence, check_topics,
                                        coherence, coherence_from_counts, cooccurrence, diversity,
                                        window_for)
from pygbn.evaluation.convergence import effective_sample_size, rhat, trace_chains, trace_diagnostics
from pygbn.evaluation.heldout import (SPLIT_SEED_TAG, heldout_log_terms, perplexity_from_sums,
                                      perplexity_from_terms, score_split, split_tokens)

__all__ = ["split_tokens", "score_split", "SPLIT_SEED_TAG", "perplexity_from_sums", "heldout_log_terms", "perplexity_from_terms",
           "coherence", "coherence_from_counts", "diversity", "cooccurrence", "Cooccurrence", "MEASURES", "DEFAULT_WINDOWS",
           "EPSILON", "window_for", "check_topics",
           "rhat", "effective_sample_size", "trace_chains", "trace_diagnostics"]
