/* Property-test driver for reproducible reductions.
 *
 *   repro_prop d|f|z INFILE OUTFILE
 *
 * INFILE holds P rows of n scalars (binary64 for d and z, binary32 for f;
 * z = double complex, n even); rank r reads row r.  Runs MPI_Allreduce,
 * MPI_Allreduce in place, MPI_Reduce (root P-1), MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter (uneven counts), MPI_Scan, MPI_Exscan and MPI_Reduce_scatter
 * in place, all MPI_SUM.  Rank 0 writes OUTFILE: for each collective in that
 * order, a P x n matrix of scalars whose row r is what rank r holds, laid out
 * over the full n (a scattered block sits at its offset; the rest is zero).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int P, rank;
static size_t esz;            /* bytes per scalar */
static int mult;              /* scalars per MPI element */
static FILE *out;

static void emit(const void *row, size_t nbytes)
{
    char *all = rank == 0 ? malloc(nbytes * (size_t)P) : NULL;
    MPI_Gather(row, (int)nbytes, MPI_BYTE, all, (int)nbytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        fwrite(all, 1, nbytes * (size_t)P, out);
        free(all);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4 || strchr("dfz", argv[1][0]) == NULL) {
        if (rank == 0)
            fprintf(stderr, "usage: repro_prop d|f|z INFILE OUTFILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char kind = argv[1][0];
    MPI_Datatype dt = kind == 'd' ? MPI_DOUBLE : kind == 'f' ? MPI_FLOAT : MPI_C_DOUBLE_COMPLEX;
    esz = kind == 'f' ? 4 : 8;
    mult = kind == 'z' ? 2 : 1;
    FILE *in = fopen(argv[2], "rb");
    if (!in)
        MPI_Abort(MPI_COMM_WORLD, 3);
    fseek(in, 0, SEEK_END);
    size_t rowb = (size_t)ftell(in) / (size_t)P, n = rowb / esz;
    int count = (int)(n / (size_t)mult);          /* MPI elements */
    char *x = malloc(rowb), *y = malloc(rowb), *z = calloc(1, rowb);
    fseek(in, (long)(rowb * (size_t)rank), SEEK_SET);
    if (fread(x, 1, rowb, in) != rowb)
        MPI_Abort(MPI_COMM_WORLD, 3);
    fclose(in);
    if (rank == 0 && !(out = fopen(argv[3], "wb")))
        MPI_Abort(MPI_COMM_WORLD, 3);

    MPI_Allreduce(x, y, count, dt, MPI_SUM, MPI_COMM_WORLD);
    emit(y, rowb);
    memcpy(y, x, rowb);
    MPI_Allreduce(MPI_IN_PLACE, y, count, dt, MPI_SUM, MPI_COMM_WORLD);
    emit(y, rowb);
    memset(y, 0, rowb);
    MPI_Reduce(x, y, count, dt, MPI_SUM, P - 1, MPI_COMM_WORLD);
    emit(y, rowb);

    int blk = count / P;                          /* the test makes count a multiple of P */
    memset(y, 0, rowb);
    MPI_Reduce_scatter_block(x, y + (size_t)rank * blk * mult * esz, blk, dt, MPI_SUM,
                             MPI_COMM_WORLD);
    emit(y, rowb);

    int *counts = malloc(sizeof(int) * (size_t)P);  /* uneven: rank i gets a share ~ i+1 */
    long tri = (long)P * (P + 1) / 2, prev = 0, off = 0;
    for (int i = 0; i < P; i++) {
        long cum = (long)count * ((long)(i + 1) * (i + 2) / 2) / tri;
        counts[i] = (int)(cum - prev);
        if (i < rank)
            off += counts[i];
        prev = cum;
    }
    memset(y, 0, rowb);
    MPI_Reduce_scatter(x, y + (size_t)off * mult * esz, counts, dt, MPI_SUM, MPI_COMM_WORLD);
    emit(y, rowb);

    memset(y, 0, rowb);
    MPI_Scan(x, y, count, dt, MPI_SUM, MPI_COMM_WORLD);
    emit(y, rowb);
    memset(y, 0, rowb);
    MPI_Exscan(x, y, count, dt, MPI_SUM, MPI_COMM_WORLD);
    emit(y, rowb);

    memcpy(y, x, rowb);                           /* in place: result at the start of recvbuf */
    MPI_Reduce_scatter(MPI_IN_PLACE, y, counts, dt, MPI_SUM, MPI_COMM_WORLD);
    memset(z, 0, rowb);
    memcpy(z + (size_t)off * mult * esz, y, (size_t)counts[rank] * mult * esz);
    emit(z, rowb);

    free(counts);
    free(x);
    free(y);
    free(z);
    if (rank == 0)
        fclose(out);
    MPI_Finalize();
    return 0;
}
