/* coll_rsb: MPI_Reduce_scatter_block results checked element by element, for
 * the node-aware algorithm (MPILENS_COLL_REDUCE_SCATTER_BLOCK,
 * tests/test_coll_reduce_scatter.py).
 *
 * On MPI_COMM_WORLD, on a communicator of every rank in reverse order, and
 * on one of the even ranks then the odd ones (nodes of consecutive world
 * ranks are not consecutive there: the node-major order is another):
 * MPI_INT sums, MPI_DOUBLE sums (of halves: every order gives the same
 * bits), MPI_FLOAT maxima and MPI_LONG_LONG bitwise exclusive or, with 1, 7
 * and 1001 elements a block, in place and not; then about 1 MiB of
 * MPI_DOUBLE sums (the whole vector).  Rank src's element e of the vector is
 * a function of (type, src, e, repetition) that every rank computes: every
 * rank checks its block against the combination of all ranks' values,
 * computed here, bit for bit (the receive buffer is filled with 0xa5 before
 * the call).  Then four calls the engine must leave to the MPI (checked
 * too): recvcount 0, a commutative user-defined operation, a non-commutative
 * one (the first operand: the block of rank 0), and a derived datatype (3
 * ints, contiguous, with the user-defined sum: Open MPI refuses MPI_SUM on
 * it).
 *
 * coll_rsb [REPS]: every case REPS times in a row (1 by default), so that
 * the adaptive selection both races and runs its choice on them.
 *
 * Prints "calls=N declined=D" (calls per rank: eligible ones, and the ones
 * left to the MPI) on rank 0; a wrong value prints one FAIL line and the job
 * exits with status 1.  Checks use PMPI_* calls: not profiled. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_INT, T_DOUBLE, T_FLOAT, T_LL, NT };
static const char *tname[NT] = {"int/sum", "double/sum", "float/max", "long long/bxor"};
static const size_t tsize[NT] = {sizeof(int), sizeof(double), sizeof(float), sizeof(long long)};

static int rank, P, calls, declined, fails;

static void value(int t, int src, long e, int rep, void *out)
{
    long v = (src + 1) * 7919L + e * 31 + rep * 101;
    switch (t) {
    case T_INT: *(int *)out = (int)(v % 200001) - 100000; break;
    case T_DOUBLE: *(double *)out = (double)(v % 100003 - 50000) / 2.0; break;
    case T_FLOAT: *(float *)out = (float)(v % 9973 - 4000) / 4.0f; break;
    default: *(long long *)out = (long long)((unsigned long long)v * 0x9E3779B97F4A7C15ULL); break;
    }
}

/* acc = acc op value(src) */
static void combine(int t, void *acc, const void *x)
{
    switch (t) {
    case T_INT: *(int *)acc += *(const int *)x; break;
    case T_DOUBLE: *(double *)acc += *(const double *)x; break;
    case T_FLOAT:
        if (*(const float *)x > *(float *)acc)
            *(float *)acc = *(const float *)x;
        break;
    default: *(long long *)acc ^= *(const long long *)x; break;
    }
}

static void fail(const char *comm, const char *t, long n, int inplace, long e, const char *what)
{
    if (fails++ == 0)
        fprintf(stderr, "FAIL rank=%d comm=%s type=%s count=%ld inplace=%d element=%ld: %s\n",
                rank, comm, t, n, inplace, e, what);
}

static void one(MPI_Comm comm, const char *cname, int t, long n, int inplace, int rep)
{
    MPI_Datatype dt = t == T_INT ? MPI_INT : t == T_DOUBLE ? MPI_DOUBLE
                    : t == T_FLOAT ? MPI_FLOAT : MPI_LONG_LONG;
    MPI_Op op = t == T_FLOAT ? MPI_MAX : t == T_LL ? MPI_BXOR : MPI_SUM;
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    size_t sz = tsize[t];
    char *send = malloc(sz * n * np), *recv = malloc(sz * n * (inplace ? np : 1));
    char want[sizeof(long long)], x[sizeof(long long)];
    for (long e = 0; e < n * np; e++)
        value(t, me, e, rep, (inplace ? recv : send) + sz * e);
    if (!inplace)
        memset(recv, 0xa5, sz * n);
    MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : send, recv, (int)n, dt, op, comm);
    calls++;
    for (long i = 0; i < n; i++) {
        long e = me * n + i;
        value(t, 0, e, rep, want);
        for (int src = 1; src < np; src++) {
            value(t, src, e, rep, x);
            combine(t, want, x);
        }
        if (memcmp(want, recv + sz * i, sz) != 0) {
            fail(cname, tname[t], n, inplace, i, "not the reduction of every rank's values");
            break;
        }
    }
    free(send);
    free(recv);
}

static MPI_Datatype three; /* 3 ints, contiguous */

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len * (*dt == three ? 3 : 1); i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, sizeof(int) * (size_t)*len); /* in op inout = in */
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    /* world, every rank in reverse, the even ranks then the odd ones */
    MPI_Comm comms[3] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - 1 - rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank % 2 * P + rank, &comms[2]);
    for (int c = 0; c < 3; c++) {
        MPI_Comm comm = comms[c];
        const char *cname = c == 2 ? "evenodd" : c ? "reversed" : "world";
        for (int t = 0; t < NT; t++) {
            long counts[] = {1, 7, 1001};
            for (int k = 0; k < 3; k++)
                for (int inplace = 0; inplace < 2; inplace++)
                    for (int r = 0; r < reps; r++)
                        one(comm, cname, t, counts[k], inplace, r);
        }
        for (int r = 0; r < reps; r++)
            one(comm, cname, T_DOUBLE, (1L << 17) / P, 0, r);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    /* left to the MPI: recvcount 0, user-defined operations, a derived datatype */
    int x = -1, *v = malloc(sizeof(int) * 3 * (size_t)P), y[3];
    MPI_Reduce_scatter_block(v, &x, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (x != -1)
        fail("world", "int", 0, 0, 0, "recvcount 0 changed the buffer");
    MPI_Op ops[2];
    MPI_Op_create(isum, 1, &ops[0]);
    MPI_Op_create(first, 0, &ops[1]);
    for (int o = 1; o >= 0; o--) {
        for (int i = 0; i < P; i++)
            v[i] = (rank + 1) * 1000 + i;
        MPI_Reduce_scatter_block(v, &x, 1, MPI_INT, ops[o], MPI_COMM_WORLD);
        int want = o ? 1000 + rank : P * (P + 1) / 2 * 1000 + P * rank;
        if (x != want)
            fail("world", o ? "int/first" : "int/user sum", 1, 0, 0,
                 "user-defined operation: wrong value");
        if (o)
            MPI_Op_free(&ops[o]);
    }
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    for (int i = 0; i < 3 * P; i++)
        v[i] = (rank + 1) * (i + 1);
    MPI_Reduce_scatter_block(v, y, 1, three, ops[0], MPI_COMM_WORLD);
    MPI_Op_free(&ops[0]);
    for (int i = 0; i < 3; i++)
        if (y[i] != P * (P + 1) / 2 * (3 * rank + i + 1)) {
            fail("world", "3 ints", 1, 0, i, "derived datatype: wrong value");
            break;
        }
    MPI_Type_free(&three);
    free(v);
    declined += 4;
    int any = 0;
    PMPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any)
        printf("calls=%d declined=%d\n", calls, declined);
    MPI_Finalize();
    return any ? 1 : 0;
}
