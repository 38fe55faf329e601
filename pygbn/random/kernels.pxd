# cython: language_level=3
"""Public Cython API of pygbn's samplers: nogil kernels on numpy's ``bitgen_t``.

This file is the stable interface for other Cython code::

    from libc.stdint cimport int64_t
    from pygbn.random.kernels cimport bitgen_t, get_bitgen, random_crt

    def tables(generator, int64_t n, double r):     # a numpy Generator or BitGenerator
        bit_generator = getattr(generator, "bit_generator", generator)
        cdef bitgen_t *rng = get_bitgen(bit_generator)
        with bit_generator.lock, nogil:
            l = random_crt(rng, n, r)
        return l

Every kernel draws from the stream exactly as the Python sampler of the same
name in :mod:`pygbn.random` does, so a downstream loop over one stream gives
the Python API's numbers for outputs drawn in one block (the Python samplers
split outputs of more than 16,384 items, 65,536 // k rows for
``multinomial_split`` and ``dirichlet``, into spawned child streams, see
``docs/cython_api.md``).  The kernels trust their input (no validation, no
exceptions): check arguments where they enter your code.  Boundary
conventions (limits) are stated beside each name below and in
``docs/cython_api.md``.

Stability: the names and signatures below keep their meaning across pygbn
releases of the same major version; new kernels may be added.  The
implementation lives in the private module ``pygbn.random._kernels`` (which
may change); Cython checks the signatures when your extension is imported,
so a mismatch raises ``ImportError``/``TypeError`` instead of misbehaving.
A compiled extension imports ``pygbn.random._kernels`` at run time, so pygbn
must be installed where it runs.

Threads: a ``bitgen_t`` is not thread safe, nor is a ``binomial_t``.  Hold
the BitGenerator's ``lock`` while drawing, or give every thread its own
generator (for example ``[numpy.random.default_rng(s) for s in
numpy.random.SeedSequence(seed).spawn(n_blocks)]``, one per fixed block of
work) and its own ``binomial_t``.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport binomial_t

from pygbn.random._kernels cimport (
    # distributions of the augmentable GBN (pygbn.random's samplers)
    random_crt,                 # (bitgen, int64 n, double r) -> int64; CRT(n, r)
                                #   n <= 0 -> 0; r = +inf -> n; r <= 0 -> 1 (n >= 1)
    random_logarithmic,         # (bitgen, double p) -> int64; Log(p), 0 <= p < 1; p <= 0 -> 1
    random_truncated_poisson,   # (bitgen, double lam) -> int64; Pois_+(lam); lam <= 0 -> 1;
                                #   exact up to lam = 9e18, larger lam is clipped to 9e18
                                #   (the Python sampler stops at 1e18)
    random_truncated_bessel,    # (bitgen, double alpha) -> int64; Bessel_{-1}(alpha);
                                #   alpha <= 0 -> 1; alpha above 9e18 is clipped to 9e18
                                #   (the Python sampler stops at 1e18)
    random_prg,                 # (bitgen, double lam, double c) -> double; PRG(lam, c), rate c > 0
    random_nb,                  # (bitgen, double r, double p) -> int64; NB(r, p), mean r p/(1-p);
                                #   p <= 0 or r <= 0 -> 0; needs p < 1
    random_multinomial_split,   # (bitgen, int64 n, const double *w, Py_ssize_t k, double total,
                                #   int64 *out) -> void; out ~ Mult(n, w / total), writes all k
                                #   cells; w >= 0, total = sum(w) > 0, finite and >= 2**-900
                                #   (else divide the row by its max first, as the Python
                                #   sampler does: an infinite total puts every count in the
                                #   last positive cell)
    random_dirichlet,           # (bitgen, const double *alpha, Py_ssize_t k, double *out) -> void;
                                #   out ~ Dir(alpha), finite and on the simplex for tiny alpha
    random_log_gamma,           # (bitgen, double a) -> double; log of a Gam(a, 1) variate,
                                #   accurate for tiny a; a <= 0 -> -inf
    # building blocks
    random_categorical,         # (bitgen, const double *w, Py_ssize_t k, double total)
                                #   -> Py_ssize_t; i with probability w[i] / total; w >= 0,
                                #   total = sum(w) > 0, finite and >= 2**-900 (as above)
    random_poisson_exact,       # (bitgen, double lam) -> int64; Pois(lam), exact for
                                #   0 <= lam <= 9e18 (larger lam is clipped to 9e18)
    random_gamma_exact,         # (bitgen, double a) -> double; Gam(a, 1), a >= 0 (0 for a = 0)
    random_binomial_exact,      # (bitgen, int64 n, double p, binomial_t *state) -> int64;
                                #   Bin(n, p), p clipped to [0, 1]; set state.has_binomial = 0
                                #   before the first use of a state; one state per thread
)


cdef inline bitgen_t *get_bitgen(object generator) except NULL:
    """The ``bitgen_t*`` of a numpy ``Generator`` or ``BitGenerator`` (via its capsule).

    The pointer is valid while the generator is alive; hold
    ``generator.bit_generator.lock`` (or own the generator in one thread)
    while drawing from it.
    """
    bit_generator = getattr(generator, "bit_generator", generator)
    return <bitgen_t *> PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")
