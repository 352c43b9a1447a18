/* Known-pattern MPI program for the profiler tests (tests/test_profiler.py
 * computes what every rank must have recorded).  tests/progs/prof_f.f90 makes
 * exactly the same calls from Fortran.  argv[1]: scratch file for MPI-IO. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "prof_c: check failed: %s\n", what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv)
{
    int r, P;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    check(argc > 1, "usage: prof_c FILE");
    int right = (r + 1) % P, left = (r - 1 + P) % P;
    MPI_Status st;
    static char sb[70000], rb[70000];
    memset(sb, r, sizeof sb);

    /* 1. blocking ring, 8 sizes spanning 8 histogram classes */
    const int sizes[8] = {0, 1, 3, 8, 100, 1000, 5000, 70000};
    for (int i = 0; i < 8; i++) {
        MPI_Sendrecv(sb, sizes[i], MPI_BYTE, right, 1, rb, sizes[i], MPI_BYTE, left, 1, MPI_COMM_WORLD, &st);
        check(sizes[i] == 0 || rb[0] == (char)left, "sendrecv data");
    }
    /* 2. pairs: even -> odd, received with MPI_ANY_SOURCE */
    double d16[16];
    for (int i = 0; i < 16; i++) d16[i] = r + i;
    for (int k = 0; k < 3; k++) {
        if (r % 2 == 0 && r + 1 < P) MPI_Send(d16, 16, MPI_DOUBLE, r + 1, 2, MPI_COMM_WORLD);
        if (r % 2 == 1) {
            MPI_Recv(d16, 16, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, k == 0 ? &st : MPI_STATUS_IGNORE);
            check(d16[0] == r - 1, "pair data");
        }
    }
    /* 3. non-blocking ring, twice */
    int i4s[4] = {r, r, r, r}, i4r[4];
    MPI_Request rq[2];
    for (int k = 0; k < 2; k++) {
        MPI_Irecv(i4r, 4, MPI_INT, left, 3, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(i4s, 4, MPI_INT, right, 3, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        check(i4r[3] == left, "isend data");
    }
    int i2s[2] = {r, r}, i2r[2];
    MPI_Irecv(i2r, 2, MPI_INT, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Send(i2s, 2, MPI_INT, right, 4, MPI_COMM_WORLD);
    MPI_Wait(&rq[0], &st);
    check(st.MPI_SOURCE == left && i2r[1] == left, "irecv any source");
    /* 4. persistent ring */
    int p10s[10], p10r[10];
    for (int i = 0; i < 10; i++) p10s[i] = r;
    MPI_Send_init(p10s, 10, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[1]);
    MPI_Recv_init(p10r, 10, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[0]);
    for (int k = 0; k < 3; k++) {
        MPI_Startall(2, rq);
        MPI_Status sts[2];
        MPI_Waitall(2, rq, sts);
        check(p10r[9] == left, "persistent data");
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    /* 5. probe */
    int i3[3] = {r, r, r}, n = 0;
    int i3r[3];
    MPI_Isend(i3, 3, MPI_INT, right, 6, MPI_COMM_WORLD, &rq[1]); /* a blocking send to self may wait for its receive */
    MPI_Probe(left, 6, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    check(n == 3, "probe count");
    MPI_Recv(i3r, n, MPI_INT, left, 6, MPI_COMM_WORLD, &st);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    /* 6. collectives */
    int i10[10];
    for (int i = 0; i < 10; i++) i10[i] = r == 0 ? 7 : -1;
    MPI_Bcast(i10, 10, MPI_INT, 0, MPI_COMM_WORLD);
    check(i10[9] == 7, "bcast");
    double d3[3] = {1, 2, 3}, d3r[3];
    MPI_Reduce(d3, d3r, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    check(r != 0 || d3r[2] == 3.0 * P, "reduce");
    double one = 1.0, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(sum == P, "allreduce");
    int ip4[4] = {1, 1, 1, 1};
    MPI_Allreduce(MPI_IN_PLACE, ip4, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(ip4[3] == P, "allreduce in place");
    int *big = calloc((size_t)(P * (P + 1) + 64), sizeof(int)), *cnt = calloc((size_t)P, sizeof(int)),
        *dsp = calloc((size_t)P, sizeof(int)), *cnt2 = calloc((size_t)P, sizeof(int));
    int g2[2] = {r, r};
    MPI_Gather(g2, 2, MPI_INT, big, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int gv[64];
    for (int i = 0; i < r + 1; i++) gv[i] = r;
    for (int i = 0, o = 0; i < P; i++) { cnt[i] = i + 1; dsp[i] = o; o += i + 1; }
    MPI_Gatherv(gv, r + 1, MPI_INT, big, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD);
    check(r != 0 || big[dsp[P - 1]] == P - 1, "gatherv");
    int s3[3];
    for (int i = 0; i < 3 * P && r == 0; i++) big[i] = i / 3;
    MPI_Scatter(big, 3, MPI_INT, s3, 3, MPI_INT, 0, MPI_COMM_WORLD);
    check(s3[2] == r, "scatter");
    MPI_Allgather(&r, 1, MPI_INT, big, 1, MPI_INT, MPI_COMM_WORLD);
    check(big[P - 1] == P - 1, "allgather");
    for (int i = 0; i < P; i++) { cnt[i] = 2; dsp[i] = 2 * i; }
    big[2 * r] = big[2 * r + 1] = r;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, big, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    check(big[2 * (P - 1) + 1] == P - 1, "allgatherv in place");
    int *a2s = calloc((size_t)(2 * P), sizeof(int)), *a2r = calloc((size_t)(2 * P), sizeof(int));
    for (int i = 0; i < 2 * P; i++) a2s[i] = r;
    MPI_Alltoall(a2s, 2, MPI_INT, a2r, 2, MPI_INT, MPI_COMM_WORLD);
    check(a2r[2 * P - 1] == P - 1, "alltoall");
    for (int i = 0; i < P; i++) { cnt[i] = cnt2[i] = 1; dsp[i] = i; }
    MPI_Alltoallv(a2s, cnt, dsp, MPI_INT, a2r, cnt2, dsp, MPI_INT, MPI_COMM_WORLD);
    check(a2r[P - 1] == P - 1, "alltoallv");
    double *rsb = calloc((size_t)(2 * P), sizeof(double)), rsr[2];
    for (int i = 0; i < 2 * P; i++) rsb[i] = 1.0;
    MPI_Reduce_scatter_block(rsb, rsr, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(rsr[1] == P, "reduce_scatter_block");
    double sc = 1.0, scr = 0;
    MPI_Scan(&sc, &scr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(scr == r + 1, "scan");
    int ex = 1, exr = 0;
    MPI_Exscan(&ex, &exr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(r == 0 || exr == r, "exscan");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double d5[5] = {r == 0 ? 5.0 : 0, 0, 0, 0, 0};
    MPI_Request cr;
    MPI_Ibcast(d5, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD, &cr);
    MPI_Wait(&cr, MPI_STATUS_IGNORE);
    check(d5[0] == 5.0, "ibcast");
    int ia2[2] = {1, 2}, ia2r[2];
    MPI_Iallreduce(ia2, ia2r, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr);
    MPI_Wait(&cr, MPI_STATUS_IGNORE);
    check(ia2r[1] == 2 * P, "iallreduce");
    /* 7. communicators: split with reversed order, ring in the sub-communicator */
    MPI_Comm sub, dup;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &sub);
    int sr, sp;
    MPI_Comm_rank(sub, &sr);
    MPI_Comm_size(sub, &sp);
    MPI_Sendrecv(sb, 64, MPI_BYTE, (sr + 1) % sp, 8, rb, 64, MPI_BYTE, (sr - 1 + sp) % sp, 8, sub, &st);
    MPI_Comm_dup(sub, &dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&sub);
    /* 8. one-sided */
    double wbuf[10] = {0}, d5p[5] = {1, 2, 3, 4, 5}, d2g[2];
    MPI_Win win;
    MPI_Win_create(wbuf, sizeof wbuf, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(d5p, 5, MPI_DOUBLE, right, 0, 5, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    MPI_Get(d2g, 2, MPI_DOUBLE, left, 3, 2, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    check(d2g[0] == 4.0 && d2g[1] == 5.0, "rma");
    MPI_Win_free(&win);
    /* 9. MPI-IO */
    MPI_File fh;
    char io[100], back[100];
    memset(io, 'a' + r % 26, sizeof io);
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, (MPI_Offset)r * 100, io, 100, MPI_CHAR, &st);
    MPI_File_read_at(fh, (MPI_Offset)r * 100, back, 100, MPI_CHAR, &st);
    check(memcmp(io, back, 100) == 0, "file data");
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);
    free(big); free(cnt); free(dsp); free(cnt2); free(a2s); free(a2r); free(rsb);
    MPI_Finalize();
    return 0;
}
