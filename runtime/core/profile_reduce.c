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
/* This file's state at MPI_Finalize, in one owned struct (no other mutable static):
 * the packed buffer's layout (word offsets).  The finalize steps' marks and the
 * profiler's private communicator are fin.c's. */
static struct {
    struct { size_t nu, cmin, cmax, tsum, tmax, tmin, rtmin, rtmax, rtrank, mx, span, words; } pk;
} PR;

static void pk_layout(void)
{
    const size_t NF = ML_NFUNC;
    PR.pk.nu = NF + (size_t)ML_NDATA * ML_DWORDS;
    PR.pk.cmin = PR.pk.nu;
    PR.pk.cmax = PR.pk.cmin + NF;
    PR.pk.tsum = PR.pk.cmax + NF;
    PR.pk.tmax = PR.pk.tsum + NF + 2;
    PR.pk.tmin = PR.pk.tmax + NF;
    PR.pk.rtmin = PR.pk.tmin + NF + 2;
    PR.pk.rtmax = PR.pk.rtmin + NF;
    PR.pk.rtrank = PR.pk.rtmax + NF;
    PR.pk.mx = PR.pk.rtrank + NF;
    PR.pk.span = PR.pk.mx + 3;
    PR.pk.words = PR.pk.span + (size_t)ML_NDATA * 2;
}

static double pk_getd(const uint64_t *w, size_t i) { double d; memcpy(&d, w + i, sizeof d); return d; }
static void pk_setd(uint64_t *w, size_t i, double d) { memcpy(w + i, &d, sizeof d); }

static void ml_pack_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const size_t NF = ML_NFUNC;
    for (int e = 0; e < *len; e++) {
        const uint64_t *a = (const uint64_t *)in + (size_t)e * PR.pk.words;
        uint64_t *b = (uint64_t *)inout + (size_t)e * PR.pk.words;
        for (size_t i = 0; i < PR.pk.nu; i++) b[i] += a[i];
        for (size_t i = 0; i < NF; i++) {
            if (a[PR.pk.cmin + i] < b[PR.pk.cmin + i]) b[PR.pk.cmin + i] = a[PR.pk.cmin + i];
            if (a[PR.pk.cmax + i] > b[PR.pk.cmax + i]) b[PR.pk.cmax + i] = a[PR.pk.cmax + i];
            pk_setd(b, PR.pk.tmax + i, fmax(pk_getd(a, PR.pk.tmax + i), pk_getd(b, PR.pk.tmax + i)));
            pk_setd(b, PR.pk.rtmin + i, fmin(pk_getd(a, PR.pk.rtmin + i), pk_getd(b, PR.pk.rtmin + i)));
            double va = pk_getd(a, PR.pk.rtmax + i), vb = pk_getd(b, PR.pk.rtmax + i);
            if (va > vb || (va == vb && a[PR.pk.rtrank + i] < b[PR.pk.rtrank + i])) {
                pk_setd(b, PR.pk.rtmax + i, va);
                b[PR.pk.rtrank + i] = a[PR.pk.rtrank + i];
            }
        }
        for (size_t i = 0; i < NF + 2; i++) {
            /* in holds the lower ranks (non-commutative op): their sum comes first */
            pk_setd(b, PR.pk.tsum + i, pk_getd(a, PR.pk.tsum + i) + pk_getd(b, PR.pk.tsum + i));
            pk_setd(b, PR.pk.tmin + i, fmin(pk_getd(a, PR.pk.tmin + i), pk_getd(b, PR.pk.tmin + i)));
        }
        for (size_t i = 0; i < 3; i++)
            pk_setd(b, PR.pk.mx + i, fmax(pk_getd(a, PR.pk.mx + i), pk_getd(b, PR.pk.mx + i)));
        for (size_t i = PR.pk.span; i < PR.pk.words; i++)
            if (a[i] > b[i]) b[i] = a[i];
    }
}

void ml_profile_reduce(ml_profile_t *p)
{
    enum { NF = ML_NFUNC, ND = ML_NDATA };
    double t0 = ml_now_s();
    memset(p, 0, sizeof *p);
    gethostname(p->host, sizeof p->host - 1);
    ml_slot_t *m = p->m = ml_merge();
    ml_fin_mark("merge");
    p->wall = ml_ticks_to_s(ml_t_final - ml_t_init);
    p->mpi = ml_mpi_time(m);
    pk_layout();
    const size_t NU = PR.pk.nu;

    /* this rank's values, laid out as the results */
    uint64_t *w = ml_zalloc(PR.pk.words, sizeof *w), *res = ml_zalloc(PR.pk.words, sizeof *res);
    for (int i = 0; i < NF; i++) {
        double t = ml_est_s(&m->f[i].t);                                      /* this rank's total */
        w[i] = w[PR.pk.cmin + i] = w[PR.pk.cmax + i] = m->f[i].t.calls;
        pk_setd(w, PR.pk.tsum + i, t);
        pk_setd(w, PR.pk.tmax + i, m->f[i].tmax ? ml_ticks_to_s(m->f[i].tmax) : 0); /* longest call */
        pk_setd(w, PR.pk.tmin + i, m->f[i].t.calls ? ml_ticks_to_s(m->f[i].tmin) : INFINITY);
        pk_setd(w, PR.pk.rtmin + i, t);
        pk_setd(w, PR.pk.rtmax + i, t);
        w[PR.pk.rtrank + i] = (uint64_t)ml_world_rank;
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
    pk_setd(w, PR.pk.tsum + NF, p->wall);
    pk_setd(w, PR.pk.tmin + NF, p->wall);
    pk_setd(w, PR.pk.tsum + NF + 1, p->mpi);
    pk_setd(w, PR.pk.tmin + NF + 1, p->mpi);
    pk_setd(w, PR.pk.mx + 0, p->wall);
    pk_setd(w, PR.pk.mx + 1, p->mpi);
    pk_setd(w, PR.pk.mx + 2, ml_overhead_ns);
    for (int i = 0; i < ND; i++) {
        w[PR.pk.span + 2 * (size_t)i] = m->d[i].span_max[0];
        w[PR.pk.span + 2 * (size_t)i + 1] = m->d[i].span_max[1];
    }

    MPI_Datatype type;
    MPI_Op op;
    PMPI_Type_contiguous((int)(PR.pk.words * sizeof *w), MPI_BYTE, &type);
    PMPI_Type_commit(&type);
    PMPI_Op_create(ml_pack_op, 0, &op);
    MPI_Request req;
    PMPI_Ireduce(w, res, 1, type, op, 0, MPI_COMM_WORLD, &req);
    ml_fin_wait(&req);
    PMPI_Op_free(&op);
    PMPI_Type_free(&type);
    ml_fin_mark("reduce");
    ml_fin_comm(); /* collective: the private communicator (the host names, the offsets) */
    ml_fin_mark("comm");

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
        memcpy(p->calls_min, res + PR.pk.cmin, NF * sizeof *res);
        memcpy(p->calls_max, res + PR.pk.cmax, NF * sizeof *res);
        for (int i = 0; i < NF + 2; i++) {
            p->time[i] = pk_getd(res, PR.pk.tsum + (size_t)i);
            p->call_min[i] = pk_getd(res, PR.pk.tmin + (size_t)i);
        }
        for (int i = 0; i < NF; i++) {
            p->call_max[i] = pk_getd(res, PR.pk.tmax + (size_t)i);
            p->rank_time_min[i] = pk_getd(res, PR.pk.rtmin + (size_t)i);
            p->rank_time_max[i].v = pk_getd(res, PR.pk.rtmax + (size_t)i);
            p->rank_time_max[i].r = (int)res[PR.pk.rtrank + (size_t)i];
        }
        p->wall_max = pk_getd(res, PR.pk.mx + 0);
        p->mpi_max = pk_getd(res, PR.pk.mx + 1);
        p->overhead_max = pk_getd(res, PR.pk.mx + 2);
    }
    free(w);

    p->span_max = res + PR.pk.span;
    ml_modules_reduce(p); /* collective: each module's (host names, node matrix, topologies), then its mark */
    p->span_max = NULL;
    free(res);
    p->fin_reduce_s = ml_now_s() - t0;
}

void ml_profile_free(ml_profile_t *p)
{
    free(p->calls); free(p->calls_min); free(p->calls_max); free(p->time); free(p->call_max);
    free(p->call_min); free(p->rank_time_min); free(p->rank_time_max);
    ml_modules_release();
    if (p->m) free(p->m->peers);
    free(p->m);
    memset(p, 0, sizeof *p);
}
