# cython: language_level=3
"""Kernels of the upper layers (t >= 2), document-parallel, GIL released.

Like the kernels of :mod:`pygbn.inference._blocked`, every kernel runs over
fixed blocks of documents, block ``b`` drawing only from stream
``streams[b]``, so results do not depend on the number of threads.

* :func:`propagate_counts`: eq:CRT then eq:step1, only where counts are
  non-zero, without the K_t cumulative weights of each cell (chunk sums and
  a two-level search instead).
* :func:`sample_theta`: eq:step4 fused with its prior: the prior rows
  ``theta^(t+1) Phi^(t+1)^T`` of a document block are formed by the product
  kernel into a per-block buffer (no J x K_t temporary) and the gamma draws are made by
  :c:func:`pygbn.random._gamma.gamma_row`; the row sums of theta come
  with it.
* :func:`doc_prior`: the same prior rows, for the collapsed layer-one sweep.

The products are this module's own kernel (:c:func:`_product_rows`, no BLAS):
register tiles of AVX-512 or AVX2 + FMA vectors where the CPU has them
(chosen at run time), NEON on AArch64, portable C elsewhere, every entry one chain of fused
multiply-adds in the order of k, so that an entry does not depend on which
of these paths runs, the tile or block it falls in, or the thread count.  On x86-64 CPUs
without FMA (made before 2013; emulators that expose only SSE/AVX) SSE2
tiles form the same chain with separately rounded products and sums
instead: bits of their own (a few ulps from the fused ones), which likewise
do not depend on the tile, the block or the thread count.

A block whose scratch memory cannot be allocated (:mod:`pygbn.inference._alloc`)
does no work and the kernel raises ``MemoryError`` after the loop.

The kernels trust their input (shapes, dtypes, positivity).
"""
from cython.parallel cimport prange, threadid
from libc.float cimport DBL_MIN
from libc.math cimport log, exp, ldexp, INFINITY
from libc.stdint cimport int32_t, int64_t, uint16_t, uintptr_t
from libc.stdlib cimport malloc, free
from numpy.random cimport bitgen_t
from pygbn.random._pcg64 cimport next_uniform, pcg64_fill_init

from pygbn.inference._alloc cimport block_malloc, fail_next_allocations
from pygbn.inference._shared cimport count_t, log_rescaled_weights
from pygbn.random._gamma cimport gamma_row, row_sum
from pygbn.random._inline cimport CRT_SMALL_N, crt_small
from pygbn.random._kernels cimport random_crt, random_multinomial_split

#: whether numbers of the PCG64 streams are formed inline (numpy's numbers, checked at import)
FAST_UNIFORMS = pcg64_fill_init()


cdef enum:
    # weights are summed in chunks of this many cells (two-level search)
    CHUNK = 8
    # below this many tables a split is a sequence of categorical draws
    SMALL_SPLIT = 32
    # rows are scaled by 2^S, S <= SCALE_MAX, so that their largest entry is at most 2^SCALE_TOP
    SCALE_TOP = 900
    SCALE_MAX = 1000


def _fail_next_allocations(int n):
    """Test hook: the next ``n`` per-block scratch allocations fail (0 resets)."""
    fail_next_allocations(n)


# ---------------------------------------------------------------------------
# Phi theta products by row blocks
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <stdlib.h>
    #include <math.h>
    #include <float.h>
    /* the exponent e of frexp (max x = f 2^e, f in [0.5, 1)) of a row of
       non-negative doubles, from the largest bit pattern (their order);
       -1023 for a row of zeros */
    static inline int pygbn_row_max_exponent(const double *x, Py_ssize_t n) {
        uint64_t m = 0, b;
        Py_ssize_t i;
        for (i = 0; i < n; i++) {
            memcpy(&b, x + i, 8);
            m = b > m ? b : m;
        }
        return m == 0 ? -1023 : (int) (m >> 52) - 1022;
    }

    /* ---- the Phi theta product kernel ----------------------------------------
       out[j, v] = max(y, lim_j) down_j, y = sum_k pt[k, v] ts[j, k] as one chain:
       y = 0; for k = 0, ..., kup - 1: y = fma(pt[k, v], ts[j, k], y).  pt is Phi
       transposed (kup x ld, ld a multiple of PYGBN_PRODUCT_PAD, zeros past kin),
       ts the scaled theta rows (nrows x kup), down_j = 2^-S_j and lim_j =
       DBL_MIN / down_j (= DBL_MIN 2^S_j, so lim_j down_j = DBL_MIN exactly).
       Every path (AVX-512, AVX2 + FMA, NEON, portable C) forms every entry by that
       chain of correctly rounded fused multiply-adds, so all give the same
       bits, whatever the tile an entry falls in; but the SSE2 path, for x86-64
       CPUs without FMA, where libm's fma is a slow emulation: it forms the chain
       y = y + pt[k, v] ts[j, k] (product and sum rounded apart), bits of its
       own, the same in every tile.  The x86 paths are chosen at
       run time (pygbn_product_best, from cpuid), with GCC and Clang (functions
       with target attributes) and MSVC (which takes the intrinsics in any
       function) on x86-64; NEON on AArch64.  Build knobs (CFLAGS):
       -DPYGBN_PRODUCT_NO_AVX512 leaves out the AVX-512 path,
       -DPYGBN_PRODUCT_NO_SIMD every vector path. */
    #define PYGBN_PRODUCT_PAD 16
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) \
        && !defined(PYGBN_PRODUCT_NO_SIMD)
    #define PYGBN_PRODUCT_X86 1
    #include <immintrin.h>
    #include <cpuid.h>
    #define PYGBN_T256 __attribute__((target("avx2,fma")))
    #define PYGBN_T512 __attribute__((target("avx512f,fma")))
    static void pygbn_cpuid(unsigned leaf, unsigned r[4]) {
        __cpuid_count(leaf, 0, r[0], r[1], r[2], r[3]);
    }
    static uint64_t pygbn_xgetbv0(void) {            /* only where cpuid says OSXSAVE */
        uint32_t lo, hi;
        __asm__ volatile (".byte 0x0f, 0x01, 0xd0" : "=a" (lo), "=d" (hi) : "c" (0));  /* xgetbv */
        return ((uint64_t) hi << 32) | lo;
    }
    #elif defined(_MSC_VER) && defined(_M_X64) && !defined(PYGBN_PRODUCT_NO_SIMD)
    #define PYGBN_PRODUCT_X86 1
    #include <immintrin.h>
    #include <intrin.h>
    #define PYGBN_T256
    #define PYGBN_T512
    static void pygbn_cpuid(unsigned leaf, unsigned r[4]) {
        int q[4];
        __cpuidex(q, (int) leaf, 0);
        r[0] = (unsigned) q[0]; r[1] = (unsigned) q[1]; r[2] = (unsigned) q[2]; r[3] = (unsigned) q[3];
    }
    static uint64_t pygbn_xgetbv0(void) { return (uint64_t) _xgetbv(0); }
    #elif (defined(__aarch64__) || defined(_M_ARM64)) && !defined(PYGBN_PRODUCT_NO_SIMD)
    #define PYGBN_PRODUCT_NEON 1
    #include <arm_neon.h>
    #endif
    #if defined(PYGBN_PRODUCT_X86) && !defined(PYGBN_PRODUCT_NO_AVX512)
    #define PYGBN_PRODUCT_AVX512 1
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define PYGBN_INLINE static inline __attribute__((always_inline))
    #elif defined(_MSC_VER)
    #define PYGBN_INLINE static __forceinline
    #else
    #define PYGBN_INLINE static inline
    #endif

    /* pt[k * ld + v] = phi[v * kup + k] (v < kin), 0 for kin <= v < ld */
    static void pygbn_transpose_pad(const double *phi, Py_ssize_t kin, Py_ssize_t kup,
                                    Py_ssize_t ld, double *pt) {
        Py_ssize_t k, v;
        for (k = 0; k < kup; k++) {
            for (v = 0; v < kin; v++)
                pt[k * ld + v] = phi[v * kup + k];
            for (v = kin; v < ld; v++)
                pt[k * ld + v] = 0.0;
        }
    }

    /* the finished entry: max(y, lim) down (DBL_MIN where y <= lim; no subnormal is formed) */
    static inline double pygbn_product_finish(double y, double lim, double down) {
        return (y > lim ? y : lim) * down;
    }

    /* portable C: R rows x 4 outputs of scalar chains (libm fma: an instruction where
       the target has one, a correctly rounded emulation elsewhere) */
    PYGBN_INLINE void pygbn_tile_c(const double *ts, Py_ssize_t kup, const double *pt, Py_ssize_t ld,
                                   double *out, Py_ssize_t kin, const double *down, const int R,
                                   int n) {
        double acc[4][4];
        Py_ssize_t k;
        int r, c;
        for (r = 0; r < R; r++)
            for (c = 0; c < 4; c++)
                acc[r][c] = 0.0;
        for (k = 0; k < kup; k++)
            for (r = 0; r < R; r++) {
                double t = ts[r * kup + k];
                for (c = 0; c < 4; c++)
                    acc[r][c] = fma(pt[k * ld + c], t, acc[r][c]);
            }
        for (r = 0; r < R; r++) {
            double lim = DBL_MIN / down[r];
            for (c = 0; c < n; c++)
                out[r * kin + c] = pygbn_product_finish(acc[r][c], lim, down[r]);
        }
    }
    static void pygbn_product_c(const double *ts, Py_ssize_t kup, const double *pt, Py_ssize_t ld,
                                double *out, Py_ssize_t kin, const double *down, Py_ssize_t nrows) {
        Py_ssize_t j = 0, v;
        while (j < nrows) {
            int R = nrows - j >= 4 ? 4 : 1;
            for (v = 0; v < kin; v += 4) {
                int n = kin - v >= 4 ? 4 : (int) (kin - v);
                if (R == 4)
                    pygbn_tile_c(ts + j * kup, kup, pt + v, ld, out + j * kin + v, kin, down + j, 4, n);
                else
                    pygbn_tile_c(ts + j * kup, kup, pt + v, ld, out + j * kin + v, kin, down + j, 1, n);
            }
            j += R;
        }
    }

    #if defined(PYGBN_PRODUCT_NEON)
    /* NEON (AArch64, whose FMLA is a fused multiply-add): tiles of R rows (4, 2, 1) x
       8 outputs in 4 vectors of 2; a row's end stored lane by lane */
    #define PYGBN_EACH4N(X) X(0) X(1) X(2) X(3)
    PYGBN_INLINE void pygbn_store_neon(double *out, float64x2_t y, int m) {
        if (m >= 2)
            vst1q_f64(out, y);
        else if (m == 1)
            vst1q_lane_f64(out, y, 0);
    }
    PYGBN_INLINE void pygbn_tile_neon(const double *ts, Py_ssize_t kup, const double *pt,
                                      Py_ssize_t ld, double *out, Py_ssize_t kin,
                                      const double *down, const int R, int n) {
        float64x2_t a0[4], a1[4], a2[4], a3[4], p0, p1, p2, p3, t, lim, d;
        Py_ssize_t k;
        #define PYGBN_ZERO(r) if (r < R) { a0[r] = vdupq_n_f64(0.0); a1[r] = a0[r]; a2[r] = a0[r]; \\
                                           a3[r] = a0[r]; }
        PYGBN_EACH4N(PYGBN_ZERO)
        #undef PYGBN_ZERO
        for (k = 0; k < kup; k++) {
            p0 = vld1q_f64(pt + k * ld);
            p1 = vld1q_f64(pt + k * ld + 2);
            p2 = vld1q_f64(pt + k * ld + 4);
            p3 = vld1q_f64(pt + k * ld + 6);
            #define PYGBN_FMA(r) if (r < R) { \\
                t = vdupq_n_f64(ts[r * kup + k]); \\
                a0[r] = vfmaq_f64(a0[r], p0, t); \\
                a1[r] = vfmaq_f64(a1[r], p1, t); \\
                a2[r] = vfmaq_f64(a2[r], p2, t); \\
                a3[r] = vfmaq_f64(a3[r], p3, t); }
            PYGBN_EACH4N(PYGBN_FMA)
            #undef PYGBN_FMA
        }
        #define PYGBN_FINISH(r) if (r < R) { \\
            lim = vdupq_n_f64(DBL_MIN / down[r]); \\
            d = vdupq_n_f64(down[r]); \\
            pygbn_store_neon(out + r * kin, vmulq_f64(vmaxq_f64(a0[r], lim), d), n); \\
            pygbn_store_neon(out + r * kin + 2, vmulq_f64(vmaxq_f64(a1[r], lim), d), n - 2); \\
            pygbn_store_neon(out + r * kin + 4, vmulq_f64(vmaxq_f64(a2[r], lim), d), n - 4); \\
            pygbn_store_neon(out + r * kin + 6, vmulq_f64(vmaxq_f64(a3[r], lim), d), n - 6); }
        PYGBN_EACH4N(PYGBN_FINISH)
        #undef PYGBN_FINISH
    }
    static void pygbn_product_neon(const double *ts, Py_ssize_t kup, const double *pt, Py_ssize_t ld,
                                   double *out, Py_ssize_t kin, const double *down, Py_ssize_t nrows) {
        Py_ssize_t j = 0, v;
        while (j < nrows) {
            int R = nrows - j >= 4 ? 4 : (nrows - j >= 2 ? 2 : 1);
            for (v = 0; v < kin; v += 8) {
                int n = kin - v >= 8 ? 8 : (int) (kin - v);
                const double *tj = ts + j * kup, *pv = pt + v;
                double *o = out + j * kin + v;
                if (R == 4)
                    pygbn_tile_neon(tj, kup, pv, ld, o, kin, down + j, 4, n);
                else if (R == 2)
                    pygbn_tile_neon(tj, kup, pv, ld, o, kin, down + j, 2, n);
                else
                    pygbn_tile_neon(tj, kup, pv, ld, o, kin, down + j, 1, n);
            }
            j += R;
        }
    }
    #endif

    #if defined(PYGBN_PRODUCT_X86)
    /* the tiles below write one statement per row r = 0, ..., 7 (those with r < R: R is a
       constant where a tile is inlined), so that no compiler needs to unroll a loop to keep
       the accumulators in registers */
    #define PYGBN_EACH4(X) X(0) X(1) X(2) X(3)
    #define PYGBN_EACH8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

    /* SSE2, for x86-64 CPUs without FMA (SSE2 is part of x86-64): tiles of R rows (4, 2, 1)
       x NV vectors of 2 outputs (2, 1), every entry one chain of separately rounded products
       and sums, y = 0; y = y + pt[k, v] ts[j, k] for k = 0, 1, ...  (mulpd, then addpd: no
       compiler fuses them, as setup.py builds with -ffp-contract=off and this function has no
       FMA target).  Its bits are those of that chain, not of the fused one of the other paths */
    PYGBN_INLINE void pygbn_store128(double *out, __m128d y, int m) {
        if (m >= 2)
            _mm_storeu_pd(out, y);
        else if (m == 1)
            _mm_store_sd(out, y);
    }
    PYGBN_INLINE void pygbn_tile128(const double *ts, Py_ssize_t kup, const double *pt, Py_ssize_t ld,
                                    double *out, Py_ssize_t kin, const double *down, const int R,
                                    const int NV, int n) {
        __m128d a0[4], a1[4], p0, p1, t, lim, d;
        Py_ssize_t k;
        #define PYGBN_ZERO(r) if (r < R) { a0[r] = _mm_setzero_pd(); a1[r] = a0[r]; }
        PYGBN_EACH4(PYGBN_ZERO)
        #undef PYGBN_ZERO
        for (k = 0; k < kup; k++) {
            p0 = _mm_load_pd(pt + k * ld);
            p1 = NV > 1 ? _mm_load_pd(pt + k * ld + 2) : p0;
            #define PYGBN_MULADD(r) if (r < R) { \\
                t = _mm_load1_pd(ts + r * kup + k); \\
                a0[r] = _mm_add_pd(a0[r], _mm_mul_pd(p0, t)); \\
                if (NV > 1) a1[r] = _mm_add_pd(a1[r], _mm_mul_pd(p1, t)); }
            PYGBN_EACH4(PYGBN_MULADD)
            #undef PYGBN_MULADD
        }
        #define PYGBN_FINISH(r) if (r < R) { \\
            lim = _mm_set1_pd(DBL_MIN / down[r]); \\
            d = _mm_set1_pd(down[r]); \\
            pygbn_store128(out + r * kin, _mm_mul_pd(_mm_max_pd(a0[r], lim), d), n); \\
            if (NV > 1) pygbn_store128(out + r * kin + 2, _mm_mul_pd(_mm_max_pd(a1[r], lim), d), n - 2); }
        PYGBN_EACH4(PYGBN_FINISH)
        #undef PYGBN_FINISH
    }
    #define PYGBN_TILE128(RR, NN) pygbn_tile128(ts + j * kup, kup, pt + v, ld, out + j * kin + v, \\
                                                kin, down + j, RR, NN, n)
    static void pygbn_product_sse2(const double *ts, Py_ssize_t kup, const double *pt, Py_ssize_t ld,
                                   double *out, Py_ssize_t kin, const double *down, Py_ssize_t nrows) {
        Py_ssize_t j = 0, v;
        while (j < nrows) {
            int R = nrows - j >= 4 ? 4 : (nrows - j >= 2 ? 2 : 1);
            for (v = 0; v < kin; v += 4) {
                int n = kin - v >= 4 ? 4 : (int) (kin - v);
                if (n > 2) {
                    if (R == 4) PYGBN_TILE128(4, 2); else if (R == 2) PYGBN_TILE128(2, 2); else PYGBN_TILE128(1, 2);
                } else {
                    if (R == 4) PYGBN_TILE128(4, 1); else if (R == 2) PYGBN_TILE128(2, 1); else PYGBN_TILE128(1, 1);
                }
            }
            j += R;
        }
    }

    /* AVX2 + FMA: tiles of R rows (4, 2, 1) x NV vectors of 4 outputs (2, 1); the
       partial vectors of a row's end are stored through a small buffer */
    PYGBN_INLINE PYGBN_T256 void pygbn_store256(double *out, __m256d y, int m) {
        if (m >= 4) {
            _mm256_storeu_pd(out, y);
        } else if (m > 0) {
            double tmp[4];
            _mm256_storeu_pd(tmp, y);
            memcpy(out, tmp, (size_t) m * sizeof(double));
        }
    }
    PYGBN_INLINE PYGBN_T256 void pygbn_tile256(const double *ts, Py_ssize_t kup, const double *pt,
                                               Py_ssize_t ld, double *out, Py_ssize_t kin,
                                               const double *down, const int R, const int NV, int n) {
        __m256d a0[4], a1[4], p0, p1, t, lim, d;
        Py_ssize_t k;
        #define PYGBN_ZERO(r) if (r < R) { a0[r] = _mm256_setzero_pd(); a1[r] = a0[r]; }
        PYGBN_EACH4(PYGBN_ZERO)
        #undef PYGBN_ZERO
        for (k = 0; k < kup; k++) {
            p0 = _mm256_load_pd(pt + k * ld);
            p1 = NV > 1 ? _mm256_load_pd(pt + k * ld + 4) : p0;
            #define PYGBN_FMA(r) if (r < R) { \\
                t = _mm256_broadcast_sd(ts + r * kup + k); \\
                a0[r] = _mm256_fmadd_pd(p0, t, a0[r]); \\
                if (NV > 1) a1[r] = _mm256_fmadd_pd(p1, t, a1[r]); }
            PYGBN_EACH4(PYGBN_FMA)
            #undef PYGBN_FMA
        }
        #define PYGBN_FINISH(r) if (r < R) { \\
            lim = _mm256_set1_pd(DBL_MIN / down[r]); \\
            d = _mm256_set1_pd(down[r]); \\
            pygbn_store256(out + r * kin, _mm256_mul_pd(_mm256_max_pd(a0[r], lim), d), n); \\
            if (NV > 1) pygbn_store256(out + r * kin + 4, _mm256_mul_pd(_mm256_max_pd(a1[r], lim), d), n - 4); }
        PYGBN_EACH4(PYGBN_FINISH)
        #undef PYGBN_FINISH
    }
    #define PYGBN_TILE256(RR, NN) pygbn_tile256(ts + j * kup, kup, pt + v, ld, out + j * kin + v, \
                                                kin, down + j, RR, NN, n)
    static PYGBN_T256 void pygbn_product_avx2(const double *ts, Py_ssize_t kup, const double *pt,
                                              Py_ssize_t ld, double *out, Py_ssize_t kin,
                                              const double *down, Py_ssize_t nrows) {
        Py_ssize_t j = 0, v;
        while (j < nrows) {
            int R = nrows - j >= 4 ? 4 : (nrows - j >= 2 ? 2 : 1);
            for (v = 0; v < kin; v += 8) {
                int n = kin - v >= 8 ? 8 : (int) (kin - v);
                if (n > 4) {
                    if (R == 4) PYGBN_TILE256(4, 2); else if (R == 2) PYGBN_TILE256(2, 2); else PYGBN_TILE256(1, 2);
                } else {
                    if (R == 4) PYGBN_TILE256(4, 1); else if (R == 2) PYGBN_TILE256(2, 1); else PYGBN_TILE256(1, 1);
                }
            }
            j += R;
        }
    }

    #if defined(PYGBN_PRODUCT_AVX512)
    /* AVX-512: tiles of R rows (8, 4, 2, 1) x NV vectors of 8 outputs (2, 1); a
       row's end by masked stores */
    PYGBN_INLINE PYGBN_T512 void pygbn_store512(double *out, __m512d y, int m) {
        if (m >= 8)
            _mm512_storeu_pd(out, y);
        else if (m > 0)
            _mm512_mask_storeu_pd(out, (__mmask8) ((1u << m) - 1u), y);
    }
    PYGBN_INLINE PYGBN_T512 void pygbn_tile512(const double *ts, Py_ssize_t kup, const double *pt,
                                               Py_ssize_t ld, double *out, Py_ssize_t kin,
                                               const double *down, const int R, const int NV, int n) {
        __m512d a0[8], a1[8], p0, p1, t, lim, d;
        Py_ssize_t k;
        #define PYGBN_ZERO(r) if (r < R) { a0[r] = _mm512_setzero_pd(); a1[r] = a0[r]; }
        PYGBN_EACH8(PYGBN_ZERO)
        #undef PYGBN_ZERO
        for (k = 0; k < kup; k++) {
            p0 = _mm512_load_pd(pt + k * ld);
            p1 = NV > 1 ? _mm512_load_pd(pt + k * ld + 8) : p0;
            #define PYGBN_FMA(r) if (r < R) { \\
                t = _mm512_set1_pd(ts[r * kup + k]); \\
                a0[r] = _mm512_fmadd_pd(p0, t, a0[r]); \\
                if (NV > 1) a1[r] = _mm512_fmadd_pd(p1, t, a1[r]); }
            PYGBN_EACH8(PYGBN_FMA)
            #undef PYGBN_FMA
        }
        #define PYGBN_FINISH(r) if (r < R) { \\
            lim = _mm512_set1_pd(DBL_MIN / down[r]); \\
            d = _mm512_set1_pd(down[r]); \\
            pygbn_store512(out + r * kin, _mm512_mul_pd(_mm512_max_pd(a0[r], lim), d), n); \\
            if (NV > 1) pygbn_store512(out + r * kin + 8, _mm512_mul_pd(_mm512_max_pd(a1[r], lim), d), n - 8); }
        PYGBN_EACH8(PYGBN_FINISH)
        #undef PYGBN_FINISH
    }
    #define PYGBN_TILE512(RR, NN) pygbn_tile512(ts + j * kup, kup, pt + v, ld, out + j * kin + v, \
                                                kin, down + j, RR, NN, n)
    static PYGBN_T512 void pygbn_product_avx512(const double *ts, Py_ssize_t kup, const double *pt,
                                                Py_ssize_t ld, double *out, Py_ssize_t kin,
                                                const double *down, Py_ssize_t nrows) {
        Py_ssize_t j, v;
        for (v = 0; v < kin; v += 16) {
            int n = kin - v >= 16 ? 16 : (int) (kin - v);
            j = 0;
            while (j < nrows) {
                Py_ssize_t left = nrows - j;
                int R = left >= 8 ? 8 : (left >= 4 ? 4 : (left >= 2 ? 2 : 1));
                if (n > 8) {
                    switch (R) {
                    case 8: PYGBN_TILE512(8, 2); break;
                    case 4: PYGBN_TILE512(4, 2); break;
                    case 2: PYGBN_TILE512(2, 2); break;
                    default: PYGBN_TILE512(1, 2);
                    }
                } else {
                    switch (R) {
                    case 8: PYGBN_TILE512(8, 1); break;
                    case 4: PYGBN_TILE512(4, 1); break;
                    case 2: PYGBN_TILE512(2, 1); break;
                    default: PYGBN_TILE512(1, 1);
                    }
                }
                j += R;
            }
        }
    }
    #endif
    #endif

    /* ---- the rows' scaling (see _row_scale): ts[j] = theta[j] 2^S_j, down[j] = 2^-S_j,
       S_j = top - e_j within [0, smax] (0 for a row of zeros), e_j the frexp exponent of the
       row's largest entry.  Exact scalings; every path gives the same S (the largest of
       non-negative doubles is the one with the largest bits) and the same ts. */
    static inline double pygbn_pow2(int s) {                       /* 2^s, -1022 <= s <= 1023 */
        uint64_t b = (uint64_t) (s + 1023) << 52;
        double x;
        memcpy(&x, &b, 8);
        return x;
    }
    static inline int pygbn_exponent_scale(int e, int top, int smax) {  /* S from e (-1023: zeros) */
        if (e == -1023)
            return 0;
        e = top - e;
        return e < 0 ? 0 : (e > smax ? smax : e);
    }
    static inline int pygbn_scale_of(double m, int top, int smax) {  /* S from the largest entry */
        return pygbn_exponent_scale(pygbn_row_max_exponent(&m, 1), top, smax);
    }
    static void pygbn_scale_rows_c(const double *theta, Py_ssize_t kup, Py_ssize_t nrows, double *ts,
                                   double *down, int top, int smax) {
        Py_ssize_t j, k;
        for (j = 0; j < nrows; j++) {
            const double *x = theta + j * kup;
            int s = pygbn_exponent_scale(pygbn_row_max_exponent(x, kup), top, smax);
            double f = pygbn_pow2(s);
            down[j] = pygbn_pow2(-s);
            for (k = 0; k < kup; k++)
                ts[j * kup + k] = x[k] * f;
        }
    }
    #if defined(PYGBN_PRODUCT_X86)
    static PYGBN_T256 void pygbn_scale_rows_avx2(const double *theta, Py_ssize_t kup, Py_ssize_t nrows,
                                                 double *ts, double *down, int top, int smax) {
        Py_ssize_t j, k;
        for (j = 0; j < nrows; j++) {
            const double *x = theta + j * kup;
            double *y = ts + j * kup, lanes[4], m, f;
            __m256d vm = _mm256_setzero_pd(), vf;
            int s;
            for (k = 0; k + 4 <= kup; k += 4)
                vm = _mm256_max_pd(vm, _mm256_loadu_pd(x + k));
            _mm256_storeu_pd(lanes, vm);
            m = lanes[0] > lanes[1] ? lanes[0] : lanes[1];
            m = m > lanes[2] ? m : lanes[2];
            m = m > lanes[3] ? m : lanes[3];
            for (; k < kup; k++)
                m = m > x[k] ? m : x[k];
            s = pygbn_scale_of(m, top, smax);
            f = pygbn_pow2(s);
            down[j] = pygbn_pow2(-s);
            vf = _mm256_set1_pd(f);
            for (k = 0; k + 4 <= kup; k += 4)
                _mm256_storeu_pd(y + k, _mm256_mul_pd(_mm256_loadu_pd(x + k), vf));
            for (; k < kup; k++)
                y[k] = x[k] * f;
        }
    }
    #if defined(PYGBN_PRODUCT_AVX512)
    static PYGBN_T512 void pygbn_scale_rows_avx512(const double *theta, Py_ssize_t kup, Py_ssize_t nrows,
                                                   double *ts, double *down, int top, int smax) {
        Py_ssize_t j, k;
        __mmask8 tail = (__mmask8) ((1u << (kup % 8)) - 1u);
        for (j = 0; j < nrows; j++) {
            const double *x = theta + j * kup;
            double *y = ts + j * kup, lanes[8], m;
            __m512d vm = _mm512_setzero_pd(), vf;
            int s;
            for (k = 0; k + 8 <= kup; k += 8)
                vm = _mm512_max_pd(vm, _mm512_loadu_pd(x + k));
            if (tail)
                vm = _mm512_max_pd(vm, _mm512_maskz_loadu_pd(tail, x + k));
            _mm512_storeu_pd(lanes, vm);
            m = lanes[0];
            for (k = 1; k < 8; k++)
                m = m > lanes[k] ? m : lanes[k];
            s = pygbn_scale_of(m, top, smax);
            down[j] = pygbn_pow2(-s);
            vf = _mm512_set1_pd(pygbn_pow2(s));
            for (k = 0; k + 8 <= kup; k += 8)
                _mm512_storeu_pd(y + k, _mm512_mul_pd(_mm512_loadu_pd(x + k), vf));
            if (tail)
                _mm512_mask_storeu_pd(y + k, tail, _mm512_maskz_mul_pd(tail, _mm512_maskz_loadu_pd(tail, x + k), vf));
        }
    }
    #endif
    #endif

    /* the paths: 0 portable C; on x86-64 1 SSE2 (no FMA: other bits), 2 AVX2 + FMA and
       3 AVX-512, on AArch64 1 NEON */
    static const char *pygbn_product_path_name(int path) {
    #if defined(PYGBN_PRODUCT_X86)
        static const char *names[4] = {"portable C", "SSE2", "AVX2 + FMA", "AVX-512"};
        return names[path < 0 ? 0 : (path > 3 ? 3 : path)];
    #elif defined(PYGBN_PRODUCT_NEON)
        return path == 1 ? "NEON" : "portable C";
    #else
        (void) path;
        return "portable C";
    #endif
    }

    /* the best path this CPU runs */
    static int pygbn_product_best(void) {
    #if defined(PYGBN_PRODUCT_NEON)
        return 1;                                       /* NEON is part of AArch64 */
    #endif
    #if defined(PYGBN_PRODUCT_X86)
        /* cpuid leaf 1: ECX bit 12 FMA, 27 OSXSAVE, 28 AVX; leaf 7: EBX bit 5 AVX2, 16 AVX512F;
           XCR0: the OS saves the ymm state (bits 1, 2) and the zmm state (bits 5, 6, 7) */
        unsigned r[4];
        uint64_t xcr0;
        int fma, avx2, avx512;
        pygbn_cpuid(0, r);
        if (r[0] < 7)
            return 1;                                   /* SSE2 is part of x86-64 */
        pygbn_cpuid(1, r);
        if (!((r[2] >> 27) & 1u) || !((r[2] >> 28) & 1u))
            return 1;
        fma = (r[2] >> 12) & 1u;
        xcr0 = pygbn_xgetbv0();
        if ((xcr0 & 0x6u) != 0x6u)
            return 1;
        pygbn_cpuid(7, r);
        avx2 = (r[1] >> 5) & 1u;
        avx512 = ((r[1] >> 16) & 1u) && (xcr0 & 0xE6u) == 0xE6u;
    #if defined(PYGBN_PRODUCT_AVX512)
        if (avx512 && fma)
            return 3;
    #endif
        (void) avx512;
        return avx2 && fma ? 2 : 1;
    #endif
        return 0;
    }

    static void pygbn_product(int path, const double *ts, Py_ssize_t kup, const double *pt,
                              Py_ssize_t ld, double *out, Py_ssize_t kin, const double *down,
                              Py_ssize_t nrows) {
    #if defined(PYGBN_PRODUCT_X86)
    #if defined(PYGBN_PRODUCT_AVX512)
        if (path == 3) {
            pygbn_product_avx512(ts, kup, pt, ld, out, kin, down, nrows);
            return;
        }
    #endif
        if (path == 2) {
            pygbn_product_avx2(ts, kup, pt, ld, out, kin, down, nrows);
            return;
        }
        if (path == 1) {
            pygbn_product_sse2(ts, kup, pt, ld, out, kin, down, nrows);
            return;
        }
    #endif
    #if defined(PYGBN_PRODUCT_NEON)
        if (path == 1) {
            pygbn_product_neon(ts, kup, pt, ld, out, kin, down, nrows);
            return;
        }
    #endif
        (void) path;
        pygbn_product_c(ts, kup, pt, ld, out, kin, down, nrows);
    }

    static void pygbn_scale_rows(int path, const double *theta, Py_ssize_t kup, Py_ssize_t nrows,
                                 double *ts, double *down, int top, int smax) {
    #if defined(PYGBN_PRODUCT_X86)
    #if defined(PYGBN_PRODUCT_AVX512)
        if (path == 3) {
            pygbn_scale_rows_avx512(theta, kup, nrows, ts, down, top, smax);
            return;
        }
    #endif
        if (path == 2) {
            pygbn_scale_rows_avx2(theta, kup, nrows, ts, down, top, smax);
            return;
        }
    #endif
        (void) path;
        pygbn_scale_rows_c(theta, kup, nrows, ts, down, top, smax);
    }

    /* n doubles aligned to 64 bytes inside the block *base (free(*base)); NULL if none */
    static double *pygbn_malloc_aligned(Py_ssize_t n, void **base) {
        char *p = (char *) malloc((size_t) n * sizeof(double) + 64);
        *base = p;
        if (p == NULL)
            return NULL;
        return (double *) (p + (64 - (uintptr_t) p % 64));
    }
    """
    int _row_max_exponent "pygbn_row_max_exponent"(const double *x, Py_ssize_t n) noexcept nogil
    int _exponent_scale "pygbn_exponent_scale"(int e, int top, int smax) noexcept nogil
    const int PRODUCT_PAD "PYGBN_PRODUCT_PAD"
    void _transpose_pad "pygbn_transpose_pad"(const double *phi, Py_ssize_t kin, Py_ssize_t kup,
                                              Py_ssize_t ld, double *pt) noexcept nogil
    int _product_best "pygbn_product_best"() noexcept nogil
    const char *_product_path_name "pygbn_product_path_name"(int path) noexcept nogil
    void _product "pygbn_product"(int path, const double *ts, Py_ssize_t kup, const double *pt,
                                  Py_ssize_t ld, double *out, Py_ssize_t kin, const double *down,
                                  Py_ssize_t nrows) noexcept nogil
    double *_malloc_aligned "pygbn_malloc_aligned"(Py_ssize_t n, void **base) noexcept nogil
    void _scale_rows "pygbn_scale_rows"(int path, const double *theta, Py_ssize_t kup, Py_ssize_t nrows,
                                        double *ts, double *down, int top, int smax) noexcept nogil


cdef inline int _row_scale(const double *x, Py_ssize_t n) noexcept nogil:
    """The exponent ``S`` in ``[0, SCALE_MAX]`` that brings ``max(x)`` to at most ``2^SCALE_TOP``
    (0 for a row of zeros; ``x >= 0``).

    Multiplying a row by ``2^S`` is exact, and keeps products with it out of
    the subnormal range where the unscaled products would fall there (a
    theta floored at DBL_MIN times a Phi entry below 1): on x86 every
    operation with a subnormal result or operand takes a microcode assist
    (about 100 cycles), which made the products and the upward pass several
    times slower on the upper layers' rows (15% of whose theta are DBL_MIN).
    """
    return _exponent_scale(_row_max_exponent(x, n), SCALE_TOP, SCALE_MAX)


# the best path this CPU runs (pygbn_product_best: cpuid, once), and the one a test forced
# (_product_path)
cdef int _path_best = _product_best()
cdef int _path_forced = -1


def _product_path(int path=-1):
    """Test hook: the path of the Phi theta products (0 portable C; x86-64: 1 SSE2
    (no FMA: other bits), 2 AVX2 + FMA, 3 AVX-512; AArch64: 1 NEON); ``path >= 0``
    forces that path (the best
    this CPU runs where it runs less), -1 restores the default.  Returns the
    path now in use."""
    global _path_forced
    cdef int best = _path_best
    _path_forced = -1 if path < 0 else (path if path < best else best)
    return best if _path_forced < 0 else _path_forced


def _product_path_names():
    """The names of the paths this CPU runs, by number (:func:`_product_path`)."""
    return [_product_path_name(p).decode() for p in range(_path_best + 1)]


cdef inline int _product_path_now() noexcept nogil:
    return _path_best if _path_forced < 0 else _path_forced


cdef double *_phi_transposed(const double[:, ::1] phi, void **base) except? NULL:
    """Phi (kin x kup) transposed into a 64-byte aligned ``kup x ld`` array, ``ld``
    the row length padded to PRODUCT_PAD with zeros (free ``base[0]``)."""
    cdef Py_ssize_t kin = phi.shape[0], kup = phi.shape[1]
    cdef Py_ssize_t ld = (kin + PRODUCT_PAD - 1) // PRODUCT_PAD * PRODUCT_PAD
    cdef double *pt = _malloc_aligned(kup * ld, base)
    if pt == NULL:
        raise MemoryError("the transposed Phi of a product could not be allocated")
    if kup > 0:
        _transpose_pad(&phi[0, 0], kin, kup, ld, pt)
    return pt


cdef void _product_rows(const double *theta, const double *pt, int kin, int kup, int nrows,
                        double *out, double *scratch, int path) noexcept nogil:
    """``out[j, v] = max(sum_k theta[j, k] phi[v, k], DBL_MIN)`` for ``nrows`` rows (all row-major).

    ``pt`` is Phi transposed and padded (:c:func:`_phi_transposed`).  Each theta
    row is first multiplied by its own ``2^S`` (:c:func:`_row_scale`'s, formed
    by ``pygbn_scale_rows`` with the same vectors as the product, into
    ``scratch``, ``nrows * (kup + 1)`` doubles) and each output row by
    ``2^-S`` afterwards: exact scalings, so every entry is what the unscaled
    sum gives wherever that has no subnormal term, and the same or more
    accurate otherwise (an entry below DBL_MIN is DBL_MIN either way).

    Every entry is one chain of fused multiply-adds in the order of k
    (``y = 0; y = fma(phi[v, k], theta[j, k] 2^S, y)`` for k = 0, 1, ...),
    formed by register tiles of rows x outputs (``pygbn_product`` in this
    module's C code: AVX-512 or AVX2 + FMA where the CPU has them, chosen at
    run time; NEON on AArch64; elsewhere portable C with libm's ``fma``).
    These paths give the same bits.  On x86-64 without FMA (made before
    2013, or emulated; libm's ``fma`` is a slow correctly rounded emulation
    there, the portable path is kept for the tests) SSE2 tiles form
    ``y = y + phi[v, k] theta[j, k] 2^S``, the product rounded before the
    sum: other bits, a few ulps away.  On every path an entry does not
    depend on the rows beside it, the block it is in, or the thread count.
    """
    cdef double *ts = scratch
    cdef double *down = scratch + <Py_ssize_t> nrows * kup
    _scale_rows(path, theta, kup, nrows, ts, down, SCALE_TOP, SCALE_MAX)
    _product(path, ts, kup, pt, (kin + PRODUCT_PAD - 1) // PRODUCT_PAD * PRODUCT_PAD, out, kin, down,
             nrows)


def doc_prior(const double[:, ::1] theta_up, const double[:, ::1] phi_up, const int64_t[::1] bounds,
              double[:, ::1] out, int n_threads):
    """``out[j - bounds[0], :] = max(theta_up[j] Phi_up^T, DBL_MIN)`` for the documents of the blocks.

    ``theta_up`` is theta^(t+1) (J x K_{t+1}), ``phi_up`` Phi^(t+1)
    (K_t x K_{t+1}); ``out`` has ``bounds[-1] - bounds[0]`` rows.  Every entry
    is one fixed chain of fused multiply-adds (:c:func:`_product_rows`): the
    same bits whatever the blocks, the thread count or the CPU's vector width
    (on x86-64 without FMA a chain of separate multiplies and adds: bits of its
    own, the same whatever the blocks and the thread count).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef int kin = phi_up.shape[0], kup = phi_up.shape[1]
    cdef Py_ssize_t b, off = bounds[0]
    cdef double *work
    cdef double *pt
    cdef void *pt_base = NULL
    cdef int n_failed = 0, path = _product_path_now()
    if n_blocks <= 0 or kin == 0:
        return
    pt = _phi_transposed(phi_up, &pt_base)
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        if bounds[b + 1] > bounds[b]:
            work = <double *> block_malloc((bounds[b + 1] - bounds[b]) * (kup + 1) * sizeof(double))
            if work == NULL:
                n_failed += 1
            else:
                _product_rows(&theta_up[bounds[b], 0], pt, kin, kup,
                              <int> (bounds[b + 1] - bounds[b]), &out[bounds[b] - off, 0], work, path)
            free(work)
    free(pt_base)
    if n_failed:
        raise MemoryError(f"doc_prior: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")


# ---------------------------------------------------------------------------
# theta^(t) (eq:step4), fused with its prior
# ---------------------------------------------------------------------------

def sample_theta(const double[:, ::1] theta_up, const double[:, ::1] phi_up,
                 const double[::1] prior_row, const count_t[:, ::1] m, const double[::1] rate,
                 const int64_t[::1] bounds, const uintptr_t[::1] streams, double[:, ::1] out,
                 double[::1] row_sums, int n_threads):
    """``out[j, k] ~ Gam(prior[j, k] + m[j, k], 1 / rate[j])`` and ``row_sums[j] = sum_k out[j, k]``.

    The prior is ``max(theta_up[j] Phi_up^T, DBL_MIN)`` (eq:step4 below the top,
    formed per block, see :func:`doc_prior`), or ``prior_row`` shared by all
    documents when ``theta_up`` has no rows (the top layer's r, floored by
    the caller).  Draws are ``max(G / rate, DBL_MIN)``, a row at a time
    (:c:func:`pygbn.random._gamma.gamma_row`).  ``row_sums`` (eq:step6's
    theta^(t)_.j) is skipped when empty.  Only the documents of the blocks
    are written.
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = out.shape[1]
    cdef int kup = phi_up.shape[1]
    cdef bint shared = theta_up.shape[0] == 0
    cdef bint sums = row_sums.shape[0] > 0
    cdef Py_ssize_t b, j, i, nrows, max_rows = 0
    cdef double *buf
    cdef double *work
    cdef const double *prior
    cdef double s
    cdef double *pt = NULL
    cdef void *pt_base = NULL
    cdef int n_failed = 0, path = _product_path_now()
    cdef bitgen_t *g
    for b in range(n_blocks):
        if bounds[b + 1] - bounds[b] > max_rows:
            max_rows = bounds[b + 1] - bounds[b]
    if n_blocks <= 0 or k == 0:
        return
    if not shared:
        pt = _phi_transposed(phi_up, &pt_base)
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        g = <bitgen_t *> streams[b]
        nrows = bounds[b + 1] - bounds[b]
        # the row's shapes and the row kernel's scratch (8 k), then the block's prior rows
        # and the product's scratch
        work = <double *> block_malloc((8 * k + (0 if shared else max_rows * (k + kup + 1)))
                                       * sizeof(double))
        if work == NULL:
            n_failed += 1
        else:
            buf = work + 8 * k
            if not shared:
                _product_rows(&theta_up[bounds[b], 0], pt, <int> k, kup, <int> nrows, buf,
                              buf + max_rows * k, path)
            for j in range(bounds[b], bounds[b + 1]):
                prior = &prior_row[0] if shared else buf + (j - bounds[b]) * k
                for i in range(k):
                    work[i] = (prior[i] if prior[i] > DBL_MIN else DBL_MIN) + m[j, i]
                s = gamma_row(g, work, k, rate[j], &out[j, 0], work + k)
                if sums:
                    row_sums[j] = s
        free(work)
    free(pt_base)
    if n_failed:
        raise MemoryError(f"sample_theta: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")


# ---------------------------------------------------------------------------
# upward propagation (eq:CRT then eq:step1)
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #include <string.h>
    /* cs[c] = sum of p[i] t[i] over chunks 0..c (8 cells each; the chunks' sums added
       left to right: cs[last] is the total, returned).  A full
       chunk is summed as (p0 t0 + p4 t4) + (p2 t2 + p6 t6) plus the same for the odd
       cells: with GCC and Clang in pairs of lanes (vector extensions), elsewhere
       the same operations one at a time; the last, partial chunk left to right. */
    #if defined(__GNUC__)
    typedef double pygbn_v2d __attribute__((vector_size(16)));
    static inline pygbn_v2d pygbn_load2(const double *x) { pygbn_v2d v; memcpy(&v, x, 16); return v; }
    static inline double pygbn_chunk8(const double *p, const double *t) {
        pygbn_v2d e = pygbn_load2(p) * pygbn_load2(t) + pygbn_load2(p + 4) * pygbn_load2(t + 4);
        pygbn_v2d f = pygbn_load2(p + 2) * pygbn_load2(t + 2) + pygbn_load2(p + 6) * pygbn_load2(t + 6);
        pygbn_v2d g = e + f;
        return g[0] + g[1];
    }
    #else
    static inline double pygbn_chunk8(const double *p, const double *t) {
        double e0 = p[0] * t[0] + p[4] * t[4], e1 = p[1] * t[1] + p[5] * t[5];
        double f0 = p[2] * t[2] + p[6] * t[6], f1 = p[3] * t[3] + p[7] * t[7];
        return (e0 + f0) + (e1 + f1);
    }
    #endif
    static inline double pygbn_chunk_sums(const double *p, const double *t, Py_ssize_t k,
                                          double *cs) {
        Py_ssize_t c, i, n_full = k / 8;
        double total = 0.0, s;
        for (c = 0; c < n_full; c++) {
            total += pygbn_chunk8(p + 8 * c, t + 8 * c);
            cs[c] = total;
        }
        if (n_full * 8 < k) {
            s = 0.0;
            for (i = n_full * 8; i < k; i++)
                s += p[i] * t[i];
            total += s;
            cs[n_full] = total;
        }
        return total;
    }
    """
    double _chunk_sums "pygbn_chunk_sums"(const double *p, const double *t, Py_ssize_t k,
                                          double *cs) noexcept nogil


cdef inline Py_ssize_t _pick(const double *phi_row, const double *theta_row, Py_ssize_t k,
                             const double *cs, double u) noexcept nogil:
    """The cell of ``u`` in ``[0, total)`` under the weights ``phi_row * theta_row``.

    The chunk is the first whose cumulative sum ``cs`` exceeds ``u``, the cell
    the first in it whose running sum of weights exceeds ``u`` less the chunks
    before (at both levels a count of the sums at or below the point, without
    branches: the sums never decrease); a ``u`` that rounding puts past the
    last weight goes to the last cell with positive weight.
    """
    cdef Py_ssize_t n_chunks = (k + CHUNK - 1) // CHUNK
    cdef Py_ssize_t c, i, lo, hi, last_i, below = 0
    cdef double w
    for c in range(n_chunks):
        below += cs[c] <= u
    c = below
    if c == n_chunks:           # rounding: the last chunk with positive weight, at its top
        c = n_chunks - 1
        while c > 0 and not cs[c] > cs[c - 1]:
            c -= 1
        u = INFINITY
    elif c > 0:
        u -= cs[c - 1]
    lo = c * CHUNK
    hi = lo + CHUNK if lo + CHUNK <= k else k
    w = 0.0
    below = lo
    for i in range(lo, hi):
        w = w + phi_row[i] * theta_row[i]
        below += w <= u
    if below < hi:
        return below
    last_i = lo
    for i in range(lo, hi):
        if phi_row[i] * theta_row[i] > 0.0:
            last_i = i
    return last_i


cdef inline Py_ssize_t _search_linear(const double *w, Py_ssize_t k, double u) noexcept nogil:
    """First cell whose cumulative weight exceeds ``u`` (the last positive one if none)."""
    cdef Py_ssize_t i, last = 0
    for i in range(k):
        if w[i] > 0.0:
            if u < w[i]:
                return i
            u -= w[i]
            last = i
    return last


cdef inline int64_t _crt(bitgen_t *g, int64_t n, double r) noexcept nogil:
    # inline for the small counts (most cells), else random_crt's choice; the same draws
    # as random_crt
    if n <= CRT_SMALL_N:
        return crt_small(g, n, r)
    return random_crt(g, n, r)


cdef inline void _propagate_cell(bitgen_t *g, int64_t m, const double *p, const double *t,
                                 const double *ts, double down, Py_ssize_t k, double *cs, double *w,
                                 int64_t *tmp, int64_t *m_row, int64_t *n_row) noexcept nogil:
    """One cell of :func:`propagate_counts`: ``x ~ CRT(m, p . t)`` split by ``p * t``,
    added to ``m_row`` and (unless NULL) ``n_row``.

    ``ts = t * 2^S`` and ``down = 2^-S`` (:c:func:`_row_scale`): the weights
    are formed as ``p * ts``, which keeps them out of the subnormal range
    (slow) and scales every weight, partial sum and search point by the same
    power of two (the same cells as ``p * t`` where that has no subnormal).
    """
    cdef double total = _chunk_sums(p, ts, k, cs)
    cdef double r = total * down
    cdef int64_t x, u
    cdef Py_ssize_t i
    if not r > 0.0:
        # the concentration underflows: one table (CRT with r -> 0), split by the
        # scaled weights, or in log space where even those underflow
        if total > 0.0:
            i = _pick(p, ts, k, cs, next_uniform(g) * total)
        else:
            total = log_rescaled_weights(p, t, k, w)
            i = _search_linear(w, k, next_uniform(g) * total)
        m_row[i] += 1
        if n_row != NULL:
            n_row[i] += 1
        return
    x = _crt(g, m, r)
    if x < SMALL_SPLIT:
        for u in range(x):
            i = _pick(p, ts, k, cs, next_uniform(g) * total)
            m_row[i] += 1
            if n_row != NULL:
                n_row[i] += 1
        return
    total = 0.0
    for i in range(k):
        w[i] = p[i] * ts[i]
        total = total + w[i]
    random_multinomial_split(g, x, w, k, total, tmp)
    for i in range(k):
        if tmp[i] != 0:
            m_row[i] += tmp[i]
            if n_row != NULL:
                n_row[i] += tmp[i]


def row_sums(const double[:, ::1] x, double[::1] out):
    """``out[j] = sum_i x[j, i]`` summed as :func:`sample_theta` sums
    (:c:func:`pygbn.random._gamma.row_sum`)."""
    cdef Py_ssize_t j
    if x.shape[1] == 0:
        out[:] = 0.0
        return
    with nogil:
        for j in range(x.shape[0]):
            out[j] = row_sum(&x[j, 0], x.shape[1])


def propagate_counts(const count_t[:, ::1] m_in, const double[:, ::1] phi,
                     const double[:, ::1] theta, const int64_t[::1] bounds,
                     const uintptr_t[::1] streams, int64_t[:, ::1] m_out,
                     int64_t[:, :, ::1] n_out, int n_threads):
    """Upward propagation through one layer (eq:CRT then eq:step1).

    For every document ``j`` and row ``v`` with ``m = m_in[j, v] > 0``:
    ``x ~ CRT(m, sum_k phi[v, k] theta[j, k])`` and
    ``x ~> Mult(x, phi[v, :] * theta[j, :] / sum)``, added to ``m_out[j, :]``
    (overwritten per document) and to ``n_out[thread, v, :]`` (zero on entry;
    skipped when ``n_out`` has no rows: the statistics of Phi are not needed
    when Phi is fixed).  Cells with ``m = 0`` cost nothing beyond the scan.
    A split of fewer than SMALL_SPLIT tables is a sequence of categorical
    draws by a two-level search over chunk sums (the K weights are never
    stored); larger ones are conditional binomials
    (:c:func:`random_multinomial_split`).  Where every product of a cell
    underflows the weights are formed in log space (and the CRT's
    concentration, 0 in floating point, gives one table).
    """
    cdef Py_ssize_t n_blocks = bounds.shape[0] - 1
    cdef Py_ssize_t k = phi.shape[1]
    cdef Py_ssize_t kin = m_in.shape[1]
    cdef Py_ssize_t n_chunks = (k + CHUNK - 1) // CHUNK
    cdef bint stats = n_out.shape[0] > 0
    cdef Py_ssize_t b, j, v, i, c
    cdef int tid
    cdef double *cs
    cdef double *w
    cdef double *ts
    cdef double down, f
    cdef int64_t *tmp
    cdef int64_t *m_row
    cdef const count_t *in_row
    cdef int n_failed = 0
    cdef bitgen_t *g
    if n_blocks <= 0:
        return
    for b in prange(n_blocks, nogil=True, num_threads=n_threads, schedule="dynamic"):
        tid = threadid()
        g = <bitgen_t *> streams[b]
        cs = <double *> block_malloc((n_chunks + 1) * sizeof(double))
        w = <double *> block_malloc(2 * (k + 1) * sizeof(double))
        tmp = <int64_t *> block_malloc((k + 1) * sizeof(int64_t))
        if cs == NULL or w == NULL or tmp == NULL:
            n_failed += 1
        else:
            ts = w + k + 1
            for j in range(bounds[b], bounds[b + 1]):
                m_row = &m_out[j, 0]
                for i in range(k):
                    m_row[i] = 0
                in_row = &m_in[j, 0]
                down = 0.0                      # theta row not scaled yet
                for v in range(kin):
                    if in_row[v] != 0:
                        if down == 0.0:
                            c = _row_scale(&theta[j, 0], k)
                            down = ldexp(1.0, <int> -c)
                            f = ldexp(1.0, <int> c)
                            for i in range(k):
                                ts[i] = theta[j, i] * f
                        _propagate_cell(g, <int64_t> in_row[v], &phi[v, 0], &theta[j, 0], ts, down, k,
                                        cs, w, tmp, m_row, &n_out[tid, v, 0] if stats else NULL)
        free(cs)
        free(w)
        free(tmp)
    if n_failed:
        raise MemoryError(f"propagate_counts: scratch memory of {n_failed} document block(s) "
                          "could not be allocated")
