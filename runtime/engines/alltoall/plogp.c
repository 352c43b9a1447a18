/* P-LogP parameters (Kielmann et al.) measured inside the library, for the
 * algorithms' cost models (one beside each algorithm: spread.c, bruck.c, ...;
 * Nanri et al. 2008, Table 1, docs/references.md) and exact sums over ranks.
 *
 * Measurement (collective over the communicator, done once per message size
 * in the Grouping phase): ranks r < P/2 pair with r + P/2 and measure in
 * parallel, so the parameters include the contention of a loaded network;
 * the values are averaged over all pairs with one exact sum (ml_sum_exact), so
 * every rank predicts identically.
 *   RTT(0)   zero-byte ping-pong            L = RTT(0)/2 - g(0)  (>= 0)
 *   os(x)    time of PMPI_Send(x) in a burst of R sends
 *   g(x)     (burst of R sends + zero-byte ack - RTT(0)) / R, at least os(x)
 *   or(x)    time of PMPI_Recv(x) once PMPI_Probe saw the message arrive
 * for x = 0 and m (the zero-byte part only on a group's first measurement:
 * memo.c keeps it per group of processes).  g(2m), for recursive
 * doubling's model, is not measured
 * but taken from P-LogP's linear regime, g(2m) = 2 g(m) - g(0): measuring it
 * was a third of the Grouping time (two thirds at 1 MiB, ~4 ms on 4 ranks).
 * R = 4 repetitions up to 64 KiB, 2 above (Grouping only needs the order of
 * magnitude: the candidates it keeps are timed anyway).
 */
#include "alltoall.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TAG_PLOGP 7200

int ml_plogp_zero_measurements; /* how often the zero-byte part was measured (tests) */

static int reps_for(size_t m)
{
    return m <= 65536 ? 4 : 2;
}

/* One side of the measurement for x bytes; fills os/g (sender) or or (receiver). */
static void measure_size(MPI_Comm comm, int sender, int peer, char *buf, size_t x, int R,
                         double rtt0, double *os, double *g, double *orr)
{
    int n = (int)x;
    if (sender) {
        double tsend = 0, t0 = PMPI_Wtime();
        for (int i = 0; i < R; i++) {
            double t = PMPI_Wtime();
            PMPI_Send(buf, n, MPI_BYTE, peer, TAG_PLOGP, comm);
            tsend += PMPI_Wtime() - t;
        }
        PMPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
        double T = PMPI_Wtime() - t0;
        *os = tsend / R;
        *g = (T - rtt0) / R;
        if (*g < *os)
            *g = *os;
        for (int i = 0; i < R; i++) {
            PMPI_Send(buf, n, MPI_BYTE, peer, TAG_PLOGP, comm);
            PMPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (int i = 0; i < R; i++)
            PMPI_Recv(buf, n, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
        PMPI_Send(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm);
        double tr = 0;
        for (int i = 0; i < R; i++) {
            PMPI_Probe(peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
            double t = PMPI_Wtime();
            PMPI_Recv(buf, n, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
            tr += PMPI_Wtime() - t;
            PMPI_Send(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm);
        }
        *orr = tr / R;
    }
}

int ml_plogp_measure(MPI_Comm comm, size_t m, ml_plogp *out, const ml_plogp0 *known,
                     ml_plogp0 *zero)
{
    int P, r;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &r);
    memset(out, 0, sizeof *out);
    if (P < 2)
        return MPI_SUCCESS;
    if (!known)
        __atomic_add_fetch(&ml_plogp_zero_measurements, 1, __ATOMIC_RELAXED);
    int half = P / 2;
    int role = r < half ? 1 : (r < 2 * half ? 2 : 0); /* 1 sender, 2 receiver, 0 idle */
    int peer = role == 1 ? r + half : r - half;
    /* v: L g0 os0 or0 gm osm orm g2m nsend nrecv rtt0 */
    double v[11] = {0};
    if (role) {
        size_t blen = m + 1;
        char *buf = malloc(blen);
        if (!buf)
            return MPI_ERR_NO_MEM;
        memset(buf, 0, blen);
        int R = reps_for(m);
        double rtt0 = 0, os0 = 0, g0 = 0, or0 = 0, osm = 0, gm = 0, orm = 0, g2m = 0;
        if (known) {
            rtt0 = known->rtt0;
            g0 = known->g0;
            os0 = known->os0;
            or0 = known->or0;
        } else {
            for (int i = 0; i <= R; i++) { /* first round is warm-up */
                double t = PMPI_Wtime();
                if (role == 1) {
                    PMPI_Send(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm);
                    PMPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
                } else {
                    PMPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm, MPI_STATUS_IGNORE);
                    PMPI_Send(NULL, 0, MPI_BYTE, peer, TAG_PLOGP, comm);
                }
                if (i > 0)
                    rtt0 += PMPI_Wtime() - t;
            }
            rtt0 /= R;
            measure_size(comm, role == 1, peer, buf, 0, 8, rtt0, &os0, &g0, &or0);
        }
        if (m > 0) {
            measure_size(comm, role == 1, peer, buf, m, R, rtt0, &osm, &gm, &orm);
            g2m = gm + (gm - g0 > 0 ? gm - g0 : 0);
        } else {
            osm = os0; gm = g0; orm = or0; g2m = g0;
        }
        free(buf);
        if (role == 1) {
            double L = known ? known->L : rtt0 / 2 - g0;
            v[0] = L > 0 ? L : 0;
            v[1] = g0; v[2] = os0; v[4] = gm; v[5] = osm; v[7] = g2m; v[8] = 1;
            v[10] = rtt0;
        } else {
            v[3] = or0; v[6] = orm; v[9] = 1;
        }
    }
    double s[11];
    int rc = ml_sum_exact(v, s, 11, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    double ns = s[8] > 0 ? s[8] : 1, nr = s[9] > 0 ? s[9] : 1;
    out->L = s[0] / ns;
    out->g0 = s[1] / ns;
    out->os0 = s[2] / ns;
    out->or0 = s[3] / nr;
    out->gm = s[4] / ns;
    out->osm = s[5] / ns;
    out->orm = s[6] / nr;
    out->g2m = s[7] / ns;
    if (known) { /* exactly the values given, not their average (rounding) */
        out->L = known->L;
        out->g0 = known->g0;
        out->os0 = known->os0;
        out->or0 = known->or0;
    } else if (zero) {
        /* each pair measured with its own rtt0; later sizes use the pairs' mean */
        *zero = (ml_plogp0){s[10] / ns, out->L, out->g0, out->os0, out->or0};
    }
    return MPI_SUCCESS;
}

/* MPI requires identical Allreduce results on all ranks, but floating-point
 * sums depend on the order of additions, and MPI libraries have shipped
 * algorithms that add in a different order on different ranks (MPICH's
 * recursive exchange, pmodels/mpich#6538).  Integers cannot round. */
int ml_sum_exact(const double *v, double *out, int n, MPI_Comm comm)
{
    if (n < 1 || n > ML_SUM_MAX)
        return n == 0 ? MPI_SUCCESS : MPI_ERR_COUNT;
    int64_t q[n], s[n]; /* n <= ML_SUM_MAX */
    for (int i = 0; i < n; i++)
        q[i] = llround(v[i] * 1e12);
    int rc = PMPI_Allreduce(q, s, n, MPI_INT64_T, MPI_SUM, comm);
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
        out[i] = (double)s[i] / 1e12;
    return rc;
}
