/* coll_allgather: MPI_Allgather results checked element by element, for the
 * node-aware algorithm (MPILENS_COLL_ALLGATHER, tests/test_coll_allgather.py).
 *
 * On three communicators of every rank: MPI_COMM_WORLD, every rank in
 * reverse order, and the even world ranks first, then the odd ones
 * ("interleaved": with 2 ranks or more on a node its ranks are not
 * consecutive, as under a round-robin placement).  MPI_INT, MPI_DOUBLE,
 * MPI_CHAR and MPI_SHORT with 1, 7 and 10007 elements a rank, each with a
 * send buffer and with MPI_IN_PLACE; then
 * 1 MiB of MPI_DOUBLE in all, both ways.  Block j's values are a function of
 * (type, j, element, repetition) that every rank computes; the receive
 * buffer is filled with 0xa5 before the call (in place: but the rank's own
 * block): every element of every rank must be its block's, bit for bit.
 * Then the calls the engine must leave to the MPI (checked too): count 0, a
 * derived datatype on both sides, a derived datatype on one side only
 * (either), MPI_DOUBLE_INT (a pair type with a hole: not contiguous), and an
 * intercommunicator (with 2 ranks or more).
 *
 * coll_allgather [REPS]: every case REPS times in a row (1 by default), so
 * that the adaptive selection both races and runs its choice on them.  Under
 * adaptive, the choice mpilens_coll_choice("allgather") reports for each
 * communicator and size must be the same on every rank ("agree=1").
 *
 * Prints "calls=N declined=D agree=A" (MPI_Allgather calls per rank: eligible
 * ones, and the ones left to the MPI) on rank 0; a wrong value prints one
 * FAIL line and the job exits with status 1.  Checks use PMPI_* calls: not
 * profiled. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_INT, T_DOUBLE, T_CHAR, T_SHORT, NT, T_DINT = NT }; /* T_DINT: left to the MPI */
static const char *tname[NT + 1] = {"int", "double", "char", "short", "double_int"};
typedef struct { double d; int i; } dint;
static const size_t tsize[NT + 1] = {sizeof(int), sizeof(double), 1, sizeof(short),
                                     sizeof(dint)};

static int rank, P, calls, declined, fails;

static void value(int t, int j, long e, int rep, void *out)
{
    long v = (j + 1) * 7919L + e * 31 + rep * 101;
    switch (t) {
    case T_INT: *(int *)out = (int)(v % 200001) - 100000; break;
    case T_DOUBLE: *(double *)out = (double)(v % 100003) / 7.0 - 1e4; break;
    case T_CHAR: *(char *)out = (char)(v % 251); break;
    case T_SHORT: *(short *)out = (short)(v % 60013 - 30000); break;
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

static void fail(const char *comm, int t, long n, int inplace, long e, const char *what)
{
    if (fails++ == 0)
        fprintf(stderr, "FAIL rank=%d comm=%s type=%s count=%ld in_place=%d element=%ld: %s\n",
                rank, comm, tname[t], n, inplace, e, what);
}

static MPI_Datatype dtype(int t)
{
    return t == T_INT ? MPI_INT : t == T_DOUBLE ? MPI_DOUBLE : t == T_CHAR ? MPI_CHAR
         : t == T_SHORT ? MPI_SHORT : MPI_DOUBLE_INT;
}

static void one(MPI_Comm comm, const char *cname, int t, long n, int inplace, int rep)
{
    int me, np;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    size_t sz = tsize[t];
    char *buf = malloc(sz * n * np), *snd = malloc(sz * n), v[sizeof(dint)];
    memset(buf, 0xa5, sz * n * np);
    char *own = inplace ? buf + sz * n * me : snd;
    for (long e = 0; e < n; e++)
        value(t, me, e, rep, own + sz * e);
    MPI_Allgather(inplace ? MPI_IN_PLACE : snd, (int)n, dtype(t), buf, (int)n, dtype(t), comm);
    calls++;
    for (long e = 0; e < n * np; e++) {
        value(t, (int)(e / n), e % n, rep, v);
        if (!same(t, v, buf + sz * e)) {
            char what[80];
            snprintf(what, sizeof what, "not block %ld's value (first byte 0x%02x, not 0x%02x)",
                     e / n, (unsigned char)buf[sz * e], (unsigned char)v[0]);
            fail(cname, t, n, inplace, e, what);
            break;
        }
    }
    free(snd);
    free(buf);
}

typedef const char *(*choice_fn)(const char *, MPI_Comm, long long, long long *);

/* The choices of comm's size classes, the same on every rank (1) or not (0). */
static int agree(MPI_Comm comm, long big)
{
    choice_fn choice = (choice_fn)dlsym(RTLD_DEFAULT, "mpilens_coll_choice");
    if (!choice)
        return 1; /* not adaptive-checkable: nothing to compare */
    int ok = 1;
    for (int t = 0; t < NT; t++) {
        long counts[] = {1, 7, 10007, t == T_DOUBLE ? big : 1};
        for (int k = 0; k < 4; k++) {
            const char *c = choice("allgather", comm, (long long)(counts[k] * tsize[t]), NULL);
            int h = c ? (int)strlen(c) * 256 + c[0] : -1, mm[2] = {h, -h};
            PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MAX, comm);
            ok &= mm[0] == -mm[1];
        }
    }
    return ok;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1, agreed = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    long big = (1L << 20) / (long)sizeof(double) / P; /* 1 MiB in all */
    MPI_Comm comms[3] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL};
    const char *cnames[3] = {"world", "reversed", "interleaved"};
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - 1 - rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank % 2) * P + rank, &comms[2]);
    for (int c = 0; c < 3; c++) {
        for (int t = 0; t < NT; t++) {
            long counts[] = {1, 7, 10007};
            for (int k = 0; k < 3; k++)
                for (int ip = 0; ip < 2; ip++)
                    for (int r = 0; r < reps; r++)
                        one(comms[c], cnames[c], t, counts[k], ip, r);
        }
        for (int ip = 0; ip < 2; ip++)
            for (int r = 0; r < reps; r++)
                one(comms[c], cnames[c], T_DOUBLE, big, ip, r);
        agreed &= agree(comms[c], big);
    }
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    /* left to the MPI: count 0, derived datatypes, an intercommunicator */
    int *d = malloc(sizeof(int) * 3 * P), x = -1;
    MPI_Allgather(&rank, 0, MPI_INT, &x, 0, MPI_INT, MPI_COMM_WORLD);
    if (x != -1)
        fail("world", T_INT, 0, 0, 0, "count 0 changed the buffer");
    MPI_Datatype three;
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    int mine[3] = {rank * 3 - 7, rank, -rank};
    for (int way = 0; way < 3; way++) { /* derived both sides, send side, receive side */
        memset(d, 0xa5, sizeof(int) * 3 * P);
        if (way == 0)
            MPI_Allgather(mine, 1, three, d, 1, three, MPI_COMM_WORLD);
        else if (way == 1)
            MPI_Allgather(mine, 1, three, d, 3, MPI_INT, MPI_COMM_WORLD);
        else
            MPI_Allgather(mine, 3, MPI_INT, d, 1, three, MPI_COMM_WORLD);
        for (int j = 0; j < P; j++)
            if (d[3 * j] != j * 3 - 7 || d[3 * j + 1] != j || d[3 * j + 2] != -j) {
                fail("world", T_INT, 3, 0, 3 * j, "derived datatype: not the block's value");
                break;
            }
    }
    MPI_Type_free(&three);
    free(d);
    one(MPI_COMM_WORLD, "world", T_DINT, 7, 0, 0);
    one(MPI_COMM_WORLD, "world", T_DINT, 7, 1, 0);
    calls -= 2; /* the two MPI_DOUBLE_INT calls are declined ones */
    declined += 6;
    if (P >= 2) {
        MPI_Comm half, inter;
        int side = rank % 2, rsize;
        MPI_Comm_split(MPI_COMM_WORLD, side, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - side, 7, &inter);
        MPI_Comm_remote_size(inter, &rsize);
        int *y = malloc(sizeof(int) * rsize);
        MPI_Allgather(&rank, 1, MPI_INT, y, 1, MPI_INT, inter);
        for (int j = 0; j < rsize; j++) /* the other side's world ranks, in order */
            if (y[j] != 2 * j + (1 - side)) {
                fail("inter", T_INT, 1, 0, j, "intercommunicator: not the remote rank");
                break;
            }
        free(y);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
        declined++;
    }
    int any = 0, all_agree = 0;
    PMPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&agreed, &all_agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0 && !any)
        printf("calls=%d declined=%d agree=%d\n", calls, declined, all_agree);
    MPI_Finalize();
    return any ? 1 : 0;
}
