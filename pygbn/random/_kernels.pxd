# cython: language_level=3
"""C-level sampling kernels of pygbn (nogil, no validation).

Each kernel draws one variate (or fills one vector) from numpy's ``bitgen_t``
stream.  They trust their input: validation happens in the Python wrappers of
:mod:`pygbn.random`.  This file is private (pygbn's own modules cimport it);
other Cython code should cimport the public, stable ``pygbn/random/kernels.pxd``,
which re-exports the kernels of the two "stable" sections below
(``docs/cython_api.md``).  Hold the BitGenerator's lock while drawing, or give
every thread its own generator (``pygbn._utils.BlockStreams``).

Parametrisations follow the paper (Zhou, Cong & Chen 2016, Section 2.1).
Every kernel is exact at every parameter size (up to floating point); the
algorithms and their sources are in ``docs/samplers.md``.  Limit conventions
for boundary parameters are stated beside each declaration.
"""
from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport binomial_t

# ---- distributions of the augmentable GBN (stable API) ----------------------

# l ~ CRT(n, r): number of tables for n customers, concentration r;
# P(l) = Gamma(r) / Gamma(n + r) |s(n, l)| r^l.  Same law as
# sum(rand(n) < r / (r + arange(n))).  Expected O(1 + min(r, sqrt(r)) log n) time.
# Conventions: n <= 0 -> 0; r = +inf -> n; r <= 0 (limit r -> 0) -> 1 for n >= 1.
cdef int64_t random_crt(bitgen_t *bitgen, int64_t n, double r) noexcept nogil

# u ~ Log(p), P(u) = -p^u / (u ln(1-p)), u >= 1, 0 < p < 1.  p <= 0 -> 1 (limit).
cdef int64_t random_logarithmic(bitgen_t *bitgen, double p) noexcept nogil

# k ~ Pois_+(lam): zero-truncated Poisson, P(k) = lam^k / (k! (e^lam - 1)), k >= 1.
# lam <= 0 -> 1 (limit).  lam up to 9e18.
cdef int64_t random_truncated_poisson(bitgen_t *bitgen, double lam) noexcept nogil

# n ~ Bessel_{-1}(alpha): P(n) = (alpha/2)^(2n-1) / (I_1(alpha) n! (n-1)!), n >= 1.
# alpha <= 0 -> 1 (limit).  O(1) expected time for every alpha.
cdef int64_t random_truncated_bessel(bitgen_t *bitgen, double alpha) noexcept nogil

# x ~ PRG(lam, c): n ~ Pois(lam), x ~ Gam(n, 1/c) (x = 0 iff n = 0); c > 0 is a rate.
cdef double random_prg(bitgen_t *bitgen, double lam, double c) noexcept nogil

# n ~ NB(r, p) in the paper's parametrisation: mean r p / (1 - p).
# p <= 0 or r <= 0 -> 0.  Needs p < 1.
cdef int64_t random_nb(bitgen_t *bitgen, double r, double p) noexcept nogil

# Split n into k cells with probabilities w[i] / total (w >= 0, total = sum(w) > 0).
# Writes all k cells of out (out[i] >= 0, sum(out) == n; cells with w[i] <= 0 get 0).
cdef void random_multinomial_split(bitgen_t *bitgen, int64_t n, const double *w,
                                   Py_ssize_t k, double total, int64_t *out) noexcept nogil

# out ~ Dirichlet(alpha[0..k-1]) (alpha >= 0, at least one > 0); stays finite and
# on the simplex for tiny alpha; components with alpha = 0 are 0.
cdef void random_dirichlet(bitgen_t *bitgen, const double *alpha, Py_ssize_t k,
                           double *out) noexcept nogil

# log of a Gam(a, 1) variate, accurate for tiny a (where the variate underflows to 0).
# a <= 0 -> -inf.
cdef double random_log_gamma(bitgen_t *bitgen, double a) noexcept nogil

# ---- building blocks (also stable) --------------------------------------------

# i with probability w[i] / total (linear search; w >= 0, total = sum(w) > 0).
cdef Py_ssize_t random_categorical(bitgen_t *bitgen, const double *w, Py_ssize_t k,
                                   double total) noexcept nogil

# Poisson(lam), exact for 0 <= lam <= 9e18 (numpy's below 1e10, random_poisson_ptrs above).
cdef int64_t random_poisson_exact(bitgen_t *bitgen, double lam) noexcept nogil

# Gam(a, 1), exact for every a >= 0 (numpy's below 1e10, random_gamma_mt above); 0 for a = 0.
cdef double random_gamma_exact(bitgen_t *bitgen, double a) noexcept nogil

# Bin(n, p) with p clipped to [0, 1]; exact for tiny p and huge n (log1p in the inversion).
# state: numpy's per-thread BTPE cache (set state.has_binomial = 0 before first use).
cdef int64_t random_binomial_exact(bitgen_t *bitgen, int64_t n, double p,
                                   binomial_t *state) noexcept nogil

# ---- single algorithms behind the switches (for tests and benchmarks) --------

# Poisson(lam), lam >= 10: PTRS (Hörmann 1993) with a relative-scale log-PMF.
cdef int64_t random_poisson_ptrs(bitgen_t *bitgen, double lam) noexcept nogil
# Gam(a, 1), a >= 1: Marsaglia-Tsang (2000) with a cancellation-free test.
cdef double random_gamma_mt(bitgen_t *bitgen, double a) noexcept nogil
# CRT(n, r), n >= 1, 0 < r < inf: Bernoulli loop / thinning / binomial blocks (n >= 2).
cdef int64_t _crt_loop(bitgen_t *bitgen, int64_t n, double r) noexcept nogil
cdef int64_t _crt_thinning(bitgen_t *bitgen, int64_t n, double r) noexcept nogil
cdef int64_t _crt_blocks(bitgen_t *bitgen, int64_t n, double r) noexcept nogil
cdef int64_t _crt_sum_skip(bitgen_t *bitgen, int64_t n, double r) noexcept nogil
cdef int64_t _crt_complement(bitgen_t *bitgen, int64_t n, double r) noexcept nogil
# NB(r, p), r > 0, 0 < p < 1: chop-down inversion / the gamma-Poisson mixture.
cdef int64_t _nb_inversion(bitgen_t *bitgen, double r, double p) noexcept nogil
cdef int64_t _nb_mixture(bitgen_t *bitgen, double r, double p) noexcept nogil
# Bessel_{-1}(alpha), alpha > 0: chop-down from the mode / rejection from a halved
# Poisson(alpha) draw / log-concave rejection (Devroye 1987, kept as a cross-check).
cdef int64_t _bessel_chopdown(bitgen_t *bitgen, double alpha) noexcept nogil
cdef int64_t _bessel_poisson(bitgen_t *bitgen, double alpha) noexcept nogil
cdef int64_t _bessel_logconcave(bitgen_t *bitgen, double alpha) noexcept nogil
# multinomial split, out zeroed by the caller, n >= 1: sorted categorical / binomials.
cdef void _split_sorted(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                        double total, int64_t *out) noexcept nogil
cdef void _split_binomial(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                          double total, int64_t *out) noexcept nogil
