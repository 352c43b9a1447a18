/* memory: resident memory (VmRSS) per rank added by the MPI library: at program
 * start (before MPI_Init), after MPI_Init, after the benchmark's own buffers are
 * touched, after first contact with every peer (pairwise exchange, as the
 * pairwise Alltoall algorithm does), after MPI_Alltoall with large messages
 * (first call and after --repeats calls).  Tabulated per rank and per node. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_start = -1;
__attribute__((constructor)) static void record_start(void) { rss_start = ml_rss_kib("VmRSS:"); }

enum { S_START, S_INIT, S_BUF, S_PAIR, S_A2A1, S_A2AN, S_HWM, NST };
static const char *const st_names[NST] = {"start_kib", "init_kib", "buffers_kib", "pairwise_kib",
                                          "alltoall_first_kib", "alltoall_last_kib", "hwm_kib"};

int ml_memory(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    long rss_init = ml_rss_kib("VmRSS:");
    long long size = ml_opt_size("size", 256 << 10);
    int repeats = (int)ml_opt_int("repeats", 20, 1, 1000000);
    ml_opts_finish();
    int P = ml_size, me = ml_rank;
    if (size < 1 || size * P > (1LL << 31) - 1)
        ml_usage("--size %lld is out of range (accepted: 1 B to 2 GiB / ranks per peer)", size);
    long st[NST];
    st[S_START] = rss_start;
    st[S_INIT] = rss_init;
    unsigned char *sb = ml_alloc((size_t)(size * P)), *rb = ml_alloc((size_t)(size * P));
    st[S_BUF] = ml_rss_kib("VmRSS:");
    long errors = 0;
    for (int k = 1; k < P; k++) {
        int dst = (me + k) % P, src = (me - k + P) % P;
        ml_fill(sb, (size_t)size, (uint64_t)(me * P + dst) * (uint64_t)size, 1);
        MPI_Sendrecv(sb, (int)size, MPI_BYTE, dst, 5, rb, (int)size, MPI_BYTE, src, 5,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (ml_check(rb, (size_t)size, (uint64_t)(src * P + me) * (uint64_t)size, 1)) errors++;
    }
    st[S_PAIR] = ml_rss_kib("VmRSS:");
    for (int d = 0; d < P; d++)
        ml_fill(sb + d * size, (size_t)size, (uint64_t)(me * P + d) * (uint64_t)size, 2);
    for (int j = 0; j < repeats; j++) {
        memset(rb, 0, (size_t)(size * P));
        MPI_Alltoall(sb, (int)size, MPI_BYTE, rb, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        for (int s = 0; s < P; s++)
            if (ml_check(rb + s * size, (size_t)size, (uint64_t)(s * P + me) * (uint64_t)size, 2))
                errors++;
        if (j == 0) st[S_A2A1] = ml_rss_kib("VmRSS:");
        ml_progress(j + 1, repeats);
    }
    st[S_A2AN] = ml_rss_kib("VmRSS:");
    st[S_HWM] = ml_rss_kib("VmHWM:");
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len;
    MPI_Get_processor_name(host, &len);
    long *all = me == 0 ? malloc((size_t)P * NST * sizeof *all) : NULL;
    char *hosts = me == 0 ? malloc((size_t)P * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(st, NST, MPI_LONG, all, NST, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, MPI_COMM_WORLD);
    if (me == 0) {
        ml_json_obj(out, "options");
        ml_json_int(out, "size", size);
        ml_json_int(out, "repeats", repeats);
        ml_json_end(out);
        ml_json_obj(out, "results");
        ml_json_int(out, "nranks", P);
        ml_json_arr(out, "per_rank");
        double sum_init = 0, sum_contact = 0, max_total = 0;
        for (int r = 0; r < P; r++) {
            long *v = all + r * NST;
            long init = v[S_INIT] - v[S_START], contact = v[S_A2AN] - v[S_BUF];
            ml_json_obj(out, NULL);
            ml_json_int(out, "rank", r);
            ml_json_str(out, "host", hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
            for (int k = 0; k < NST; k++) ml_json_int(out, st_names[k], v[k]);
            ml_json_int(out, "mpi_init_kib", init);
            ml_json_int(out, "mpi_contact_kib", contact);
            ml_json_int(out, "mpi_total_kib", init + contact);
            ml_json_end(out);
            sum_init += (double)init;
            sum_contact += (double)contact;
            if (init + contact > max_total) max_total = (double)(init + contact);
        }
        ml_json_end(out);
        ml_json_arr(out, "per_node");
        for (int r = 0; r < P; r++) {
            const char *h = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME;
            int first = 1;
            for (int q = 0; q < r; q++)
                if (!strcmp(h, hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME)) first = 0;
            if (!first) continue;
            long n = 0, init = 0, contact = 0, rss = 0;
            for (int q = r; q < P; q++) {
                if (strcmp(h, hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME)) continue;
                long *v = all + q * NST;
                n++;
                init += v[S_INIT] - v[S_START];
                contact += v[S_A2AN] - v[S_BUF];
                rss += v[S_A2AN];
            }
            ml_json_obj(out, NULL);
            ml_json_str(out, "host", h);
            ml_json_int(out, "ranks", n);
            ml_json_int(out, "mpi_init_kib", init);
            ml_json_int(out, "mpi_contact_kib", contact);
            ml_json_int(out, "mpi_total_kib", init + contact);
            ml_json_int(out, "rss_kib", rss);
            ml_json_end(out);
        }
        ml_json_end(out);
        ml_json_obj(out, "summary");
        ml_json_num(out, "mpi_init_kib_mean", sum_init / P);
        ml_json_num(out, "mpi_contact_kib_mean", sum_contact / P);
        ml_json_num(out, "mpi_total_kib_mean", (sum_init + sum_contact) / P);
        ml_json_num(out, "mpi_total_kib_max", max_total);
        ml_json_end(out);
        ml_json_end(out);
    }
    free(all); free(hosts); free(sb); free(rb);
    return (int)errors;
}
