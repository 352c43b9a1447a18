/* Profile step 1, reduce: this rank's thread records merged, then the
 * cross-rank aggregates reduced to rank 0 (profile.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "topo.h"

ml_slot_t *ml_first_slot(void);

void ml_merge_into(ml_slot_t *m)
{
    ml_peer_t *peers = m->peers;
    memset(m, 0, sizeof *m);
    memset(peers, 0, sizeof(ml_peer_t) * (size_t)ml_world_size);
    m->peers = peers;
    for (ml_slot_t *s = ml_first_slot(); s; s = s->next) {
        for (int i = 0; i < ML_NFUNC; i++) {
            ml_frec_t *a = &m->f[i], *x = &s->f[i];
            if (!x->t.calls) continue;
            if (!a->t.calls || x->tmin < a->tmin) a->tmin = x->tmin;
            if (x->tmax > a->tmax) a->tmax = x->tmax;
            ml_timing_sum(&a->t, &x->t);
        }
        for (int i = 0; i < ML_NDATA; i++) {
            ml_drec_t *a = &m->d[i], *x = &s->d[i];
            a->bytes_s += x->bytes_s;
            a->bytes_r += x->bytes_r;
            a->served += x->served;
            a->hist_bytes_s += x->hist_bytes_s;
            for (int k = 0; k < 8; k++) a->xnode[k / 4][k % 4] += x->xnode[k / 4][k % 4];
            for (int k = 0; k < 2; k++) {
                a->span_calls[k] += x->span_calls[k];
                if (x->span_max[k] > a->span_max[k]) a->span_max[k] = x->span_max[k];
            }
            for (int k = 0; k < ML_NBINS; k++) {
                a->hist_s[k] += x->hist_s[k];
                a->hist_r[k] += x->hist_r[k];
            }
        }
        for (int p = 0; p < ml_world_size; p++) {
            m->peers[p].msgs_s += s->peers[p].msgs_s;
            m->peers[p].bytes_s += s->peers[p].bytes_s;
            m->peers[p].msgs_r += s->peers[p].msgs_r;
            m->peers[p].bytes_r += s->peers[p].bytes_r;
        }
        m->untracked += s->untracked;
    }
}

static ml_slot_t *ml_merge(void)
{
    ml_slot_t *m = calloc(1, sizeof *m);
    if (m) m->peers = calloc((size_t)ml_world_size, sizeof(ml_peer_t));
    if (!m || !m->peers) {
        fprintf(stderr, "mpilens: out of memory merging the records for the profile\n");
        abort();
    }
    ml_merge_into(m);
    return m;
}

double ml_mpi_time(const ml_slot_t *m)
{
    double mpi = 0.0;
    for (int i = 1; i < ML_NFUNC; i++) /* MPI_Init* and MPI_Finalize lie outside the wall-time window */
        if (strncmp(ml_func_name[i], "MPI_Init", 8) != 0 && strcmp(ml_func_name[i], "MPI_Finalize") != 0)
            mpi += ml_est_s(&m->f[i].t);
    return mpi;
}

static void *ml_zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "mpilens: out of memory reducing the profile\n");
        abort();
    }
    return p;
}

/* The cross-rank aggregates travel in one packed buffer of 8-byte words, reduced by
 * one MPI_Reduce with a user-defined operation (ml_pack_op): one collective instead of
 * nine.  Its layout, in words (NF functions, NU = NF + ND * ML_DWORDS counters):
 *   [0, NU)                 uint64 sums: calls, then the data records' counters
 *   CMIN, CMAX  [NF each]   uint64 min / max of the calls per rank
 *   TSUM        [NF + 2]    double sums: time per function, then wall, mpi
 *   TMAX        [NF]        double max: the longest single call
 *   TMIN        [NF + 2]    double min: the shortest single call, then wall, mpi
 *   RTMIN       [NF]        double min: the per-rank total
 *   RTMAX, RTRANK [NF each] double max of the per-rank total and its rank (lowest on a tie)
 *   MX          [3]         double max: wall, mpi, overhead
 *   SPAN        [ND * 2]    uint64 max: the collectives' largest node span (nodes.c)
 * The operation is declared non-commutative: MPICH then reduces in rank order
 * (binomial tree) and never takes its SMP-aware path, whose MPI_Reduce of >= 1000
 * uint64 dropped the root's own contribution when rank 0 was alone on its node (MPICH
 * 4.0.2, pmodels/mpich issue 6893); every word is still reduced elementwise, so the
 * order changes nothing but the rounding of the double sums. */
enum { ML_PK_NF = ML_NFUNC };
static size_t pk_nu, pk_cmin, pk_cmax, pk_tsum, pk_tmax, pk_tmin, pk_rtmin, pk_rtmax, pk_rtrank,
    pk_mx, pk_span, pk_words;

static void pk_layout(void)
{
    const size_t NF = ML_NFUNC;
    pk_nu = NF + (size_t)ML_NDATA * ML_DWORDS;
    pk_cmin = pk_nu;
    pk_cmax = pk_cmin + NF;
    pk_tsum = pk_cmax + NF;
    pk_tmax = pk_tsum + NF + 2;
    pk_tmin = pk_tmax + NF;
    pk_rtmin = pk_tmin + NF + 2;
    pk_rtmax = pk_rtmin + NF;
    pk_rtrank = pk_rtmax + NF;
    pk_mx = pk_rtrank + NF;
    pk_span = pk_mx + 3;
    pk_words = pk_span + (size_t)ML_NDATA * 2;
}

static double pk_getd(const uint64_t *w, size_t i) { double d; memcpy(&d, w + i, sizeof d); return d; }
static void pk_setd(uint64_t *w, size_t i, double d) { memcpy(w + i, &d, sizeof d); }

static void ml_pack_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const size_t NF = ML_NFUNC;
    for (int e = 0; e < *len; e++) {
        const uint64_t *a = (const uint64_t *)in + (size_t)e * pk_words;
        uint64_t *b = (uint64_t *)inout + (size_t)e * pk_words;
        for (size_t i = 0; i < pk_nu; i++) b[i] += a[i];
        for (size_t i = 0; i < NF; i++) {
            if (a[pk_cmin + i] < b[pk_cmin + i]) b[pk_cmin + i] = a[pk_cmin + i];
            if (a[pk_cmax + i] > b[pk_cmax + i]) b[pk_cmax + i] = a[pk_cmax + i];
            pk_setd(b, pk_tmax + i, fmax(pk_getd(a, pk_tmax + i), pk_getd(b, pk_tmax + i)));
            pk_setd(b, pk_rtmin + i, fmin(pk_getd(a, pk_rtmin + i), pk_getd(b, pk_rtmin + i)));
            double va = pk_getd(a, pk_rtmax + i), vb = pk_getd(b, pk_rtmax + i);
            if (va > vb || (va == vb && a[pk_rtrank + i] < b[pk_rtrank + i])) {
                pk_setd(b, pk_rtmax + i, va);
                b[pk_rtrank + i] = a[pk_rtrank + i];
            }
        }
        for (size_t i = 0; i < NF + 2; i++) {
            /* in holds the lower ranks (non-commutative op): their sum comes first */
            pk_setd(b, pk_tsum + i, pk_getd(a, pk_tsum + i) + pk_getd(b, pk_tsum + i));
            pk_setd(b, pk_tmin + i, fmin(pk_getd(a, pk_tmin + i), pk_getd(b, pk_tmin + i)));
        }
        for (size_t i = 0; i < 3; i++)
            pk_setd(b, pk_mx + i, fmax(pk_getd(a, pk_mx + i), pk_getd(b, pk_mx + i)));
        for (size_t i = pk_span; i < pk_words; i++)
            if (a[i] > b[i]) b[i] = a[i];
    }
}

static void ml_sum_u64_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint64_t *a = in;
    uint64_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
}

void ml_reduce_sum_u64(const uint64_t *in, uint64_t *out, int n)
{
    MPI_Op op;
    PMPI_Op_create(ml_sum_u64_op, 0, &op); /* non-commutative: see ml_pack_op */
    MPI_Request r;
    PMPI_Ireduce(in, out, n, MPI_UINT64_T, op, 0, MPI_COMM_WORLD, &r);
    ml_fin_wait(&r);
    PMPI_Op_free(&op);
}

/* The end-of-run collectives are non-blocking and waited for here: MPI_Test, and
 * after the first 64 tests a 20 us sleep between tests.  A rank that waits for the
 * others then gives its core away instead of polling for it: with more ranks than
 * cores (an oversubscribed node) a blocking collective's busy-polling ranks took
 * the time slices the ranks that could progress needed, and each of the
 * profiler's collectives cost seconds at 64 ranks on 2 cores (docs/scale.md).  On
 * one rank per core the sleeps add at most about 0.1 ms per step of a collective. */
void ml_fin_wait(MPI_Request *r)
{
    int done = 0;
    for (int k = 0;; k++) {
        PMPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (k >= 64) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

double ml_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ml_profile_reduce(ml_profile_t *p)
{
    enum { NF = ML_NFUNC, ND = ML_NDATA };
    double t0 = ml_now_s();
    memset(p, 0, sizeof *p);
    gethostname(p->host, sizeof p->host - 1);
    ml_slot_t *m = p->m = ml_merge();
    p->wall = ml_ticks_to_s(ml_t_final - ml_t_init);
    p->mpi = ml_mpi_time(m);
    pk_layout();
    const size_t NU = pk_nu;

    /* this rank's values, laid out as the results */
    uint64_t *w = ml_zalloc(pk_words, sizeof *w), *res = ml_zalloc(pk_words, sizeof *res);
    for (int i = 0; i < NF; i++) {
        double t = ml_est_s(&m->f[i].t);                                      /* this rank's total */
        w[i] = w[pk_cmin + i] = w[pk_cmax + i] = m->f[i].t.calls;
        pk_setd(w, pk_tsum + i, t);
        pk_setd(w, pk_tmax + i, m->f[i].tmax ? ml_ticks_to_s(m->f[i].tmax) : 0); /* longest call */
        pk_setd(w, pk_tmin + i, m->f[i].t.calls ? ml_ticks_to_s(m->f[i].tmin) : INFINITY);
        pk_setd(w, pk_rtmin + i, t);
        pk_setd(w, pk_rtmax + i, t);
        w[pk_rtrank + i] = (uint64_t)ml_world_rank;
    }
    for (int i = 0; i < ND; i++) {
        uint64_t *d = w + NF + (size_t)i * ML_DWORDS;
        d[ML_DW_BYTES_S] = m->d[i].bytes_s;
        d[ML_DW_BYTES_R] = m->d[i].bytes_r;
        d[ML_DW_SERVED] = m->d[i].served;
        memcpy(d + ML_DW_HIST_S, m->d[i].hist_s, sizeof m->d[i].hist_s);
        memcpy(d + ML_DW_HIST_R, m->d[i].hist_r, sizeof m->d[i].hist_r);
        d[ML_DW_HIST_BYTES_S] = m->d[i].hist_bytes_s;
        memcpy(d + ML_DW_XNODE, m->d[i].xnode, sizeof m->d[i].xnode);
        memcpy(d + ML_DW_SPAN, m->d[i].span_calls, sizeof m->d[i].span_calls);
    }
    pk_setd(w, pk_tsum + NF, p->wall);
    pk_setd(w, pk_tmin + NF, p->wall);
    pk_setd(w, pk_tsum + NF + 1, p->mpi);
    pk_setd(w, pk_tmin + NF + 1, p->mpi);
    pk_setd(w, pk_mx + 0, p->wall);
    pk_setd(w, pk_mx + 1, p->mpi);
    pk_setd(w, pk_mx + 2, ml_overhead_ns);
    for (int i = 0; i < ND; i++) {
        w[pk_span + 2 * (size_t)i] = m->d[i].span_max[0];
        w[pk_span + 2 * (size_t)i + 1] = m->d[i].span_max[1];
    }

    MPI_Datatype type;
    MPI_Op op;
    PMPI_Type_contiguous((int)(pk_words * sizeof *w), MPI_BYTE, &type);
    PMPI_Type_commit(&type);
    PMPI_Op_create(ml_pack_op, 0, &op);
    MPI_Request req;
    PMPI_Ireduce(w, res, 1, type, op, 0, MPI_COMM_WORLD, &req);
    ml_fin_wait(&req);
    PMPI_Op_free(&op);
    PMPI_Type_free(&type);

    p->calls = ml_zalloc(NU, sizeof *p->calls);
    p->calls_min = ml_zalloc(NF, sizeof *p->calls_min);
    p->calls_max = ml_zalloc(NF, sizeof *p->calls_max);
    p->time = ml_zalloc(NF + 2, sizeof *p->time);
    p->call_max = ml_zalloc(NF, sizeof *p->call_max);
    p->call_min = ml_zalloc(NF + 2, sizeof *p->call_min);
    p->rank_time_min = ml_zalloc(NF, sizeof *p->rank_time_min);
    p->rank_time_max = ml_zalloc(NF, sizeof *p->rank_time_max);
    if (ml_world_rank == 0) {
        memcpy(p->calls, res, NU * sizeof *res);
        memcpy(p->calls_min, res + pk_cmin, NF * sizeof *res);
        memcpy(p->calls_max, res + pk_cmax, NF * sizeof *res);
        for (int i = 0; i < NF + 2; i++) {
            p->time[i] = pk_getd(res, pk_tsum + (size_t)i);
            p->call_min[i] = pk_getd(res, pk_tmin + (size_t)i);
        }
        for (int i = 0; i < NF; i++) {
            p->call_max[i] = pk_getd(res, pk_tmax + (size_t)i);
            p->rank_time_min[i] = pk_getd(res, pk_rtmin + (size_t)i);
            p->rank_time_max[i].v = pk_getd(res, pk_rtmax + (size_t)i);
            p->rank_time_max[i].r = (int)res[pk_rtrank + (size_t)i];
        }
        p->wall_max = pk_getd(res, pk_mx + 0);
        p->mpi_max = pk_getd(res, pk_mx + 1);
        p->overhead_max = pk_getd(res, pk_mx + 2);
    }
    free(w);

    p->hosts = ml_nodes_host_names(p->host); /* collective: one 256-byte name per node */
    p->topo = ml_topo_json(); /* collective */
    ml_nodes_reduce(m, res + pk_span); /* collective */
    free(res);
    p->fin_reduce_s = ml_now_s() - t0;
}

void ml_profile_free(ml_profile_t *p)
{
    free(p->calls); free(p->calls_min); free(p->calls_max); free(p->time); free(p->call_max);
    free(p->call_min); free(p->rank_time_min); free(p->rank_time_max); free(p->hosts);
    free(p->topo);
    ml_nodes_free();
    if (p->m) free(p->m->peers);
    free(p->m);
    memset(p, 0, sizeof *p);
}
