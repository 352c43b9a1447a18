/* a2a_check: MPI_Alltoall (through libmpilens, algorithm chosen by
 * MPILENS_ALLTOALL) must return exactly what the MPI's own PMPI_Alltoall
 * returns: random data, counts 0/1/7/1000, MPI_INT, MPI_DOUBLE, a strided
 * vector type, strided-send/contiguous-receive, MPI_IN_PLACE, on
 * MPI_COMM_WORLD and on a split communicator that is then freed.
 * Rank 0 prints "a2a_check: cases=<n> mismatches=<m>"; exit 1 on mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng;
static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* one case: returns 1 on mismatch (on this rank) */
static int one_case(MPI_Comm comm, int count, MPI_Datatype st, int scount, MPI_Datatype rt,
                    int rcount, int inplace, int seed)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    MPI_Aint lb, sext, rext;
    MPI_Type_get_extent(st, &lb, &sext);
    MPI_Type_get_extent(rt, &lb, &rext);
    size_t sbytes = (size_t)sext * scount * P + 16, rbytes = (size_t)rext * rcount * P + 16;
    unsigned char *sb = malloc(sbytes), *r1 = malloc(rbytes), *r2 = malloc(rbytes);
    rng = (unsigned long long)seed * 7919u + (unsigned)r * 104729u + (unsigned)count;
    for (size_t i = 0; i < sbytes; i++)
        sb[i] = (unsigned char)rnd();
    for (size_t i = 0; i < rbytes; i++)
        r1[i] = r2[i] = inplace ? (unsigned char)rnd() : 0xA5;
    if (inplace) {
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r1, rcount, rt, comm);
        PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r2, rcount, rt, comm);
    } else {
        MPI_Alltoall(sb, scount, st, r1, rcount, rt, comm);
        PMPI_Alltoall(sb, scount, st, r2, rcount, rt, comm);
    }
    int bad = memcmp(r1, r2, rbytes) != 0;
    free(sb);
    free(r1);
    free(r2);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Datatype strided; /* 2 ints with stride 3: extent 4 ints, holes between */
    MPI_Type_vector(2, 1, 3, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    int counts[] = {0, 1, 7, 1000};
    int cases = 0, bad = 0, seed = 1;
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split); /* reversed order */
    MPI_Comm comms[2] = {MPI_COMM_WORLD, split};
    for (int c = 0; c < 2; c++) {
        for (int k = 0; k < 4; k++) {
            int n = counts[k];
            bad += one_case(comms[c], n, MPI_INT, n, MPI_INT, n, 0, seed++);
            bad += one_case(comms[c], n, MPI_DOUBLE, n, MPI_DOUBLE, n, 0, seed++);
            bad += one_case(comms[c], n, strided, n, strided, n, 0, seed++);
            bad += one_case(comms[c], n, strided, n, MPI_INT, 2 * n, 0, seed++);
            bad += one_case(comms[c], n, MPI_INT, 0, MPI_INT, n, 1, seed++);
            bad += one_case(comms[c], n, MPI_INT, 0, strided, n, 1, seed++);
            cases += 6;
        }
    }
    MPI_Comm_free(&split);
    /* a freed communicator's state is gone; a new one works from scratch */
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
    bad += one_case(split, 7, MPI_DOUBLE, 7, MPI_DOUBLE, 7, 0, seed++);
    cases++;
    MPI_Comm_free(&split);
    /* a freed datatype's handle may come back as another type (same call otherwise):
     * nothing the engine remembered of the old one may survive */
    MPI_Datatype t2;
    for (int v = 0; v < 2; v++) {
        MPI_Type_vector(v ? 3 : 2, v ? 2 : 1, v ? 4 : 3, MPI_INT, &t2);
        MPI_Type_commit(&t2);
        bad += one_case(MPI_COMM_WORLD, 7, t2, 7, t2, 7, 0, seed++);
        MPI_Type_free(&t2);
        cases++;
    }
    int tot = 0;
    MPI_Reduce(&bad, &tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("a2a_check: cases=%d mismatches=%d\n", cases, tot);
    MPI_Type_free(&strided);
    MPI_Finalize();
    return tot ? 1 : 0;
}
