/* mpilens-bench FAMILY [--option value ...] [--out FILE] [--progress]
 * One MPI program, one sub-command per benchmark family; rank 0 writes one
 * JSON document (format "mpilens-bench", documented in docs/bench.md). */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; ml_family_fn fn; const char *what; } families[] = {
    {"p2p", ml_p2p, "ping-pong latency, ping-ping, uni/bi-directional bandwidth"},
    {"coll", ml_coll, "collectives, slowest rank per iteration after a synchronised start"},
    {"halo", ml_halo, "halo exchange: point-to-point vs MPI-3 shared memory"},
    {"logp", ml_logp, "P-LogP parameters L, os(m), or(m), g(m)"},
    {"io", ml_io, "MPI-IO contiguous and strided patterns"},
    {"memory", ml_memory, "resident memory added by the MPI library"},
    {"overhead", ml_overhead, "per-call cost of the mpilens profiler (run under LD_PRELOAD)"},
};
#define NFAM ((int)(sizeof families / sizeof families[0]))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &ml_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ml_size);
    int f = -1;
    if (argc >= 2)
        for (int i = 0; i < NFAM; i++)
            if (!strcmp(argv[1], families[i].name)) f = i;
    if (f < 0) {
        if (argc >= 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))
            ml_usage("unknown family '%s' (accepted: p2p, coll, halo, logp, io, memory, "
                     "overhead)", argv[1]);
        if (ml_rank == 0) {
            printf("usage: mpilens-bench FAMILY [--option value ...] [--out FILE] [--progress]\n");
            for (int i = 0; i < NFAM; i++)
                printf("  %-9s %s\n", families[i].name, families[i].what);
        }
        MPI_Finalize();
        return argc >= 2 ? 0 : 2;
    }
    ml_opts_init(argc, argv, 2);
    const char *out = ml_opt_str("out", NULL);
    ml_progress_on = ml_opt_flag("progress");
    /* checked now (the run can be long), written at the end: an existing FILE stays
     * as it is until the whole document replaces it */
    int err = 0;
    if (ml_rank == 0 && out) err = ml_check_writable(out);
    MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (err) ml_usage("--out '%s': cannot write this file: %s", out, strerror(err));

    ml_json *w = ml_json_new();
    ml_json_obj(w, NULL);
    ml_json_str(w, "format", "mpilens-bench");
    ml_json_int(w, "version", 1);
    ml_json_str(w, "family", families[f].name);
    long errors = families[f].fn(w, argc, argv);
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ml_json_env(w, argc, argv);
    ml_json_int(w, "errors", errors);
    ml_json_bool(w, "validated", errors == 0);
    ml_json_end(w);
    if (ml_rank == 0) {
        if (out)
            err = ml_write_file_atomic(out, ml_json_text(w));
        else {
            puts(ml_json_text(w));
            fflush(stdout);
        }
        if (errors && !err)
            fprintf(stderr, "mpilens-bench: %ld data validation error(s): results are not "
                    "trustworthy\n", errors);
    }
    ml_json_free(w);
    MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (err) ml_usage("--out '%s': cannot write this file: %s", out, strerror(err));
    MPI_Finalize();
    return errors ? 1 : 0;
}
