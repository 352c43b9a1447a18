/* Profile steps 3 and 4, write and claim the name (profile.h), and
 * ml_write_profile, which runs the four steps at MPI_Finalize.
 *
 * Each rank's text is placed by MPI_Exscan and written with one collective
 * MPI_File_write_at_all under a temporary name; rank 0 then links it to the
 * final name, which is never overwritten (name, name.1, ...).  A crash leaves
 * at most a temporary file, never a half profile under the final name. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

/* ---- names ---- */

void ml_job_id(char *out, size_t n, const char *stamp)
{
    const char *vars[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "COBALT_JOBID", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            snprintf(out, n, "%s", v);
            return;
        }
    }
    snprintf(out, n, "%s-%d", stamp, (int)getpid());
}

/* MPILENS_OUTPUT's template with its placeholders (checked in config.c) replaced */
static void ml_expand(char *out, size_t n, const char *tmpl, const char *job, const char *stamp, const char *host)
{
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < n; p++) {
        if (*p != '%') { out[k++] = *p; continue; }
        p++;
        char tmp[64];
        const char *rep = "%";
        if (*p == 'j') rep = job;
        else if (*p == 't') rep = stamp;
        else if (*p == 'h') rep = host;
        else if (*p == 'p') { snprintf(tmp, sizeof tmp, "%d", (int)getpid()); rep = tmp; }
        k += (size_t)snprintf(out + k, n - k, "%s", rep);
        if (k >= n) k = n - 1;
    }
    out[k] = 0;
}

/* MPILENS_OUTPUT's path for a profile written now by this process (the flight
 * recorder's partial directory is this path + ".partial", fixed at MPI_Init). */
void ml_output_path(char *out, size_t n)
{
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    char stamp[32], job[128], host[256] = {0};
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
    ml_job_id(job, sizeof job, stamp);
    gethostname(host, sizeof host - 1);
    ml_expand(out, n, ml_cfg.output, job, stamp, host);
}

/* ---- step 3: write ---- */

/* Collective: every rank's text at its offset into the new file tmp.  0 ok,
 * else 1 (on every rank) with the MPI error text in err on the failing ranks. */
static int ml_write_file(const char *tmp, const ml_buf_t *b, MPI_Offset off, char *err)
{
    MPI_File fh;
    int rc = PMPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    int bad = rc != MPI_SUCCESS, anybad = 0, len = 0;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad) {
        if (bad) PMPI_Error_string(rc, err, &len);
        else PMPI_File_close(&fh);
        return 1;
    }
    size_t done = 0;
    rc = MPI_SUCCESS;
    /* write_at_all takes an int count: loop in 1 GiB pieces (all ranks the same number of rounds) */
    unsigned long long rounds = (b->n + (1u << 30) - 1) >> 30, maxr = 0;
    PMPI_Allreduce(&rounds, &maxr, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    for (unsigned long long r = 0; r < (maxr ? maxr : 1); r++) {
        size_t piece = b->n - done > (1u << 30) ? (1u << 30) : b->n - done;
        MPI_Status st;
        int rr = PMPI_File_write_at_all(fh, off + (MPI_Offset)done, b->p ? b->p + done : "", (int)piece,
                                        MPI_CHAR, &st);
        if (rr != MPI_SUCCESS) rc = rr;
        done += piece;
    }
    int rcs = PMPI_File_sync(fh); /* collective: every rank's part on disk before the rename */
    if (rc == MPI_SUCCESS) rc = rcs;
    int rc2 = PMPI_File_close(&fh);
    if (rc == MPI_SUCCESS) rc = rc2;
    bad = rc != MPI_SUCCESS;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad) PMPI_Error_string(rc, err, &len);
    return anybad;
}

/* Collective: writes under rank 0's temporary name tmp; if the directory
 * refuses, under the same name in $TMPDIR (or /tmp), with one line, and then
 * path and tmp name that place.  0 ok. */
static int ml_write_placed(const ml_buf_t *b, char *path, char *tmp, size_t n, char *err)
{
    long long mylen = (long long)b->n, off = 0;
    PMPI_Exscan(&mylen, &off, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (ml_world_rank == 0) off = 0;
    PMPI_Bcast(tmp, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!ml_write_file(tmp, b, (MPI_Offset)off, err)) return 0;
    /* The directory may be unwritable: fall back to $TMPDIR so the profile is not lost. */
    if (ml_world_rank == 0) {
        char alt[4300];
        const char *td = getenv("TMPDIR");
        const char *base = strrchr(tmp, '/');
        snprintf(alt, sizeof alt, "%s/%s", td && *td ? td : "/tmp", base ? base + 1 : tmp);
        fprintf(stderr, "mpilens: cannot write profile %s: %s\n", path, err[0] ? err : "MPI-IO error");
        snprintf(tmp, n, "%s", alt);
        char *dot = strstr(alt, ".tmp-");
        if (dot) *dot = 0;
        snprintf(path, n, "%s", alt);
    }
    PMPI_Bcast(tmp, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
    return ml_write_file(tmp, b, (MPI_Offset)off, err);
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

/* Gives tmp the name path, or path.1, path.2, ... if taken: an existing file is
 * never overwritten.  Says where the profile went; on failure keeps tmp (the
 * profile is not lost) and returns nonzero. */
static int ml_claim_name(const char *tmp, const char *path)
{
    char final[4400];
    snprintf(final, sizeof final, "%s", path);
    int rc, k = 0;
    while ((rc = ml_claim_one(tmp, final)) == -1 && ++k <= 999)
        snprintf(final, sizeof final, "%s.%d", path, k);
    if (rc != 0) {
        fprintf(stderr, "mpilens: cannot name the profile %s (%s): it is kept as %s\n", path,
                rc == -1 ? "the name and path.1 .. path.999 are taken" : strerror(errno), tmp);
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
    if (!ml_cfg.quiet) fprintf(stderr, "mpilens: profile written to %s\n", abs ? abs : final);
    free(abs);
    return 0;
}

int ml_write_profile(void)
{
    ml_profile_t prof;
    ml_profile_reduce(&prof);                                   /* 1. reduce */
    ml_buf_t b = {0};
    char path[4300] = {0}, tmp[4300] = {0};
    if (ml_world_rank == 0) {                                   /* 2. format (and name) */
        time_t now = time(NULL);
        struct tm tmv;
        gmtime_r(&now, &tmv);
        char stamp[32], iso[32], job[128];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        ml_job_id(job, sizeof job, stamp);
        ml_expand(path, sizeof path, ml_cfg.output, job, stamp, prof.host);
        snprintf(tmp, sizeof tmp, "%s.tmp-%s-%d", path, stamp, (int)getpid());
        ml_profile_header(&b, &prof, job, iso);
    }
    /* compression (profile_gzip.c): every rank decides alike from rank 0's path */
    int gz = ml_world_rank == 0 ? ml_profile_compressed(path) : 0;
    PMPI_Bcast(&gz, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (gz) ml_gzip_tail(&b, 0);
    size_t mark = b.n;
    if (ml_cfg.detail) ml_profile_rank_line(&b, &prof);
    if (gz) ml_gzip_tail(&b, mark);
    char err[MPI_MAX_ERROR_STRING + 1] = {0};
    int failed = ml_write_placed(&b, path, tmp, sizeof tmp, err); /* 3. write */
    if (ml_world_rank == 0) {                                   /* 4. claim the name */
        if (failed) fprintf(stderr, "mpilens: profile not written: %s\n", err[0] ? err : "MPI-IO error");
        else failed = ml_claim_name(tmp, path);
    }
    PMPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD); /* the partial files stay unless it is named */
    ml_buf_free(&b);
    ml_profile_free(&prof);
    return failed;
}
