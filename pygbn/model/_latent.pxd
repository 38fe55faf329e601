# How the layer-one latent count of an observed cell is drawn given the
# observation (the one definition of these codes: pygbn.model.links exports
# them to Python, pygbn.inference._blocked and _fixed cimport them and
# latent_count below).
from libc.math cimport sqrt
from libc.stdint cimport int64_t
from numpy.random cimport bitgen_t
from pygbn.random._kernels cimport random_crt, random_truncated_poisson, random_truncated_bessel

cpdef enum LatentMode:
    LATENT_COUNTS = 0         # Poisson link: the observation is the latent count      (eq:PFA)
    LATENT_CRT = 1            # CRT(m, sum_k phi_vk theta_kj), eq:CRT: no link's mode (the upper
                              # layers draw theirs in pygbn.inference._upper.propagate_counts)
    LATENT_TRUNC_POISSON = 2  # Bernoulli-Poisson link, b = 1: Pois_+(sum_k ...)       (eq:Ber-PGBN)
    LATENT_TRUNC_BESSEL = 3   # PRG link, y > 0: Bessel_-1(2 sqrt(a_j y sum_k ...))    (eq:Gam-PGBN)


# the largest Bessel_-1 parameter latent_count draws with: random_truncated_bessel clips a
# larger one to its Poisson draw's cap (POISSON_LAM_CAP in pygbn/random/_kernels.pyx, the same
# value, spelt twice: one macro for both in _kernels.pxd left the draws the same but timed the
# truncated Poisson and Bessel kernels 1-5% slower, twenty-ninth session), so it would draw
# from another law
DEF LATENT_ALPHA_MAX = 9.0e18


cdef inline int64_t latent_count(bitgen_t *g, int mode, double obs, double total, double aux) noexcept nogil:
    """The latent count of one observed cell given ``total`` = sum_k phi_vk theta_kj
    (and, for the PRG link, ``aux`` = a_j): the observation itself (eq:PFA), CRT(obs, total)
    (eq:CRT), Pois_+(total) (eq:Ber-PGBN, where b = 1) or Bessel_-1(2 sqrt(aux obs total))
    (eq:Gam-PGBN, where y > 0), by ``mode`` (LatentMode).  -1 (no draw) when that Bessel
    parameter is above LATENT_ALPHA_MAX or NaN: the callers report the cell's document as
    one whose latent total no count type holds."""
    cdef double alpha
    if mode == LATENT_COUNTS:
        return <int64_t> obs
    elif mode == LATENT_CRT:
        return random_crt(g, <int64_t> obs, total)
    elif mode == LATENT_TRUNC_POISSON:
        return random_truncated_poisson(g, total)
    else:  # LATENT_TRUNC_BESSEL
        alpha = 2.0 * sqrt(aux * obs * total)
        if not alpha <= LATENT_ALPHA_MAX:
            return -1
        return random_truncated_bessel(g, alpha)
