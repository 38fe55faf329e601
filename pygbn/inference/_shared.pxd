# Declarations shared by the layer-one and upper-layer kernels
# (pygbn.inference._blocked, _upper, _collapsed, _partial).

from libc.math cimport log, exp, INFINITY
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t

ctypedef fused count_t:
    # per-document counts m of a layer (uint16 where every document's total fits;
    # the sampler picks the type, pygbn.inference.layer_one.count_dtype)
    uint16_t
    int32_t
    int64_t

ctypedef fused topic_t:
    # a token's label: int16 when K <= 32767
    int16_t
    int32_t

ctypedef fused doc_count_t:
    # n_jk of a token-level layer one: uint16 when no document holds more than 65535 tokens
    uint16_t
    int32_t


cdef inline int64_t count_max(const count_t *like) noexcept nogil:
    """The largest count an array of ``count_t`` holds (the cap of the layer-one
    splits' overflow guard); ``like`` only selects the type (NULL is fine)."""
    if count_t is uint16_t:
        return 65535
    elif count_t is int32_t:
        return 2147483647
    else:
        return 9223372036854775807


cdef inline double log_rescaled_weights(const double *phi_row, const double *theta_row, Py_ssize_t k,
                                        double *w) noexcept nogil:
    """Weights ``phi_i theta_i`` rescaled by their maximum in log space, for cells
    whose products underflow: ``w[i] = exp(log phi_i + log theta_i - max)`` (0
    where a factor is 0); returns their sum (at least 1), or, when every factor
    pair has a zero, sets every ``w[i] = 1`` and returns k."""
    cdef Py_ssize_t i
    cdef double mx = -INFINITY, lw, total = 0.0
    for i in range(k):
        if phi_row[i] > 0.0 and theta_row[i] > 0.0:
            lw = log(phi_row[i]) + log(theta_row[i])
            if lw > mx:
                mx = lw
    for i in range(k):
        if phi_row[i] > 0.0 and theta_row[i] > 0.0:
            w[i] = exp(log(phi_row[i]) + log(theta_row[i]) - mx)
        else:
            w[i] = 0.0
        total += w[i]
    if not total > 0.0:
        for i in range(k):
            w[i] = 1.0
        total = <double> k
    return total
