/* Profile steps 3 and 4, write and claim the name (profile.h), and
 * ml_write_profile, which runs the four steps at MPI_Finalize.
 *
 * Rank 0 creates a temporary file in the output's directory and reserves the
 * profile's size in it; each rank's line is placed after the header by an
 * exclusive scan of the lengths (ml_fin_exscan, recursive doubling) and written
 * with POSIX pwrite (MPILENS_WRITE=auto up to 1,024 ranks) or one collective
 * MPI_File_write_at_all.  The ranks agree on every step's outcome, so they all take the
 * same path: on a failure the temporary file goes and the profile is written
 * again in $TMPDIR (or /tmp), else not at all, with one line.  Rank 0 then
 * links the file to the final name, which is never overwritten (name,
 * name.1, ...).  A crash leaves at most the temporary file, never a half
 * profile under the final name.  docs/runtime.md, Writing the profile. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

#define ML_PATH_BUF 4300 /* the profile's path and its temporary name */
/* a rank whose compression failed: its term of the lines' scan.  The lines' lengths sum
 * to less than 2^44 (16 TiB), and fewer than 2^19 failing ranks add less than 2^63 - 2^44: the
 * sum never overflows. */
#define ML_GZ_FAILED (1LL << 44)

/* ---- the end-of-run collectives: non-blocking, waited for by ml_fin_wait ---- */

static void ml_bcast(void *buf, int n, MPI_Datatype t, int root)
{
    MPI_Request r;
    PMPI_Ibcast(buf, n, t, root, MPI_COMM_WORLD, &r);
    ml_fin_wait(&r);
}

static void ml_allreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op)
{
    MPI_Request r;
    PMPI_Iallreduce(in, out, n, t, op, MPI_COMM_WORLD, &r);
    ml_fin_wait(&r);
}

/* ---- step 3: write ---- */

/* Temporary paths at least this long are written with POSIX pwrite by every
 * rank instead of MPI-IO: Open MPI's sharedfp_lockedfile component copies the
 * file name into a fixed buffer when the file is opened and aborts the job
 * (glibc's "buffer overflow detected") from about 230 characters on. */
#define ML_MPIIO_PATH_MAX 200

/* MPILENS_WRITE=auto: POSIX pwrite by every rank up to this many ranks, MPI-IO above.
 * MPI-IO's open, collective write, sync and close are blocking collectives of the MPI
 * with many steps inside; on the virtual cluster (64 ranks on 4 nodes of 2 cores) they
 * took 25 + 26 + 2 + 4 s of a 59 s finalize, while pwrite needs no collective at all
 * (docs/scale.md).  Above it the MPI's collective buffering (a few aggregators write
 * large blocks) spares a parallel file system one small write per rank. */
#define ML_POSIX_WRITE_MAX_RANKS 1024

/* MPI-IO for this temporary name: want_mpiio is rank 0's choice, broadcast (ml_write_profile) */
static int ml_use_mpiio(int want_mpiio, const char *tmp)
{
    return want_mpiio && strlen(tmp) < ML_MPIIO_PATH_MAX;
}

/* Agreement: 0 on every rank if no rank failed, else 1 on every rank, with the
 * lowest failing rank's error text in err on rank 0.  One reduction, and one
 * broadcast only after a failure. */
static int ml_agree(int bad, char *err)
{
    int size, first = 0, mine;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = bad ? ml_world_rank : size;
    ml_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN);
    if (first == size) return 0;
    ml_bcast(err, MPI_MAX_ERROR_STRING, MPI_CHAR, first);
    return 1;
}

/* The MPI's text for rc in err (if err is still empty), on one line: MPICH's
 * error stacks span several. */
static void ml_mpi_err(int rc, char *err)
{
    int len = 0;
    if (err[0]) return;
    PMPI_Error_string(rc, err, &len);
    err[MPI_MAX_ERROR_STRING - 1] = 0;
    size_t k = 0;
    for (size_t i = 0; err[i]; i++) {
        char c = (unsigned char)err[i] < ' ' ? ' ' : err[i];
        if (c != ' ' || (k && err[k - 1] != ' ')) err[k++] = c;
    }
    while (k && err[k - 1] == ' ') k--;
    err[k] = 0;
}

/* Rank 0: creates tmp (exclusively) and reserves total bytes in it, so that a
 * full or nearly full file system is found here, before any rank writes.
 * 0 ok, else an errno value (tmp then removed). */
static int ml_create_reserved(const char *tmp, long long total)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return errno;
    int e = total > 0 ? posix_fallocate(fd, 0, (off_t)total) : 0;
    if (e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) e = 0; /* no reservation here: the writes say it */
    if (close(fd) != 0 && !e) e = errno;
    if (e) unlink(tmp);
    return e;
}

/* Collective: every rank's text at its offset with MPI-IO.  0 ok, else 1 on
 * every rank.  Every step's status is agreed before the next one, so that all
 * ranks close the file together even after a failed write. */
static int ml_write_mpiio(const char *tmp, const ml_buf_t *b, MPI_Offset off, char *err)
{
    MPI_File fh;
    int rc = PMPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) ml_mpi_err(rc, err);
    if (ml_agree(rc != MPI_SUCCESS, err)) {
        if (rc == MPI_SUCCESS) PMPI_File_close(&fh);
        return 1;
    }
    size_t done = 0;
    /* write_at_all takes an int count: loop in 1 GiB pieces (all ranks the same number of rounds) */
    unsigned long long rounds = (b->n + (1u << 30) - 1) >> 30, maxr = 0;
    ml_allreduce(&rounds, &maxr, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX);
    for (unsigned long long r = 0; r < (maxr ? maxr : 1); r++) {
        size_t piece = b->n - done > (1u << 30) ? (1u << 30) : b->n - done;
        MPI_Status st;
        int rr = PMPI_File_write_at_all(fh, off + (MPI_Offset)done, b->p ? b->p + done : "", (int)piece,
                                        MPI_CHAR, &st);
        int got = 0;
        if (rr == MPI_SUCCESS && PMPI_Get_count(&st, MPI_CHAR, &got) == MPI_SUCCESS && got != (int)piece &&
            got != MPI_UNDEFINED) {
            snprintf(err, MPI_MAX_ERROR_STRING, "short write (%d of %zu bytes)", got, piece);
            rr = MPI_ERR_IO;
        }
        if (rr != MPI_SUCCESS && rc == MPI_SUCCESS) {
            rc = rr;
            ml_mpi_err(rr, err);
        }
        done += piece;
    }
    int rcs = PMPI_File_sync(fh); /* collective: every rank's part on disk before the rename */
    if (rcs != MPI_SUCCESS && rc == MPI_SUCCESS) {
        rc = rcs;
        ml_mpi_err(rcs, err);
    }
    int failed = ml_agree(rc != MPI_SUCCESS, err); /* the same path for all: close together */
    int rc2 = PMPI_File_close(&fh);
    if (rc2 != MPI_SUCCESS) ml_mpi_err(rc2, err);
    return ml_agree(rc2 != MPI_SUCCESS, err) || failed;
}

/* Collective: the same with POSIX pwrite by each rank that has text (paths too
 * long for MPI-IO).  0 ok, else 1 on every rank. */
static int ml_write_posix(const char *tmp, const ml_buf_t *b, off_t off, char *err)
{
    int e = 0;
    if (b->n) {
        int fd = open(tmp, O_WRONLY | O_CLOEXEC);
        if (fd < 0) e = errno;
        for (size_t done = 0; !e && done < b->n;) {
            ssize_t w = pwrite(fd, b->p + done, b->n - done, off + (off_t)done);
            if (w > 0) done += (size_t)w;
            else if (w == 0) e = ENOSPC;
            else if (errno != EINTR) e = errno;
        }
        if (fd >= 0 && !e && fsync(fd) != 0 && errno != EINVAL) e = errno;
        if (fd >= 0 && close(fd) != 0 && !e) e = errno;
        if (e) snprintf(err, MPI_MAX_ERROR_STRING, "%s", strerror(e));
    }
    return ml_agree(e != 0, err);
}

/* Collective: the profile under rank 0's temporary name tmp (created and its
 * space reserved by rank 0 first).  0 ok; else 1 on every rank, the reason in
 * err on rank 0, and nothing left at tmp; 2 on every rank (nothing created) when
 * rank 0 says `refuse` (the compression failed on some rank: no place would help). */
static int ml_write_tmp(char *tmp, size_t n, const ml_buf_t *b, int mpiio, long long hlen, long long off,
                        long long total, int refuse, char *err)
{
    /* one broadcast: rank 0's outcome of the create, the header's length (every other
     * rank's text goes after it) and the temporary name */
    struct {
        long long e, hlen;
        char tmp[ML_PATH_BUF];
    } msg;
    memset(&msg, 0, sizeof msg);
    if (ml_world_rank == 0) {
        msg.e = refuse ? -1 : tmp[0] ? ml_create_reserved(tmp, total) : ENAMETOOLONG;
        msg.hlen = hlen;
        snprintf(msg.tmp, sizeof msg.tmp, "%s", tmp);
    }
    ml_bcast(&msg, (int)sizeof msg, MPI_BYTE, 0);
    if (msg.e == -1) return 2;
    if (msg.e) {
        if (ml_world_rank == 0) snprintf(err, MPI_MAX_ERROR_STRING, "%s", strerror((int)msg.e));
        return 1;
    }
    snprintf(tmp, n, "%s", msg.tmp);
    if (ml_world_rank != 0) off += msg.hlen;
    err[0] = 0;
    int failed = ml_use_mpiio(mpiio, tmp) ? ml_write_mpiio(tmp, b, (MPI_Offset)off, err)
                                   : ml_write_posix(tmp, b, (off_t)off, err);
    if (failed && ml_world_rank == 0) unlink(tmp);
    return failed;
}

/* Rank 0: the temporary name for path, short so that a 255-character file name
 * still has one: <directory of path>/.mpilens-<time>-<pid>.tmp; "" if too long. */
static void ml_tmp_name(char *tmp, size_t n, const char *path, const char *stamp)
{
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path) + 1 : 0;
    int k = snprintf(tmp, n, "%.*s.mpilens-%s-%d.tmp", dir, path, stamp, (int)getpid());
    if (k < 0 || (size_t)k >= n || k >= PATH_MAX) tmp[0] = 0;
}

/* Collective: writes the profile under a temporary name in path's directory (b: rank 0's
 * header of hlen bytes and its line, every other rank's line at hlen + off, off its
 * lines' exclusive prefix sum; total: the file's size, on rank 0);
 * if that fails on any rank, every rank tries again in $TMPDIR (or /tmp) under
 * path's file name.  0 ok with path and tmp naming the place written; else 1
 * on every rank.  Rank 0 prints one line on failure (errors in why).  zfail (rank
 * 0): the ranks whose compression failed (nothing is written then). */
static int ml_write_placed(const ml_buf_t *b, int mpiio, long long hlen, long long off, long long total,
                           long long zfail, char *path, char *tmp, size_t n, const char *stamp, char *why,
                           size_t nwhy)
{
    char err[MPI_MAX_ERROR_STRING + 1] = {0};
    int rc = ml_write_tmp(tmp, n, b, mpiio, hlen, off, total, zfail > 0, err);
    if (rc == 0) return 0;
    if (rc == 2) {
        if (ml_world_rank == 0)
            snprintf(why, nwhy, "%s: gzip compression (zlib) failed on %lld rank%s", path, zfail,
                     zfail == 1 ? "" : "s");
        return 1;
    }
    int again = 0;
    if (ml_world_rank == 0) {
        const char *td = getenv("TMPDIR");
        const char *base = strrchr(path, '/');
        char alt[4300];
        snprintf(why, nwhy, "%s: %s", path, err[0] ? err : "MPI-IO error");
        int k = snprintf(alt, sizeof alt, "%s/%s", td && *td ? td : "/tmp", base ? base + 1 : path);
        char dir_p[4300], dir_a[4300];
        snprintf(dir_p, sizeof dir_p, "%.*s", base ? (int)(base - path) : 1, base ? path : ".");
        snprintf(dir_a, sizeof dir_a, "%s", td && *td ? td : "/tmp");
        char *rp = realpath(dir_p, NULL), *ra = realpath(dir_a, NULL);
        again = k > 0 && (size_t)k < sizeof alt && !(rp && ra && strcmp(rp, ra) == 0);
        free(rp);
        free(ra);
        if (again) {
            snprintf(path, n, "%s", alt);
            ml_tmp_name(tmp, n, path, stamp);
        }
    }
    ml_bcast(&again, 1, MPI_INT, 0);
    if (!again) return 1;
    err[0] = 0;
    if (!ml_write_tmp(tmp, n, b, mpiio, hlen, off, total, 0, err)) return 0;
    if (ml_world_rank == 0) {
        size_t k = strlen(why);
        snprintf(why + k, nwhy - k, "; %s: %s", path, err[0] ? err : "MPI-IO error");
    }
    return 1;
}

/* ---- step 4: claim the name (rank 0) ---- */

/* Claims final for tmp without replacing an existing file: a hard link, or (where
 * the file system has none) an exclusive create of the name and a rename onto it. */
static int ml_claim_one(const char *tmp, const char *final)
{
    if (link(tmp, final) == 0) return 0;
    if (errno == EEXIST) return -1;
    int fd = open(final, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return errno == EEXIST ? -1 : -2;
    close(fd);
    if (rename(tmp, final) == 0) return 0;
    int e = errno;
    unlink(final);
    errno = e;
    return -2;
}

/* Gives tmp the name path, or path.1, path.2, ... if taken (a compressed name
 * keeps its .gz last: run.prof.gz, run.prof.1.gz, ...): an existing file is
 * never overwritten.  Says where the profile went in one line (after why, the
 * reason it is not where MPILENS_OUTPUT said, if any); on failure keeps tmp
 * (the profile is not lost) and returns nonzero. */
static int ml_claim_name(const char *tmp, const char *path, const char *why)
{
    char final[4400];
    snprintf(final, sizeof final, "%s", path);
    int rc, k = 0;
    size_t n = strlen(path);
    int gz = n > 3 && strcmp(path + n - 3, ".gz") == 0 && path[n - 4] != '/';
    while ((rc = ml_claim_one(tmp, final)) == -1 && ++k <= 999)
        snprintf(final, sizeof final, "%.*s.%d%s", (int)(gz ? n - 3 : n), path, k, gz ? ".gz" : "");
    if (rc != 0) {
        char line[3 * ML_PATH_BUF];
        snprintf(line, sizeof line, "%s%scannot name the profile %s (%s): it is kept as %s", why,
                 why[0] ? "; " : "", path, rc == -1 ? "the name and path.1 .. path.999 are taken" : strerror(errno),
                 tmp);
        fprintf(stderr, "mpilens: %s\n", line);
        ml_report_to("none", line);
        return 1;
    }
    unlink(tmp); /* after a link; gone already after a rename */
    int dfd = -1;
    char dir[4400];
    snprintf(dir, sizeof dir, "%s", final);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = 0;
    dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the name on disk too */
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    char *abs = realpath(final, NULL);
    ml_report_to("profile", abs ? abs : final);
    if (why[0]) fprintf(stderr, "mpilens: cannot write profile %s: profile written to %s instead\n", why,
                        abs ? abs : final);
    else if (!ml_cfg.quiet) fprintf(stderr, "mpilens: profile written to %s\n", abs ? abs : final);
    free(abs);
    return 0;
}

/* rank 0: h's text followed by b's (binary: gzip members), in h */
static void ml_buf_append(ml_buf_t *h, const ml_buf_t *b)
{
    if (!b->n) return;
    if (h->n + b->n + 1 > h->cap) {
        char *p = realloc(h->p, h->n + b->n + 1);
        if (!p) {
            fprintf(stderr, "mpilens: out of memory writing the profile (%zu bytes)\n", h->n + b->n + 1);
            abort();
        }
        h->p = p;
        h->cap = h->n + b->n + 1;
    }
    memcpy(h->p + h->n, b->p, b->n);
    h->n += b->n;
    h->p[h->n] = 0;
}

/* The four steps.  Each rank formats its line first; one exclusive scan of the lines'
 * lengths (recursive doubling, ml_fin_exscan) places them; rank 0 then formats the
 * header, which can so hold the time of every end-of-run step up to its own, and its
 * length reaches the other ranks in the broadcast that names the temporary file. */
int ml_write_profile(void)
{
    ml_profile_t prof;
    ml_profile_reduce(&prof);                                   /* 1. reduce */
    ml_buf_t b = {0};
    char path[ML_PATH_BUF] = {0}, tmp[ML_PATH_BUF] = {0}, stamp[32] = {0}, iso[32] = {0}, job[128] = {0};
    if (ml_world_rank == 0) {                                   /* the name */
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        ml_job_id(job, sizeof job, stamp);
        ml_expand(path, sizeof path, ml_cfg.output, job, stamp, prof.host);
        ml_tmp_name(tmp, sizeof tmp, path, stamp);
    }
    /* compression (profile_gzip.c), its block of ranks and the way of writing: every
     * rank follows rank 0 */
    int plan[3] = {0, 0, 1};
    if (ml_world_rank == 0) {
        plan[0] = ml_profile_compressed(path);
        plan[1] = ml_cfg.writer == ML_WRITE_MPIIO ||
                  (ml_cfg.writer == ML_WRITE_AUTO && ml_world_size > ML_POSIX_WRITE_MAX_RANKS);
        plan[2] = ml_cfg.detail ? ml_cfg.compress_group : 1;
    }
    ml_bcast(plan, 3, MPI_INT, 0);
    ml_fin_mark("plan");
    int gz = plan[0];
    if (ml_cfg.detail) ml_profile_rank_line(&b, &prof);        /* 2. format: the lines */
    int zbad = gz && ml_gzip_block(&b, plan[2]) != 0;          /* a block's lines: one member */
    ml_fin_mark("lines");
    long long off = 0, total = 0, hlen = 0, zfail = 0;
    double t_scan = ml_now_s();
    /* the lines' places; a rank whose compression failed adds ML_GZ_FAILED instead of
     * its length, which rank 0 finds in the total (no extra collective) */
    ml_fin_exscan(zbad ? ML_GZ_FAILED : (long long)b.n, &off, &total);
    if (ml_world_rank == 0 && gz) { /* (a plain profile's total is its size, whatever it is) */
        zfail = total / ML_GZ_FAILED;
        total %= ML_GZ_FAILED;
    }
    prof.fin_offsets_s = ml_now_s() - t_scan;
    ml_fin_mark("offsets");
    if (ml_world_rank == 0) {                                   /* the header, rank 0's text first */
        ml_buf_t h = {0};
        prof.fin_total_s = ml_fin_since("barrier");
        ml_profile_header(&h, &prof, job, iso);
        if (gz && ml_gzip_tail(&h, 0) != 0) zfail++;
        hlen = (long long)h.n;
        total += hlen;
        ml_buf_append(&h, &b);
        ml_buf_free(&b);
        b = h;
    }
    ml_fin_mark("header");
    char why[2 * ML_PATH_BUF + 2 * MPI_MAX_ERROR_STRING] = {0};
    int failed = ml_write_placed(&b, plan[1], hlen, off, total, zfail, path, tmp, sizeof tmp, stamp, why,
                                 sizeof why); /* 3. write */
    ml_fin_mark("write");
    if (ml_world_rank == 0) {                                   /* 4. claim the name */
        if (failed) {
            fprintf(stderr, "mpilens: profile not written: %s\n", why);
            ml_report_to("none", why);
        }
        else failed = ml_claim_name(tmp, path, why);
    }
    ml_bcast(&failed, 1, MPI_INT, 0); /* the partial files stay unless it is named */
    ml_fin_mark("claim");
    ml_buf_free(&b);
    ml_profile_free(&prof);
    ml_fin_comm_free();
    ml_fin_trace();
    return failed;
}
