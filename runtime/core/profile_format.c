/* Profile step 2, format: rank 0's header line (job, MPI, clock, overhead,
 * cross-rank aggregates, every engine's section) and each rank's line.  The
 * fields are those of schema/profile.json (tests/test_schema.py checks real
 * profiles against it); the constants come from it (ml_schema.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"


static void ml_put_hist(ml_buf_t *b, const char *key, const uint64_t *h)
{
    ml_buf_printf(b, ",\"%s\":[", key);
    for (int i = 0; i < ML_NBINS; i++) ml_buf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)h[i]);
    ml_buf_printf(b, "]");
}

/* bytes, served calls and histograms of a function with data */
static void ml_put_data(ml_buf_t *b, uint64_t bs, uint64_t br, uint64_t served, const uint64_t *hs,
                        const uint64_t *hr, uint64_t hist_bytes_s)
{
    ml_buf_printf(b, ",\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"repro_calls\":%llu", (unsigned long long)bs,
                  (unsigned long long)br, (unsigned long long)served);
    ml_put_hist(b, "hist_send", hs);
    ml_put_hist(b, "hist_recv", hr);
    ml_buf_printf(b, ",\"hist_send_bytes\":%llu", (unsigned long long)hist_bytes_s);
}

/* ---- the header ---- */

static void ml_put_mpi(ml_buf_t *b)
{
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
    ml_buf_printf(b, ",\"mpi_library\":");
    ml_buf_json_str(b, first);
    ml_buf_printf(b, ",\"mpi_library_full\":");
    ml_buf_json_str(b, lib);
    ml_buf_printf(b, ",\"mpi_flavour\":\"%s\",\"mpi_version\":[%d,%d]", flav, ver, sub);
}

static void ml_put_functions(ml_buf_t *b, const ml_profile_t *p)
{
    enum { NF = ML_NFUNC };
    ml_buf_printf(b, "\"functions\":{");
    int firstf = 1;
    for (int i = 1; i < NF; i++) {
        if (!p->calls[i]) continue;
        ml_buf_printf(b, "%s\"%s\":{", firstf ? "" : ",", ml_func_name[i]);
        firstf = 0;
        double mean_call = p->time[i] / (double)p->calls[i];
        ml_buf_printf(b, "\"calls\":%llu,\"time_s\":%.9g,\"time_min_s\":%.5g,\"time_max_s\":%.5g",
                      (unsigned long long)p->calls[i], p->time[i], p->call_min[i], p->call_max[i]);
        ml_buf_printf(b, ",\"rank_time_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g,\"max_rank\":%d}",
                      p->rank_time_min[i], p->time[i] / ml_world_size, p->rank_time_max[i].v,
                      p->rank_time_max[i].r);
        ml_buf_printf(b, ",\"calls_per_rank\":{\"min\":%llu,\"max\":%llu}",
                      (unsigned long long)p->calls_min[i], (unsigned long long)p->calls_max[i]);
        int di = ml_func_didx[i];
        if (di >= 0) {
            const uint64_t *w = p->calls + NF + (size_t)di * ML_DWORDS;
            ml_put_data(b, w[ML_DW_BYTES_S], w[ML_DW_BYTES_R], w[ML_DW_SERVED], w + ML_DW_HIST_S,
                        w + ML_DW_HIST_R, w[ML_DW_HIST_BYTES_S]);
            ml_modules_function_json(b, &(ml_fdata_t){i, di, w + ML_DW_XNODE, w + ML_DW_SPAN, NULL});
        }
        ml_buf_printf(b, ",\"caution\":%s}",
                      mean_call * 1e9 < ML_CAUTION_FACTOR * p->overhead_max ? "true" : "false");
    }
    ml_buf_printf(b, "}");
}

/* Every engine's section under its name, then their versions under "sections". */
static void ml_put_sections(ml_buf_t *b)
{
    ml_buf_t versions = {0};
    for (int i = 0; ml_engines[i]; i++) {
        const ml_engine_t *e = ml_engines[i];
        if (!e->section) continue;
        size_t mark = b->n;
        ml_buf_printf(b, ",\"%s\":", e->name);
        if (!e->section(b)) { /* none: take the key back */
            b->n = mark;
            b->p[mark] = 0;
            continue;
        }
        ml_buf_printf(&versions, "%s\"%s\":%d", versions.n ? "," : "", e->name, e->version);
    }
    if (versions.n) ml_buf_printf(b, ",\"sections\":{%s}", versions.p);
    ml_buf_free(&versions);
}

void ml_profile_header(ml_buf_t *b, const ml_profile_t *p, const char *job, const char *iso)
{
    enum { NF = ML_NFUNC };
    char cmd[2048] = {0};
    FILE *cf = fopen("/proc/self/cmdline", "r");
    if (cf) {
        size_t k = fread(cmd, 1, sizeof cmd - 1, cf);
        fclose(cf);
        for (size_t i = 0; i + 1 < k; i++) if (!cmd[i]) cmd[i] = ' ';
    }
    ml_buf_printf(b, "{\"format\":\"%s\",\"version\":%d,\"created\":\"%s\",\"job_id\":", ML_PROFILE_FORMAT,
                  ML_PROFILE_VERSION, iso);
    ml_buf_json_str(b, job);
    ml_buf_printf(b, ",\"command\":");
    ml_buf_json_str(b, cmd);
    ml_put_mpi(b);
    ml_buf_printf(b, ",\"nranks\":%d", ml_world_size);
    ml_modules_header_where_json(b); /* hosts, machine facts, nodes (nodes.c, machine.c) */
    ml_buf_printf(b, ",\"clock\":{\"source\":\"%s\",\"ghz\":%.6g,\"resolution_ns\":%.4g},", ml_clock_source(),
                  ml_clock_ghz(), 1.0 / ml_clock_ghz());
    ml_buf_printf(b, "\"timing\":{\"mode\":\"%s\",\"sample_period\":%d,\"warmup_calls\":%d,\"always_above_ns\":%d,"
                  "\"probe_backtraces\":%llu},",
                  ml_cfg.timing == ML_TIMING_SAMPLED ? "sampled" : "all", (int)ml_hot.sample_mask + 1,
                  ML_WARMUP_CALLS, ml_cfg.time_above_ns, (unsigned long long)ml_probe_backtraces);
    ml_buf_printf(b, "\"overhead_sampled_ns\":%.4g,", ml_overhead_sampled_ns);
    /* the profiler's end-of-run work on rank 0 (profile_reduce.c, profile_write.c): the
     * reductions, the lines' offsets, and all of it from MPI_Finalize's barrier to this
     * header; the write comes after and cannot be in the file it produces */
    ml_buf_printf(b, "\"profiler_finalize_s\":{\"reduce\":%.6g,\"offsets\":%.6g,\"total\":%.6g},",
                  p->fin_reduce_s, p->fin_offsets_s, p->fin_total_s);
    ml_buf_printf(b, "\"overhead_ns\":%.4g,\"caution_factor\":%d,\"detail\":%s,\"config\":{\"output\":",
                  p->overhead_max, ML_CAUTION_FACTOR, ml_cfg.detail ? "true" : "false");
    ml_buf_json_str(b, ml_cfg.output);
    ml_buf_printf(b, ",\"include\":");
    ml_buf_json_str(b, ml_cfg.include ? ml_cfg.include : "*");
    ml_buf_printf(b, ",\"exclude\":");
    ml_buf_json_str(b, ml_cfg.exclude ? ml_cfg.exclude : "");
    ml_buf_printf(b, "},\"wrapped\":{\"c\":%d,\"fortran\":%d},\"hist_labels\":[", ml_wrapped_c, ml_wrapped_f);
    for (int k = 0; k < ML_NBINS; k++) ml_buf_printf(b, "%s\"%s\"", k ? "," : "", ml_hist_labels[k]);
    ml_buf_printf(b, "],");
    ml_buf_printf(b, "\"wall_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g},", p->call_min[NF],
                  p->time[NF] / ml_world_size, p->wall_max);
    ml_buf_printf(b, "\"mpi_s\":{\"min\":%.9g,\"mean\":%.9g,\"max\":%.9g},", p->call_min[NF + 1],
                  p->time[NF + 1] / ml_world_size, p->mpi_max);
    ml_put_functions(b, p);
    ml_modules_header_json(b); /* the record kinds, the topologies (topo.c) */
    ml_put_sections(b);
    ml_buf_printf(b, "}\n");
}

/* ---- a rank's line ---- */

/* [peer, messages, bytes] for every peer with traffic on one side */
static void ml_put_peers(ml_buf_t *b, const ml_slot_t *m, int side)
{
    int first = 1;
    for (int p = 0; p < ml_world_size; p++) {
        const ml_peer_t *q = &m->peers[p];
        uint64_t msgs = side == ML_SEND ? q->msgs_s : q->msgs_r, bytes = side == ML_SEND ? q->bytes_s : q->bytes_r;
        if (!msgs) continue;
        ml_buf_printf(b, "%s[%d,%llu,%llu]", first ? "" : ",", p, (unsigned long long)msgs, (unsigned long long)bytes);
        first = 0;
    }
}

void ml_profile_rank_line(ml_buf_t *b, const ml_profile_t *p)
{
    const ml_slot_t *m = p->m;
    ml_buf_printf(b, "{\"rank\":%d,\"host\":", ml_world_rank);
    ml_buf_json_str(b, p->host);
    ml_buf_printf(b, ",\"node\":%d", ml_hot.my_node);
    ml_modules_rank_where_json(b); /* the machine facts, late arrival (machine.c, late.c) */
    ml_buf_printf(b, ",\"pid\":%d,\"wall_s\":%.8g,\"mpi_s\":%.8g,\"threads\":%d,\"untracked_requests\":%llu,\"functions\":{",
                  (int)getpid(), p->wall, p->mpi, ml_slot_count(), (unsigned long long)m->untracked);
    int first = 1;
    for (int i = 1; i < ML_NFUNC; i++) {
        const ml_frec_t *f = &m->f[i];
        if (!f->t.calls) continue;
        ml_buf_printf(b, "%s\"%s\":{", first ? "" : ",", ml_func_name[i]);
        first = 0;
        ml_buf_printf(b, "\"calls\":%llu,\"timed_calls\":%llu,\"time_s\":%.8g,\"time_min_s\":%.5g,\"time_max_s\":%.5g",
                      (unsigned long long)f->t.calls, (unsigned long long)f->t.timed, ml_est_s(&f->t),
                      ml_ticks_to_s(f->tmin), ml_ticks_to_s(f->tmax));
        int di = ml_func_didx[i];
        if (di >= 0) {
            const ml_drec_t *d = &m->d[di];
            ml_put_data(b, d->bytes_s, d->bytes_r, d->served, d->hist_s, d->hist_r, d->hist_bytes_s);
            ml_modules_function_json(b, &(ml_fdata_t){i, di, &d->xnode[0][0], d->span_calls, d->span_max});
        }
        ml_buf_printf(b, "}");
    }
    ml_buf_printf(b, "},\"peers\":{\"sent\":[");
    ml_put_peers(b, m, ML_SEND);
    ml_buf_printf(b, "],\"recv\":[");
    ml_put_peers(b, m, ML_RECV);
    ml_buf_printf(b, "]}");
    ml_modules_rank_json(b);
    ml_buf_printf(b, "}\n");
}
