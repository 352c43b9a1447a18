/* mpilens-bench-alltoall --sizes B[,B...] --calls N[,N...] --learn N[,N...] [--chunks K]
 *                        [--race off|F|F1,F2|F0,F1,F2] [--skip NAME[,NAME...]]
 *
 * For each block size B (bytes per destination): N calls of each variant —
 * native PMPI_Alltoall, the eight candidates forced (through the library's
 * MPI_Alltoall as with MPILENS_ALLTOALL=<algorithm>: the same dispatch and
 * private communicator as adaptive; calling them directly was 2-6 % faster at
 * 64-256 B, a handicap the adaptive variants could not win back), adaptive with model
 * pruning and adaptive without (all eight learned), and native again on a
 * communicator of its own (the A/A control: how far two identical variants
 * land apart in this run, the noise floor of every ratio) — run interleaved in K
 * chunks (each chunk runs every variant for N/K calls, in an order shuffled per
 * chunk, the same on every rank: no variant always runs after the same other one,
 * whose wake -- a cache, a CPU's clock -- it would always meet), so a drifting
 * machine affects all variants alike.  Each adaptive variant starts
 * from a fresh communicator (fresh state; MPILENS_ALLTOALL_REUSE off: no choice
 * learned on another communicator is reused; MPILENS_ALLTOALL_SHARE off: it makes
 * its own private duplicate, as the first one of a job) and runs its N calls across the
 * chunks, learning included.  Times are per call, mean over ranks (as in the
 * paper).  Rank 0 prints one JSON document on stdout:
 *   {"nranks":P,"results":[{"bytes":B,"calls":N,"learn":L,"native_s":t,"native_aa_s":t,
 *     "forced_s":{"spread":t,...},
 *     "adaptive":{"model":{"total_s":t,"after_s":t,"algorithm":"...","learning_calls":n,
 *                          "window":{"native_s":t,"forced_s":{"spread":t,...}}},
 *                 "nomodel":{...}}}]}
 * total_s = mean per call over all N calls (learning included); after_s =
 * mean per call over the chunks after the last one with a learning call, and
 * window the other variants' times over the same chunks: after learning,
 * adaptive is compared with the forced algorithms in the same stretch of the
 * run, not with their whole-run times (learning takes the first chunks, and
 * a drifting machine would otherwise bias the comparison).  --race: the
 * adaptive variants' early-elimination factors (as MPILENS_ALLTOALL_RACE).
 * Per result also "chunk_calls" (calls per chunk), "chunk_s" (per variant that
 * ran: native, the forced algorithms, model, nomodel, native_aa: mean per call
 * over the ranks in each chunk) and "last_learning_chunk" (per adaptive
 * variant, -1: none), so that a ratio can be given with its interval over the
 * chunks (mpilens bench alltoall).  --skip: variants not run (forced algorithm
 * names and nomodel; they are left out of forced_s, adaptive and chunk_s), to
 * keep a sweep on a slow network short.
 *
 * MPILENS_NETWORK_MODEL set: the adaptive variants' Grouping predicts from that
 * network model file (`mpilens bench logp --model`) instead of measuring.
 *
 * --progress X: before the timed part, a quick first measurement per size (the probe):
 * on a communicator of its own (the variants' communicators stay fresh), four calls of
 * native and of each of the eight algorithms forced, the last three timed (the first
 * pays the set-up and the first contacts): their median and their fastest, max over
 * ranks (one timed call let a single preempted call on a busy host stand for all: a
 * 21,000 s estimate of a 6 min run).  Rank 0 then sends the expected seconds on stderr,
 * "MLB-ESTIMATE <s> [<low s>]" (low: at the fastest calls, given when the two differ by
 * more than 1.5x), before the timed part: X times this
 * job's (X: the CLI's factor for the whole sweep, its runs and rank counts), where the
 * job's is, per size, N x (native twice + each forced algorithm that runs) plus, per
 * adaptive variant, min(N, 8 L) learning calls at the eight algorithms' mean and the
 * rest at the fastest (an upper bound: the race drops candidates early).  The probe's
 * times and the estimate are in the JSON ("probe").
 *
 * --tune FILE: instead of timing, learn every size with all eight candidates
 * (no model pruning: offline, thoroughness beats cost) on MPI_COMM_WORLD and
 * merge the choices into the tuning file FILE and the learning cache
 * (MPILENS_ALLTOALL_CACHE; what `mpilens tune` runs).  Output: the JSON array
 * of choices, then a line {"cache": path or null}.
 * A bad option: one line "mpilens-bench-alltoall: ..." and exit status 2.
 */
#define _DEFAULT_SOURCE
#include "alltoall.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides.h"

#define NV (ML_A2A_NALG + 4) /* native, 8 forced, adaptive model, nomodel, native again */
#define V_NATIVE 0
#define V_MODEL (ML_A2A_NALG + 1)
#define V_NOMODEL (ML_A2A_NALG + 2)
#define V_NATIVE2 (ML_A2A_NALG + 3) /* A/A control: same call, another communicator */
#define MAXS 64

static int parse_list(const char *s, long *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0)
            return -1;
        if (*end == 'K' || *end == 'k')
            v *= 1024, end++;
        else if (*end == 'M' || *end == 'm')
            v *= 1024 * 1024, end++;
        out[n++] = v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

static const char *vname(int v)
{
    return v == V_NATIVE ? "native" : v == V_MODEL ? "model" : v == V_NOMODEL ? "nomodel"
         : v == V_NATIVE2 ? "native_aa" : ml_a2a_names[v - 1];
}

static void die(int rank, const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "mpilens-bench-alltoall: %s\n", msg);
    MPI_Finalize();
    exit(2);
}

/* order: a permutation of 0..n-1 drawn from seed (Fisher-Yates over splitmix64), the
 * same on every rank for the same seed */
static void chunk_order(int *order, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        int j = (int)(z % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The send and receive buffers of one size (B bytes to each of P ranks), the send
 * buffer filled with a pattern of the rank's own. */
static void a2a_bufs(long B, int P, int rank, char **sb, char **rb)
{
    *sb = malloc((size_t)B * P + 1);
    *rb = malloc((size_t)B * P + 1);
    if (!*sb || !*rb)
        die(rank, "out of memory");
    for (long i = 0; i < B * P; i++)
        (*sb)[i] = (char)(i * 7 + rank);
}

/* --progress X (see the head comment): time the second of two calls of native and
 * of each algorithm forced per size on a communicator of its own (max over ranks),
 * print them and the expected seconds as "probe" (rank 0, stdout) and send
 * "MLB-ESTIMATE <X x expected>" on stderr. */
static void probe(int P, int rank, int ns, const long *sizes, int nc, const long *calls,
                  int nl, const long *learn, int chunks, const int *skip,
                  const double *race, double factor)
{
    enum { NP = ML_A2A_NALG + 1 }; /* native, then the eight algorithms */
    /* t: the median of 3 timed calls after an untimed one; t[ns + k]: their fastest */
    static double t[2 * MAXS][NP];
    MPI_Comm pc;
    PMPI_Comm_dup(MPI_COMM_WORLD, &pc);
    for (int k = 0; k < ns; k++) {
        long B = sizes[k];
        char *sb, *rb;
        a2a_bufs(B, P, rank, &sb, &rb);
        for (int v = 0; v < NP; v++) {
            if (v > 0)
                ml_a2a_set_config(v - 1, (int)learn[nl == 1 ? 0 : k], 0, 1000, 0.5, race);
            PMPI_Barrier(MPI_COMM_WORLD);
            double s3[3];
            for (int i = 0; i < 4; i++) {
                double t0 = PMPI_Wtime();
                if (v == 0)
                    PMPI_Alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, pc);
                else
                    mlo_MPI_Alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, pc);
                if (i) s3[i - 1] = PMPI_Wtime() - t0;
            }
            double lo = s3[0] < s3[1] ? s3[0] : s3[1], hi = s3[0] < s3[1] ? s3[1] : s3[0];
            t[k][v] = s3[2] < lo ? lo : s3[2] > hi ? hi : s3[2];
            t[ns + k][v] = s3[2] < lo ? s3[2] : lo;
        }
        free(sb);
        free(rb);
    }
    PMPI_Comm_free(&pc);
    PMPI_Allreduce(MPI_IN_PLACE, t, 2 * MAXS * NP, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double job = 0, job_lo = 0;
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < ns; k++) {
            const double *tk = t[q * ns + k];
            long N = calls[nc == 1 ? 0 : k], L = learn[nl == 1 ? 0 : k];
            if (N < chunks)
                N = chunks;
            double run = 2 * tk[0], best = tk[1], mean = 0;
            for (int a = 1; a < NP; a++) {
                if (!skip[a])
                    run += tk[a];
                best = tk[a] < best ? tk[a] : best;
                mean += tk[a] / ML_A2A_NALG;
            }
            long lc = 8 * L < N ? 8 * L : N;
            double adaptive = (double)lc * mean + (double)(N - lc) * best;
            *(q ? &job_lo : &job) += (double)N * run + adaptive * (skip[V_NOMODEL] ? 1 : 2);
        }
    if (rank == 0) {
        printf("\"probe\":{\"factor\":%.9g,\"expected_s\":%.9g,\"expected_low_s\":%.9g,"
               "\"native_s\":[", factor, job, job_lo);
        for (int k = 0; k < ns; k++)
            printf("%s%.9g", k ? "," : "", t[k][0]);
        printf("],\"forced_s\":{");
        for (int a = 0; a < ML_A2A_NALG; a++) {
            printf("%s\"%s\":[", a ? "," : "", ml_a2a_names[a]);
            for (int k = 0; k < ns; k++)
                printf("%s%.9g", k ? "," : "", t[k][a + 1]);
            printf("]");
        }
        printf("}},");
        fflush(stdout);
        /* a range when the fastest calls and the typical ones differ (a busy host) */
        if (job > 1.5 * job_lo)
            fprintf(stderr, "MLB-ESTIMATE %.6g %.6g\n", factor * job, factor * job_lo);
        else
            fprintf(stderr, "MLB-ESTIMATE %.6g\n", factor * job);
        fflush(stderr);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long sizes[MAXS], calls[MAXS], learn[MAXS];
    int ns = 0, nc = 0, nl = 0, chunks = 10;
    double progress = 0; /* --progress X: probe and send the expected duration x X */
    const char *tune = NULL;
    int skip[NV] = {0};
    double race[ML_A2A_RACE_POINTS];
    ml_a2a_parse_race(ML_A2A_RACE_DEFAULT, race);
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die(rank, "option without a value (options: --sizes, --calls, --learn, --chunks, --race, --skip, --progress, --tune)");
        if (!strcmp(argv[i], "--sizes"))
            ns = parse_list(v, sizes, MAXS);
        else if (!strcmp(argv[i], "--calls"))
            nc = parse_list(v, calls, MAXS);
        else if (!strcmp(argv[i], "--learn"))
            nl = parse_list(v, learn, MAXS);
        else if (!strcmp(argv[i], "--chunks"))
            chunks = atoi(v);
        else if (!strcmp(argv[i], "--progress")) {
            char *end;
            progress = strtod(v, &end);
            if (*end || !(progress > 0 && progress < 1e6))
                die(rank, "--progress needs a factor in (0, 1e6)");
        }
        else if (!strcmp(argv[i], "--race")) {
            if (ml_a2a_parse_race(v, race))
                die(rank, "--race needs off, a factor F, F1,F2 or F0,F1,F2, each in (1, 1000]");
        } else if (!strcmp(argv[i], "--tune"))
            tune = v;
        else if (!strcmp(argv[i], "--skip")) {
            char list[256];
            snprintf(list, sizeof list, "%s", v);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                int found = 0;
                for (int x = 1; x < NV; x++)
                    if (x != V_MODEL && x != V_NATIVE2 && !strcmp(tok, vname(x)))
                        skip[x] = found = 1;
                if (!found)
                    die(rank, "--skip takes forced algorithm names and nomodel");
            }
        } else
            die(rank, "unknown option (accepted: --sizes, --calls, --learn, --chunks, --race, --skip, --progress, --tune)");
        i++;
    }
    if (ns <= 0 || nc <= 0 || nl <= 0 || chunks < 1)
        die(rank, "--sizes, --calls and --learn need comma lists of non-negative integers "
                  "(suffix K or M allowed), --chunks a positive integer");
    if ((nc != 1 && nc != ns) || (nl != 1 && nl != ns))
        die(rank, "--calls and --learn take one value or one per size");
    for (int k = 0; k < ns; k++)
        if (sizes[k] * (long)P * 2 > 1L << 30)
            die(rank, "size too large: P x size must stay below 512 MiB");

    /* The engine's set-up at MPI_Init, as in the library (the node table; with
     * MPILENS_NETWORK_MODEL, Grouping predicts from that file instead of
     * measuring).  Tuning learns with all eight candidates and no race into
     * the tuning file; timing sets each variant's settings below and never
     * reads a tuning file (every run learns). */
    setenv("MPILENS_ALLTOALL", "adaptive", 1);
    setenv("MPILENS_ALLTOALL_REUSE", "off", 1); /* every variant learns afresh */
    setenv("MPILENS_ALLTOALL_SHARE", "off", 1); /* and pays its own duplicate, as a fresh run */
    if (tune) {
        setenv("MPILENS_ALLTOALL_MODEL", "off", 1);
        setenv("MPILENS_ALLTOALL_RACE", "off", 1);
        setenv("MPILENS_TUNING_FILE", tune, 1);
        setenv("MPILENS_ALLTOALL_PROVISIONAL", "off", 1); /* learn to the end */
        char lbuf[32];
        snprintf(lbuf, sizeof lbuf, "%ld", learn[0]);
        setenv("MPILENS_ALLTOALL_LEARN", lbuf, 1);
    } else {
        setenv("MPILENS_ALLTOALL_MODEL", "on", 1);
        unsetenv("MPILENS_TUNING_FILE");
        setenv("MPILENS_ALLTOALL_CACHE", "off", 1); /* nor the learning cache */
    }
    if (ml_engine_start(&ml_engine_alltoall) != 0) { /* a bad setting or file stops here with one line */
        MPI_Finalize();
        return 2;
    }
    if (tune) {
        for (int k = 0; k < ns; k++) {
            long B = sizes[k];
            char *sb, *rb;
            a2a_bufs(B, P, rank, &sb, &rb);
            long n = 0;
            while (!mpilens_alltoall_choice(MPI_COMM_WORLD, B, NULL) && n++ < 8 * learn[0] + 8)
                mlo_MPI_Alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, MPI_COMM_WORLD);
            const char *a = mpilens_alltoall_choice(MPI_COMM_WORLD, B, NULL);
            if (rank == 0)
                printf("%s{\"bytes\":%ld,\"algorithm\":\"%s\",\"calls\":%ld}", k ? "," : "[", B,
                       a ? a : "none", n);
            free(sb);
            free(rb);
        }
        if (rank == 0) { /* and where the learning cache goes (written at finalize) */
            printf("]\n{\"cache\":");
            const char *cp = ml_a2a_cache_path();
            if (cp) {
                ml_buf_t b = {0};
                ml_buf_json_str(&b, cp);
                printf("%s}\n", b.p);
                ml_buf_free(&b);
            } else
                printf("null}\n");
        }
        ml_engine_alltoall.finalize();
        MPI_Finalize();
        return 0;
    }
    if (rank == 0)
        printf("{\"nranks\":%d,", P);
    if (progress > 0)
        probe(P, rank, ns, sizes, nc, calls, nl, learn, chunks, skip, race, progress);
    if (rank == 0)
        printf("\"results\":[");
    for (int k = 0; k < ns; k++) {
        long B = sizes[k], N = calls[nc == 1 ? 0 : k], L = learn[nl == 1 ? 0 : k];
        if (N < chunks)
            N = chunks;
        char *sb, *rb;
        a2a_bufs(B, P, rank, &sb, &rb);
        MPI_Comm comm[NV];
        for (int v = 0; v < NV; v++)
            PMPI_Comm_dup(MPI_COMM_WORLD, &comm[v]);
        double *tc = calloc((size_t)chunks * NV, sizeof *tc); /* per chunk and variant */
        long *nchunk = calloc((size_t)chunks, sizeof *nchunk);
        int last_learn[2] = {-1, -1}; /* last chunk with a learning call (model, nomodel) */
        if (!tc || !nchunk)
            die(rank, "out of memory");
        long per = N / chunks, done = 0;
        for (int c = 0; c < chunks; c++) {
            long n = c == chunks - 1 ? N - done : per;
            nchunk[c] = n;
            int order[NV];
            chunk_order(order, NV, (uint64_t)k * 1000003u + (uint64_t)c);
            for (int j = 0; j < NV; j++) {
                int v = order[j];
                if (skip[v])
                    continue;
                PMPI_Barrier(MPI_COMM_WORLD);
                if (v == V_MODEL || v == V_NOMODEL)
                    ml_a2a_set_config(ML_A2A_MODE_ADAPTIVE, (int)L, v == V_MODEL, 1000, 0.5, race);
                else if (v != V_NATIVE && v != V_NATIVE2) /* forced, as MPILENS_ALLTOALL=<algorithm> */
                    ml_a2a_set_config(v - 1, (int)L, 0, 1000, 0.5, race);
                for (long i = 0; i < n; i++) {
                    double t0 = PMPI_Wtime();
                    if (v == V_NATIVE || v == V_NATIVE2)
                        PMPI_Alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, comm[v]);
                    else
                        mlo_MPI_Alltoall(sb, (int)B, MPI_BYTE, rb, (int)B, MPI_BYTE, comm[v]);
                    double dt = PMPI_Wtime() - t0;
                    tc[(size_t)c * NV + v] += dt;
                    /* the engine's flag, not a query between calls: in a collective one
                     * rank's work outside the call is its peers' wait inside (asking
                     * mpilens_alltoall_choice before every call, as before, made the
                     * forced and adaptive variants 3-7 % slower than native at 64 B);
                     * agreed: learning ends at the same call on every rank */
                    if ((v == V_MODEL || v == V_NOMODEL) && ml_a2a_last_call_learning())
                        last_learn[v - V_MODEL] = c;
                }
            }
            done += n;
        }
        PMPI_Allreduce(MPI_IN_PLACE, tc, chunks * NV, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double sum[NV] = {0}; /* whole run */
        for (int c = 0; c < chunks; c++)
            for (int v = 0; v < NV; v++)
                sum[v] += tc[(size_t)c * NV + v];
        /* each adaptive variant's after window: the chunks after its last learning
         * call; every variant's mean per call over it (win[a][v]) */
        double win[2][NV], wcalls[2] = {0, 0};
        for (int a = 0; a < 2; a++) {
            for (int v = 0; v < NV; v++)
                win[a][v] = 0;
            for (int c = last_learn[a] + 1; c < chunks; c++) {
                wcalls[a] += (double)nchunk[c];
                for (int v = 0; v < NV; v++)
                    win[a][v] += tc[(size_t)c * NV + v];
            }
            for (int v = 0; v < NV; v++)
                win[a][v] = wcalls[a] > 0 ? win[a][v] / P / wcalls[a] : 0.0;
        }
        const char *alg[2];
        long long lc[2];
        ml_a2a_info info[2];
        for (int a = 0; a < 2; a++) {
            memset(&info[a], 0, sizeof info[a]);
            ml_a2a_state_info(comm[V_MODEL + a], B, &info[a]);
            alg[a] = mpilens_alltoall_choice(comm[V_MODEL + a], B, &lc[a]);
            if (!alg[a])
                alg[a] = "none";
        }
        if (rank == 0) {
            printf("%s{\"bytes\":%ld,\"calls\":%ld,\"learn\":%ld,\"native_s\":%.9g,"
                   "\"native_aa_s\":%.9g,\"forced_s\":{",
                   k ? "," : "", B, N, L, sum[V_NATIVE] / P / N, sum[V_NATIVE2] / P / N);
            for (int a = 0, first = 1; a < ML_A2A_NALG; a++)
                if (!skip[1 + a]) {
                    printf("%s\"%s\":%.9g", first ? "" : ",", ml_a2a_names[a], sum[1 + a] / P / N);
                    first = 0;
                }
            printf("},\"chunk_calls\":[");
            for (int c = 0; c < chunks; c++)
                printf("%s%ld", c ? "," : "", nchunk[c]);
            printf("],\"last_learning_chunk\":{\"model\":%d", last_learn[0]);
            if (!skip[V_NOMODEL])
                printf(",\"nomodel\":%d", last_learn[1]);
            printf("},\"chunk_s\":{");
            for (int v = 0, first = 1; v < NV; v++) {
                if (skip[v])
                    continue;
                printf("%s\"%s\":[", first ? "" : ",", vname(v));
                for (int c = 0; c < chunks; c++)
                    printf("%s%.9g", c ? "," : "", tc[(size_t)c * NV + v] / P / (double)nchunk[c]);
                printf("]");
                first = 0;
            }
            printf("},\"adaptive\":{");
            for (int a = 0; a < 2; a++) {
                int v = V_MODEL + a;
                if (skip[v])
                    continue;
                printf("%s\"%s\":{\"total_s\":%.9g,\"after_s\":%.9g,\"after_calls\":%.0f,"
                       "\"algorithm\":\"%s\",\"learning_calls\":%lld,\"grouping_s\":%.9g,"
                       "\"learning_s\":%.9g,\"window\":{\"native_s\":%.9g,\"forced_s\":{",
                       a ? "," : "", a ? "nomodel" : "model", sum[v] / P / N, win[a][v],
                       wcalls[a], alg[a], lc[a], info[a].grouping_s, info[a].learning_s,
                       win[a][V_NATIVE]);
                for (int b = 0, first = 1; b < ML_A2A_NALG; b++)
                    if (!skip[1 + b]) {
                        printf("%s\"%s\":%.9g", first ? "" : ",", ml_a2a_names[b], win[a][1 + b]);
                        first = 0;
                    }
                printf("}},\"learned_s\":{");
                for (int b = 0, first = 1; b < ML_A2A_NALG; b++)
                    if (info[a].cand_mask & 1 << b) {
                        printf("%s\"%s\":%.9g", first ? "" : ",", ml_a2a_names[b],
                               info[a].mean[b]);
                        first = 0;
                    }
                printf("}}");
            }
            printf("}}");
            fflush(stdout);
        }
        for (int v = 0; v < NV; v++)
            PMPI_Comm_free(&comm[v]);
        free(tc);
        free(nchunk);
        free(sb);
        free(rb);
    }
    if (rank == 0)
        printf("]}\n");
    MPI_Finalize();
    return 0;
}
