/* Where the profile goes and who is told: the job id, MPILENS_OUTPUT's path
 * for this process (the profile writer's, the flight recorder's partial
 * directory), and what `mpilens run` is told (MPILENS_REPORT_TO). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"

#define ML_PATH_BUF 4300 /* the profile's path and its temporary name (profile_write.c) */

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
void ml_expand(char *out, size_t n, const char *tmpl, const char *job, const char *stamp, const char *host)
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
 * recorder's partial directory is this path + ".partial", fixed at MPI_Init), and
 * the job id in it into job (jn bytes) */
void ml_output_path(char *out, size_t n, char *job_out, size_t jn)
{
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    char stamp[32], job[128], host[256] = {0};
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
    ml_job_id(job, sizeof job, stamp);
    gethostname(host, sizeof host - 1);
    ml_expand(out, n, ml_cfg.output, job, stamp, host);
    snprintf(job_out, jn, "%s", job);
}

/* ---- what `mpilens run` is told (rank 0) ---- */

void ml_report_to(const char *key, const char *value)
{
    static char partial[4600], result[ML_PATH_BUF * 3];
    const char *to = getenv("MPILENS_REPORT_TO");
    if (!to || !*to || ml_world_rank != 0) return;
    char *slot = strcmp(key, "partial") == 0 ? partial : result;
    size_t cap = slot == partial ? sizeof partial : sizeof result;
    snprintf(slot, cap, "%s\t", key);
    size_t k = strlen(slot);
    for (const char *v = value; *v && k + 2 < cap; v++) /* one line: no newline in a value */
        slot[k++] = *v == '\n' ? ' ' : *v;
    slot[k++] = '\n';
    slot[k] = 0;
    /* `run` made the file with room for the text (a full file system: no new block is
     * needed); it is overwritten from the start in one write, "end" last: `run` reads up
     * to that line only, so it sees a whole report or none */
    char text[sizeof partial + sizeof result + 8];
    int n = snprintf(text, sizeof text, "%s%send\n", partial, result);
    int fd = open(to, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && n > 0 && (off_t)n <= st.st_size)
        if (pwrite(fd, text, (size_t)n, 0) != n)
            fprintf(stderr, "mpilens: cannot tell mpilens run what was written (%s: %s)\n", to, strerror(errno));
    close(fd);
}
