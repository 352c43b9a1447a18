/* Profile step 1, reduce: this rank's thread records merged, then the
 * cross-rank aggregates reduced to rank 0 (profile.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"
#include "topo.h"

ml_slot_t *ml_first_slot(void);

double ml_est_s(const ml_frec_t *f)
{
    return ml_ticks_to_s(1) * ml_est_ticks(f->calls, f->timed, f->ticks, f->stimed, f->sticks);
}

void ml_merge_into(ml_slot_t *m)
{
    ml_peer_t *peers = m->peers;
    memset(m, 0, sizeof *m);
    memset(peers, 0, sizeof(ml_peer_t) * (size_t)ml_world_size);
    m->peers = peers;
    for (ml_slot_t *s = ml_first_slot(); s; s = s->next) {
        for (int i = 0; i < ML_NFUNC; i++) {
            ml_frec_t *a = &m->f[i], *x = &s->f[i];
            if (!x->calls) continue;
            if (!a->calls || x->tmin < a->tmin) a->tmin = x->tmin;
            if (x->tmax > a->tmax) a->tmax = x->tmax;
            a->calls += x->calls;
            a->timed += x->timed;
            a->ticks += x->ticks;
            a->stimed += x->stimed;
            a->sticks += x->sticks;
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
            mpi += ml_est_s(&m->f[i]);
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

void ml_profile_reduce(ml_profile_t *p)
{
    enum { NF = ML_NFUNC, ND = ML_NDATA };
    const size_t NU = NF + (size_t)ND * ML_DWORDS;
    memset(p, 0, sizeof *p);
    gethostname(p->host, sizeof p->host - 1);
    ml_slot_t *m = p->m = ml_merge();
    p->wall = ml_ticks_to_s(ml_t_final - ml_t_init);
    p->mpi = ml_mpi_time(m);

    /* this rank's values, laid out as the results */
    uint64_t *u = ml_zalloc(NU, sizeof *u), *cnt = ml_zalloc(NF, sizeof *cnt);
    double *t = ml_zalloc(NF + 2, sizeof *t), *tmax = ml_zalloc(NF, sizeof *tmax);
    double *tmin = ml_zalloc(NF + 2, sizeof *tmin);
    struct { double v; int r; } *tl = ml_zalloc(NF, sizeof *tl);
    for (int i = 0; i < NF; i++) {
        u[i] = cnt[i] = m->f[i].calls;
        t[i] = ml_est_s(&m->f[i]);                                        /* this rank's total */
        tmax[i] = m->f[i].tmax ? ml_ticks_to_s(m->f[i].tmax) : 0;        /* longest single call */
        tmin[i] = m->f[i].calls ? ml_ticks_to_s(m->f[i].tmin) : INFINITY; /* shortest single call */
        tl[i].v = t[i];
        tl[i].r = ml_world_rank;
    }
    for (int i = 0; i < ND; i++) {
        uint64_t *w = u + NF + (size_t)i * ML_DWORDS;
        w[ML_DW_BYTES_S] = m->d[i].bytes_s;
        w[ML_DW_BYTES_R] = m->d[i].bytes_r;
        w[ML_DW_SERVED] = m->d[i].served;
        memcpy(w + ML_DW_HIST_S, m->d[i].hist_s, sizeof m->d[i].hist_s);
        memcpy(w + ML_DW_HIST_R, m->d[i].hist_r, sizeof m->d[i].hist_r);
        w[ML_DW_HIST_BYTES_S] = m->d[i].hist_bytes_s;
        memcpy(w + ML_DW_XNODE, m->d[i].xnode, sizeof m->d[i].xnode);
        memcpy(w + ML_DW_SPAN, m->d[i].span_calls, sizeof m->d[i].span_calls);
    }
    t[NF] = tmin[NF] = p->wall;
    t[NF + 1] = tmin[NF + 1] = p->mpi;
    double mx[3] = {p->wall, p->mpi, ml_overhead_ns}, mxs[3];

    p->calls = ml_zalloc(NU, sizeof *u);
    p->calls_min = ml_zalloc(NF, sizeof *cnt);
    p->calls_max = ml_zalloc(NF, sizeof *cnt);
    p->time = ml_zalloc(NF + 2, sizeof *t);
    p->call_max = ml_zalloc(NF, sizeof *t);
    p->call_min = ml_zalloc(NF + 2, sizeof *t);
    p->rank_time_min = ml_zalloc(NF, sizeof *t);
    p->rank_time_max = ml_zalloc(NF, sizeof *tl);
    PMPI_Reduce(u, p->calls, (int)NU, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(cnt, p->calls_min, NF, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(cnt, p->calls_max, NF, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(t, p->time, NF + 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(tmax, p->call_max, NF, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(tmin, p->call_min, NF + 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(t, p->rank_time_min, NF, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(tl, p->rank_time_max, NF, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD);
    PMPI_Reduce(mx, mxs, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    p->wall_max = mxs[0];
    p->mpi_max = mxs[1];
    p->overhead_max = mxs[2];
    free(u); free(cnt); free(t); free(tmax); free(tmin); free(tl);

    /* hosts: 256-byte names gathered to rank 0 */
    p->hosts = ml_world_rank == 0 ? ml_zalloc((size_t)ml_world_size, 256) : NULL;
    PMPI_Gather(p->host, 256, MPI_CHAR, p->hosts, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    p->topo = ml_topo_json(); /* collective */
    ml_nodes_reduce(m);       /* collective */
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
