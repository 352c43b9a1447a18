/* The published reproducibility example (Intel 2015, docs/references.md) in many placements.
 *
 * Every process contributes 2^-60 except two that contribute +1.0 and -1.0;
 * the exact sum is (P-2) * 2^-60.  The program loops over which world ranks
 * hold +1/-1 and over communicator orders made with MPI_Comm_split (identity,
 * reversed, shuffled, and "nodes" of ppn ranks emulated by blocked and
 * round-robin rank-to-node maps), and for each runs MPI_Reduce, MPI_Allreduce
 * (also in place), MPI_Reduce_scatter_block and MPI_Scan.  Rank 0 prints one
 * line per (case, collective): "case=<c> coll=<name> min=<bits> max=<bits>",
 * the smallest and largest result bit pattern over the ranks that hold the total.
 * Optional arguments: how many communicator orders and holder pairs to run
 * (default: all 7 and all 5), to keep slow (busy-polling) launches short.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static uint64_t rng_state = 12345;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_state >> 33) % n);
}

/* Smallest and largest bit pattern among the ranks with has != 0, printed by world rank 0. */
static void report(const char *cas, const char *coll, double v, int has)
{
    int P, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    uint64_t mine[2] = {(uint64_t)has, bits_of(v)}, *all = malloc(sizeof(uint64_t) * 2 * (size_t)P);
    MPI_Gather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t mn = UINT64_MAX, mx = 0;
        for (int i = 0; i < P; i++)
            if (all[2 * i]) {
                mn = all[2 * i + 1] < mn ? all[2 * i + 1] : mn;
                mx = all[2 * i + 1] > mx ? all[2 * i + 1] : mx;
            }
        printf("case=%s coll=%s min=%016" PRIx64 " max=%016" PRIx64 "\n", cas, coll, mn, mx);
    }
    free(all);
}

static void run_case(const char *cas, MPI_Comm comm, double mine)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    double res = -1.0;
    MPI_Reduce(&mine, &res, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(cas, "reduce", res, r == 0);
    MPI_Reduce(&mine, &res, 1, MPI_DOUBLE, MPI_SUM, P - 1, comm);
    report(cas, "reduce_last", res, r == P - 1);
    MPI_Allreduce(&mine, &res, 1, MPI_DOUBLE, MPI_SUM, comm);
    report(cas, "allreduce", res, 1);
    res = mine;
    MPI_Allreduce(MPI_IN_PLACE, &res, 1, MPI_DOUBLE, MPI_SUM, comm);
    report(cas, "allreduce_inplace", res, 1);
    double *row = malloc(sizeof(double) * (size_t)P);
    for (int i = 0; i < P; i++)
        row[i] = mine;
    MPI_Reduce_scatter_block(row, &res, 1, MPI_DOUBLE, MPI_SUM, comm);
    report(cas, "reduce_scatter_block", res, 1);
    free(row);
    MPI_Scan(&mine, &res, 1, MPI_DOUBLE, MPI_SUM, comm);
    report(cas, "scan", res, r == P - 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P, w;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &w);
    if (P < 4) {
        if (w == 0)
            fprintf(stderr, "repro_example: needs at least 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Which world ranks hold +1.0 and -1.0: the paper's 15/16 (scaled to P), the ends, random. */
    int holders[][2] = {{15 * P / 64, 16 * P / 64}, {0, P - 1}, {P - 1, 0}, {1, P / 2},
                        {(int)rnd((unsigned)P), 0}};
    holders[4][1] = (holders[4][0] + 1 + (int)rnd((unsigned)P - 1)) % P;
    int nh = (int)(sizeof holders / sizeof holders[0]);
    int no = 7;
    if (argc > 1 && atoi(argv[1]) > 0 && atoi(argv[1]) < no)
        no = atoi(argv[1]);
    if (argc > 2 && atoi(argv[2]) > 0 && atoi(argv[2]) < nh)
        nh = atoi(argv[2]);
    int *perm = malloc(sizeof(int) * (size_t)P);
    const char *orders[] = {"identity", "reversed", "shuffled1", "shuffled2", "nodes4_block_rev",
                            "nodes4_roundrobin", "nodes2_roundrobin"};
    for (int o = 0; o < no && o < (int)(sizeof orders / sizeof orders[0]); o++) {
        /* perm[world rank] = key = position in the new communicator */
        for (int i = 0; i < P; i++)
            perm[i] = i;
        if (o == 1) {
            for (int i = 0; i < P; i++)
                perm[i] = P - 1 - i;
        } else if (o == 2 || o == 3) {
            for (int i = P - 1; i > 0; i--) {   /* same seed sequence on every rank */
                int j = (int)rnd((unsigned)i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        } else if (o >= 4) {
            int nodes = o == 6 ? 2 : 4, ppn = P / nodes;
            for (int i = 0; i < P; i++) {
                int node = i / ppn < nodes ? i / ppn : nodes - 1, local = i - node * ppn;
                if (o == 4)   /* nodes in reverse order, ranks blocked per node */
                    perm[i] = (nodes - 1 - node) * ppn + local;
                else          /* round-robin: consecutive positions on different nodes */
                    perm[i] = local * nodes + node;
            }
            if (P % nodes)    /* keep a permutation when P is not a multiple of nodes */
                for (int i = 0; i < P; i++)
                    perm[i] = o == 4 ? P - 1 - i : i;
        }
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, 0, perm[w], &comm);
        for (int h = 0; h < nh; h++) {
            double mine = w == holders[h][0] ? 1.0 : w == holders[h][1] ? -1.0 : 0x1p-60;
            char cas[96];
            snprintf(cas, sizeof cas, "%s/holders%d_%d", orders[o], holders[h][0], holders[h][1]);
            run_case(cas, comm, mine);
        }
        MPI_Comm_free(&comm);
    }
    free(perm);
    MPI_Finalize();
    return 0;
}
