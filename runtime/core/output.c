/* The profile file: JSON Lines (docs/profile-format.md), written collectively
 * at MPI_Finalize.  Cross-rank aggregates are reduced to rank 0 (fixed-size
 * arrays); each rank formats its own line; MPI_Exscan gives every rank its
 * offset and one collective MPI_File_write_at_all writes the file under a
 * temporary name that rank 0 renames when every rank's data is on disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ml.h"
#include "topo.h"
#include "../overrides.h"

ml_slot_t *ml_first_slot(void);
int ml_slot_count(void);

typedef struct { char *p; size_t n, cap; } ml_buf_t;

static void ml_put(ml_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = (b->cap ? b->cap * 2 : 65536) + (size_t)k;
        char *np = realloc(b->p, cap);
        if (!np) { fprintf(stderr, "mpilens: out of memory formatting the profile\n"); abort(); }
        b->p = np;
        b->cap = cap;
    }
}

static void ml_put_str(ml_buf_t *b, const char *s)
{
    ml_put(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') ml_put(b, "\\%c", c);
        else if (c < 0x20) ml_put(b, "\\u%04x", c);
        else ml_put(b, "%c", c);
    }
    ml_put(b, "\"");
}

static void ml_put_hist(ml_buf_t *b, const char *key, const uint64_t *h)
{
    ml_put(b, ",\"%s\":[", key);
    for (int i = 0; i < ML_NBINS; i++) ml_put(b, "%s%llu", i ? "," : "", (unsigned long long)h[i]);
    ml_put(b, "]");
}

/* Merge this rank's thread slots. */
static ml_slot_t *ml_merge(void)
{
    ml_slot_t *m = calloc(1, sizeof *m);
    m->peers = calloc((size_t)ml_world_size, sizeof(ml_peer_t));
    for (ml_slot_t *s = ml_first_slot(); s; s = s->next) {
        for (int i = 0; i < ML_NFUNC; i++) {
            ml_frec_t *a = &m->f[i], *x = &s->f[i];
            if (!x->calls) continue;
            if (!a->calls || x->tmin < a->tmin) a->tmin = x->tmin;
            if (x->tmax > a->tmax) a->tmax = x->tmax;
            a->calls += x->calls;
            a->timed += x->timed;
            a->ticks += x->ticks;
        }
        for (int i = 0; i < ML_NDATA; i++) {
            ml_drec_t *a = &m->d[i], *x = &s->d[i];
            a->bytes_s += x->bytes_s;
            a->bytes_r += x->bytes_r;
            a->repro += x->repro;
            a->hist_bytes_s += x->hist_bytes_s;
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
    return m;
}

/* Total time of a function: measured, scaled up when only a sample was timed. */
static double ml_est_s(const ml_frec_t *f)
{
    if (!f->timed) return 0.0;
    return ml_ticks_to_s(f->ticks) * ((double)f->calls / (double)f->timed);
}

static void ml_func_fields(ml_buf_t *b, const ml_frec_t *f, const ml_drec_t *d)
{
    ml_put(b, "\"calls\":%llu,\"timed_calls\":%llu,\"time_s\":%.9g,\"time_min_s\":%.9g,\"time_max_s\":%.9g",
           (unsigned long long)f->calls, (unsigned long long)f->timed, ml_est_s(f), ml_ticks_to_s(f->tmin),
           ml_ticks_to_s(f->tmax));
    if (d) {
        ml_put(b, ",\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"repro_calls\":%llu", (unsigned long long)d->bytes_s,
               (unsigned long long)d->bytes_r, (unsigned long long)d->repro);
        ml_put_hist(b, "hist_send", d->hist_s);
        ml_put_hist(b, "hist_recv", d->hist_r);
        ml_put(b, ",\"hist_send_bytes\":%llu", (unsigned long long)d->hist_bytes_s);
    }
}

/* [peer, messages, bytes] for every peer with traffic on one side */
static void ml_put_peers(ml_buf_t *b, const ml_slot_t *m, int side)
{
    int first = 1;
    for (int p = 0; p < ml_world_size; p++) {
        const ml_peer_t *q = &m->peers[p];
        uint64_t msgs = side == ML_SEND ? q->msgs_s : q->msgs_r, bytes = side == ML_SEND ? q->bytes_s : q->bytes_r;
        if (!msgs) continue;
        ml_put(b, "%s[%d,%llu,%llu]", first ? "" : ",", p, (unsigned long long)msgs, (unsigned long long)bytes);
        first = 0;
    }
}

static void ml_rank_line(ml_buf_t *b, const ml_slot_t *m, const char *host, double wall, double mpi)
{
    ml_put(b, "{\"rank\":%d,\"host\":", ml_world_rank);
    ml_put_str(b, host);
    ml_put(b, ",\"pid\":%d,\"wall_s\":%.9g,\"mpi_s\":%.9g,\"threads\":%d,\"untracked_requests\":%llu,\"functions\":{",
           (int)getpid(), wall, mpi, ml_slot_count(), (unsigned long long)m->untracked);
    int first = 1;
    for (int i = 1; i < ML_NFUNC; i++) {
        if (!m->f[i].calls) continue;
        ml_put(b, "%s\"%s\":{", first ? "" : ",", ml_func_name[i]);
        first = 0;
        int di = ml_func_didx[i];
        ml_func_fields(b, &m->f[i], di >= 0 ? &m->d[di] : NULL);
        ml_put(b, "}");
    }
    ml_put(b, "},\"peers\":{\"sent\":[");
    ml_put_peers(b, m, ML_SEND);
    ml_put(b, "],\"recv\":[");
    ml_put_peers(b, m, ML_RECV);
    ml_put(b, "]}}\n");
}

static void ml_job_id(char *out, size_t n, const char *stamp)
{
    const char *vars[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "COBALT_JOBID", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            snprintf(out, n, "%s", v);
            return;
        }
    }
    snprintf(out, n, "%s-%d", stamp, (int)getpid());
}

static void ml_expand(char *out, size_t n, const char *tmpl, const char *job, const char *stamp, const char *host)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < n; p++) {
        if (*p != '%') { out[k++] = *p; continue; }
        p++;
        char tmp[64];
        const char *rep = "%";
        if (*p == 'j') rep = job;
        else if (*p == 't') rep = stamp;
        else if (*p == 'h') rep = host;
        else if (*p == 'p') { snprintf(tmp, sizeof tmp, "%d", (int)getpid()); rep = tmp; }
        k += (size_t)snprintf(out + k, n - k, "%s", rep);
        if (k >= n) k = n - 1;
    }
    out[k] = 0;
}

static int ml_write_file(const char *tmp, const ml_buf_t *b, MPI_Offset off, char *err, size_t errn)
{
    MPI_File fh;
    int rc = PMPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    int bad = rc != MPI_SUCCESS, anybad = 0;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad) {
        if (bad) {
            int len = 0;
            PMPI_Error_string(rc, err, &len);
        }
        if (!bad) PMPI_File_close(&fh);
        return 1;
    }
    size_t done = 0;
    rc = MPI_SUCCESS;
    /* write_at_all takes an int count: loop in 1 GiB pieces (all ranks the same number of rounds) */
    unsigned long long rounds = (b->n + (1u << 30) - 1) >> 30, maxr = 0;
    PMPI_Allreduce(&rounds, &maxr, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    for (unsigned long long r = 0; r < (maxr ? maxr : 1); r++) {
        size_t piece = b->n - done > (1u << 30) ? (1u << 30) : b->n - done;
        MPI_Status st;
        int rr = PMPI_File_write_at_all(fh, off + (MPI_Offset)done, b->p + done, (int)piece, MPI_CHAR, &st);
        if (rr != MPI_SUCCESS) rc = rr;
        done += piece;
    }
    int rc2 = PMPI_File_close(&fh);
    if (rc == MPI_SUCCESS) rc = rc2;
    bad = rc != MPI_SUCCESS;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad) {
        int len = 0;
        PMPI_Error_string(rc, err, &len);
    }
    (void)errn;
    return anybad;
}

int ml_write_profile(void)
{
    ml_slot_t *m = ml_merge();
    const int NF = ML_NFUNC, ND = ML_NDATA, NW = 2 * ML_NBINS + 4;
    double wall = ml_ticks_to_s(ml_t_final - ml_t_init), mpi = 0;
    for (int i = 1; i < NF; i++) /* MPI_Init* and MPI_Finalize lie outside the wall-time window */
        if (strncmp(ml_func_name[i], "MPI_Init", 8) != 0 && strcmp(ml_func_name[i], "MPI_Finalize") != 0)
            mpi += ml_est_s(&m->f[i]);

    /* ---- cross-rank aggregates, reduced to rank 0 ---- */
    uint64_t *u = calloc((size_t)(NF + ND * NW), sizeof(uint64_t)), *us = calloc((size_t)(NF + ND * NW), sizeof(uint64_t));
    uint64_t *cmin = calloc((size_t)NF, 8), *cmax = calloc((size_t)NF, 8), *rcmin = calloc((size_t)NF, 8), *rcmax = calloc((size_t)NF, 8);
    double *t = calloc((size_t)(NF * 3 + 2), sizeof(double)), *ts = calloc((size_t)(NF * 3 + 2), sizeof(double));
    double *tmn = calloc((size_t)NF + 2, sizeof(double)), *tmns = calloc((size_t)NF + 2, sizeof(double));
    struct { double v; int r; } *tl = calloc((size_t)NF, sizeof *tl), *tls = calloc((size_t)NF, sizeof *tl);
    for (int i = 0; i < NF; i++) {
        u[i] = m->f[i].calls;
        cmin[i] = cmax[i] = m->f[i].calls;
        t[i] = ml_est_s(&m->f[i]);                                            /* sum of per-rank totals */
        t[NF + i] = m->f[i].tmax ? ml_ticks_to_s(m->f[i].tmax) : 0;          /* longest single call */
        tmn[i] = m->f[i].calls ? ml_ticks_to_s(m->f[i].tmin) : INFINITY;      /* shortest single call */
        tl[i].v = t[i];
        tl[i].r = ml_world_rank;
    }
    for (int i = 0; i < ND; i++) {
        uint64_t *w = u + NF + (size_t)i * NW;
        w[0] = m->d[i].bytes_s;
        w[1] = m->d[i].bytes_r;
        w[2] = m->d[i].repro;
        memcpy(w + 3, m->d[i].hist_s, sizeof m->d[i].hist_s);
        memcpy(w + 3 + ML_NBINS, m->d[i].hist_r, sizeof m->d[i].hist_r);
        w[3 + 2 * ML_NBINS] = m->d[i].hist_bytes_s;
    }
    t[2 * NF] = wall;
    t[2 * NF + 1] = mpi;
    tmn[NF] = wall;
    tmn[NF + 1] = mpi;
    double wmax[2] = {wall, mpi}, wmaxs[2];
    /* per-rank function time minimum across ranks (ranks that never called count as 0) */
    double *rt = calloc((size_t)NF, sizeof(double)), *rts = calloc((size_t)NF, sizeof(double));
    for (int i = 0; i < NF; i++) rt[i] = t[i];
    PMPI_Reduce(u, us, NF + ND * NW, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(cmin, rcmin, NF, MPI_UINT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(cmax, rcmax, NF, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(t, ts, NF, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(t + NF, ts + NF, NF, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    PMPI_Reduce(t + 2 * NF, ts + 2 * NF, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    PMPI_Reduce(tmn, tmns, NF + 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(rt, rts, NF, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    PMPI_Reduce(tl, tls, NF, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD);
    PMPI_Reduce(wmax, wmaxs, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double ovh = ml_overhead_ns, ovh_max = 0;
    PMPI_Reduce(&ovh, &ovh_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    /* ---- hosts (256-byte names gathered to rank 0) ---- */
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    char *hosts = ml_world_rank == 0 ? calloc((size_t)ml_world_size, 256) : NULL;
    PMPI_Gather(host, 256, MPI_CHAR, hosts, 256, MPI_CHAR, 0, MPI_COMM_WORLD);

    char *topo = ml_topo_json(); /* collective: the application's process topologies (topo.c) */
    ml_buf_t b = {0};
    char path[4300] = {0}, tmp[4300] = {0};
    if (ml_world_rank == 0) {
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        char stamp[32], iso[32], job[128];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        ml_job_id(job, sizeof job, stamp);
        ml_expand(path, sizeof path, ml_cfg_output, job, stamp, host);
        snprintf(tmp, sizeof tmp, "%s.tmp-%s-%d", path, stamp, (int)getpid());

        char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
        int len = 0, ver = 0, sub = 0;
        PMPI_Get_library_version(lib, &len);
        PMPI_Get_version(&ver, &sub);
        char first[256];
        snprintf(first, sizeof first, "%s", lib);
        first[strcspn(first, "\n")] = 0;
        for (char *e = first + strlen(first); e > first && (e[-1] == ' ' || e[-1] == '\t');) *--e = 0;
        const char *flav = strstr(lib, "Open MPI") ? "openmpi" : strstr(lib, "Intel") ? "intelmpi"
                         : strstr(lib, "MPICH") ? "mpich" : "unknown";
        char cmd[2048] = {0};
        FILE *cf = fopen("/proc/self/cmdline", "r");
        if (cf) {
            size_t k = fread(cmd, 1, sizeof cmd - 1, cf);
            fclose(cf);
            for (size_t i = 0; i + 1 < k; i++) if (!cmd[i]) cmd[i] = ' ';
        }
        ml_put(&b, "{\"format\":\"mpilens-profile\",\"version\":1,\"created\":\"%s\",\"job_id\":", iso);
        ml_put_str(&b, job);
        ml_put(&b, ",\"command\":");
        ml_put_str(&b, cmd);
        ml_put(&b, ",\"mpi_library\":");
        ml_put_str(&b, first);
        ml_put(&b, ",\"mpi_library_full\":");
        ml_put_str(&b, lib);
        ml_put(&b, ",\"mpi_flavour\":\"%s\",\"mpi_version\":[%d,%d],\"nranks\":%d,\"hosts\":[", flav, ver, sub, ml_world_size);
        /* distinct hosts in order of first rank, and ranks per host */
        int *cnt = calloc((size_t)ml_world_size, sizeof(int)), nh = 0;
        int *first_rank = calloc((size_t)ml_world_size, sizeof(int));
        for (int r = 0; r < ml_world_size; r++) {
            int h = 0;
            while (h < nh && strcmp(hosts + 256 * first_rank[h], hosts + 256 * r)) h++;
            if (h == nh) first_rank[nh++] = r;
            cnt[h]++;
        }
        for (int h = 0; h < nh; h++) {
            ml_put(&b, h ? "," : "");
            ml_put_str(&b, hosts + 256 * first_rank[h]);
        }
        ml_put(&b, "],\"ranks_per_host\":[");
        for (int h = 0; h < nh; h++) ml_put(&b, "%s%d", h ? "," : "", cnt[h]);
        free(cnt);
        free(first_rank);
        ml_put(&b, "],\"clock\":{\"source\":\"%s\",\"ghz\":%.6g,\"resolution_ns\":%.4g},", ml_clock_source(),
               ml_clock_ghz(), 1.0 / ml_clock_ghz());
        ml_put(&b, "\"timing\":{\"mode\":\"%s\",\"sample_period\":%d,\"warmup_calls\":%d,\"always_above_ns\":2000},",
               ml_cfg_sample ? "sampled" : "all", (int)ml_sample_mask + 1, ML_WARMUP);
        ml_put(&b, "\"overhead_sampled_ns\":%.4g,", ml_overhead_sampled_ns);
        ml_put(&b, "\"overhead_ns\":%.4g,\"caution_factor\":5,\"detail\":%s,\"config\":{\"output\":", ovh_max,
               ml_cfg_detail ? "true" : "false");
        ml_put_str(&b, ml_cfg_output);
        const char *inc = ml_config_get("include"), *exc = ml_config_get("exclude");
        ml_put(&b, ",\"include\":");
        ml_put_str(&b, inc ? inc : "*");
        ml_put(&b, ",\"exclude\":");
        ml_put_str(&b, exc ? exc : "");
        ml_put(&b, "},\"wrapped\":{\"c\":%d,\"fortran\":%d},\"hist_labels\":[\"0\",\"1\"", ml_wrapped_c, ml_wrapped_f);
        for (int k = 2; k < ML_NBINS - 1; k++) {
            unsigned long long lo = 1ull << (k - 1), hi = (1ull << k) - 1;
            const char *u1 = "", *u2 = "";
            unsigned long long dl = lo, dh = hi + 1;
            if (lo >= 1048576) { dl = lo >> 20; dh = (hi + 1) >> 20; u1 = "Mi"; u2 = "Mi"; }
            else if (lo >= 1024) { dl = lo >> 10; dh = (hi + 1) >> 10; u1 = "Ki"; u2 = "Ki"; }
            if (u1[0]) ml_put(&b, ",\"%llu%s-%llu%s\"", dl, u1, dh, u2);
            else ml_put(&b, ",\"%llu-%llu\"", lo, hi);
        }
        ml_put(&b, ",\">=8Mi\"],");
        ml_put(&b, "\"wall_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g},", tmns[NF], ts[2 * NF] / ml_world_size, wmaxs[0]);
        ml_put(&b, "\"mpi_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g},", tmns[NF + 1], ts[2 * NF + 1] / ml_world_size, wmaxs[1]);
        ml_put(&b, "\"functions\":{");
        int firstf = 1;
        for (int i = 1; i < NF; i++) {
            if (!us[i]) continue;
            ml_put(&b, "%s\"%s\":{", firstf ? "" : ",", ml_func_name[i]);
            firstf = 0;
            double mean_call = ts[i] / (double)us[i];
            ml_put(&b, "\"calls\":%llu,\"time_s\":%.9g,\"time_min_s\":%.9g,\"time_max_s\":%.9g",
                   (unsigned long long)us[i], ts[i], tmns[i], ts[NF + i]);
            ml_put(&b, ",\"rank_time_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g,\"max_rank\":%d}", rts[i],
                   ts[i] / ml_world_size, tls[i].v, tls[i].r);
            ml_put(&b, ",\"calls_per_rank\":{\"min\":%llu,\"max\":%llu}", (unsigned long long)rcmin[i], (unsigned long long)rcmax[i]);
            int di = ml_func_didx[i];
            if (di >= 0) {
                uint64_t *w = us + NF + (size_t)di * NW;
                ml_put(&b, ",\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"repro_calls\":%llu", (unsigned long long)w[0],
                       (unsigned long long)w[1], (unsigned long long)w[2]);
                ml_put_hist(&b, "hist_send", w + 3);
                ml_put_hist(&b, "hist_recv", w + 3 + ML_NBINS);
                ml_put(&b, ",\"hist_send_bytes\":%llu", (unsigned long long)w[3 + 2 * ML_NBINS]);
            }
            ml_put(&b, ",\"caution\":%s}", mean_call * 1e9 < 5.0 * ovh_max ? "true" : "false");
        }
        ml_put(&b, "}");
        if (topo) ml_put(&b, ",%s", topo);
        if (ml_coll_profile_json) {
            char *a2a = ml_coll_profile_json();
            if (a2a) {
                ml_put(&b, ",\"alltoall\":%s", a2a);
                free(a2a);
            }
        }
        ml_put(&b, "}\n");
        free(hosts);
    }
    if (ml_cfg_detail) ml_rank_line(&b, m, host, wall, mpi);

    /* ---- placement and collective write ---- */
    long long mylen = (long long)b.n, off = 0;
    PMPI_Exscan(&mylen, &off, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (ml_world_rank == 0) off = 0;
    PMPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
    char err[MPI_MAX_ERROR_STRING + 1] = {0};
    int failed = ml_write_file(tmp, &b, (MPI_Offset)off, err, sizeof err);
    if (failed) {
        /* The directory may be unwritable: fall back to $TMPDIR so the profile is not lost. */
        char alt[4300];
        const char *td = getenv("TMPDIR");
        const char *base = strrchr(tmp, '/');
        snprintf(alt, sizeof alt, "%s/%s", td && *td ? td : "/tmp", base ? base + 1 : tmp);
        if (ml_world_rank == 0) {
            fprintf(stderr, "mpilens: cannot write profile %s: %s\n", path, err[0] ? err : "MPI-IO error");
            snprintf(tmp, sizeof tmp, "%s", alt);
            char *dot = strstr(alt, ".tmp-");
            if (dot) *dot = 0;
            snprintf(path, sizeof path, "%s", alt);
        }
        PMPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
        failed = ml_write_file(tmp, &b, (MPI_Offset)off, err, sizeof err);
    }
    if (ml_world_rank == 0) {
        if (failed) {
            fprintf(stderr, "mpilens: profile not written: %s\n", err[0] ? err : "MPI-IO error");
        } else {
            /* Claim the final name without overwriting anything: name, name.1, name.2, ... */
            char final[4400];
            snprintf(final, sizeof final, "%s", path);
            int k = 0;
            while (link(tmp, final) != 0) {
                if (errno != EEXIST || ++k > 999) {
                    if (rename(tmp, final) != 0) fprintf(stderr, "mpilens: cannot rename %s: %s\n", tmp, strerror(errno));
                    break;
                }
                snprintf(final, sizeof final, "%s.%d", path, k);
            }
            unlink(tmp);
            char *abs = realpath(final, NULL);
            if (!getenv("MPILENS_QUIET")) fprintf(stderr, "mpilens: profile written to %s\n", abs ? abs : final);
            free(abs);
        }
    }
    free(b.p);
    free(topo);
    free(u); free(us); free(cmin); free(cmax); free(rcmin); free(rcmax); free(t); free(ts);
    free(tmn); free(tmns); free(tl); free(tls); free(rt); free(rts);
    free(m->peers);
    free(m);
    return failed;
}
