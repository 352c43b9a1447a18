/* Per-thread scratch buffers: each user keeps a thread-local array of
 * ml_scratch_t, one per purpose, that grows to the largest request and is
 * reused by later calls (no allocation per call once warm).  Used by the
 * Fortran wrappers (runtime/core), the Alltoall algorithms and the
 * reproducible reductions. */
#ifndef MLENS_SCRATCH_H
#define MLENS_SCRATCH_H
#include <stddef.h>

typedef struct {
    void *p;
    size_t cap;
} ml_scratch_t;

/* At least bytes (>= 1) of memory, its previous contents not kept; NULL if
 * none could be had (the previous buffer is then released). */
void *ml_scratch_get(ml_scratch_t *s, size_t bytes);
/* Releases n buffers. */
void ml_scratch_release(ml_scratch_t *s, int n);

#endif
