/* The flight recorder (docs/flight-recorder.md): a thread of its own that
 * writes this rank's partial profile (dump.c) when
 *
 *   - a signal of MPILENS_DUMP_SIGNALS arrives: the handler only writes the
 *     signal number to a pipe; SIGUSR1/SIGUSR2 then go on as before (the
 *     application's handler, if it had one before MPI_Init); any other signal
 *     waits (at most ML_FL_SIGNAL_WAIT_S) for the dump, then takes its previous
 *     action (the application's or the MPI's handler, else the default one,
 *     raised again);
 *   - MPILENS_DUMP_AT seconds have passed since MPI_Init, or the Slurm job's
 *     end (SLURM_JOB_END_TIME) is MPILENS_DUMP_MARGIN seconds away;
 *   - a thread has stayed MPILENS_HANG_AFTER seconds in one MPI call (once per
 *     call; the job goes on);
 *   - MPI_Abort is called (its wrapper dumps on the calling thread, then aborts);
 *   - the application crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL; MPILENS_CRASH_DUMP):
 *     best effort, then the crash goes on through the previous handler.
 *
 * The recorder never calls MPI and takes no lock an application thread holds;
 * it reads the records and the in-flight state as they are (flight.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flight.h"
#include "profile.h"

#define ML_FL_SIGNAL_WAIT_S 5 /* a terminating signal waits this long at most for its dump */
#define ML_FL_PEER_WAIT_MS 1500 /* ... and for the other ranks' dumps (see ml_fl_wait_peers) */
#define ML_FL_PEER_STAT_MAX 128 /* beyond this many ranks: a fixed wait instead of looking */
/* The recorder's poll took this long (ten ticks or more) while the process used less
 * than ML_FL_STOP_CPU of it in CPU time: the process was stopped (or not run at all) */
#define ML_FL_STOP_MIN_S 1.0
#define ML_FL_STOP_CPU 0.25

ml_fl_cfg_t ml_fl_cfg;
ml_fl_stop_t ml_fl_stops[ML_FL_STOPS];
int ml_fl_stops_n;

/* The recorder's state (one per process). */
static struct {
    char dir[4400];                /* <output>.partial */
    int pipe[2];                   /* wakes the recorder's thread (signal handlers write to it) */
    pthread_t thread;
    int running, fid_finalize;
    volatile int dumps;            /* dumps finished (the signal handler waits on it) */
    pthread_mutex_t mu;            /* one dump at a time */
    struct sigaction old[65];      /* the handlers ours replaced */
    unsigned char mine[65];        /* our handler is installed for this signal */
    uint64_t ended[65];            /* when the dump for an ending signal was written (recorder thread) */
    uint64_t resumed;              /* when the process last ran again after a stop (ml_fl_check_stop) */
} FL = {.pipe = {-1, -1}, .mu = PTHREAD_MUTEX_INITIALIZER};
static ML_TLS int ml_fl_is_recorder = 0;

const ml_fl_signame_t ml_fl_signals[] = {
    {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"XCPU", SIGXCPU}, {"INT", SIGINT},
    {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"ALRM", SIGALRM}, {NULL, 0}};

/* ---- the recorder's settings (read with the core's: config.c) ---- */

/* dump_signals: names from ml_fl_signals (flight.c), or none */
static int parse_signals(const char *v, void *out, ml_buf_t *why)
{
    unsigned m = 0;
    char *copy = strdup(v ? v : ""), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *t = copy ? strtok_r(copy, ", \t\n", &save) : NULL; t && !rc; t = strtok_r(NULL, ", \t\n", &save)) {
        const char *n = strncasecmp(t, "SIG", 3) == 0 ? t + 3 : t;
        int i = 0;
        while (ml_fl_signals[i].name && strcasecmp(n, ml_fl_signals[i].name) != 0) i++;
        if (ml_fl_signals[i].name) m |= 1u << i;
        else if (strcasecmp(t, "none") != 0 || save[0]) {
            ml_buf_printf(why, "unknown signal '%s'", t);
            rc = -1;
        }
    }
    free(copy);
    if (!rc) *(unsigned *)out = m;
    return rc;
}

/* dump_at, hang_after: seconds > 0, unset = off */
static int parse_seconds(const char *v, void *out, ml_buf_t *why)
{
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (v) while (isspace((unsigned char)*end)) end++; /* blanks around the number, as in every setting */
    if (v && (end == v || *end)) return -1;
    if (v && !(x > 0 && x <= 1e9)) {
        ml_buf_printf(why, "it must be > 0 and at most 1e9 seconds (about 31 years)");
        return -1;
    }
    *(double *)out = x;
    return 0;
}


static const ml_setting ml_fl_settings[] = {
    {.key = "dump_signals", .type = ML_SET_CUSTOM, .def = "TERM,USR1,XCPU", .parse = parse_signals,
     .out = &ml_fl_cfg.dump_signals,
     .accepted = "comma-separated signal names among TERM, USR1, USR2, XCPU, INT, HUP, QUIT, ALRM "
                 "(SIG prefix allowed), or none",
     .help = "signals on which each rank writes its partial profile to <output>.partial/rank-N "
             "(docs/flight-recorder.md). USR1 and USR2 only take a snapshot: the job goes on. "
             "The others then take their previous action: the handler the program or the MPI "
             "installed before MPI_Init, else the default (the rank ends)."},
    {.key = "dump_at", .type = ML_SET_CUSTOM, .unset = "no time-limit dump", .parse = parse_seconds,
     .out = &ml_fl_cfg.dump_at, .accepted = "a number of seconds > 0 and <= 1e9",
     .help = "each rank writes its partial profile this many seconds after MPI_Init (once; the "
             "job goes on). Under Slurm, SLURM_JOB_END_TIME minus dump_margin is used when earlier."},
    {.key = "dump_margin", .type = ML_SET_REAL, .def = "60", .lo = 0, .hi = 86400,
     .out = &ml_fl_cfg.dump_margin, .accepted = "a number of seconds > 0 and <= 86400",
     .help = "the time-limit dump happens this long before SLURM_JOB_END_TIME"},
    {.key = "hang_after", .type = ML_SET_CUSTOM, .unset = "no hang watchdog", .parse = parse_seconds,
     .out = &ml_fl_cfg.hang_after, .accepted = "a number of seconds > 0 and <= 1e9",
     .help = "a rank one of whose threads stays this long inside one MPI call writes its partial "
             "profile (once per call; the job goes on)"},
    {.key = "crash_dump", .type = ML_SET_BOOL, .def = "on", .out = &ml_fl_cfg.crash_dump,
     .accepted = "on or off (also 1/0, yes/no, true/false)",
     .help = "on SIGSEGV, SIGBUS, SIGFPE or SIGILL a rank writes its partial profile (best effort, "
             "waiting at most 5 s), then the crash goes on through the previous handler"},
    {0}};
static const int ml_fl_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, 0};

const char *ml_fl_signal_name(int sig)
{
    for (int i = 0; ml_fl_signals[i].name; i++)
        if (ml_fl_signals[i].sig == sig) return ml_fl_signals[i].name;
    switch (sig) {
    case SIGSEGV: return "SEGV";
    case SIGBUS: return "BUS";
    case SIGFPE: return "FPE";
    case SIGILL: return "ILL";
    default: return "?";
    }
}

static int ml_fl_is_crash(int sig)
{
    for (int i = 0; ml_fl_crash_signals[i]; i++)
        if (ml_fl_crash_signals[i] == sig) return 1;
    return 0;
}

/* Waits (async-signal-safe) until the dump counter moves past d0, at most s seconds. */
static void ml_fl_wait_dump(int d0, int s)
{
    struct timespec nap = {0, 2000000};
    for (int i = 0; i < s * 500 && __atomic_load_n(&FL.dumps, __ATOMIC_ACQUIRE) == d0; i++)
        nanosleep(&nap, NULL);
}

static void ml_fl_on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    int d0 = __atomic_load_n(&FL.dumps, __ATOMIC_ACQUIRE);
    /* a crash signal sent (kill, raise: si_code <= 0) rather than a fault: flagged 0x80,
     * its dump then waits for the other ranks' as a terminating signal's does (a signal
     * sent to a job reaches every rank) */
    int sent = ml_fl_is_crash(sig) && (si == NULL || si->si_code <= 0);
    unsigned char c = (unsigned char)(sig | (sent ? 0x80 : 0));
    int snapshot = sig == SIGUSR1 || sig == SIGUSR2;
    const struct sigaction *old = &FL.old[sig];
    int handler = (old->sa_flags & SA_SIGINFO) ? old->sa_sigaction != NULL
                  : old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN;
    if (!ml_fl_is_recorder && write(FL.pipe[1], &c, 1) == 1 && (!snapshot || handler))
        ml_fl_wait_dump(d0, ML_FL_SIGNAL_WAIT_S);
    if (ml_fl_is_crash(sig)) { /* back to the previous handler; the fault happens again there */
        sigaction(sig, old, NULL);
        /* ... unless the signal was sent (kill, raise: si_code <= 0), not a fault: send it
         * again, to be taken by that handler when this one returns */
        if (si == NULL || si->si_code <= 0) raise(sig);
        errno = saved;
        return;
    }
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
    } else if (handler) {
        old->sa_handler(sig);
    } else if (old->sa_handler == SIG_DFL && !snapshot) { /* the default action, now */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* pending until this handler returns */
    }
    errno = saved;
}

static void ml_fl_install(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ml_fl_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &FL.old[sig]) == 0) FL.mine[sig] = 1;
}

static void ml_fl_restore(void)
{
    for (int sig = 1; sig < 65; sig++) {
        if (!FL.mine[sig]) continue;
        struct sigaction cur;
        /* only if ours is still in place: the application may have replaced it since */
        if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == ml_fl_on_signal)
            sigaction(sig, &FL.old[sig], NULL);
        FL.mine[sig] = 0;
    }
}

/* A terminating signal usually reaches every rank at once, and the launcher kills
 * the whole job as soon as one rank has ended (MPICH's hydra at once, Open MPI's
 * mpirun within about a second): before this rank ends, it waits until every
 * rank's dump is newer than the signal (at most ML_FL_PEER_WAIT_MS; large jobs
 * wait a fixed half of it instead of looking at every rank's file). */
static void ml_fl_wait_peers(const struct timespec *since)
{
    struct timespec nap = {0, 20000000};
    int n = ml_world_size, next = 0;
    if (n > ML_FL_PEER_STAT_MAX) {
        struct timespec half = {ML_FL_PEER_WAIT_MS / 2000, (ML_FL_PEER_WAIT_MS / 2 % 1000) * 1000000L};
        nanosleep(&half, NULL);
        return;
    }
    for (int i = 0; i < ML_FL_PEER_WAIT_MS / 20 && next < n; i++) {
        char f[4500];
        struct stat st;
        while (next < n) {
            snprintf(f, sizeof f, "%s/rank-%d", FL.dir, next);
            if (stat(f, &st) != 0 || st.st_mtim.tv_sec < since->tv_sec ||
                (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))
                break;
            next++;
        }
        if (next < n) nanosleep(&nap, NULL);
    }
}

static void ml_fl_dump(int reason, int sig, int code)
{
    struct timespec since;
    clock_gettime(CLOCK_REALTIME, &since);
    since.tv_sec -= 1; /* file times are coarser than the clock on some file systems */
    pthread_mutex_lock(&FL.mu);
    if (ml_dump_write(FL.dir, reason, sig, code) != 0)
        fprintf(stderr, "mpilens: rank %d: cannot write its partial profile in %s: %s\n", ml_world_rank, FL.dir,
                errno == ELOOP ? "it is a symbolic link (refused)" : strerror(errno));
    else if ((reason == ML_DUMP_SIGNAL && sig != SIGUSR1 && sig != SIGUSR2) ||
             (reason == ML_DUMP_CRASH && code)) /* code: a crash signal sent, not a fault */
        ml_fl_wait_peers(&since);
    __atomic_add_fetch(&FL.dumps, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&FL.mu);
}

/* A thread in one call for hang_after seconds that was not dumped for that call yet: 1. */
static int ml_fl_hanging(uint64_t now, uint64_t limit)
{
    int found = 0;
    for (ml_slot_t *s = ml_first_slot(); s; s = s->next) {
        uint64_t seq = __atomic_load_n(&s->fl.seq, __ATOMIC_ACQUIRE);
        uint64_t t0 = s->fl.t0 > FL.resumed ? s->fl.t0 : FL.resumed; /* a stop is not a hang */
        if (!(seq & 1) || seq == s->fl.hang_seq || __atomic_load_n(&s->fl.seq, __ATOMIC_ACQUIRE) != seq) continue;
        if (now > t0 && now - t0 >= limit) {
            s->fl.hang_seq = seq;
            found = 1;
        }
    }
    return found;
}


static double ml_fl_clock(clockid_t id)
{
    struct timespec t;
    return clock_gettime(id, &t) == 0 ? (double)t.tv_sec + t.tv_nsec * 1e-9 : 0.0;
}

/* After the recorder's poll (which began at mono0, cpu0): a stop of the process is kept
 * (ml_fl_stops) when its clock ran and its CPU time did not.  Only the poll is measured:
 * a dump's own waits are not a stop. */
static void ml_fl_check_stop(double mono0, double cpu0)
{
    double gap = ml_fl_clock(CLOCK_MONOTONIC) - mono0;
    double cpu = ml_fl_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (gap < ML_FL_STOP_MIN_S || cpu >= ML_FL_STOP_CPU * gap) return;
    FL.resumed = ml_now(); /* a call the stop caught is not a hang of its own (ml_fl_hanging) */
    ml_fl_stop_t *st = &ml_fl_stops[ml_fl_stops_n % ML_FL_STOPS];
    st->from = ml_fl_clock(CLOCK_REALTIME) - gap;
    st->for_s = gap;
    st->cpu_s = cpu > 0 ? cpu : 0;
    ml_fl_stops_n++;
}

static void *ml_fl_main(void *arg)
{
    (void)arg;
    ml_fl_is_recorder = 1;
    uint64_t start = ml_now();
    uint64_t deadline = ml_fl_cfg.deadline_s > 0 ? start + ml_ns_to_ticks((uint64_t)(ml_fl_cfg.deadline_s * 1e9)) : 0;
    uint64_t hang = ml_fl_cfg.hang_after > 0 ? ml_ns_to_ticks((uint64_t)(ml_fl_cfg.hang_after * 1e9)) : 0;
    for (;;) {
        struct pollfd p = {FL.pipe[0], POLLIN, 0};
        double mono0 = ml_fl_clock(CLOCK_MONOTONIC), cpu0 = ml_fl_clock(CLOCK_PROCESS_CPUTIME_ID);
        int n = poll(&p, 1, ML_FL_TICK_MS);
        ml_fl_check_stop(mono0, cpu0);
        uint64_t now = ml_now();
        __atomic_store_n(&ml_hot.fl_clock, now, __ATOMIC_RELAXED);
        if (n > 0) {
            unsigned char buf[64];
            ssize_t k = read(FL.pipe[0], buf, sizeof buf);
            int done = 0;
            unsigned char seen[65] = {0};
            for (ssize_t i = 0; i < k; i++) {
                int sig = buf[i] & 0x7f, sent = (buf[i] & 0x80) != 0;
                if (buf[i] == 0) done = 1;
                else if (sig < 65 && !seen[sig]) { /* several of one signal: one dump */
                    seen[sig] = 1;
                    int ending = sig != SIGUSR1 && sig != SIGUSR2 && !ml_fl_is_crash(sig);
                    /* An ending signal again within the wait of its first dump is the same end
                     * (under Slurm each task gets SIGTERM from slurmd and from srun, which a
                     * second thread may take): no second dump, which would push the dump
                     * before it (the time limit's) out of rank-N.prev.  Its handler's wait ends. */
                    if (ending && FL.ended[sig] &&
                        now - FL.ended[sig] < ml_ns_to_ticks(ML_FL_SIGNAL_WAIT_S * 2000000000ull)) {
                        __atomic_add_fetch(&FL.dumps, 1, __ATOMIC_RELEASE);
                        continue;
                    }
                    ml_fl_dump(ml_fl_is_crash(sig) ? ML_DUMP_CRASH : ML_DUMP_SIGNAL, sig, sent);
                    if (ending) FL.ended[sig] = ml_now();
                }
            }
            if (done) break;
        }
        if (deadline && now >= deadline) {
            deadline = 0;
            ml_fl_dump(ML_DUMP_TIME_LIMIT, 0, 0);
        }
        if (hang && ml_fl_hanging(now, hang)) ml_fl_dump(ML_DUMP_HANG, 0, 0);
    }
    return NULL;
}

/* SLURM_JOB_END_TIME (epoch seconds) minus the margin, as seconds from now; 0 if none */
static double ml_fl_slurm_deadline(void)
{
    const char *v = getenv("SLURM_JOB_END_TIME");
    char *end;
    if (!v || !*v) return 0;
    double t = strtod(v, &end);
    if (*end || t <= 0) return 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double left = t - ml_fl_cfg.dump_margin - ((double)now.tv_sec + now.tv_nsec * 1e-9);
    return left > 0.001 ? left : 0.001;
}

static void ml_flight_start(void)
{
    /* the partial directory: rank 0's expansion of MPILENS_OUTPUT, the same on every
     * rank, and its job id (outside a batch job: rank 0's time stamp and pid, which
     * every rank's dump then names as the directory does) */
    char path[4300 + 128] = {0}, *job = path + 4300;
    if (ml_world_rank == 0) ml_output_path(path, 4300, job, 128);
    PMPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(FL.dir, sizeof FL.dir, "%s.partial", path);
    if (ml_world_rank == 0) { /* where dumps go, for `mpilens run` (its job id in them) */
        char where[sizeof FL.dir + 130];
        snprintf(where, sizeof where, "%s\t%s", FL.dir, job);
        ml_report_to("partial", where);
    }
    for (int i = 1; i < ML_NFUNC && !FL.fid_finalize; i++)
        if (strcmp(ml_func_name[i], "MPI_Finalize") == 0) FL.fid_finalize = i;
    ml_fl_cfg.deadline_s = ml_fl_cfg.dump_at;
    double slurm = ml_fl_slurm_deadline();
    if (slurm > 0 && (ml_fl_cfg.deadline_s <= 0 || slurm < ml_fl_cfg.deadline_s)) ml_fl_cfg.deadline_s = slurm;
    ml_dump_prepare(job);
    ml_hot.fl_clock = ml_now();
    if (pipe2(FL.pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "mpilens: rank %d: no flight recorder (pipe: %s)\n", ml_world_rank, strerror(errno));
        return;
    }
    fcntl(FL.pipe[1], F_SETFL, O_NONBLOCK);
    /* the recorder's thread never takes the signals it writes dumps for */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&FL.thread, NULL, ml_fl_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "mpilens: rank %d: no flight recorder (thread: %s)\n", ml_world_rank, strerror(rc));
        close(FL.pipe[0]);
        close(FL.pipe[1]);
        FL.pipe[0] = FL.pipe[1] = -1;
        return;
    }
    FL.running = 1;
    for (int i = 0; ml_fl_signals[i].name; i++)
        if (ml_fl_cfg.dump_signals & (1u << i)) ml_fl_install(ml_fl_signals[i].sig);
    for (int i = 0; ml_fl_cfg.crash_dump && ml_fl_crash_signals[i]; i++) ml_fl_install(ml_fl_crash_signals[i]);
}

/* This thread's in-flight state set by hand (MPI_Finalize, MPI_Abort: not timed calls). */
static void ml_fl_mark(int fid, int kind, MPI_Comm comm)
{
    ml_slot_t *s = ml_slot();
    if ((s->fl.seq & 1) == 0)
        ml_fl_in(s, fid, kind, comm, ML_FL_NONE, -1, 0, ML_FL_NONE, -1, NULL, 0, ml_now());
}

static void ml_flight_finalize_enter(void)
{
    if (FL.running && FL.fid_finalize) ml_fl_mark(FL.fid_finalize, ML_FL_COLL, MPI_COMM_WORLD);
}

void ml_flight_abort(int fid, MPI_Comm comm, int errorcode)
{
    if (!FL.running) return;
    ml_fl_mark(fid, ML_FL_OTHER, comm);
    ml_fl_dump(ML_DUMP_ABORT, 0, errorcode);
    ml_fl_out(ml_slot());
}

/* Removes this rank's partial files -- only those this process wrote (job id and pid
 * in the file: another job writing to the same MPILENS_OUTPUT keeps its own) -- and the
 * directory once empty. */
static void ml_fl_remove(void)
{
    static const char *const names[] = {"rank-%d", "rank-%d.prev", "rank-%d.hang", ".rank-%d.tmp",
                                        ".rank-%d.prev.tmp", ".rank-%d.hang.tmp"};
    char f[4500];
    for (int i = 0; i < 6; i++) {
        int k = snprintf(f, sizeof f, "%s/", FL.dir);
        snprintf(f + k, sizeof f - (size_t)k, names[i], ml_world_rank);
        if (ml_dump_is_mine(f)) unlink(f);
    }
    rmdir(FL.dir); /* the last rank's succeeds */
}

static void ml_flight_stop(int profile_written)
{
    if (!FL.running) return;
    ml_fl_restore();
    unsigned char z = 0;
    while (write(FL.pipe[1], &z, 1) != 1 && errno == EINTR) {}
    pthread_join(FL.thread, NULL);
    close(FL.pipe[0]);
    close(FL.pipe[1]);
    FL.pipe[0] = FL.pipe[1] = -1;
    FL.running = 0;
    if (profile_written) ml_fl_remove();
}

/* Its settings; started at the end of MPI_Init (collective: the partial directory),
 * MPI_Finalize marked as the call this thread is in, stopped after the profile (a
 * complete profile: the partial files go).  Its per-call state is inline (flight.h). */
const ml_module_t ml_module_flight = {
    .name = "flight",
    .settings = ml_fl_settings,
    .start = ml_flight_start,
    .finalize_enter = ml_flight_finalize_enter,
    .stop = ml_flight_stop,
};
