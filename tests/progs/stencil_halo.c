/* A halo exchange on a Cartesian grid of the ranks, for the pattern tests
 * (tests/test_stencil_pattern.py).
 *
 * usage: stencil_halo MODE DIMS PERIODS [self|noself [REPEAT]]
 *   MODE     manual     neighbours computed from row-major coordinates, on MPI_COMM_WORLD
 *            cart       MPI_Cart_create(reorder = 0) and MPI_Cart_shift
 *            graph      MPI_Graph_create with the grid's neighbours (reorder = 0)
 *            distgraph  MPI_Dist_graph_create_adjacent with the grid's neighbours
 *            distgraph1 MPI_Dist_graph_create, each rank giving its own out-edges
 *   DIMS     e.g. 3x3 or 2x2x2 (product = number of ranks)
 *   PERIODS  e.g. 1,0 (one flag per dimension)
 *   self     each rank also sends SELF_BYTES to itself in every iteration
 *   REPEAT   create (and free) the topology REPEAT - 1 more times first
 *
 * ITER iterations; in each, for every dimension k and both directions, one
 * message of 64 * (k + 1) bytes to the neighbour (none past a non-periodic
 * edge; in a periodic dimension of size 2 both directions reach the same
 * rank).  Prints "stencil_halo: rank=W topo_rank=T" per rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITER 3
#define SELF_BYTES 40
#define MAXD 3

static int nd, dims[MAXD], periods[MAXD];

static int grid_rank(const int *c)
{
    int r = 0;
    for (int k = 0; k < nd; k++) r = r * dims[k] + c[k];
    return r;
}

/* the neighbour of rank r at offset d in dimension k, or MPI_PROC_NULL */
static int neighbour(int r, int k, int d)
{
    int c[MAXD];
    for (int j = nd - 1; j >= 0; j--) {
        c[j] = r % dims[j];
        r /= dims[j];
    }
    c[k] += d;
    if (c[k] < 0 || c[k] >= dims[k]) {
        if (!periods[k]) return MPI_PROC_NULL;
        c[k] = (c[k] + dims[k]) % dims[k];
    }
    return grid_rank(c);
}

/* distinct neighbours of rank r (without r itself) */
static int neighbours(int r, int *out)
{
    int n = 0;
    for (int k = 0; k < nd; k++)
        for (int d = -1; d <= 1; d += 2) {
            int q = neighbour(r, k, d), seen = q == MPI_PROC_NULL || q == r;
            for (int i = 0; i < n && !seen; i++) seen = out[i] == q;
            if (!seen) out[n++] = q;
        }
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (argc < 4) {
        if (wrank == 0) fprintf(stderr, "usage: stencil_halo MODE DIMS PERIODS [self|noself [REPEAT]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *mode = argv[1];
    int prod = 1;
    char *s = argv[2];
    for (nd = 0; nd < MAXD && *s; nd++) {
        dims[nd] = (int)strtol(s, &s, 10);
        prod *= dims[nd];
        if (*s == 'x') s++;
    }
    s = argv[3];
    for (int k = 0; k < nd; k++) {
        periods[k] = (int)strtol(s, &s, 10);
        if (*s == ',') s++;
    }
    int self = argc > 4 && strcmp(argv[4], "self") == 0;
    int repeat = argc > 5 ? atoi(argv[5]) : 1;
    if (prod != wsize) {
        if (wrank == 0) fprintf(stderr, "stencil_halo: %s needs %d ranks, not %d\n", argv[2], prod, wsize);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    MPI_Comm comm = MPI_COMM_WORLD;
    int nb[2 * MAXD], w[2 * MAXD] = {1, 1, 1, 1, 1, 1}; /* weighted graphs: w */
    if (strcmp(mode, "cart") == 0) {
        for (int i = 1; i < repeat; i++) {
            MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &comm);
            MPI_Comm_free(&comm);
        }
        MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &comm);
    } else if (strcmp(mode, "graph") == 0) {
        int *index = malloc(sizeof(int) * (size_t)wsize), *edges = malloc(sizeof(int) * 2 * MAXD * (size_t)wsize);
        int ne = 0;
        for (int r = 0; r < wsize; r++) {
            ne += neighbours(r, edges + ne);
            index[r] = ne;
        }
        MPI_Graph_create(MPI_COMM_WORLD, wsize, index, edges, 0, &comm);
        free(index);
        free(edges);
    } else if (strcmp(mode, "distgraph") == 0) {
        int n = neighbours(wrank, nb);
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, n, nb, w, n, nb, w, MPI_INFO_NULL, 0, &comm);
    } else if (strcmp(mode, "distgraph1") == 0) {
        int n = neighbours(wrank, nb);
        MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &wrank, &n, nb, w, MPI_INFO_NULL, 0, &comm);
    } else if (strcmp(mode, "manual") != 0) {
        if (wrank == 0) fprintf(stderr, "stencil_halo: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int me;
    MPI_Comm_rank(comm, &me);
    printf("stencil_halo: rank=%d topo_rank=%d\n", wrank, me);

    char *sbuf = calloc(64 * MAXD + SELF_BYTES, 1), *rbuf = calloc(2 * MAXD * 64 * MAXD + SELF_BYTES, 1);
    MPI_Request req[4 * MAXD + 2];
    MPI_Status st[4 * MAXD + 2];
    for (int it = 0; it < ITER; it++) {
        int nr = 0;
        for (int k = 0; k < nd; k++) {
            int size = 64 * (k + 1);
            for (int d = -1; d <= 1; d += 2) {
                int src, dst;
                if (comm != MPI_COMM_WORLD && strcmp(mode, "cart") == 0) {
                    MPI_Cart_shift(comm, k, d, &src, &dst);
                } else {
                    dst = neighbour(me, k, d);
                    src = neighbour(me, k, -d);
                }
                int tag = 2 * k + (d > 0);
                MPI_Irecv(rbuf + (size_t)(2 * k + (d > 0)) * 64 * MAXD, size, MPI_BYTE, src, tag, comm, &req[nr++]);
                MPI_Isend(sbuf, size, MPI_BYTE, dst, tag, comm, &req[nr++]);
            }
        }
        if (self) {
            MPI_Irecv(rbuf + 2 * MAXD * 64 * MAXD, SELF_BYTES, MPI_BYTE, me, 99, comm, &req[nr++]);
            MPI_Isend(sbuf, SELF_BYTES, MPI_BYTE, me, 99, comm, &req[nr++]);
        }
        MPI_Waitall(nr, req, st);
    }
    free(sbuf);
    free(rbuf);
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
