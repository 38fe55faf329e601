# cython: language_level=3
"""Uniforms from numpy's PCG64 streams, the same numbers faster (nogil, no validation).

:c:func:`uniform_fill` writes the next ``n`` numbers of a stream, exactly what
numpy's ``random_standard_uniform_fill`` writes (``(next_uint64 >> 11) 2^-53``,
each from the next state of the stream, in order) and leaves the stream in
the same state.  numpy forms them one call of the bit generator at a time,
each call waiting on the last one's 128-bit state update.  For a PCG64
stream the states ``s_1 ... s_4`` after ``s_0`` are ``s_i = A_i s_0 + C_i``
(``A_i = M^i``, ``C_i = c (M^(i-1) + ... + 1)``, M the multiplier and c the
stream's increment, all modulo 2^128), so four states are formed side by side
from ``s_0`` and the XSL-RR output of each is taken as numpy takes it.
:c:func:`next_uniform` is numpy's ``random_standard_uniform``, one state
step inline (no call through the bit generator's function pointer), and
:c:func:`raw_fill` and :c:func:`next_raw` give the stream's ``next_uint64``
outputs the same two ways.  The partial sweep's uniform buffers and the
collapsed sweep's one uniform a token use them (``docs/engine.md``,
"Uniforms"), and so do the samplers' kernels and the gamma rows.

This reads numpy's PCG64 state through its C layout (``bitgen_t.state`` is a
``pcg64_state`` whose first member points to ``{state, inc}``, two 128-bit
integers), which numpy does not publish.  So it is used only once
:func:`pcg64_fill_init` (run when a cimporting module is imported) has checked
it: the numbers of both paths and the state after them must be numpy's own
for a fresh stream, else, or without a 128-bit integer type, every stream
takes numpy's calls; and only for a stream whose ``next_uint64`` is PCG64's
(any other bit generator takes numpy's calls).  Either way the numbers are
numpy's.

Reference: O'Neill, M. E. (2014). PCG: a family of simple fast space-efficient
statistically good algorithms for random number generation. HMC-CS-2014-0905
(the LCG's closed-form jump ahead, the XSL-RR 128/64 output).
"""
from libc.stdint cimport uint64_t
from numpy.random cimport bitgen_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include "numpy/random/bitgen.h"

    /* numpy's PCG64 next_uint64 once the inline fill has been checked against it (else NULL) */
    static uint64_t (*pygbn_pcg64_next)(void *) = NULL;

    #if defined(__SIZEOF_INT128__)
    typedef unsigned __int128 pygbn_u128;
    /* numpy's pcg64_state: a pointer to {state, inc}, then the 32-bit buffer */
    typedef struct { void *pcg_state; int has_uint32; uint32_t uinteger; } pygbn_pcg64_state;
    #define PYGBN_PCG_MULT ((((pygbn_u128) 0x2360ED051FC65DA4ULL) << 64) | (pygbn_u128) 0x4385DF649FCCF645ULL)

    static inline uint64_t pygbn_pcg_out(pygbn_u128 s) {
        uint64_t hi = (uint64_t) (s >> 64), x = hi ^ (uint64_t) s;
        unsigned rot = (unsigned) (hi >> 58);
        return (x >> rot) | (x << ((64u - rot) & 63u));
    }

    /* numpy's next_double from a state: (output >> 11) 2^-53 */
    static inline double pygbn_pcg_double(pygbn_u128 s) {
        return (double) (pygbn_pcg_out(s) >> 11) * (1.0 / 9007199254740992.0);
    }

    /* the next n outputs of a PCG64 stream whose state is at st (16 bytes state, 16 inc),
       as doubles (numpy's next_double) or raw (next_uint64): four states at a time from the
       last, s_i = A_i s + C_i */
    static inline void pygbn_pcg64_block(void *st, Py_ssize_t n, double *dbl, uint64_t *raw,
                                         const int as_double) {
        pygbn_u128 s, c, a1 = PYGBN_PCG_MULT, a2, a3, a4, c2, c3, c4, s1, s2, s3, s4;
        Py_ssize_t i = 0;
        memcpy(&s, st, 16);
        memcpy(&c, (char *) st + 16, 16);
        a2 = a1 * a1; a3 = a2 * a1; a4 = a3 * a1;
        c2 = c * a1 + c; c3 = c2 * a1 + c; c4 = c3 * a1 + c;
        for (; i + 4 <= n; i += 4) {
            s1 = a1 * s + c; s2 = a2 * s + c2; s3 = a3 * s + c3; s4 = a4 * s + c4;
            if (as_double) {
                dbl[i] = pygbn_pcg_double(s1);
                dbl[i + 1] = pygbn_pcg_double(s2);
                dbl[i + 2] = pygbn_pcg_double(s3);
                dbl[i + 3] = pygbn_pcg_double(s4);
            } else {
                raw[i] = pygbn_pcg_out(s1);
                raw[i + 1] = pygbn_pcg_out(s2);
                raw[i + 2] = pygbn_pcg_out(s3);
                raw[i + 3] = pygbn_pcg_out(s4);
            }
            s = s4;
        }
        for (; i < n; i++) {
            s = a1 * s + c;
            if (as_double)
                dbl[i] = pygbn_pcg_double(s);
            else
                raw[i] = pygbn_pcg_out(s);
        }
        memcpy(st, &s, 16);
    }

    /* the block as doubles, and raw; not inlined (one call a buffer) */
    #if defined(__GNUC__)
    __attribute__((noinline))
    #endif
    static void pygbn_pcg64_doubles(void *st, Py_ssize_t n, double *out) {
        pygbn_pcg64_block(st, n, out, NULL, 1);
    }

    #if defined(__GNUC__)
    __attribute__((noinline))
    #endif
    static void pygbn_pcg64_raws(void *st, Py_ssize_t n, uint64_t *out) {
        pygbn_pcg64_block(st, n, NULL, out, 0);
    }

    /* 1 when g is a checked PCG64 stream and its next n doubles are in out, else 0 (nothing drawn) */
    static inline int pygbn_pcg64_fill(bitgen_t *g, Py_ssize_t n, double *out) {
        if (pygbn_pcg64_next == NULL || g->next_uint64 != pygbn_pcg64_next)
            return 0;
        pygbn_pcg64_doubles(((pygbn_pcg64_state *) g->state)->pcg_state, n, out);
        return 1;
    }

    /* 1 when g is a checked PCG64 stream and its next n raw outputs are in out, else 0 */
    static inline int pygbn_pcg64_fill_raw(bitgen_t *g, Py_ssize_t n, uint64_t *out) {
        if (pygbn_pcg64_next == NULL || g->next_uint64 != pygbn_pcg64_next)
            return 0;
        pygbn_pcg64_raws(((pygbn_pcg64_state *) g->state)->pcg_state, n, out);
        return 1;
    }

    /* one step of a PCG64 stream whose state is at st: the new state */
    static inline pygbn_u128 pygbn_pcg64_step(void *st) {
        pygbn_u128 s, c;
        memcpy(&s, st, 16);
        memcpy(&c, (char *) st + 16, 16);
        s = s * PYGBN_PCG_MULT + c;
        memcpy(st, &s, 16);
        return s;
    }

    /* the next raw output, and the next double, of a PCG64 stream whose state is at st */
    static inline uint64_t pygbn_pcg64_step_raw(void *st) { return pygbn_pcg_out(pygbn_pcg64_step(st)); }
    static inline double pygbn_pcg64_step_double(void *st) { return pygbn_pcg_double(pygbn_pcg64_step(st)); }

    /* the stream's next raw output: numpy's next_uint64 (inline for a checked PCG64 stream) */
    static inline uint64_t pygbn_pcg64_next_raw(bitgen_t *g) {
        if (pygbn_pcg64_next == NULL || g->next_uint64 != pygbn_pcg64_next)
            return g->next_uint64(g->state);
        return pygbn_pcg64_step_raw(((pygbn_pcg64_state *) g->state)->pcg_state);
    }

    /* the stream's next uniform: numpy's random_standard_uniform (inline for a checked PCG64 stream) */
    static inline double pygbn_pcg64_next_double(bitgen_t *g) {
        if (pygbn_pcg64_next == NULL || g->next_uint64 != pygbn_pcg64_next)
            return g->next_double(g->state);
        return pygbn_pcg64_step_double(((pygbn_pcg64_state *) g->state)->pcg_state);
    }

    /* the check: a and b two streams in the same state (fresh PCG64s of one seed); both
       inline paths against numpy's calls, then the state they leave */
    static int pygbn_pcg64_check(bitgen_t *a, bitgen_t *b) {
        double x[11], y[11];
        uint64_t rx[11];
        int i;
        pygbn_pcg64_doubles(((pygbn_pcg64_state *) a->state)->pcg_state, 11, x);
        for (i = 0; i < 11; i++)
            y[i] = b->next_double(b->state);
        for (i = 0; i < 11; i++)
            if (x[i] != y[i])
                return 0;
        pygbn_pcg64_raws(((pygbn_pcg64_state *) a->state)->pcg_state, 11, rx);
        for (i = 0; i < 11; i++)
            if (rx[i] != b->next_uint64(b->state))
                return 0;
        for (i = 0; i < 5; i++)         /* one step at a time */
            if (pygbn_pcg64_step_double(((pygbn_pcg64_state *) a->state)->pcg_state) != b->next_double(b->state)
                    || pygbn_pcg64_step_raw(((pygbn_pcg64_state *) a->state)->pcg_state) != b->next_uint64(b->state))
                return 0;
        for (i = 0; i < 3; i++)         /* the state left behind: numpy's next numbers from it */
            if (a->next_uint64(a->state) != b->next_uint64(b->state))
                return 0;
        pygbn_pcg64_next = a->next_uint64;
        return 1;
    }
    #else
    static inline int pygbn_pcg64_fill(bitgen_t *g, Py_ssize_t n, double *out) { return 0; }
    static inline int pygbn_pcg64_fill_raw(bitgen_t *g, Py_ssize_t n, uint64_t *out) { return 0; }
    static inline uint64_t pygbn_pcg64_next_raw(bitgen_t *g) { return g->next_uint64(g->state); }
    static int pygbn_pcg64_check(bitgen_t *a, bitgen_t *b) { return 0; }
    static inline double pygbn_pcg64_next_double(bitgen_t *g) { return g->next_double(g->state); }
    #endif
    """
    bint pcg64_fill "pygbn_pcg64_fill"(bitgen_t *g, Py_ssize_t n, double *out) noexcept nogil
    bint pcg64_fill_raw "pygbn_pcg64_fill_raw"(bitgen_t *g, Py_ssize_t n, uint64_t *out) noexcept nogil
    double next_uniform "pygbn_pcg64_next_double"(bitgen_t *g) noexcept nogil
    uint64_t next_raw "pygbn_pcg64_next_raw"(bitgen_t *g) noexcept nogil
    bint _pcg64_check "pygbn_pcg64_check"(bitgen_t *a, bitgen_t *b) noexcept nogil


from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random.c_distributions cimport random_standard_uniform_fill


cdef inline void uniform_fill(bitgen_t *g, Py_ssize_t n, double *out) noexcept nogil:
    """``out[0:n]``: the stream's next n uniforms in [0, 1), numpy's
    ``random_standard_uniform_fill`` (the same numbers, the same state after),
    formed four at a time for a checked PCG64 stream."""
    if not pcg64_fill(g, n, out):
        random_standard_uniform_fill(g, n, out)


cdef inline void raw_fill(bitgen_t *g, Py_ssize_t n, uint64_t *out) noexcept nogil:
    """``out[0:n]``: the stream's next n raw outputs (``next_uint64``, in order; the
    same state after), formed four at a time for a checked PCG64 stream (one or two by
    the inline step: the block's call and set-up would cost more than the numbers)."""
    cdef Py_ssize_t i
    if n <= 2:
        for i in range(n):
            out[i] = next_raw(g)
        return
    if not pcg64_fill_raw(g, n, out):
        for i in range(n):
            out[i] = g.next_uint64(g.state)


cdef inline bint pcg64_fill_init() except -1:
    """Check the inline PCG64 fill against numpy's on two fresh streams of one seed
    (run once when a cimporting module is imported); True when it is in use."""
    import numpy as np
    cdef bitgen_t *a
    cdef bitgen_t *b
    first, second = np.random.PCG64(20161126), np.random.PCG64(20161126)
    for _ in range(3):                  # a state that has been used (numpy draws no number at seeding)
        first.random_raw(), second.random_raw()
    a = <bitgen_t *> PyCapsule_GetPointer(first.capsule, "BitGenerator")
    b = <bitgen_t *> PyCapsule_GetPointer(second.capsule, "BitGenerator")
    return _pcg64_check(a, b)
