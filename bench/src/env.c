/* Environment block (MPI library, hosts, placement, MPI tuning variables),
 * clock resolution, resident memory, progress lines, data patterns, result files. */
#define _GNU_SOURCE
#include "mlb.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
int ml_rank, ml_size, ml_progress_on;

double ml_clock_resolution(void)
{
    double best = 1.0;
    for (int i = 0; i < 200; i++) {
        double t0 = MPI_Wtime(), t1;
        while ((t1 = MPI_Wtime()) == t0) {}
        if (t1 - t0 < best) best = t1 - t0;
    }
    return best;
}

long ml_rss_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n)) { v = strtol(line + n, NULL, 10); break; }
    fclose(f);
    return v;
}

void ml_announce(const char *family, double expected, long long probe)
{
    ml_announce_range(family, expected, expected, probe);
}

/* the expected duration: `expected` at the probe's typical rates, `low` at its fastest
 * (low == expected: one figure).  MLB-ESTIMATE <expected> [<low>] for mpilens bench
 * (python/mpilens/bench/launch.py announce); run by hand, the same words on stderr */
void ml_announce_range(const char *family, double low, double expected, long long probe)
{
    /* the family's options that shorten it (python/mpilens/bench/launch.py SHORTEN) */
    const char *shorten = !strcmp(family, "coll")       ? "--max-size, --samples or --ops"
                          : !strcmp(family, "io")       ? "--size, --samples or --patterns"
                          : !strcmp(family, "overhead") ? "--calls, --blocks or --rss-calls"
                                                        : "--max-size, --samples or --iters";
    if (low > expected) low = expected;
    int range = low > 0 && expected > ML_RANGE_WIDE * low;
    if (ml_progress_on) {
        if (range) fprintf(stderr, "MLB-ESTIMATE %.6g %.6g\n", expected, low);
        else fprintf(stderr, "MLB-ESTIMATE %.6g\n", expected);
    } else if (expected >= 10) {
        if (range)
            fprintf(stderr, "%s: expected duration %.0f to %.0f s (from a probe of up to %lld B "
                    "before most of it; its fastest and typical rates differ: the host is busy); "
                    "%s shorten it\n", family, low, expected, probe, shorten);
        else
            fprintf(stderr, "%s: expected duration about %.0f s (from a probe of up to %lld B "
                    "before most of it); %s shorten it\n", family, expected, probe, shorten);
    }
    fflush(stderr);
}

void ml_progress(long done, long total)
{
    if (ml_progress_on && ml_rank == 0) {
        fprintf(stderr, "MLB-PROGRESS %ld %ld\n", done, total);
        fflush(stderr);
    }
}

void ml_fill(unsigned char *buf, size_t n, uint64_t off0, unsigned seed)
{
    for (size_t i = 0; i < n; i++) buf[i] = ml_pat(off0 + i, seed);
}

size_t ml_check(const unsigned char *buf, size_t n, uint64_t off0, unsigned seed)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += buf[i] != ml_pat(off0 + i, seed);
    return bad;
}

void *ml_alloc(size_t n)
{
    void *p = NULL;
    if (n == 0) n = 1;
    if (posix_memalign(&p, 4096, n)) ml_fatal("cannot allocate %zu bytes", n);
    memset(p, 0, n);
    return p;
}

static const char *const env_prefixes[] = {
    "OMPI_MCA_", "MPIR_CVAR_", "I_MPI_", "MPICH_", "HYDRA_", "UCX_", "FI_", "PSM2_",
    "SLURM_JOB_ID", "SLURM_NTASKS", "OMP_", "MPILENS_", "LD_PRELOAD", NULL};

void ml_json_env(ml_json *w, int argc, char **argv)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, ver, sub, flag, *global = NULL;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = 0;
    MPI_Get_version(&ver, &sub);
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    MPI_Get_processor_name(host, &len);
    struct { char host[MPI_MAX_PROCESSOR_NAME]; int cpu; int pid; } me, *all = NULL;
    memset(&me, 0, sizeof me);
    snprintf(me.host, sizeof me.host, "%s", host);
    me.cpu = sched_getcpu();
    me.pid = (int)getpid();
    if (ml_rank == 0) all = malloc((size_t)ml_size * sizeof *all);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
    double res = ml_clock_resolution(), resmax;
    MPI_Reduce(&res, &resmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    if (ml_rank != 0) return;

    ml_json_obj(w, "env");
    ml_json_str(w, "mpi_library", lib);
    ml_json_arr(w, "mpi_version");
    ml_json_int(w, NULL, ver);
    ml_json_int(w, NULL, sub);
    ml_json_end(w);
    ml_json_int(w, "nranks", ml_size);
    int *hidx = malloc((size_t)ml_size * sizeof *hidx), nh = 0;
    ml_json_arr(w, "hosts");
    for (int r = 0; r < ml_size; r++) {
        hidx[r] = -1;
        for (int q = 0; q < r; q++)
            if (!strcmp(all[q].host, all[r].host)) { hidx[r] = hidx[q]; break; }
        if (hidx[r] < 0) { hidx[r] = nh++; ml_json_str(w, NULL, all[r].host); }
    }
    ml_json_end(w);
    ml_json_arr(w, "placement");
    for (int r = 0; r < ml_size; r++) {
        ml_json_obj(w, NULL);
        ml_json_int(w, "rank", r);
        ml_json_str(w, "host", all[r].host);
        ml_json_int(w, "cpu", all[r].cpu);
        ml_json_end(w);
    }
    ml_json_end(w);
    ml_json_obj(w, "variables");
    for (char **e = environ; *e; e++)
        for (int k = 0; env_prefixes[k]; k++)
            if (!strncmp(*e, env_prefixes[k], strlen(env_prefixes[k]))) {
                char *eq = strchr(*e, '=');
                if (!eq) break;
                char name[256];
                size_t n = (size_t)(eq - *e) < sizeof name - 1 ? (size_t)(eq - *e) : sizeof name - 1;
                memcpy(name, *e, n);
                name[n] = 0;
                ml_json_str(w, name, eq + 1);
                break;
            }
    ml_json_end(w);
    char cmd[4096] = "";
    for (int i = 0; i < argc; i++) {
        strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 2);
        if (i + 1 < argc) strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
    }
    ml_json_str(w, "command", cmd);
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    ml_json_str(w, "date", date);
    ml_json_end(w);

    ml_json_obj(w, "clock");
    ml_json_str(w, "timer", "MPI_Wtime");
    ml_json_num(w, "wtick_s", MPI_Wtick());
    ml_json_num(w, "resolution_s", resmax);
    ml_json_bool(w, "wtime_is_global", flag && global && *global);
    ml_json_end(w);
    free(hidx);
    free(all);
}

void ml_json_ship(ml_json *w, const char *key, ml_json *sub, int src)
{
    if (src == 0) {
        if (ml_rank == 0) ml_json_raw(w, key, ml_json_text(sub));
        return;
    }
    if (ml_rank == src) {
        const char *t = ml_json_text(sub);
        MPI_Send(t, (int)strlen(t) + 1, MPI_CHAR, 0, 9999, MPI_COMM_WORLD);
    } else if (ml_rank == 0) {
        MPI_Status st;
        int n;
        MPI_Probe(src, 9999, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &n);
        char *t = malloc((size_t)n);
        MPI_Recv(t, n, MPI_CHAR, src, 9999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ml_json_raw(w, key, t);
        free(t);
    }
}

const char *const ml_pair_names[ML_NPAIR] = {"intra", "inter"};

void ml_pair_partners(unsigned classes, int partner[ML_NPAIR])
{
    char me[MPI_MAX_PROCESSOR_NAME] = "", *h0 = malloc(MPI_MAX_PROCESSOR_NAME);
    int len = 0, same = 0;
    MPI_Get_processor_name(me, &len);
    if (ml_rank == 0) memcpy(h0, me, MPI_MAX_PROCESSOR_NAME);
    MPI_Bcast(h0, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    same = strcmp(me, h0) == 0;
    int *all = malloc((size_t)ml_size * sizeof *all);
    MPI_Allgather(&same, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    partner[ML_PAIR_INTRA] = partner[ML_PAIR_INTER] = -1;
    for (int r = ml_size - 1; r > 0; r--) partner[all[r] ? ML_PAIR_INTRA : ML_PAIR_INTER] = r;
    free(all);
    free(h0);
    if ((classes & 1u << ML_PAIR_INTRA) && partner[ML_PAIR_INTRA] < 0)
        ml_usage("--pairs intra: no other rank is on rank 0's host (place two ranks on its node)");
    if ((classes & 1u << ML_PAIR_INTER) && partner[ML_PAIR_INTER] < 0)
        ml_usage("--pairs inter: every rank is on rank 0's host (place ranks on two nodes)");
}

void ml_json_pair_options(ml_json *w, int a, int b, unsigned classes)
{
    ml_json_arr(w, "ranks");
    ml_json_int(w, NULL, a);
    ml_json_int(w, NULL, b);
    ml_json_end(w);
    if (!classes) return;
    ml_json_arr(w, "pairs");
    for (int k = 0; k < ML_NPAIR; k++)
        if (classes & 1u << k) ml_json_str(w, NULL, ml_pair_names[k]);
    ml_json_end(w);
}

/* ---- result files (--out, --model): a result file is never lost or left half-written.
 * The check runs before the benchmark and creates nothing that stays (an existing file
 * is not truncated); the write goes to ".<name>.tmp-<pid>" in the same directory,
 * flushed to disk, then renamed over the file. */

/* the file a path names: a symbolic link's target (so the link is kept), else path */
static char *target_of(const char *path)
{
    struct stat st;
    char *real = NULL;
    if (!lstat(path, &st) && S_ISLNK(st.st_mode)) real = realpath(path, NULL);
    return real ? real : strdup(path);
}

/* ".<name>.tmp-<pid>" next to path; *name points at path's last component */
static char *tmp_name(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    char *tmp = NULL;
    if (asprintf(&tmp, "%.*s.%s.tmp-%ld", (int)(*name - path), path, *name,
                 (long)getpid()) < 0)
        ml_fatal("out of memory");
    return tmp;
}

static int open_tmp(const char *tmp, mode_t mode)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST && !unlink(tmp))     /* left by a dead process */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    return fd;
}

int ml_check_writable(const char *path)
{
    char *target = target_of(path), *tmp;
    const char *name;
    struct stat st;
    int err = 0, exists = !stat(target, &st);
    tmp = tmp_name(target, &name);
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || (exists && S_ISDIR(st.st_mode)))
        err = EISDIR;
    else if (exists && access(target, W_OK))
        err = errno;                                 /* a read-only file stays as it is */
    else {
        int fd = open_tmp(tmp, 0600);
        if (fd < 0) err = errno;
        else { close(fd); unlink(tmp); }
    }
    free(tmp);
    free(target);
    return err;
}

int ml_write_file_atomic(const char *path, const char *text)
{
    char *target = target_of(path), *tmp;
    const char *name;
    struct stat st;
    int have_mode = !stat(target, &st), err = 0;
    if (have_mode && !S_ISREG(st.st_mode)) { /* a device, FIFO, ...: never replaced */
        free(target);
        return EEXIST;
    }
    tmp = tmp_name(target, &name);
    int fd = open_tmp(tmp, 0666);
    if (fd < 0) err = errno;
    if (!err && have_mode && fchmod(fd, st.st_mode & 07777)) err = errno;
    const char *parts[2] = {text, "\n"};
    for (int k = 0; k < 2 && !err; k++)
        for (size_t off = 0, n = strlen(parts[k]); off < n && !err;) {
            ssize_t w = write(fd, parts[k] + off, n - off);
            if (w > 0) off += (size_t)w;
            else if (w == 0) err = EIO;
            else if (errno != EINTR) err = errno;
        }
    if (!err && fsync(fd)) err = errno;
    if (fd >= 0 && close(fd) && !err) err = errno;
    if (!err && rename(tmp, target)) err = errno;
    if (err) {
        if (fd >= 0) unlink(tmp);
    } else {                                         /* make the rename durable too */
        char *dir = NULL;
        if (asprintf(&dir, "%.*s", name > target ? (int)(name - target) : 1,
                     name > target ? target : ".") >= 0) {
            int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) { fsync(dfd); close(dfd); }
            free(dir);
        }
    }
    free(tmp);
    free(target);
    return err;
}
