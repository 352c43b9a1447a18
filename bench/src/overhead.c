/* overhead: cost of the mpilens profiler per MPI call, measured in one run by
 * interleaving blocks that bypass it (PMPI_*) with blocks that go through it
 * (MPI_*, interposed when libmpilens.so is LD_PRELOADed): A/B/A/B...
 * Also: VmRSS after 10^3 and 10^7 profiled calls and, when the runtime exports
 * it, size_t mpilens_record_bytes(void). */
#define _GNU_SOURCE
#include "mlb.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef size_t (*recbytes_fn)(void);
typedef int (*setcs_fn)(int);
static volatile int sink;

#define PROBE_S 0.25   /* the expected duration's probe: at least this long (s) */

static double rank_block(int profiled, long calls)
{
    int r;
    double t0 = MPI_Wtime();
    if (profiled) for (long i = 0; i < calls; i++) { MPI_Comm_rank(MPI_COMM_WORLD, &r); sink = r; }
    else for (long i = 0; i < calls; i++) { PMPI_Comm_rank(MPI_COMM_WORLD, &r); sink = r; }
    return (MPI_Wtime() - t0) / (double)calls;
}

static double pp_block(int profiled, long rounds, int role, char *buf)
{
    int o = 1 - role;
    double t0 = MPI_Wtime();
    for (long i = 0; i < rounds; i++) {
        if (role == 0) {
            if (profiled) {
                MPI_Send(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD);
                MPI_Recv(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                PMPI_Send(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD);
                PMPI_Recv(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            if (profiled) {
                MPI_Recv(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD);
            } else {
                PMPI_Recv(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                PMPI_Send(buf, 8, MPI_BYTE, o, 3, MPI_COMM_WORLD);
            }
        }
    }
    return (MPI_Wtime() - t0) / (double)rounds;
}

static void ab_json(ml_json *w, const char *key, const double *a, const double *b, int n,
                    const char *unit_key, long per_block)
{
    double *d = malloc((size_t)n * sizeof *d);
    for (int i = 0; i < n; i++) d[i] = b[i] - a[i];
    ml_json_obj(w, key);
    ml_json_int(w, unit_key, per_block);
    ml_json_int(w, "blocks", n);
    ml_json_stats(w, "pmpi_ns", a, n, 1e9);
    ml_json_stats(w, "mpi_ns", b, n, 1e9);
    ml_json_stats(w, "added_ns", d, n, 1e9);
    ml_json_num(w, "added_ns_median", ml_median(d, n) * 1e9);
    ml_json_end(w);
    free(d);
}

int ml_overhead(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    long calls = (long)ml_opt_int("calls", 100000, 1, 1000000000);
    int blocks = (int)ml_opt_int("blocks", 20, 1, 1000000);
    long rounds = (long)ml_opt_int("pp-calls", 10000, 1, 1000000000);
    long big = (long)ml_opt_int("rss-calls", 10000000, 1000, 10000000000LL);
    ml_opts_finish();

    void *sym = dlsym(RTLD_DEFAULT, "mpilens_record_bytes");
    recbytes_fn recbytes = NULL;
    if (sym) memcpy(&recbytes, &sym, sizeof recbytes);
    Dl_info info;
    memset(&info, 0, sizeof info);
    void *mcr = dlsym(RTLD_DEFAULT, "MPI_Comm_rank");
    const char *from = mcr && dladdr(mcr, &info) && info.dli_fname ? info.dli_fname : "";
    int loaded = strstr(from, "libmpilens") != NULL;

    long rss[3];
    long long rb[3];
    rss[0] = ml_rss_kib("VmRSS:");
    rb[0] = recbytes ? (long long)recbytes() : -1;
    int r;
    double started = MPI_Wtime();
    for (long i = 0; i < 1000; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    rss[1] = ml_rss_kib("VmRSS:");
    rb[1] = recbytes ? (long long)recbytes() : -1;
    /* the expected duration, said before the long loops: the first of the rss-calls
     * MPI_Comm_rank calls timed for PROBE_S of wall time at least (shorter probes run
     * within one scheduler slice and miss a loaded host's sharing of the CPU: 1000 calls
     * foretold 3.7 s of a run that took 38 s), and 200 profiled 8 B round trips between
     * ranks 0 and 1 after a barrier and 20 untimed; every later call (PMPI blocks included: an upper bound there) and
     * round trip costed at those times; the slowest rank's figure */
    long i = 1000;
    double tp = MPI_Wtime(), spent = 0, fast = 1e300;
    while (i < big && spent < PROBE_S) {
        long n = big - i < 1000 ? big - i : 1000;
        double tc = MPI_Wtime();
        for (long k = 0; k < n; k++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
        i += n;
        double now = MPI_Wtime(), per = (now - tc) / (double)n;
        fast = per < fast ? per : fast;
        spent = now - tp;
    }
    double t_cr = spent / (double)(i - 1000 > 0 ? i - 1000 : 1);
    if (fast > t_cr) fast = t_cr;
    int role = ml_rank < 2 ? ml_rank : -1, pp = ml_size >= 2;
    char buf[8] = {0};
    MPI_Barrier(MPI_COMM_WORLD);     /* both partners out of their probes first */
    if (pp && role >= 0) pp_block(1, 20, role, buf);   /* warm-up: connections */
    /* 200 round trips in 10 blocks: their mean, and the fastest block */
    double t_pp = 0, pp_fast = 0;
    if (pp && role >= 0) {
        pp_fast = 1e300;
        for (int k = 0; k < 10; k++) {
            double b = pp_block(1, 20, role, buf);
            t_pp += b / 10;
            pp_fast = b < pp_fast ? b : pp_fast;
        }
    }
    int cs_maybe = dlsym(RTLD_DEFAULT, "mpilens_set_callsites") != NULL;
    double n_cr = (double)(big - i) + 2.0 * (double)(calls / 10 + 1)
                  + (double)blocks * (double)calls * (cs_maybe ? 6 : 2);
    double n_pp = 2.0 * (double)(rounds / 10 + 1) + 2.0 * blocks * (double)rounds;
    double so_far = MPI_Wtime() - started;
    /* the typical figure at the probe's mean rates, the low one at its fastest chunks
     * (a loaded host's share of the CPU changes from second to second: the range says so) */
    double est[2] = {so_far + t_cr * n_cr + t_pp * n_pp, so_far + fast * n_cr + pp_fast * n_pp};
    MPI_Allreduce(MPI_IN_PLACE, est, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double expected = est[0];
    if (ml_rank == 0) ml_announce_range("overhead", est[1], expected, 8);
    for (; i < big; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    rss[2] = ml_rss_kib("VmRSS:");
    rb[2] = recbytes ? (long long)recbytes() : -1;
    ml_progress(1, 3);

    double *a = malloc(2 * (size_t)blocks * sizeof *a), *b = a + blocks;
    rank_block(0, calls / 10 + 1);           /* warm-up */
    rank_block(1, calls / 10 + 1);
    for (int k = 0; k < blocks; k++) {
        a[k] = rank_block(0, calls);
        b[k] = rank_block(1, calls);
    }
    /* call sites: depths 0, 1, 2 and 4 interleaved with PMPI in the same run
     * (mpilens_set_callsites, when the library exports it and call sites are on) */
    setcs_fn setcs = NULL;
    void *scs = dlsym(RTLD_DEFAULT, "mpilens_set_callsites");
    if (scs) memcpy(&setcs, &scs, sizeof setcs);
    int depth0 = setcs ? setcs(0) : -1, csok = depth0 >= 0;
    double *ca = malloc(5 * (size_t)blocks * sizeof *ca), *c0 = ca + blocks, *c1 = c0 + blocks, *c2 = c1 + blocks,
           *c4 = c2 + blocks;
    if (csok) {
        for (int k = 0; k < blocks; k++) {
            ca[k] = rank_block(0, calls);
            setcs(0);
            c0[k] = rank_block(1, calls);
            setcs(1);
            c1[k] = rank_block(1, calls);
            setcs(2);
            c2[k] = rank_block(1, calls);
            setcs(4);
            c4[k] = rank_block(1, calls);
        }
        setcs(depth0);
    }
    ml_progress(2, 3);
    double *pa = malloc(2 * (size_t)blocks * sizeof *pa), *pb = pa + blocks;
    MPI_Barrier(MPI_COMM_WORLD);
    if (pp && role >= 0) {
        pp_block(0, rounds / 10 + 1, role, buf);
        pp_block(1, rounds / 10 + 1, role, buf);
        for (int k = 0; k < blocks; k++) {
            pa[k] = pp_block(0, rounds, role, buf);
            pb[k] = pp_block(1, rounds, role, buf);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ml_progress(3, 3);
    if (ml_rank == 0) {
        ml_json_obj(out, "options");
        ml_json_int(out, "calls", calls);
        ml_json_int(out, "blocks", blocks);
        ml_json_int(out, "pp_calls", rounds);
        ml_json_int(out, "rss_calls", big);
        ml_json_end(out);
        ml_json_obj(out, "results");
        ml_json_obj(out, "profiler");
        ml_json_bool(out, "loaded", loaded);
        ml_json_str(out, "MPI_Comm_rank_from", from);
        ml_json_bool(out, "record_bytes_symbol", recbytes != NULL);
        ml_json_end(out);
        ab_json(out, "comm_rank", a, b, blocks, "calls_per_block", calls);
        if (csok) { /* added over PMPI with call sites off (depth 0) and at depth 1 */
            ml_json_obj(out, "comm_rank_callsites");
            ml_json_int(out, "configured_depth", depth0);
            ab_json(out, "depth0", ca, c0, blocks, "calls_per_block", calls);
            ab_json(out, "depth1", ca, c1, blocks, "calls_per_block", calls);
            ab_json(out, "depth2", ca, c2, blocks, "calls_per_block", calls);
            ab_json(out, "depth4", ca, c4, blocks, "calls_per_block", calls);
            ml_json_end(out);
        } else ml_json_null(out, "comm_rank_callsites");
        if (pp) {
            ab_json(out, "pingpong_8B", pa, pb, blocks, "roundtrips_per_block", rounds);
        } else ml_json_null(out, "pingpong_8B");
        ml_json_obj(out, "memory");
        ml_json_int(out, "rss_kib_before", rss[0]);
        ml_json_int(out, "rss_kib_after_1e3", rss[1]);
        ml_json_int(out, "rss_kib_after_rss_calls", rss[2]);
        ml_json_int(out, "rss_growth_kib", rss[2] - rss[1]);
        if (recbytes) {
            ml_json_int(out, "record_bytes_before", rb[0]);
            ml_json_int(out, "record_bytes_after_1e3", rb[1]);
            ml_json_int(out, "record_bytes_after_rss_calls", rb[2]);
        }
        ml_json_end(out);
        ml_json_end(out);
        ml_json_num(out, "expected_s", expected);  /* said before the long loops */
        ml_json_num(out, "expected_low_s", est[1]); /* at the probe's fastest rates */
        ml_json_num(out, "elapsed_s", MPI_Wtime() - started);  /* what it took (rank 0) */
    }
    free(a);
    free(ca); free(pa);
    return 0;
}
