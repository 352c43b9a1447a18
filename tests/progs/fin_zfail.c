/* tests/progs/fin_uneven with zlib failing on one rank (tests/test_finalize_write.py):
 * this program's deflateInit2_ (exported with -rdynamic, so libmpilens.so's calls bind
 * to it) returns Z_MEM_ERROR on the rank named by FIN_ZFAIL_RANK and is zlib's own
 * elsewhere.  A rank that compresses nothing (not a block's first rank under
 * MPILENS_COMPRESS_GROUP) never calls it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>
#include <zlib.h>

int deflateInit2_(z_streamp strm, int level, int method, int window_bits, int mem_level, int strategy,
                  const char *version, int stream_size)
{
    const char *v = getenv("FIN_ZFAIL_RANK");
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (v && *v && atoi(v) == rank) return Z_MEM_ERROR;
    int (*real)(z_streamp, int, int, int, int, int, const char *, int) =
        (int (*)(z_streamp, int, int, int, int, int, const char *, int))dlsym(RTLD_NEXT, "deflateInit2_");
    return real ? real(strm, level, method, window_bits, mem_level, strategy, version, stream_size) : Z_MEM_ERROR;
}

#include "fin_uneven.c"
