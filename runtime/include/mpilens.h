/* mpilens public API (link with -lmpilens, or preload libmpilens.so).
 *
 * The profiler needs no call from the application: every MPI function is
 * interposed.  These functions let a program ask the library what it holds.
 * Declared weak: a program built with this header runs unchanged without
 * mpilens (test `&mpilens_record_bytes != NULL` before calling).
 */
#ifndef MPILENS_H
#define MPILENS_H
#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of profile records this process holds (constant after each thread's first call). */
size_t mpilens_record_bytes(void) __attribute__((weak));

/* Adaptive MPI_Alltoall (MPILENS_ALLTOALL, docs/alltoall.md): the algorithm in use on
 * comm for blocks of block_bytes, NULL while none is chosen; *learning_calls (if not
 * NULL) the calls spent learning. */
const char *mpilens_alltoall_choice(MPI_Comm comm, long long block_bytes,
                                    long long *learning_calls) __attribute__((weak));

/* Private communicators the adaptive Alltoall engine holds in this process. */
int mpilens_alltoall_private_comms(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
