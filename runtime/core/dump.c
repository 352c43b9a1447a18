/* A rank's partial profile (docs/flight-recorder.md): <dir>/rank-N, two JSON
 * lines, written by the flight recorder (flight.c) without any MPI call:
 *
 *   1. the partial header: why and when, and what each thread is inside now
 *      (function, communicator, peer or root in MPI_COMM_WORLD, tag, bytes,
 *      time in the call), the outstanding non-blocking requests (req.c);
 *   2. the rank's records so far, in the profile's rank-line format
 *      (profile_format.c).
 *
 * Written to a temporary name and renamed: a reader sees the last complete
 * dump (the one before is kept as rank-N.prev, to tell a stuck rank from a
 * slow one, and the rank's first hang dump as rank-N.hang: a later dump never
 * erases the evidence of a hang).  The buffers are made at start, so a dump
 * normally allocates nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flight.h"
#include "profile.h"

#define ML_DUMP_FORMAT "mpilens-partial"
#define ML_DUMP_VERSION 1
#define ML_DUMP_MAX_REQUESTS 256 /* requests listed per dump (all are counted) */
#define ML_DUMP_MAX_WAITS 64     /* requests listed per completion call */


/* The dump's state (one per process; dumps run one at a time, flight.c). */
static struct {
    ml_slot_t m;                 /* this rank's records merged (peers allocated at start) */
    ml_buf_t b;                  /* the text */
    char host[256], job[128], cmd[2048], lib[256];
    char head[1 << 15];          /* ml_dump_is_mine's first line of a file */
    int seq;                     /* dumps written */
    int hang_kept;               /* rank-N.hang written */
} DM;

static const char *const ml_reason[] = {"signal", "time_limit", "hang", "abort", "crash"};
static const char *const ml_kind[] = {"other", "send", "recv", "sendrecv", "coll", "wait"};

void ml_dump_prepare(const char *job)
{
    DM.m.peers = calloc((size_t)ml_world_size, sizeof(ml_peer_t));
    size_t cap = (1u << 18) + (size_t)ml_world_size * 96;
    DM.b.p = malloc(cap);
    if (!DM.m.peers || !DM.b.p) {
        fprintf(stderr, "mpilens: out of memory preparing the flight recorder\n");
        abort();
    }
    DM.b.cap = cap;
    DM.b.n = 0;
    DM.b.p[0] = 0;
    gethostname(DM.host, sizeof DM.host - 1);
    snprintf(DM.job, sizeof DM.job, "%s", job);
    FILE *cf = fopen("/proc/self/cmdline", "r");
    if (cf) {
        size_t k = fread(DM.cmd, 1, sizeof DM.cmd - 1, cf);
        fclose(cf);
        for (size_t i = 0; i + 1 < k; i++) if (!DM.cmd[i]) DM.cmd[i] = ' ';
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    PMPI_Get_library_version(lib, &len);
    snprintf(DM.lib, sizeof DM.lib, "%.*s", (int)strcspn(lib, "\n"), lib);
}

/* world rank or one of ML_FL_* as JSON */
static void ml_put_peer(ml_buf_t *b, const char *key, int p)
{
    ml_buf_printf(b, ",\"%s\":", key);
    if (p >= 0) ml_buf_printf(b, "%d", p);
    else ml_buf_printf(b, "%s", p == ML_FL_ANY ? "\"any\"" : p == ML_FL_PROCNULL ? "\"proc_null\""
                                 : p == ML_FL_UNKNOWN ? "\"unknown\"" : "null");
}

/* "world", {"size": n, "ranks": [world ranks]}, "unknown" (not seen by the profiler yet) or null */
static void ml_put_comm(ml_buf_t *b, MPI_Comm c)
{
    int n = 0;
    const int *w = NULL;
    ml_buf_printf(b, ",\"comm\":");
    if (c == MPI_COMM_WORLD) ml_buf_printf(b, "\"world\"");
    else if (c == MPI_COMM_NULL) ml_buf_printf(b, "null");
    else if (ml_comm_members(c, &n, &w)) {
        ml_buf_printf(b, "{\"size\":%d,\"ranks\":[", n);
        for (int i = 0; i < n; i++) ml_buf_printf(b, "%s%d", i ? "," : "", w[i]);
        ml_buf_printf(b, "]}");
    } else ml_buf_printf(b, "\"unknown\"");
}

static double ml_since(uint64_t now, uint64_t t0) { return now > t0 ? ml_ticks_to_s(now - t0) : 0.0; }

static void ml_put_request(ml_buf_t *b, const ml_req_view_t *v, uint64_t now)
{
    const char *kind = (v->flags & ML_RQ_RECV) ? "recv" : (v->flags & ML_RQ_COLL) ? "coll" : "send";
    ml_buf_printf(b, "{\"function\":\"%s\",\"kind\":\"%s\",\"persistent\":%s", ml_func_name[v->fid], kind,
                  (v->flags & ML_RQ_PERSIST) ? "true" : "false");
    ml_put_comm(b, v->comm);
    ml_put_peer(b, (v->flags & ML_RQ_RECV) ? "source" : (v->flags & ML_RQ_COLL) ? "root" : "dest", v->peer);
    ml_buf_printf(b, ",\"tag\":%d,\"bytes\":%lld,\"since_s\":%.6f}", v->tag, (long long)v->bytes,
                  ml_since(now, v->t0));
}

/* A consistent copy of a thread's in-flight state: 1 if it is inside a call, else 0
 * (out->fid then names its last call, 0 if none). */
static int ml_snap(const ml_slot_t *s, ml_fl_t *out)
{
    out->fid = 0;
    for (int tries = 0; tries < 4; tries++) {
        uint64_t a = __atomic_load_n(&s->fl.seq, __ATOMIC_ACQUIRE);
        if (!(a & 1)) {
            int fid = s->fl.fid;
            out->fid = a && fid > 0 && fid < ML_NFUNC ? fid : 0;
            return 0;
        }
        memcpy(out, (const void *)&s->fl, sizeof *out);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&s->fl.seq, __ATOMIC_ACQUIRE) == a) return 1;
    }
    return 0;
}

/* A collective's place in its communicator's order on this rank: the calling thread's
 * count (this call included) plus the other threads' (MPI orders a communicator's
 * collectives across threads); null if not counted. */
static void ml_put_coll_seq(ml_buf_t *b, const ml_slot_t *s, const ml_fl_t *f)
{
    /* not counted while recording was off (MPI_Pcontrol(0)): the place is unknown */
    int id = f->cseq && !ml_ever_paused && f->comm != MPI_COMM_NULL ? ml_cm_find(f->comm) : ml_hot.cm_max;
    if (id < 0 || id >= ml_hot.cm_max) {
        ml_buf_printf(b, ",\"coll_seq\":null");
        return;
    }
    uint64_t n = f->cseq;
    for (const ml_slot_t *t = ml_first_slot(); t; t = t->next)
        if (t != s && t->cm) n += __atomic_load_n(&t->cm[id].colls, __ATOMIC_RELAXED);
    ml_buf_printf(b, ",\"coll_seq\":%llu", (unsigned long long)n);
}

/* This rank's collectives on MPI_COMM_WORLD so far (entered, the current ones included), -1 if not counted */
static long long ml_world_colls(void)
{
    if (!ml_hot.cm_max || ml_ever_paused) return -1;
    uint64_t n = 0;
    for (const ml_slot_t *t = ml_first_slot(); t; t = t->next)
        if (t->cm) n += __atomic_load_n(&t->cm[0].colls, __ATOMIC_RELAXED);
    return (long long)n;
}

/* This rank's last (at most 8) collectives on MPI_COMM_WORLD, each its place and
 * operation, read from the ring of the one thread that made them (none written with
 * several such threads, or while not counted): what a rank that went on had made,
 * so a mismatch can be proven by the operation at one place. */
static void ml_put_world_ops(ml_buf_t *b)
{
    const ml_slot_t *one = NULL;
    int threads = 0;
    if (ml_hot.cm_max && !ml_ever_paused)
        for (const ml_slot_t *t = ml_first_slot(); t; t = t->next)
            if (t->cm && __atomic_load_n(&t->cm[0].colls, __ATOMIC_RELAXED)) {
                one = t;
                threads++;
            }
    ml_buf_printf(b, ",\"world_ops\":[");
    if (threads == 1) {
        uint64_t n = __atomic_load_n(&one->cm[0].colls, __ATOMIC_ACQUIRE), k0 = n > 8 ? n - 7 : 1;
        uint64_t v[8];
        for (uint64_t k = k0; k <= n; k++) v[k - k0] = __atomic_load_n(&one->wcoll[k & 7], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint64_t n2 = __atomic_load_n(&one->cm[0].colls, __ATOMIC_RELAXED);
        int first = 1;
        for (uint64_t k = k0; k <= n; k++) {
            if (k + 8 <= n2) continue; /* overwritten meanwhile */
            int fid = (int)(uint32_t)v[k - k0], root = (int)(uint32_t)(v[k - k0] >> 32);
            if (fid <= 0 || fid >= ML_NFUNC) continue;
            ml_buf_printf(b, "%s{\"coll_seq\":%llu,\"function\":\"%s\"", first ? "" : ",",
                          (unsigned long long)k, ml_func_name[fid]);
            ml_put_peer(b, "root", root);
            ml_buf_printf(b, "}");
            first = 0;
        }
    }
    ml_buf_printf(b, "]");
}

static void ml_put_call(ml_buf_t *b, const ml_slot_t *s, const ml_fl_t *f, uint64_t now)
{
    ml_buf_printf(b, "{\"function\":\"%s\",\"kind\":\"%s\"", ml_func_name[f->fid], ml_kind[f->kind]);
    ml_put_comm(b, f->comm);
    switch (f->kind) {
    case ML_FL_SEND: ml_put_peer(b, "dest", f->peer); break;
    case ML_FL_RECV: ml_put_peer(b, "source", f->peer); break;
    case ML_FL_SENDRECV:
        ml_put_peer(b, "dest", f->peer);
        ml_put_peer(b, "source", f->peer2);
        ml_buf_printf(b, ",\"recv_tag\":%d", f->tag2);
        break;
    case ML_FL_COLL:
        ml_put_peer(b, "root", f->peer);
        ml_put_coll_seq(b, s, f);
        break;
    default: break;
    }
    /* a call of kind other or wait has no tag or bytes (flight.h, ml_fl_set: not written) */
    int other = f->kind == ML_FL_OTHER || f->kind == ML_FL_WAIT;
    ml_buf_printf(b, ",\"tag\":%d,\"bytes\":%lld,\"since_s\":%.6f", other ? -1 : f->tag,
                  other ? 0LL : (long long)f->bytes, ml_since(now, f->t0));
    if (f->kind == ML_FL_WAIT) {
        ml_buf_printf(b, ",\"requests\":%d,\"waits_on\":[", f->nrq);
        int first = 1;
        for (int i = 0; f->rq && i < f->nrq && i < ML_DUMP_MAX_WAITS; i++) {
            ml_req_view_t v;
            if (f->rq[i] == MPI_REQUEST_NULL || !ml_req_lookup(s, f->rq[i], &v)) continue;
            ml_buf_printf(b, first ? "" : ",");
            ml_put_request(b, &v, now);
            first = 0;
        }
        ml_buf_printf(b, "]");
    }
    ml_buf_printf(b, "}");
}

static void ml_dump_header(ml_buf_t *b, int reason, int sig, int code, uint64_t now)
{
    char iso[32];
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    ml_buf_printf(b, "{\"format\":\"%s\",\"version\":%d,\"rank\":%d,\"nranks\":%d,\"reason\":\"%s\",\"signal\":",
                  ML_DUMP_FORMAT, ML_DUMP_VERSION, ml_world_rank, ml_world_size, ml_reason[reason]);
    if (sig) ml_buf_printf(b, "\"SIG%s\"", ml_fl_signal_name(sig));
    else ml_buf_printf(b, "null");
    ml_buf_printf(b, ",\"errorcode\":");
    if (reason == ML_DUMP_ABORT) ml_buf_printf(b, "%d", code);
    else ml_buf_printf(b, "null");
    struct timespec wall, cpu;
    clock_gettime(CLOCK_REALTIME, &wall);
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) != 0) cpu.tv_sec = cpu.tv_nsec = 0;
    ml_buf_printf(b, ",\"dump\":%d,\"created\":\"%s\",\"elapsed_s\":%.6f,\"time\":%.3f,\"cpu_s\":%.6f", ++DM.seq,
                  iso, ml_since(now, ml_t_init), (double)wall.tv_sec + wall.tv_nsec * 1e-9,
                  (double)cpu.tv_sec + cpu.tv_nsec * 1e-9);
    ml_buf_printf(b, ",\"stopped\":[");
    int ns = ml_fl_stops_n < ML_FL_STOPS ? ml_fl_stops_n : ML_FL_STOPS;
    for (int k = 0; k < ns; k++) { /* the last ones, oldest first */
        const ml_fl_stop_t *st = &ml_fl_stops[(ml_fl_stops_n - ns + k) % ML_FL_STOPS];
        ml_buf_printf(b, "%s{\"from\":%.3f,\"for_s\":%.3f,\"cpu_s\":%.3f}", k ? "," : "", st->from, st->for_s,
                      st->cpu_s);
    }
    ml_buf_printf(b, "],\"job_id\":");
    ml_buf_json_str(b, DM.job);
    ml_buf_printf(b, ",\"command\":");
    ml_buf_json_str(b, DM.cmd);
    ml_buf_printf(b, ",\"host\":");
    ml_buf_json_str(b, DM.host);
    ml_buf_printf(b, ",\"pid\":%d,\"mpi_library\":", (int)getpid());
    ml_buf_json_str(b, DM.lib);
    long long wc = ml_world_colls();
    ml_buf_printf(b, ",\"hang_after_s\":%.6g,\"world_collectives\":", ml_fl_cfg.hang_after);
    if (wc >= 0) ml_buf_printf(b, "%lld", wc);
    else ml_buf_printf(b, "null");
    ml_put_world_ops(b);
    ml_buf_printf(b, ",\"threads\":[");
    int i = 0, live = 0, shown = 0;
    for (const ml_slot_t *s = ml_first_slot(); s; s = s->next, i++) {
        ml_fl_t f;
        ml_buf_printf(b, "%s{\"thread\":%d,\"call\":", i ? "," : "", i);
        if (ml_snap(s, &f)) ml_put_call(b, s, &f, now);
        else if (f.fid) ml_buf_printf(b, "null,\"last_call\":\"%s\"", ml_func_name[f.fid]);
        else ml_buf_printf(b, "null");
        ml_buf_printf(b, "}");
    }
    ml_buf_printf(b, "],\"requests\":[");
    for (const ml_slot_t *s = ml_first_slot(); s; s = s->next) {
        for (int k = 0; k < s->rq_cap; k++) {
            ml_req_view_t v;
            if (!ml_req_at(s, k, &v)) continue;
            live++;
            if (shown == ML_DUMP_MAX_REQUESTS) continue;
            ml_buf_printf(b, shown++ ? "," : "");
            ml_put_request(b, &v, now);
        }
    }
    uint64_t untracked = 0;
    for (const ml_slot_t *s = ml_first_slot(); s; s = s->next) untracked += s->untracked;
    ml_buf_printf(b, "],\"requests_live\":%d,\"untracked_requests\":%llu}\n", live, (unsigned long long)untracked);
}

static int ml_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* 1 if path is a dump (or its temporary) of this very process: its header names this
 * job id and this pid (another job with the same MPILENS_OUTPUT keeps its files). */
int ml_dump_is_mine(const char *path)
{
    char *head = DM.head;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO: no wait */
    if (fd < 0) return 0;
    struct stat st; /* only a regular file is ever removed as ours */
    ssize_t k = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof DM.head - 1) : 0;
    close(fd);
    if (k <= 0) return 0;
    head[k] = 0;
    char *nl = strchr(head, '\n');
    if (nl) *nl = 0;
    char want[64];
    snprintf(want, sizeof want, ",\"pid\":%d,", (int)getpid());
    if (!strstr(head, want)) return 0;
    ml_buf_t jb = {0}; /* (at MPI_Finalize: allocating is fine) */
    ml_buf_printf(&jb, "\"job_id\":");
    ml_buf_json_str(&jb, DM.job);
    int mine = jb.p && strstr(head, jb.p) != NULL;
    ml_buf_free(&jb);
    return mine;
}

int ml_dump_write(const char *dir, int reason, int sig, int code)
{
    uint64_t now = ml_now();
    ml_buf_t *b = &DM.b;
    b->n = 0;
    if (b->p) b->p[0] = 0;
    ml_dump_header(b, reason, sig, code, now);
    ml_profile_t prof;
    memset(&prof, 0, sizeof prof);
    ml_merge_into(&DM.m);
    prof.m = &DM.m;
    prof.wall = ml_since(now, ml_t_init);
    prof.mpi = ml_mpi_time(&DM.m);
    snprintf(prof.host, sizeof prof.host, "%s", DM.host);
    ml_in_dump = 1; /* the rank line's hooks only read (hooks.h) */
    ml_profile_rank_line(b, &prof);
    ml_in_dump = 0;

    char tmp[4600], fin[4600], ptmp[4600], prev[4600], htmp[4600], hang[4600];
    snprintf(tmp, sizeof tmp, "%s/.rank-%d.tmp", dir, ml_world_rank);
    snprintf(fin, sizeof fin, "%s/rank-%d", dir, ml_world_rank);
    snprintf(ptmp, sizeof ptmp, "%s/.rank-%d.prev.tmp", dir, ml_world_rank);
    snprintf(prev, sizeof prev, "%s/rank-%d.prev", dir, ml_world_rank);
    snprintf(htmp, sizeof htmp, "%s/.rank-%d.hang.tmp", dir, ml_world_rank);
    snprintf(hang, sizeof hang, "%s/rank-%d.hang", dir, ml_world_rank);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st; /* a symbolic link (or a file) at the partial path is not followed */
    if (lstat(dir, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return -1;
    int bad = ml_write_all(fd, b->p, b->n);
    if (!bad && fsync(fd) != 0) bad = -1; /* on disk before it takes the name */
    if (close(fd) != 0) bad = -1;
    if (bad) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    unlink(ptmp); /* keep the dump before as rank-N.prev; rank-N is never missing */
    if (link(fin, ptmp) == 0) rename(ptmp, prev);
    int rc = rename(tmp, fin);
    if (rc == 0 && reason == ML_DUMP_HANG && !DM.hang_kept) { /* the first hang dump, kept for good */
        unlink(htmp);
        if (link(fin, htmp) == 0 && rename(htmp, hang) == 0) DM.hang_kept = 1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the new name on disk too */
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return rc;
}
