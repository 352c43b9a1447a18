/* Regions (MPILENS_REGIONS): MPI calls, time and bytes per named phase of
 * the program (docs/runtime.md, "Regions").
 *
 *   MPI_Pcontrol(1, "label")  / MPI_Pcontrol(-1, "label")   open / close (IPM)
 *   mpilens_region_begin("label") / mpilens_region_end("label")   the same (mpilens.h)
 *   MPI_Pcontrol(0) / MPI_Pcontrol(1) without a label          recording off / on (mpiP)
 *
 * Regions nest; a call belongs to the innermost open region.  The region
 * stack is process-wide (a region opened by one thread covers the calls of
 * all threads).  Per thread, one record per (region, function) in a fixed
 * open-addressing table; a pair that does not fit is counted, never
 * allocated.  At most MPILENS_REGIONS labels: further labels share the
 * record "(other)". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hooks.h"
#include "profile.h"

#define ML_RG_NAME 64
#define ML_RG_STACK 32


/* The regions of this process (the stack is process-wide), under mu. */
static struct {
    struct {
        char name[ML_RG_NAME];
        int parent;             /* region open when this one was first opened (0: none) */
        uint64_t entries;       /* times opened */
        uint64_t ticks;         /* time open (inclusive of nested regions) */
    } *rg;                      /* [R.max + 2]: 1..R.max labels, R.max + 1 "(other)" */
    int nrg;                    /* labels in use */
    int stack[ML_RG_STACK];     /* the open regions, innermost last */
    uint64_t t0[ML_RG_STACK];   /* when each was opened */
    int depth;                  /* open regions (a dump reads it unlocked: atomic) */
    uint64_t unmatched, labels_dropped;
    pthread_mutex_t mu;
    int max;                    /* MPILENS_REGIONS (this file's settings row) */
    volatile int cur;           /* innermost open region (0: none), process-wide: read by the hook unlocked */
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .max = 16};

static int ml_rg_cap(void)
{
    int cap = 256;
    while (cap < 16 * (R.max + 1)) cap <<= 1;
    return cap;
}

static void ml_rg_attach(ml_slot_t *s)
{
    if (!R.max) return;
    s->rg = calloc(1, sizeof *s->rg);
    if (s->rg) s->rg->rec = calloc((size_t)ml_rg_cap(), sizeof(ml_rg_rec_t));
    if (!s->rg || !s->rg->rec) {
        fprintf(stderr, "mpilens: out of memory allocating the region table\n");
        abort();
    }
    s->rg->cap = ml_rg_cap();
}

static size_t ml_rg_bytes(void) { return R.max ? sizeof(ml_rgtab_t) + (size_t)ml_rg_cap() * sizeof(ml_rg_rec_t) : 0; }

/* The label table (process-wide); the per-call hook turns on with the first region opened. */
static int ml_rg_init(void)
{
    if (R.max && !R.rg) {
        R.rg = calloc((size_t)R.max + 2, sizeof *R.rg);
        if (!R.rg) {
            fprintf(stderr, "mpilens: out of memory allocating the region names\n");
            abort();
        }
        snprintf(R.rg[R.max + 1].name, ML_RG_NAME, "(other)");
    }
    return 0;
}

static void ml_rg_upd(ml_rgtab_t *t, int fid, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    uint32_t key = ((uint32_t)R.cur << 16 | (uint32_t)fid) + 1;
    uint32_t mask = (uint32_t)t->cap - 1;
    for (uint32_t i = (key * 0x9E3779B1u) >> 8;; i++) {
        ml_rg_rec_t *r = &t->rec[i & mask];
        if (r->key != key) {
            if (r->key) continue;
            if (t->n >= t->cap * 3 / 4) {
                t->over_calls++;
                return;
            }
            r->key = key;
            t->n++;
        }
        ml_cm_upd(&r->s, tm, dt, bs, br);
        return;
    }
}

/* A call while a region is open (ml_module_call_on; the shared slot's lock is held by the wrapper). */
static void ml_rg_call(ml_slot_t *S, const ml_call_t *c)
{
    if (!S->rg || !R.cur) return;
    ml_rg_upd(S->rg, c->fid, c->tm, c->dt, c->bs, c->br);
}

/* ---- opening and closing (MPI_Pcontrol, mpilens_region_begin/end) ---- */

static int ml_rg_id(const char *label)
{
    for (int i = 1; i <= R.nrg; i++)
        if (strncmp(R.rg[i].name, label, ML_RG_NAME - 1) == 0) return i;
    if (R.nrg < R.max) {
        R.nrg++;
        snprintf(R.rg[R.nrg].name, ML_RG_NAME, "%s", label);
        R.rg[R.nrg].parent = R.cur;
        return R.nrg;
    }
    R.labels_dropped++;
    return R.max + 1;
}

static void ml_rg_begin(const char *label)
{
    if (!R.rg) return;
    uint64_t now = ml_now();
    pthread_mutex_lock(&R.mu);
    int id = ml_rg_id(label);
    if (R.depth < ML_RG_STACK) {
        R.stack[R.depth] = id;
        R.t0[R.depth] = now;
        __atomic_store_n(&R.depth, R.depth + 1, __ATOMIC_RELEASE); /* a dump reads the stack unlocked */
        R.rg[id].entries++;
        ml_hot.hooks_on |= ML_HOOKS_CALL;
        R.cur = id;
        ml_module_call_on(ML_MOD_regions, 1); /* ml_call_end (callend.c) calls ml_rg_call */
    } else {
        R.unmatched++;
    }
    pthread_mutex_unlock(&R.mu);
}

/* Closes the innermost open region of that label (and any left open inside it). */
static void ml_rg_end(const char *label)
{
    if (!R.rg) return;
    uint64_t now = ml_now();
    pthread_mutex_lock(&R.mu);
    int k = R.depth - 1;
    while (k >= 0 && strncmp(R.rg[R.stack[k]].name, label, ML_RG_NAME - 1) != 0 &&
           !(R.stack[k] == R.max + 1 && R.labels_dropped))
        k--;
    if (k < 0) {
        R.unmatched++;
    } else {
        while (R.depth > k) {
            R.depth--;
            R.rg[R.stack[R.depth]].ticks += now - R.t0[R.depth];
        }
        R.cur = R.depth ? R.stack[R.depth - 1] : 0;
        if (!R.depth) ml_module_call_on(ML_MOD_regions, 0);
    }
    pthread_mutex_unlock(&R.mu);
}

/* The label reader's state: ml_peek's way and pipe, under mu (ml_label_ok). */
static struct {
    pthread_mutex_t mu;
    int use_pipe;   /* process_vm_readv is refused here: the pipe */
    int fds[2];
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .fds = {-1, -1}};

/* One byte at p into *out without faulting: process_vm_readv on ourselves, or
 * where that is not allowed (seccomp), write() into a pipe (EFAULT if unreadable). */
static int ml_peek(const char *p, char *out)
{
    if (!P.use_pipe) {
        struct iovec l = {out, 1}, r = {(void *)p, 1};
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1) return 1;
        if (errno != ENOSYS && errno != EPERM) return 0;
        P.use_pipe = 1;
    }
    if (P.fds[0] < 0 && pipe2(P.fds, O_CLOEXEC | O_NONBLOCK) != 0) return 0;
    if (write(P.fds[1], p, 1) != 1) return 0;
    return read(P.fds[0], out, 1) == 1;
}

/* A C string of 1..63 printable characters at p, read without faulting
 * (MPI_Pcontrol's label is optional: with level 1 alone, p is whatever the
 * register held).  Serialised: the pipe of ml_peek is shared (P.mu). */
static int ml_label_ok(const char *p, char *out)
{
    if (!p) return 0;
    char buf[ML_RG_NAME];
    size_t n = 0; /* byte by byte: the string may end just before an unmapped page */
    int ok = 1;
    pthread_mutex_lock(&P.mu);
    while (n < sizeof buf) {
        if (!ml_peek(p + n, buf + n) || (buf[n] && ((unsigned char)buf[n] < 0x20 || (unsigned char)buf[n] > 0x7e))) {
            ok = 0;
            break;
        }
        if (!buf[n]) break;
        n++;
    }
    pthread_mutex_unlock(&P.mu);
    if (!ok || n == 0 || n >= sizeof buf) return 0;
    memcpy(out, buf, n + 1);
    return 1;
}

int ml_pcontrol(int level, const char *label)
{
    char name[ML_RG_NAME];
    if ((level == 1 || level == -1) && ml_label_ok(label, name)) {
        if (level == 1) ml_rg_begin(name);
        else ml_rg_end(name);
        return 1;
    }
    if (level == 0 && ml_hot.active) { /* mpiP: recording off */
        ml_paused = 1;
        ml_ever_paused = 1;
        ml_hot.active = 0;
    } else if (level == 1 && ml_paused) {
        ml_paused = 0;
        ml_hot.active = 1;
    }
    return 0;
}

__attribute__((visibility("default"))) void mpilens_region_begin(const char *label)
{
    if (label && *label) ml_rg_begin(label);
}
__attribute__((visibility("default"))) void mpilens_region_end(const char *label)
{
    if (label && *label) ml_rg_end(label);
}

/* Fortran: call mpilens_region_begin('label') (hidden length argument). */
static void ml_rg_fortran(const char *s, size_t len, int begin)
{
    char name[ML_RG_NAME];
    while (len && s[len - 1] == ' ') len--;
    if (!len) return;
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, s, len);
    name[len] = 0;
    if (begin) ml_rg_begin(name);
    else ml_rg_end(name);
}
__attribute__((visibility("default"))) void mpilens_region_begin_(const char *s, size_t len) { ml_rg_fortran(s, len, 1); }
__attribute__((visibility("default"))) void mpilens_region_end_(const char *s, size_t len) { ml_rg_fortran(s, len, 0); }

/* ---- the rank line ---- */

static void ml_rg_rank_json(ml_buf_t *b)
{
    if (!R.rg || !R.nrg) return;
    uint64_t now = ml_t_final && !ml_in_dump ? ml_t_final : ml_now();
    /* The regions open now count until now.  At MPI_Finalize they are closed
     * (they count until then); a dump (ml_in_dump) runs while the program goes
     * on: it counts them from a copy of the stack and leaves the stack as is. */
    int stack[ML_RG_STACK], depth;
    uint64_t t0[ML_RG_STACK];
    if (ml_in_dump) {
        depth = __atomic_load_n(&R.depth, __ATOMIC_ACQUIRE);
        if (depth < 0) depth = 0;
        if (depth > ML_RG_STACK) depth = ML_RG_STACK;
        for (int k = 0; k < depth; k++) {
            stack[k] = R.stack[k];
            t0[k] = R.t0[k];
        }
    } else {
        for (int k = R.depth - 1; k >= 0; k--) R.rg[R.stack[k]].ticks += now - R.t0[k];
        R.depth = 0;
        R.cur = 0;
        ml_module_call_on(ML_MOD_regions, 0);
        depth = 0;
    }
    uint64_t dropped = 0;
    ml_buf_printf(b, ",\"regions\":[");
    int firstr = 1;
    for (int id = 1; id <= R.max + 1; id++) {
        if (!R.rg[id].entries) continue;
        ml_buf_printf(b, "%s{\"name\":", firstr ? "" : ",");
        firstr = 0;
        ml_buf_json_str(b, R.rg[id].name);
        ml_buf_printf(b, ",\"parent\":");
        if (R.rg[id].parent) ml_buf_json_str(b, R.rg[R.rg[id].parent].name);
        else ml_buf_printf(b, "null");
        uint64_t ticks = R.rg[id].ticks;
        for (int k = 0; k < depth; k++)
            if (stack[k] == id && now > t0[k]) ticks += now - t0[k];
        ml_buf_printf(b, ",\"entries\":%llu,\"wall_s\":%.8g,\"functions\":{", (unsigned long long)R.rg[id].entries,
                      ml_ticks_to_s(ticks));
        int firstf = 1;
        for (int fid = 1; fid < ML_NFUNC; fid++) {
            uint32_t key = ((uint32_t)id << 16 | (uint32_t)fid) + 1;
            ml_timing_t tt = {0};
            uint64_t bs = 0, br = 0;
            ML_FOR_EACH_SLOT(s) {
                ml_rgtab_t *t = s->rg;
                if (!t) continue;
                uint32_t mask = (uint32_t)t->cap - 1;
                for (uint32_t i = (key * 0x9E3779B1u) >> 8;; i++) {
                    ml_rg_rec_t *r = &t->rec[i & mask];
                    if (!r->key) break;
                    if (r->key != key) continue;
                    ml_timing_sum(&tt, &r->s.t);
                    bs += r->s.bytes_s;
                    br += r->s.bytes_r;
                    break;
                }
            }
            if (!tt.calls) continue;
            ml_buf_printf(b, "%s\"%s\":{\"calls\":%llu,\"time_s\":%.8g,\"bytes_sent\":%llu,\"bytes_recv\":%llu}",
                          firstf ? "" : ",", ml_func_name[fid], (unsigned long long)tt.calls,
                          ml_est_s(&tt), (unsigned long long)bs,
                          (unsigned long long)br);
            firstf = 0;
        }
        ml_buf_printf(b, "}}");
    }
    ML_FOR_EACH_SLOT(s)
        if (s->rg) dropped += s->rg->over_calls;
    ml_buf_printf(b, "],\"regions_dropped\":{\"labels\":%llu,\"calls\":%llu,\"unmatched\":%llu}",
                  (unsigned long long)R.labels_dropped, (unsigned long long)dropped,
                  (unsigned long long)R.unmatched);
}

/* ---- the module (modules_list.h) ---- */

static const ml_setting ml_rg_settings[] = {
    {.key = "regions", .type = ML_SET_INT, .def = "16", .lo = 0, .hi = 1024, .out = &R.max,
     .accepted = "an integer from 0 to 1024",
     .help = "region labels kept (MPI_Pcontrol(1, \"label\") / MPI_Pcontrol(-1, \"label\"), "
             "mpilens_region_begin/end); further labels share one record \"(other)\"; 0: regions ignored"},
    {0}};

static void ml_rg_header_json(ml_buf_t *b) { ml_buf_printf(b, ",\"regions_max\":%d", R.max); }

/* Per call: ml_rg_call, out of line (ml_call_end, callend.c), while a region is open. */
const ml_module_t ml_module_regions = {
    .name = "regions",
    .settings = ml_rg_settings,
    .init = ml_rg_init,
    .attach = ml_rg_attach,
    .bytes = ml_rg_bytes,
    .call = ml_rg_call,
    .header_json = ml_rg_header_json,
    .rank_json = ml_rg_rank_json,
};
