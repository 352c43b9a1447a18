/* coll_allreduce: MPI_Allreduce results checked element by element, for the
 * node-aware algorithms (MPILENS_COLL_ALLREDUCE, tests/test_coll_allreduce.py).
 *
 * On MPI_COMM_WORLD and on a communicator of every rank in reverse order:
 * MPI_INT sum, MPI_DOUBLE sum of integer values, MPI_DOUBLE sum of fractions,
 * MPI_FLOAT max, MPI_LONG_LONG bor, each in place and not, with 1, 7, 10007
 * elements and 1 MiB.  Exact types are checked against the value this program
 * computes from every rank's inputs; fractional sums against PMPI_Allreduce
 * within 1e-12 of the sum of magnitudes.  Every result must be the same bits
 * on every rank (rank 0's, broadcast).  Then two MPI_Allreduce calls with a
 * user-defined operation (an int sum), checked exactly.
 *
 * coll_allreduce [REPS]: every case REPS times in a row (1 by default), so
 * that the adaptive selection (MPILENS_COLL_ALLREDUCE=adaptive) both races
 * and runs its choice on them.
 *
 * Prints "calls=N user=U" (MPI_Allreduce calls per rank, predefined and
 * user-defined operations) on rank 0; a wrong value prints one FAIL line and
 * the job exits with status 1.  Checks use PMPI_* calls: not profiled. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_INT, T_DINT, T_DFRAC, T_FLOAT, T_LL, NT };
static const char *tname[NT] = {"int_sum", "double_int_sum", "double_frac_sum", "float_max",
                                "long_long_bor"};
static const size_t tsize[NT] = {sizeof(int), sizeof(double), sizeof(double), sizeof(float),
                                 sizeof(long long)};

static int rank, P, calls, fails;

static void value(int t, int r, long i, void *out)
{
    switch (t) {
    case T_INT: *(int *)out = (int)(((r + 1) * 7919L + i * 31) % 2001) - 1000; break;
    case T_DINT: *(double *)out = (double)(((r + 3) * 104729L + i * 17) % 100001) - 50000; break;
    case T_DFRAC: *(double *)out = sin(r * 1.3 + (double)i * 0.7) * 1e3 * (1 + r); break;
    case T_FLOAT: *(float *)out = (float)(((r * 37L + i * 11) % 1009) - 500) * 0.25f; break;
    default: *(long long *)out = 1LL << ((r * 5 + i * 3) % 63); break;
    }
}

static void fail(const char *comm, int t, int inplace, long n, long i, const char *what)
{
    if (fails++ == 0)
        fprintf(stderr, "FAIL rank=%d comm=%s type=%s inplace=%d count=%ld element=%ld: %s\n",
                rank, comm, tname[t], inplace, n, i, what);
}

static void one(MPI_Comm comm, const char *cname, int t, int inplace, long n)
{
    MPI_Datatype dt = t == T_INT ? MPI_INT : t == T_FLOAT ? MPI_FLOAT
                    : t == T_LL ? MPI_LONG_LONG : MPI_DOUBLE;
    MPI_Op op = t == T_FLOAT ? MPI_MAX : t == T_LL ? MPI_BOR : MPI_SUM;
    int me, cp;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &cp);
    size_t sz = tsize[t];
    char *in = malloc(sz * n), *out = malloc(sz * n), *ref = malloc(sz * n),
         *root = malloc(sz * n);
    for (long i = 0; i < n; i++)
        value(t, me, i, in + sz * i);
    if (inplace) {
        memcpy(out, in, sz * n);
        MPI_Allreduce(MPI_IN_PLACE, out, (int)n, dt, op, comm);
    } else {
        memset(out, 0x5a, sz * n);
        MPI_Allreduce(in, out, (int)n, dt, op, comm);
    }
    calls++;
    /* the same bits on every rank */
    memcpy(root, out, sz * n);
    PMPI_Bcast(root, (int)(sz * n), MPI_BYTE, 0, comm);
    if (memcmp(root, out, sz * n) != 0)
        fail(cname, t, inplace, n, -1, "not the same bits as on rank 0 of the communicator");
    if (t == T_DFRAC) {
        PMPI_Allreduce(in, ref, (int)n, dt, op, comm);
        for (long i = 0; i < n; i++) {
            double mag = 0, v;
            for (int r = 0; r < cp; r++) {
                value(t, r, i, &v);
                mag += fabs(v);
            }
            if (fabs(((double *)out)[i] - ((double *)ref)[i]) > 1e-12 * mag) {
                fail(cname, t, inplace, n, i, "too far from PMPI_Allreduce's result");
                break;
            }
        }
    } else {
        for (long i = 0; i < n; i++) {
            union { int i; double d; float f; long long l; } acc, v;
            value(t, 0, i, &acc);
            for (int r = 1; r < cp; r++) {
                value(t, r, i, &v);
                switch (t) {
                case T_INT: acc.i += v.i; break;
                case T_DINT: acc.d += v.d; break;
                case T_FLOAT: acc.f = v.f > acc.f ? v.f : acc.f; break;
                default: acc.l |= v.l; break;
                }
            }
            if (memcmp(&acc, out + sz * i, sz) != 0) {
                fail(cname, t, inplace, n, i, "not the exact result");
                break;
            }
        }
    }
    free(in); free(out); free(ref); free(root);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, P - 1 - rank, &rev);
    for (int c = 0; c < 2; c++)
        for (int t = 0; t < NT; t++)
            for (int inplace = 0; inplace < 2; inplace++) {
                long counts[] = {1, 7, 10007, (1L << 20) / (long)tsize[t]};
                for (int k = 0; k < 4; k++)
                    for (int r = 0; r < reps; r++)
                        one(c ? rev : MPI_COMM_WORLD, c ? "reversed" : "world", t, inplace, counts[k]);
            }
    MPI_Comm_free(&rev);
    /* a user-defined operation: the MPI's own call */
    MPI_Op usum;
    MPI_Op_create(user_sum, 1, &usum);
    int in[7], out[7];
    for (int inplace = 0; inplace < 2; inplace++) {
        for (int i = 0; i < 7; i++)
            in[i] = out[i] = rank * 10 + i;
        MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, 7, MPI_INT, usum, MPI_COMM_WORLD);
        for (int i = 0; i < 7; i++)
            if (out[i] != 10 * P * (P - 1) / 2 + P * i) {
                fail("world", T_INT, inplace, 7, i, "user-defined operation: not the exact result");
                break;
            }
    }
    MPI_Op_free(&usum);
    int any = 0;
    PMPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any)
        printf("calls=%d user=2\n", calls);
    MPI_Finalize();
    return any ? 1 : 0;
}
