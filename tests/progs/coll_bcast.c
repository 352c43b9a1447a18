/* coll_bcast: MPI_Bcast results checked element by element, for the
 * node-aware algorithms (MPILENS_COLL_BCAST, tests/test_coll_bcast.py).
 *
 * On MPI_COMM_WORLD and on a communicator of every rank in reverse order,
 * from every rank of it as the root: MPI_INT, MPI_DOUBLE, MPI_CHAR and
 * MPI_DOUBLE_INT (a pair with a hole) with 1, 7 and 10007 elements; then
 * 1 MiB of MPI_DOUBLE from the last rank.  The root's values are a function
 * of (type, root, element, repetition) that every rank computes, the other
 * ranks' buffers are filled with 0xa5 before the call: every element of every
 * rank must be the root's, bit for bit.  Then three calls the engine must
 * leave to the MPI (checked too): count 0, a derived datatype (3 ints,
 * contiguous), and an intercommunicator (with 2 ranks or more).
 *
 * coll_bcast [REPS]: every case REPS times in a row (1 by default), so that
 * the adaptive selection both races and runs its choice on them.
 *
 * Prints "calls=N declined=D" (MPI_Bcast calls per rank: eligible ones, and
 * the ones left to the MPI) on rank 0; a wrong value prints one FAIL line
 * and the job exits with status 1.  Checks use PMPI_* calls: not profiled. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_INT, T_DOUBLE, T_CHAR, T_DINT, NT };
static const char *tname[NT] = {"int", "double", "char", "double_int"};
typedef struct { double d; int i; } dint;
static const size_t tsize[NT] = {sizeof(int), sizeof(double), 1, sizeof(dint)};

static int rank, P, calls, declined, fails;

static void value(int t, int root, long e, int rep, void *out)
{
    long v = (root + 1) * 7919L + e * 31 + rep * 101;
    switch (t) {
    case T_INT: *(int *)out = (int)(v % 200001) - 100000; break;
    case T_DOUBLE: *(double *)out = (double)(v % 100003) / 7.0 - 1e4; break;
    case T_CHAR: *(char *)out = (char)(v % 251); break;
    default: ((dint *)out)->d = (double)(v % 1009) / 3.0; ((dint *)out)->i = (int)(v % 65521); break;
    }
}

static int same(int t, const void *a, const void *b)
{
    if (t == T_DINT) /* the fields, not the hole */
        return memcmp(&((const dint *)a)->d, &((const dint *)b)->d, sizeof(double)) == 0
            && ((const dint *)a)->i == ((const dint *)b)->i;
    return memcmp(a, b, tsize[t]) == 0;
}

static void fail(const char *comm, int t, int root, long n, long e, const char *what)
{
    if (fails++ == 0)
        fprintf(stderr, "FAIL rank=%d comm=%s type=%s root=%d count=%ld element=%ld: %s\n",
                rank, comm, tname[t], root, n, e, what);
}

static void one(MPI_Comm comm, const char *cname, int t, int root, long n, int rep)
{
    MPI_Datatype dt = t == T_INT ? MPI_INT : t == T_DOUBLE ? MPI_DOUBLE
                    : t == T_CHAR ? MPI_CHAR : MPI_DOUBLE_INT;
    int me;
    MPI_Comm_rank(comm, &me);
    size_t sz = tsize[t];
    char *buf = malloc(sz * n), v[sizeof(dint)];
    memset(buf, 0xa5, sz * n);
    if (me == root)
        for (long e = 0; e < n; e++)
            value(t, root, e, rep, buf + sz * e);
    MPI_Bcast(buf, (int)n, dt, root, comm);
    calls++;
    for (long e = 0; e < n; e++) {
        value(t, root, e, rep, v);
        if (!same(t, v, buf + sz * e)) {
            char what[80];
            snprintf(what, sizeof what, "not the root's value (first byte 0x%02x, not 0x%02x)",
                     (unsigned char)buf[sz * e], (unsigned char)v[0]);
            fail(cname, t, root, n, e, what);
            break;
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_NULL}; /* world, every rank in reverse */
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - 1 - rank, &comms[1]);
    for (int c = 0; c < 2; c++) {
        MPI_Comm comm = comms[c];
        const char *cname = c ? "reversed" : "world";
        for (int t = 0; t < NT; t++)
            for (int root = 0; root < P; root++) {
                long counts[] = {1, 7, 10007};
                for (int k = 0; k < 3; k++)
                    for (int r = 0; r < reps; r++)
                        one(comm, cname, t, root, counts[k], r);
            }
        for (int r = 0; r < reps; r++)
            one(comm, cname, T_DOUBLE, P - 1, (1L << 20) / (long)sizeof(double), r);
    }
    MPI_Comm_free(&comms[1]);
    /* left to the MPI: count 0, a derived datatype, an intercommunicator */
    int d[15], x = rank == 0 ? 42 : -1;
    MPI_Bcast(&x, 0, MPI_INT, 0, MPI_COMM_WORLD);
    if (x != (rank == 0 ? 42 : -1))
        fail("world", T_INT, 0, 0, 0, "count 0 changed the buffer");
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    for (int i = 0; i < 15; i++)
        d[i] = rank == P - 1 ? i * 3 - 7 : 0;
    MPI_Bcast(d, 5, three, P - 1, MPI_COMM_WORLD);
    for (int i = 0; i < 15; i++)
        if (d[i] != i * 3 - 7) {
            fail("world", T_INT, P - 1, 5, i, "derived datatype: not the root's value");
            break;
        }
    MPI_Type_free(&three);
    declined += 2;
    if (P >= 2) {
        MPI_Comm half, inter;
        int side = rank % 2;
        MPI_Comm_split(MPI_COMM_WORLD, side, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - side, 7, &inter);
        int y = rank == 0 ? 1234 : -1;
        MPI_Bcast(&y, 1, MPI_INT, side ? 0 : rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        if (y != (side || rank == 0 ? 1234 : -1))
            fail("inter", T_INT, 0, 1, 0, "intercommunicator: not the root's value");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
        declined++;
    }
    int any = 0;
    PMPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any)
        printf("calls=%d declined=%d\n", calls, declined);
    MPI_Finalize();
    return any ? 1 : 0;
}
