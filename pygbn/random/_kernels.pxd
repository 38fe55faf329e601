# cython: language_level=3
"""C-level sampling kernels of pygbn (nogil, no validation).

Each kernel draws one variate from numpy's ``bitgen_t`` stream.  They trust
their input: validation happens in the Python wrappers of
:mod:`pygbn.random`.  Other Cython modules can use them with::

    from numpy.random cimport bitgen_t
    from pygbn.random._kernels cimport random_crt

Parametrisations follow the paper (Zhou, Cong & Chen 2016, Section 2.1).
"""
from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t

# l ~ CRT(n, r): number of tables for n customers, concentration r.
# Conventions: n <= 0 -> 0; r = +inf -> n; r <= 0 (limit r -> 0) -> 1 for n >= 1.
cdef int64_t random_crt(bitgen_t *bitgen, int64_t n, double r) noexcept nogil

# u ~ Log(p), P(u) = -p^u / (u ln(1-p)), u >= 1, 0 < p < 1.
cdef int64_t random_logarithmic(bitgen_t *bitgen, double p) noexcept nogil

# k ~ Pois_+(lam): zero-truncated Poisson, k >= 1, lam > 0.
cdef int64_t random_truncated_poisson(bitgen_t *bitgen, double lam) noexcept nogil

# n ~ Bessel_{-1}(alpha): P(n) = (alpha/2)^(2n-1) / (I_1(alpha) n! (n-1)!), n >= 1, alpha > 0.
cdef int64_t random_truncated_bessel(bitgen_t *bitgen, double alpha) noexcept nogil

# x ~ PRG(lam, c): n ~ Pois(lam), x ~ Gam(n, 1/c) (x = 0 iff n = 0).
cdef double random_prg(bitgen_t *bitgen, double lam, double c) noexcept nogil

# n ~ NB(r, p) in the paper's parametrisation: mean r p / (1 - p).
cdef int64_t random_nb(bitgen_t *bitgen, double r, double p) noexcept nogil

# Split n into k cells with probabilities w[i] / total (w >= 0, total = sum(w) > 0).
# Writes all k cells of out (out[i] >= 0, sum(out) == n).
cdef void random_multinomial_split(bitgen_t *bitgen, int64_t n, const double *w,
                                   Py_ssize_t k, double total, int64_t *out) noexcept nogil

# out ~ Dirichlet(alpha[0..k-1]); stays finite and on the simplex for tiny alpha.
cdef void random_dirichlet(bitgen_t *bitgen, const double *alpha, Py_ssize_t k,
                           double *out) noexcept nogil

# log of a Gam(a, 1) variate, accurate for tiny a (where the variate underflows to 0).
cdef double random_log_gamma(bitgen_t *bitgen, double a) noexcept nogil
