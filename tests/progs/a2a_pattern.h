/* The byte pattern the Alltoall test programs send and check: block p of rank
 * r holds (r * 31 + p * 7 + i + tag) for byte i.  a2a_exchange calls f (the
 * library's MPI_Alltoall, or the engine's entry when it is linked in) with B
 * bytes per block on comm and returns 1 if any received byte is wrong. */
#ifndef A2A_PATTERN_H
#define A2A_PATTERN_H
#include <mpi.h>
#include <stdlib.h>

typedef int (*a2a_fn)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);

static int a2a_exchange(a2a_fn f, MPI_Comm comm, int B, int tag)
{
    int P, r, bad = 0;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &r);
    unsigned char *s = malloc((size_t)B * P + 1), *d = malloc((size_t)B * P + 1);
    for (int p = 0; p < P; p++)
        for (int i = 0; i < B; i++)
            s[(size_t)p * B + i] = (unsigned char)(r * 31 + p * 7 + i + tag);
    f(s, B, MPI_BYTE, d, B, MPI_BYTE, comm);
    for (int p = 0; p < P; p++)
        for (int i = 0; i < B; i++)
            if (d[(size_t)p * B + i] != (unsigned char)(p * 31 + r * 7 + i + tag))
                bad = 1;
    free(s);
    free(d);
    return bad;
}
#endif
