/* Late arrival per collective (late.h, docs/runtime.md "Late arrival"). */
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "late.h"
#include "profile.h" /* ml_fin_wait */

uint64_t ml_la_mask = 0;
ML_TLS uint64_t ml_la_t0 = 0;

/* the sample: coll_seq, function and ticks inside the call of each sampled call */
static uint64_t la_seq[ML_LA_CAP], la_ticks[ML_LA_CAP];
static int la_fid[ML_LA_CAP];
static int la_n;                  /* complete samples held */
static ml_slot_t *la_owner;       /* the thread whose collectives are sampled */
static int la_multi;              /* another thread called a collective on MPI_COMM_WORLD */
static signed char la_sync[ML_NFUNC]; /* 0 unknown, 1 synchronising, -1 not */

/* result (ml_la_reduce) */
static int la_done;               /* 0: not reduced (a dump); 1: counts; -1: unavailable */
static const char *la_why = "";
static int la_sampled, la_last, la_clear, la_last_clear;
static double la_gap_s, la_thr_s;

/* A call's last arrival stands out when the next least-waiting rank waited more than
 * ML_LA_CLEAR x the median least time longer: less than that is within the algorithm's
 * own skew (ranks leave a collective at different steps: in Open MPI's Allreduce on 3
 * balanced ranks, rank 1 waited least in 13-18 of 20 calls, by 2-13 us, calls of 15-100 us) */
#define ML_LA_CLEAR 10.0

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The collectives where every rank waits for the last one to arrive (each rank's
 * result needs every rank's data): the one that waits least arrived last.  Rooted
 * collectives and scans are left out (their ranks leave at different steps), as are
 * non-blocking ones (the time inside the starting call is not a wait). */
static int la_is_sync(int fid)
{
    if (la_sync[fid]) return la_sync[fid] > 0;
    static const char *const names[] = {"MPI_Barrier", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv",
                                        "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Reduce_scatter",
                                        "MPI_Reduce_scatter_block", NULL};
    int yes = 0;
    for (int i = 0; names[i] && !yes; i++) yes = strcmp(ml_func_name[fid], names[i]) == 0;
    la_sync[fid] = yes ? 1 : -1; /* the same value from any thread */
    return yes;
}

void ml_la_enter(uint64_t cseq, int fid)
{
    if (fid <= 0 || fid >= ML_NFUNC || !la_is_sync(fid) || la_multi) return;
    ml_slot_t *me = ml_thr.slot;
    if (la_owner != me) {
        ml_slot_t *none = NULL;
        if (!__atomic_compare_exchange_n(&la_owner, &none, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            /* several threads: their own counts of collectives are not the communicator's order */
            la_multi = 1;
            return;
        }
    }
    if (la_n == ML_LA_CAP) { /* full: keep every other sampled call, sample half as often */
        uint64_t keep = ml_la_mask + 1; /* the bit that must be 0 from now on */
        int k = 0;
        for (int i = 0; i < la_n; i++)
            if (!(la_seq[i] & keep)) {
                la_seq[k] = la_seq[i];
                la_fid[k] = la_fid[i];
                la_ticks[k++] = la_ticks[i];
            }
        la_n = k;
        ml_la_mask = ml_la_mask << 1 | 1;
        if (cseq & ml_la_mask) return;
    }
    la_seq[la_n] = cseq;
    la_fid[la_n] = fid;
    uint64_t t = ml_now();
    ml_la_t0 = t ? t : 1;
}

void ml_la_exit(void)
{
    uint64_t t = ml_now();
    la_ticks[la_n] = t > ml_la_t0 ? t - ml_la_t0 : 0;
    la_n++;
    ml_la_t0 = 0;
}

/* per sampled call: the least time inside it, the rank that had it (the lowest on a
 * tie) and the next least time */
typedef struct {
    double t1, t2;
    int r1, pad;
} la_elem_t;

static void la_combine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const la_elem_t *a = in;
    la_elem_t *b = inout;
    for (int i = 0; i < *len; i++) {
        la_elem_t x = a[i], y = b[i];
        if (x.t1 < y.t1 || (x.t1 == y.t1 && x.r1 < y.r1)) {
            b[i].t1 = x.t1;
            b[i].r1 = x.r1;
            b[i].t2 = x.t2 < y.t1 ? x.t2 : y.t1;
        } else {
            b[i].t2 = y.t2 < x.t1 ? y.t2 : x.t1;
        }
    }
}

static uint64_t la_hash(void)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the sampled calls' places and functions */
    for (int i = 0; i < la_n; i++) {
        h = (h ^ la_seq[i]) * 1099511628211ull;
        h = (h ^ (uint64_t)la_fid[i]) * 1099511628211ull;
    }
    return h;
}

void ml_la_reduce(void)
{
    la_done = -1;
    if (ml_world_size < 2) {
        la_why = "one rank";
        return;
    }
    /* every rank must have sampled the same calls: the same count, places and functions */
    long long v[8] = {la_multi, ml_ever_paused, la_n, (long long)(la_hash() >> 1), 0, 0, -(long long)la_n,
                      -(long long)(la_hash() >> 1)};
    long long m[8];
    /* non-blocking and waited for by ml_fin_wait, as the profiler's other end-of-run
     * collectives: a blocking one polls, and with more ranks than cores the polling ranks
     * took the time slices the others needed (docs/scale.md, 256 ranks) */
    MPI_Request req;
    if (PMPI_Iallreduce(v, m, 8, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD, &req) == MPI_SUCCESS)
        ml_fin_wait(&req);
    else {
        la_why = "the reduction failed";
        return;
    }
    if (m[0]) {
        la_why = "several threads called collectives on MPI_COMM_WORLD";
        return;
    }
    if (m[1]) {
        la_why = "recording was paused (MPI_Pcontrol(0)): the calls' places are not known";
        return;
    }
    if (m[2] != -m[6] || m[3] != -m[7]) {
        la_why = "the ranks sampled different calls (MPILENS_COMMS=0 on some ranks?)";
        return;
    }
    if (!ml_hot.cm_max) { /* the same on every rank here (their counts agreed) */
        la_why = "MPILENS_COMMS=0: the collectives' places are not counted";
        return;
    }
    la_done = 1;
    if (!la_n) return;
    la_elem_t *e = malloc((size_t)la_n * sizeof *e);
    MPI_Datatype type;
    MPI_Op op;
    if (!e) {
        la_done = -1;
        la_why = "out of memory";
        return;
    }
    for (int i = 0; i < la_n; i++)
        e[i] = (la_elem_t){.t1 = ml_ticks_to_s(la_ticks[i]), .t2 = 1e300, .r1 = ml_world_rank, .pad = 0};
    int ok = PMPI_Type_contiguous((int)sizeof *e, MPI_BYTE, &type) == MPI_SUCCESS;
    ok = ok && PMPI_Type_commit(&type) == MPI_SUCCESS;
    ok = ok && PMPI_Op_create(la_combine, 1, &op) == MPI_SUCCESS;
    ok = ok && PMPI_Iallreduce(MPI_IN_PLACE, e, la_n, type, op, MPI_COMM_WORLD, &req) == MPI_SUCCESS;
    if (ok) ml_fin_wait(&req);
    double *t1 = ok ? malloc((size_t)la_n * sizeof *t1) : NULL;
    if (ok && t1) {
        la_sampled = la_n;
        for (int i = 0; i < la_n; i++)
            t1[i] = e[i].t1;
        qsort(t1, (size_t)la_n, sizeof *t1, cmp_double);
        double med = la_n % 2 ? t1[la_n / 2] : (t1[la_n / 2 - 1] + t1[la_n / 2]) / 2;
        la_thr_s = ML_LA_CLEAR * med;
        for (int i = 0; i < la_n; i++) {
            double gap = e[i].t2 - e[i].t1;
            int clear = gap > la_thr_s;
            la_clear += clear;
            if (e[i].r1 == ml_world_rank) {
                la_last++;
                la_last_clear += clear;
                if (clear) la_gap_s += gap;
            }
        }
        PMPI_Op_free(&op);
        PMPI_Type_free(&type);
    } else {
        la_done = -1;
        la_why = ok ? "out of memory" : "the reduction failed";
    }
    free(t1);
    free(e);
}

/* ,"late_arrival":{"sampled":N,"every":K,"clear":M,"threshold_s":T,"last":C,"last_clear":D,"gap_s":G}
 * or {"sampled":0,"why":"..."} */
void ml_la_rank_json(ml_buf_t *b)
{
    if (!la_done) return;
    if (la_done < 0) {
        ml_buf_printf(b, ",\"late_arrival\":{\"sampled\":0,\"why\":");
        ml_buf_json_str(b, la_why);
        ml_buf_printf(b, "}");
        return;
    }
    ml_buf_printf(b, ",\"late_arrival\":{\"sampled\":%d,\"every\":%llu,\"clear\":%d,\"threshold_s\":%.5g,"
                  "\"last\":%d,\"last_clear\":%d,\"gap_s\":%.8g}",
                  la_sampled, (unsigned long long)(ml_la_mask + 1), la_clear, la_thr_s, la_last, la_last_clear,
                  la_gap_s);
}
