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

/* Regions (docs/runtime.md): the MPI calls between begin and end of a label are
 * recorded under it; regions nest (a call counts in the innermost).  The same as
 * MPI_Pcontrol(1, label) / MPI_Pcontrol(-1, label).  Use the macros: they do
 * nothing when the program runs without mpilens.  Fortran: compile
 * share/mpilens/mpilens_regions_f.c with the program and
 * `call mpilens_region_begin('label')` / `call mpilens_region_end('label')`. */
void mpilens_region_begin(const char *label) __attribute__((weak));
void mpilens_region_end(const char *label) __attribute__((weak));
#define MPILENS_REGION_BEGIN(label) do { if (mpilens_region_begin) mpilens_region_begin(label); } while (0)
#define MPILENS_REGION_END(label) do { if (mpilens_region_end) mpilens_region_end(label); } while (0)

/* Call-site depth while running (0 off, 1..8), if call sites were on at MPI_Init;
 * returns the previous depth, -1 if refused (benchmarks). */
int mpilens_set_callsites(int depth) __attribute__((weak));

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
