/* Rank lines longer than the grouped compression's own-line limit (64 KB,
 * runtime/core/profile_gzip.c), for tests/test_finalize_write.py: the ranks named in
 * FIN_WIDE_RANKS (a list of digits, e.g. "13") call MPI_Comm_rank from 512 distinct
 * call sites (run with MPILENS_CALLSITE_SLOTS=1024), every other rank from one. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define S1 MPI_Comm_rank(MPI_COMM_WORLD, &v);
#define S8 S1 S1 S1 S1 S1 S1 S1 S1
#define S64 S8 S8 S8 S8 S8 S8 S8 S8
#define S512 S64 S64 S64 S64 S64 S64 S64 S64

int main(int argc, char **argv)
{
    int rank, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *w = getenv("FIN_WIDE_RANKS");
    if (w && strchr(w, '0' + rank % 10)) {
        S512
    }
    MPI_Finalize();
    return 0;
}
