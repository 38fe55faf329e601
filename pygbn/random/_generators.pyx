# cython: language_level=3
"""Blocked, parallel fill loops behind the Python samplers of :mod:`pygbn.random`.

Every loop fills a flat output in fixed blocks: block ``b`` covers items
``b * block .. min((b + 1) * block, n_items)`` and draws only from stream
``streams[b]`` (a ``bitgen_t*`` address), so the result does not depend on
the number of threads.  Inputs are validated, broadcast, contiguous arrays
prepared by :mod:`pygbn.random._api`; nothing here checks them.  The
element-wise fills also take a parameter of length 1 as shared by every
item (no copy of a scalar parameter to the output's size).
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uintptr_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport binomial_t

from pygbn.random cimport _kernels as K
from pygbn.random cimport _inline as I
from pygbn.random._gamma cimport gamma_row
from pygbn.random._pcg64 cimport pcg64_fill_init

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


ctypedef int64_t (*kern_i_d)(bitgen_t *, double) noexcept nogil
ctypedef int64_t (*kern_i_dd)(bitgen_t *, double, double) noexcept nogil
ctypedef int64_t (*kern_i_id)(bitgen_t *, int64_t, double) noexcept nogil
ctypedef double (*kern_d_d)(bitgen_t *, double) noexcept nogil
ctypedef double (*kern_d_dd)(bitgen_t *, double, double) noexcept nogil
ctypedef void (*kern_split)(bitgen_t *, int64_t, const double *, Py_ssize_t, double,
                            int64_t *) noexcept nogil


cdef int64_t _binomial_kernel(bitgen_t *bitgen, int64_t n, double p) noexcept nogil:
    cdef binomial_t state
    state.has_binomial = 0
    return K.random_binomial_exact(bitgen, n, p, &state)


cdef void _split_sorted_full(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                             double total, int64_t *out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(k):
        out[i] = 0
    if n > 0:
        K._split_sorted(bitgen, n, w, k, total, out)


cdef void _split_binomial_full(bitgen_t *bitgen, int64_t n, const double *w, Py_ssize_t k,
                               double total, int64_t *out) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(k):
        out[i] = 0
    if n > 0:
        K._split_binomial(bitgen, n, w, k, total, out)


cdef double _gamma_gs(bitgen_t *bitgen, double a) noexcept nogil:
    cdef double lx
    return I.gamma_gs(bitgen, a, &lx)


cdef double _gamma_boost(bitgen_t *bitgen, double a) noexcept nogil:
    cdef double lx
    return I.gamma_boost(bitgen, a, &lx)


cdef double _gamma_fast(bitgen_t *bitgen, double a) noexcept nogil:
    return I.random_gamma_fast(bitgen, a)


cdef void _block_gamma_row(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    # rows of at most 64 items through the row kernel (rate 1), as the theta and Phi draws use it
    cdef double scratch[7 * 64]
    cdef Py_ssize_t i, n
    i = lo
    while i < hi:
        n = hi - i if hi - i < 64 else 64
        gamma_row(rng, f.a + i, n, 1.0, f.out_d + i, scratch)
        i += n


cdef int64_t _crt_inversion(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    return I.crt_inversion(bitgen, n, r)


cdef int64_t _crt_skip(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    return I.crt_skip(bitgen, n, r)


cdef int64_t _crt_sum(bitgen_t *bitgen, int64_t n, double r) noexcept nogil:
    return I.crt_sum(bitgen, n, r)


# name -> kernel, by signature.  Public names first, then single algorithms (tests).
cdef kern_i_d _pick_i_d(str name) except NULL:
    if name == "logarithmic":
        return K.random_logarithmic
    if name == "truncated_poisson":
        return K.random_truncated_poisson
    if name == "truncated_bessel":
        return K.random_truncated_bessel
    if name == "poisson":
        return K.random_poisson_exact
    if name == "poisson_ptrs":
        return K.random_poisson_ptrs
    if name == "bessel_chopdown":
        return K._bessel_chopdown
    if name == "bessel_poisson":
        return K._bessel_poisson
    if name == "bessel_logconcave":
        return K._bessel_logconcave
    raise KeyError(name)


cdef kern_i_id _pick_i_id(str name) except NULL:
    if name == "crt":
        return K.random_crt
    if name == "crt_loop":
        return K._crt_loop
    if name == "crt_thinning":
        return K._crt_thinning
    if name == "crt_blocks":
        return K._crt_blocks
    if name == "crt_inversion":
        return _crt_inversion
    if name == "crt_skip":
        return _crt_skip
    if name == "crt_sum":
        return _crt_sum
    if name == "crt_sum_skip":
        return K._crt_sum_skip
    if name == "crt_complement":
        return K._crt_complement
    if name == "binomial":
        return _binomial_kernel
    raise KeyError(name)


cdef kern_i_dd _pick_i_dd(str name) except NULL:
    if name == "negative_binomial":
        return K.random_nb
    if name == "nb_inversion":
        return K._nb_inversion
    if name == "nb_mixture":
        return K._nb_mixture
    raise KeyError(name)


cdef kern_d_d _pick_d_d(str name) except NULL:
    if name == "gamma":
        return K.random_gamma_exact
    if name == "gamma_mt":
        return K.random_gamma_mt
    if name == "log_gamma":
        return K.random_log_gamma
    if name == "gamma_gs":
        return _gamma_gs
    if name == "gamma_boost":
        return _gamma_boost
    if name == "gamma_fast":
        return _gamma_fast
    raise KeyError(name)


cdef kern_split _pick_split(str name) except NULL:
    if name == "multinomial_split":
        return K.random_multinomial_split
    if name == "split_sorted":
        return _split_sorted_full
    if name == "split_binomial":
        return _split_binomial_full
    raise KeyError(name)


# ---------------------------------------------------------------------------
# One blocked loop for every sampler.  A ``Fill`` holds what one call draws
# from (the kernel and the flat inputs and output); a block function draws the
# items ``lo .. hi`` of it from one stream; ``_fill`` runs a block function
# over the blocks.  (One function call per block, not per item: a generic
# per-item call costs up to 3 ns a draw, 20% of the cheapest kernels.)
# ---------------------------------------------------------------------------

cdef struct Fill:
    void *kernel              # the kernel, cast back to its signature by the block function
    const double *a           # first real parameter, per item
    const int64_t *n          # count parameter, per item
    const double *c           # second real parameter (or row total), per item
    Py_ssize_t sa             # items between a's (n's) values: 1, or 0 when shared (element-wise fills)
    Py_ssize_t sc             # the same for c
    const double *rows        # first row of the per-item vectors (weights, concentrations)
    Py_ssize_t row_stride     # doubles from one row to the next (0: one shared row)
    Py_ssize_t k              # length of a row, of the input and of the output
    int64_t *out_i            # int64 output (k per item for row samplers)
    double *out_d             # float64 output (k per item for row samplers)

ctypedef void (*block_fn)(bitgen_t *, Py_ssize_t, Py_ssize_t, const Fill *) noexcept nogil


cdef void _block_i_d(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_i_d kernel = <kern_i_d> f.kernel
    cdef const double *a = f.a
    cdef int64_t *out = f.out_i
    cdef Py_ssize_t i
    if f.sa == 0:
        for i in range(lo, hi):
            out[i] = kernel(rng, a[0])
        return
    for i in range(lo, hi):
        out[i] = kernel(rng, a[i])


cdef void _block_i_dd(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_i_dd kernel = <kern_i_dd> f.kernel
    cdef const double *a = f.a
    cdef const double *c = f.c
    cdef int64_t *out = f.out_i
    cdef Py_ssize_t i, sa = f.sa, sc = f.sc
    for i in range(lo, hi):
        out[i] = kernel(rng, a[i * sa], c[i * sc])


cdef void _block_i_id(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_i_id kernel = <kern_i_id> f.kernel
    cdef const int64_t *n = f.n
    cdef const double *c = f.c
    cdef int64_t *out = f.out_i
    cdef Py_ssize_t i, sa = f.sa, sc = f.sc
    if sa == 0 and sc == 0:
        for i in range(lo, hi):
            out[i] = kernel(rng, n[0], c[0])
        return
    for i in range(lo, hi):
        out[i] = kernel(rng, n[i * sa], c[i * sc])


cdef void _block_d_d(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_d_d kernel = <kern_d_d> f.kernel
    cdef const double *a = f.a
    cdef double *out = f.out_d
    cdef Py_ssize_t i
    for i in range(lo, hi):
        out[i] = kernel(rng, a[i])


cdef void _block_d_dd(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_d_dd kernel = <kern_d_dd> f.kernel
    cdef const double *a = f.a
    cdef const double *c = f.c
    cdef double *out = f.out_d
    cdef Py_ssize_t i, sa = f.sa, sc = f.sc
    for i in range(lo, hi):
        out[i] = kernel(rng, a[i * sa], c[i * sc])


cdef void _block_split(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef kern_split kernel = <kern_split> f.kernel
    cdef Py_ssize_t i
    for i in range(lo, hi):
        kernel(rng, f.n[i], f.rows + i * f.row_stride, f.k, f.c[i], f.out_i + i * f.k)


cdef void _block_dirichlet(bitgen_t *rng, Py_ssize_t lo, Py_ssize_t hi, const Fill *f) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(lo, hi):
        K.random_dirichlet(rng, f.rows + i * f.row_stride, f.k, f.out_d + i * f.k)


cdef void _fill(block_fn fill_block, const Fill *f, const uintptr_t[::1] streams,
                Py_ssize_t block, Py_ssize_t n_items, int n_threads) noexcept nogil:
    """Block ``b``: items ``b * block .. min((b + 1) * block, n_items)``, stream ``streams[b]``."""
    cdef Py_ssize_t b, hi
    for b in prange(streams.shape[0], num_threads=n_threads, schedule="dynamic", chunksize=1):
        hi = (b + 1) * block
        if hi > n_items:
            hi = n_items
        fill_block(<bitgen_t *> streams[b], b * block, hi, f)


cdef Py_ssize_t _row_stride(const double[:, :] x, str name) except -1:
    """Doubles between rows of ``x`` (rows must be contiguous; 0 when shared)."""
    if x.shape[1] > 1 and x.strides[1] != sizeof(double):
        raise ValueError(f"rows of {name} must be contiguous")
    return x.strides[0] // <Py_ssize_t> sizeof(double)


cdef Py_ssize_t _step(Py_ssize_t n_param, Py_ssize_t n_out) except -1:
    """1 when a parameter has one value per item, 0 when its single value is shared."""
    if n_param == n_out:
        return 1
    if n_param == 1:
        return 0
    raise ValueError(f"a parameter has {n_param} values for {n_out} items")


cdef extern from *:
    """
    #if defined(_OPENMP)
    #define PYGBN_OPENMP 1
    #else
    #define PYGBN_OPENMP 0
    #endif
    """
    int PYGBN_OPENMP


def openmp_enabled():
    """Whether this build compiled its kernels with OpenMP (every pygbn extension is built
    with the same flags).  Without it ``n_jobs > 1`` runs on one thread, with the same
    results (see docs/install.md)."""
    return bool(PYGBN_OPENMP)


def fill_i_d(str name, const uintptr_t[::1] streams, Py_ssize_t block,
             const double[::1] a, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream of i's block, a[i])`` for an int64-valued one-parameter kernel
    (``a`` of length 1: shared by every item)."""
    cdef Fill f
    f.kernel = <void *> _pick_i_d(name)
    f.sa = _step(a.shape[0], out.shape[0])
    if out.shape[0]:
        f.a = &a[0]
        f.out_i = &out[0]
    with nogil:
        _fill(_block_i_d, &f, streams, block, out.shape[0], n_threads)


def fill_i_dd(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const double[::1] a, const double[::1] c, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for an int64-valued two-parameter kernel (NB:
    ``negative_binomial``, or one of its algorithms, ``nb_inversion`` / ``nb_mixture``)."""
    cdef Fill f
    f.kernel = <void *> _pick_i_dd(name)
    f.sa = _step(a.shape[0], out.shape[0])
    f.sc = _step(c.shape[0], out.shape[0])
    if out.shape[0]:
        f.a = &a[0]
        f.c = &c[0]
        f.out_i = &out[0]
    with nogil:
        _fill(_block_i_dd, &f, streams, block, out.shape[0], n_threads)


def fill_i_id(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const int64_t[::1] a, const double[::1] c, int64_t[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for (count, real) kernels (CRT, binomial)."""
    cdef Fill f
    f.kernel = <void *> _pick_i_id(name)
    f.sa = _step(a.shape[0], out.shape[0])
    f.sc = _step(c.shape[0], out.shape[0])
    if out.shape[0]:
        f.n = &a[0]
        f.c = &c[0]
        f.out_i = &out[0]
    with nogil:
        _fill(_block_i_id, &f, streams, block, out.shape[0], n_threads)


def fill_d_d(str name, const uintptr_t[::1] streams, Py_ssize_t block,
             const double[::1] a, double[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i])`` for a float64-valued one-parameter kernel
    (``gamma_row``: the row kernel of the theta draws, rows of 64, floored at DBL_MIN)."""
    cdef Fill f
    cdef block_fn fn = _block_gamma_row if name == "gamma_row" else _block_d_d
    if name != "gamma_row":
        f.kernel = <void *> _pick_d_d(name)
    if out.shape[0]:
        f.a = &a[0]
        f.out_d = &out[0]
    with nogil:
        _fill(fn, &f, streams, block, out.shape[0], n_threads)


def vector_math(str name, const double[::1] x, double[::1] out):
    """``out = exp(x)`` (``"exp_neg"``, x <= 0) or ``log(x)`` (``"log_pos"``) by the
    vectorisable functions of the gamma row kernel (for tests)."""
    cdef Py_ssize_t i
    cdef bint is_exp = name == "exp_neg"
    if not is_exp and name != "log_pos":
        raise KeyError(name)
    with nogil:
        for i in range(x.shape[0]):
            out[i] = I.vexp_neg(x[i]) if is_exp else I.vlog_pos(x[i])


def fill_d_dd(str name, const uintptr_t[::1] streams, Py_ssize_t block,
              const double[::1] a, const double[::1] c, double[::1] out, int n_threads):
    """``out[i] = kernel(stream, a[i], c[i])`` for a float64-valued two-parameter kernel (PRG)."""
    if name != "prg":
        raise KeyError(name)
    cdef Fill f
    f.kernel = <void *> K.random_prg
    f.sa = _step(a.shape[0], out.shape[0])
    f.sc = _step(c.shape[0], out.shape[0])
    if out.shape[0]:
        f.a = &a[0]
        f.c = &c[0]
        f.out_d = &out[0]
    with nogil:
        _fill(_block_d_dd, &f, streams, block, out.shape[0], n_threads)


def fill_split(str name, const uintptr_t[::1] streams, Py_ssize_t block,
               const int64_t[::1] n, const double[:, :] w, const double[::1] total,
               int64_t[:, ::1] out, int n_threads):
    """Row ``i`` of ``out`` ~ Multinomial(n[i], w[i] / total[i]) (blocks of rows).

    ``w`` may repeat rows (stride 0 between rows) but each row must be contiguous.
    """
    cdef Fill f
    f.kernel = <void *> _pick_split(name)
    if out.shape[0] == 0 or out.shape[1] == 0:
        return
    f.row_stride = _row_stride(w, "w")
    f.rows = &w[0, 0]
    f.k = out.shape[1]
    f.n = &n[0]
    f.c = &total[0]
    f.out_i = &out[0, 0]
    with nogil:
        _fill(_block_split, &f, streams, block, out.shape[0], n_threads)


def fill_dirichlet(const uintptr_t[::1] streams, Py_ssize_t block,
                   const double[:, :] alpha, double[:, ::1] out, int n_threads):
    """Row ``i`` of ``out`` ~ Dirichlet(alpha[i]) (blocks of rows; rows of alpha contiguous)."""
    cdef Fill f
    if out.shape[0] == 0 or out.shape[1] == 0:
        return
    f.row_stride = _row_stride(alpha, "alpha")
    f.rows = &alpha[0, 0]
    f.k = out.shape[1]
    f.out_d = &out[0, 0]
    with nogil:
        _fill(_block_dirichlet, &f, streams, block, out.shape[0], n_threads)


# One draw straight from one stream (the public samplers' scalar calls: the same kernel call,
# so the same draw and stream state, as a fill of one item; the caller holds the stream's lock).
# Draws that can take long (CRT of many customers: seconds at n = 1e18, r = 1e12; a row of many
# cells) release the GIL as the fills do, so other Python threads run meanwhile.

#: CRT draws of more customers than this release the GIL (fewer take at most a few us)
cdef int64_t _ONE_CRT_NOGIL = 1024

def one_i_d(uintptr_t stream, str name, double a):
    """``kernel(stream, a)`` for an int64-valued one-parameter kernel."""
    return _pick_i_d(name)(<bitgen_t *> stream, a)


def one_i_id(uintptr_t stream, str name, int64_t n, double r):
    """``kernel(stream, n, r)`` for an int64-valued kernel of a count and a real (CRT)."""
    cdef kern_i_id kernel = _pick_i_id(name)
    cdef int64_t out
    if n <= _ONE_CRT_NOGIL:
        return kernel(<bitgen_t *> stream, n, r)
    with nogil:
        out = kernel(<bitgen_t *> stream, n, r)
    return out


def one_i_dd(uintptr_t stream, str name, double a, double c):
    """``kernel(stream, a, c)`` for an int64-valued two-parameter kernel (NB)."""
    return _pick_i_dd(name)(<bitgen_t *> stream, a, c)


def one_prg(uintptr_t stream, double lam, double c):
    """One PRG(lam, c) draw."""
    return K.random_prg(<bitgen_t *> stream, lam, c)


def one_dirichlet(uintptr_t stream, const double[::1] alpha, double[::1] out):
    """One Dirichlet(alpha) row into ``out`` (a single row's call, as the row fill makes it)."""
    with nogil:
        K.random_dirichlet(<bitgen_t *> stream, &alpha[0], alpha.shape[0], &out[0])


def one_split(uintptr_t stream, int64_t n, const double[::1] w, double total, int64_t[::1] out):
    """One Multinomial(n, w / total) row into ``out`` (a single row's call, as the fill makes it)."""
    with nogil:
        K.random_multinomial_split(<bitgen_t *> stream, n, &w[0], w.shape[0], total, &out[0])
