# Scratch allocation of the document-block kernels (pygbn.inference._blocked,
# pygbn.inference._upper), with a test hook.
#
# A kernel allocates each document block's scratch with block_malloc inside its
# prange; a NULL result makes the block skip its work and count itself failed,
# and the kernel raises MemoryError after the loop (no exception can be raised
# inside a prange).  fail_next_allocations(n) makes the next n allocations of the
# cimporting module fail, so that the tests can reach that path; each module that
# cimports this file has its own counter (the C code is compiled into it).

cdef extern from *:
    """
    static int pygbn_failing_allocations = 0;

    /* Test hook: the next n block allocations of this module fail (0 resets). */
    static void pygbn_fail_next_allocations(int n) { pygbn_failing_allocations = n; }

    static inline void *pygbn_block_malloc(size_t n) {
        if (pygbn_failing_allocations > 0) {
            int failed;
            #if defined(_OPENMP)
            #pragma omp atomic capture
            #endif
            failed = pygbn_failing_allocations--;
            if (failed > 0) return NULL;
        }
        return malloc(n);
    }
    """
    void *block_malloc "pygbn_block_malloc"(size_t n) noexcept nogil
    void fail_next_allocations "pygbn_fail_next_allocations"(int n) noexcept nogil
