/* halo: MPPTEST-style halo exchange, point-to-point (Isend/Irecv/Waitall) versus
 * MPI-3 shared memory (MPI_Win_allocate_shared + direct stores) synchronised by
 * lockall (lock_all + Win_sync + node barrier), lock (per-partner lock/unlock +
 * zero-byte notification) or fence (a pair of MPI_Win_fence).  Non-periodic 1D
 * or 2D decomposition; each rank's partners receive its halo in a slot of a
 * double-buffered inbox.  Variants run interleaved per sample; the time is the
 * slowest process's; every variant's received data are validated. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_P2P, V_LOCKALL, V_LOCK, V_FENCE, NVAR };
static const char *const var_names[NVAR] = {"p2p", "lockall", "lock", "fence"};
static const int off2d[12][2] = {{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, -1},
                                 {1, -1}, {-1, 1}, {0, 2}, {0, -2}, {2, 0}, {-2, 0}};

typedef struct {
    int np;                       /* npartner */
    int partner[12];              /* world rank or -1; partner[k^1] is the opposite side */
    int nrank[12];                /* rank in node communicator or MPI_UNDEFINED */
    unsigned char *remote[12];    /* base of partner's shared segment */
    unsigned char *send, *p2pbuf, *mine;
    MPI_Comm node;
    MPI_Win win;
    long long maxs;
    MPI_Request req[48];
    MPI_Status st[48];
} halo_t;

static unsigned char *slot(halo_t *h, unsigned char *base, int parity, int k)
{
    return base + ((size_t)parity * h->np + (size_t)k) * (size_t)h->maxs;
}

static uint64_t pat_off(int from, int to) { return ((uint64_t)from * (uint64_t)ml_size + (uint64_t)to) << 24; }

static void exchange(halo_t *h, int v, long long s, int parity)
{
    int nr = 0, n = (int)s;
    unsigned char *inbox = v == V_P2P ? h->p2pbuf : h->mine;
    for (int k = 0; k < h->np; k++) {
        if (h->partner[k] < 0) continue;
        if (v == V_P2P || h->nrank[k] == MPI_UNDEFINED) {
            MPI_Irecv(slot(h, inbox, parity, k), n, MPI_BYTE, h->partner[k], k ^ 1,
                      MPI_COMM_WORLD, &h->req[nr++]);
            MPI_Isend(h->send + (size_t)k * h->maxs, n, MPI_BYTE, h->partner[k], k,
                      MPI_COMM_WORLD, &h->req[nr++]);
        }
    }
    if (v == V_FENCE) MPI_Win_fence(0, h->win);
    for (int k = 0; k < h->np && v != V_P2P; k++) {
        if (h->partner[k] < 0 || h->nrank[k] == MPI_UNDEFINED) continue;
        unsigned char *dst = slot(h, h->remote[k], parity, k ^ 1);
        if (v == V_LOCK) {
            MPI_Win_lock(MPI_LOCK_SHARED, h->nrank[k], 0, h->win);
            memcpy(dst, h->send + (size_t)k * h->maxs, (size_t)s);
            MPI_Win_unlock(h->nrank[k], h->win);
            MPI_Irecv(NULL, 0, MPI_BYTE, h->partner[k], 100 + (k ^ 1), MPI_COMM_WORLD, &h->req[nr++]);
            MPI_Isend(NULL, 0, MPI_BYTE, h->partner[k], 100 + k, MPI_COMM_WORLD, &h->req[nr++]);
        } else {
            memcpy(dst, h->send + (size_t)k * h->maxs, (size_t)s);
        }
    }
    if (v == V_LOCKALL) {
        MPI_Win_sync(h->win);
        MPI_Barrier(h->node);
        MPI_Win_sync(h->win);
    } else if (v == V_FENCE) {
        MPI_Win_fence(0, h->win);
    }
    MPI_Waitall(nr, h->req, h->st);
}

static uint64_t fnv(uint64_t hsh, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) { hsh ^= p[i]; hsh *= 1099511628211ULL; }
    return hsh;
}

/* The expected duration of ml_halo's loop, from a probe before it: each variant's
 * exchange timed PROBE_REPS times, after one untimed, at the smallest size and at the
 * largest (at most PROBE_MAX; the time per byte extrapolated linearly beyond), the median
 * kept (coll.c: a mean is at the mercy of one stalled sample); every size then costs its
 * warm-up and samples x iterations of exchanges at the time interpolated to the size.
 * The slowest rank's figure, on every rank. */
#define PROBE_MAX (1LL << 20)
#define PROBE_REPS 5
static double probe_exchange(halo_t *h, int v, long long s)
{
    double t[PROBE_REPS];
    if (v == V_LOCKALL) MPI_Win_lock_all(MPI_MODE_NOCHECK, h->win);
    exchange(h, v, s, 0);
    for (int j = 0; j < PROBE_REPS; j++) {
        double t0 = MPI_Wtime();
        exchange(h, v, s, (j + 1) & 1);
        t[j] = MPI_Wtime() - t0;
    }
    if (v == V_LOCKALL) MPI_Win_unlock_all(h->win);
    MPI_Barrier(MPI_COMM_WORLD);
    return ml_median(t, PROBE_REPS);
}

static double expected_duration(halo_t *h, unsigned vars, const long long *sz, int ns,
                                int samples, int iters, int warmup)
{
    long long lo = sz[0], hi = sz[ns - 1] < PROBE_MAX ? sz[ns - 1] : PROBE_MAX;
    double total = 0;
    for (int v = 0; v < NVAR; v++) {
        if (!(vars & (1u << v))) continue;
        double t_lo = probe_exchange(h, v, lo), t_hi = hi > lo ? probe_exchange(h, v, hi) : t_lo;
        for (int i = 0; i < ns; i++) {
            double t = hi > lo ? t_lo + (t_hi - t_lo) * (double)(sz[i] - lo) / (double)(hi - lo)
                               : t_lo;
            if (t < t_lo) t = t_lo;
            total += (warmup + (double)samples * iters) * t;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return total;
}

int ml_halo(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    if (ml_size < 2) ml_usage("halo needs at least 2 ranks (got %d)", ml_size);
    int dim = (int)ml_opt_int("dimension", 1, 1, 2);
    int npart = (int)ml_opt_int("npartner", 4, 2, 12);
    if (npart % 2) ml_usage("--npartner %d is invalid (accepted: an even number from 2 to 12)", npart);
    long long *sz;
    int ns = ml_opt_sizes(4, 128 << 10, 1, 1LL << 24, &sz);
    int samples = (int)ml_opt_int("samples", 20, 1, 1000000);
    int iters = (int)ml_opt_int("iters", 100, 1, 100000000);
    int warmup = (int)ml_opt_int("warmup", 10, 0, 100000000);
    unsigned vars = ml_opt_names("variants", var_names, NVAR, (1u << NVAR) - 1);
    ml_opts_finish();

    halo_t h = {0};
    h.np = npart;
    h.maxs = sz[ns - 1];
    int dims[2] = {0, 0};
    if (dim == 2) MPI_Dims_create(ml_size, 2, dims);
    for (int k = 0; k < npart; k++) {
        int q = -1;
        if (dim == 1) {
            int d = (k / 2 + 1) * (k % 2 ? -1 : 1);
            q = ml_rank + d;
            if (q < 0 || q >= ml_size) q = -1;
        } else {
            int r = ml_rank / dims[1] + off2d[k][0], c = ml_rank % dims[1] + off2d[k][1];
            q = r >= 0 && r < dims[0] && c >= 0 && c < dims[1] ? r * dims[1] + c : -1;
        }
        h.partner[k] = q;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &h.node);
    MPI_Group gw, gn;
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    MPI_Comm_group(h.node, &gn);
    int wr[12];
    for (int k = 0; k < npart; k++) wr[k] = h.partner[k] < 0 ? MPI_PROC_NULL : h.partner[k];
    MPI_Group_translate_ranks(gw, npart, wr, gn, h.nrank);
    for (int k = 0; k < npart; k++) if (h.partner[k] < 0) h.nrank[k] = MPI_UNDEFINED;
    MPI_Group_free(&gw);
    MPI_Group_free(&gn);
    size_t inbox = 2 * (size_t)npart * (size_t)h.maxs;
    MPI_Win_allocate_shared((MPI_Aint)inbox, 1, MPI_INFO_NULL, h.node, &h.mine, &h.win);
    for (int k = 0; k < npart; k++) {
        if (h.nrank[k] == MPI_UNDEFINED) continue;
        MPI_Aint segsz;
        int du;
        MPI_Win_shared_query(h.win, h.nrank[k], &segsz, &du, &h.remote[k]);
    }
    h.send = ml_alloc((size_t)npart * (size_t)h.maxs);
    h.p2pbuf = ml_alloc(inbox);
    int onnode = 0, offnode = 0;
    for (int k = 0; k < npart; k++)
        if (h.partner[k] >= 0) { if (h.nrank[k] == MPI_UNDEFINED) offnode++; else onnode++; }
    int links[2] = {onnode, offnode};
    MPI_Allreduce(MPI_IN_PLACE, links, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *allp = ml_rank == 0 ? malloc((size_t)ml_size * 12 * sizeof(int)) : NULL;
    MPI_Gather(h.partner, 12, MPI_INT, allp, 12, MPI_INT, 0, MPI_COMM_WORLD);

    if (ml_rank == 0) {
        ml_json_obj(out, "options");
        ml_json_int(out, "dimension", dim);
        ml_json_int(out, "npartner", npart);
        ml_json_int(out, "min_size", sz[0]);
        ml_json_int(out, "max_size", h.maxs);
        ml_json_int(out, "samples", samples);
        ml_json_int(out, "iters", iters);
        ml_json_int(out, "warmup", warmup);
        ml_json_arr(out, "variants");
        for (int v = 0; v < NVAR; v++) if (vars & (1u << v)) ml_json_str(out, NULL, var_names[v]);
        ml_json_end(out);
        ml_json_end(out);
        ml_json_obj(out, "topology");
        if (dim == 2) {
            ml_json_arr(out, "grid");
            ml_json_int(out, NULL, dims[0]);
            ml_json_int(out, NULL, dims[1]);
            ml_json_end(out);
        }
        ml_json_arr(out, "partners");
        for (int r = 0; r < ml_size; r++) {
            ml_json_arr(out, NULL);
            for (int k = 0; k < npart; k++) if (allp[r * 12 + k] >= 0) ml_json_int(out, NULL, allp[r * 12 + k]);
            ml_json_end(out);
        }
        ml_json_end(out);
        ml_json_int(out, "on_node_links", links[0]);
        ml_json_int(out, "off_node_links", links[1]);
        ml_json_end(out);
        ml_json_arr(out, "results");
    }
    free(allp);

    double *x = malloc((size_t)NVAR * (size_t)samples * sizeof *x);
    long errors = 0;
    double expected = expected_duration(&h, vars, sz, ns, samples, iters, warmup);
    if (ml_rank == 0) ml_announce("halo", expected, sz[ns - 1] < PROBE_MAX ? sz[ns - 1] : PROBE_MAX);
    double started = MPI_Wtime();
    for (int i = 0; i < ns; i++) {
        long long s = sz[i];
        uint64_t sum[NVAR] = {0};
        for (int v = 0; v < NVAR; v++) {      /* warm-up */
            if (!(vars & (1u << v))) continue;
            if (v == V_LOCKALL) MPI_Win_lock_all(MPI_MODE_NOCHECK, h.win);
            for (int it = 0; it < warmup; it++) exchange(&h, v, s, it & 1);
            if (v == V_LOCKALL) MPI_Win_unlock_all(h.win);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (int j = 0; j < samples; j++) {
            unsigned seed = (unsigned)(i * samples + j + 1);
            for (int k = 0; k < npart; k++)
                if (h.partner[k] >= 0)
                    ml_fill(h.send + (size_t)k * h.maxs, (size_t)s, pat_off(ml_rank, h.partner[k]), seed);
            for (int v = 0; v < NVAR; v++) {
                if (!(vars & (1u << v))) continue;
                unsigned char *ib = v == V_P2P ? h.p2pbuf : h.mine;
                memset(ib, 0, inbox);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (v == V_LOCKALL) MPI_Win_lock_all(MPI_MODE_NOCHECK, h.win);
                for (int it = 0; it < iters; it++) exchange(&h, v, s, it & 1);
                if (v == V_LOCKALL) MPI_Win_unlock_all(h.win);
                double t = (MPI_Wtime() - t0) / iters;
                MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                x[v * samples + j] = t;
                /* every written parity must hold this sample's halo from each partner */
                uint64_t hs = 1469598103934665603ULL;
                for (int par = 0; par < (iters > 1 ? 2 : 1); par++)
                    for (int k = 0; k < npart; k++) {
                        if (h.partner[k] < 0) continue;
                        unsigned char *p = slot(&h, ib, par, k);
                        size_t bad = ml_check(p, (size_t)s, pat_off(h.partner[k], ml_rank), seed);
                        if (bad) {
                            fprintf(stderr, "mpilens-bench: halo %s size %lld: %zu wrong bytes "
                                    "from rank %d on rank %d\n", var_names[v], s, bad,
                                    h.partner[k], ml_rank);
                            errors++;
                        }
                        if (j == samples - 1 && par == ((iters - 1) & 1)) hs = fnv(hs, p, (size_t)s);
                    }
                if (j == samples - 1) sum[v] = hs;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, sum, NVAR, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (ml_rank == 0) {
            ml_json_obj(out, NULL);
            ml_json_int(out, "size", s);
            double med[NVAR] = {0};
            for (int v = 0; v < NVAR; v++) {
                if (!(vars & (1u << v))) continue;
                char hex[32];
                snprintf(hex, sizeof hex, "%016" PRIx64, sum[v]);
                ml_json_obj(out, var_names[v]);
                ml_json_stats(out, "time_s", x + v * samples, samples, 1.0);
                ml_json_str(out, "checksum", hex);
                ml_json_end(out);
                med[v] = ml_median(x + v * samples, samples);
            }
            if (vars & 1u) {
                ml_json_obj(out, "speedup_vs_p2p");
                for (int v = 1; v < NVAR; v++)
                    if (vars & (1u << v)) ml_json_num(out, var_names[v], med[V_P2P] / med[v]);
                ml_json_end(out);
            }
            ml_json_end(out);
        }
        ml_progress(i + 1, ns);
    }
    if (ml_rank == 0) {
        ml_json_end(out);
        ml_json_num(out, "expected_s", expected);  /* said before measuring, beside results */
        ml_json_num(out, "elapsed_s", MPI_Wtime() - started);  /* what it took (rank 0) */
    }
    MPI_Win_free(&h.win);
    MPI_Comm_free(&h.node);
    free(x); free(h.send); free(h.p2pbuf); free(sz);
    return (int)errors;
}
