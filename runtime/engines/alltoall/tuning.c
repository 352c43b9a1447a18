/* The tuning file (MPILENS_TUNING_FILE): learned Alltoall choices that a later
 * run uses directly (no Grouping, no Learning).
 *
 * Text, tab-separated, one entry per line:
 *
 *   mpilens-tuning<TAB>1
 *   # comment lines and blank lines are ignored
 *   <machine><TAB><comm_size><TAB><ranks_per_node><TAB><min_bytes><TAB><max_bytes><TAB><algorithm><TAB><time_s>
 *
 * min/max_bytes: inclusive range of the per-block message size (the
 * power-of-two class holding the size that was learned).  The machine
 * signature is ml_machine_signature() (the setting MPILENS_MACHINE, in the
 * environment or the config file, overrides it).  Written atomically: a
 * temporary file in the same directory, then rename().
 */
#define _DEFAULT_SOURCE
#include "alltoall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER "mpilens-tuning\t1"

static void strip_nl(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
}

static int parse_ll(const char *s, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *v = x;
    return 0;
}

int ml_tune_parse(const char *path, ml_tune_entry *tab, int max, int *n, char *err, size_t errlen)
{
    ml_buf_t why = {0};
    errno = 0;
    FILE *f = ml_open_regular(path, &why); /* a FIFO or a directory is never read */
    *n = 0;
    if (!f) {
        int missing = errno == ENOENT;
        if (!missing)
            snprintf(err, errlen, "cannot be read (%s)", why.p);
        ml_buf_free(&why);
        return missing ? -1 : -2;
    }
    char line[1024];
    int lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "line %d is too long", lineno);
            rc = -2;
            break;
        }
        strip_nl(line);
        if (lineno == 1) {
            if (strcmp(line, HEADER) != 0) {
                snprintf(err, errlen, "line 1 is not the header 'mpilens-tuning<TAB>1'");
                rc = -2;
                break;
            }
            continue;
        }
        if (line[0] == 0 || line[0] == '#')
            continue;
        char *field[8];
        int nf = 0;
        char *p = line;
        while (nf < 8) {
            field[nf++] = p;
            char *t = strchr(p, '\t');
            if (!t)
                break;
            *t = 0;
            p = t + 1;
        }
        long long cs, rpn, lo, hi;
        char *end;
        double ts = 0;
        if (nf != 7) {
            snprintf(err, errlen, "line %d has %d fields, expected 7 tab-separated fields "
                     "(machine, comm_size, ranks_per_node, min_bytes, max_bytes, algorithm, time_s)",
                     lineno, nf);
            rc = -2;
            break;
        }
        if (parse_ll(field[1], &cs) || cs < 1 || parse_ll(field[2], &rpn) || rpn < 1 ||
            parse_ll(field[3], &lo) || lo < 0 || parse_ll(field[4], &hi) || hi < lo) {
            snprintf(err, errlen, "line %d: comm_size, ranks_per_node must be positive integers "
                     "and 0 <= min_bytes <= max_bytes", lineno);
            rc = -2;
            break;
        }
        int alg = ml_a2a_find(field[5]);
        if (alg < 0) {
            snprintf(err, errlen, "line %d: unknown algorithm '%.40s'", lineno, field[5]);
            rc = -2;
            break;
        }
        errno = 0;
        ts = strtod(field[6], &end);
        if (errno || end == field[6] || *end || !(ts >= 0)) {
            snprintf(err, errlen, "line %d: time_s '%.40s' is not a non-negative number", lineno,
                     field[6]);
            rc = -2;
            break;
        }
        if (strlen(field[0]) == 0 || strlen(field[0]) >= sizeof tab[0].machine) {
            snprintf(err, errlen, "line %d: machine signature empty or longer than %zu characters",
                     lineno, sizeof tab[0].machine - 1);
            rc = -2;
            break;
        }
        if (*n >= max)
            continue; /* more than we keep: ignore the rest */
        ml_tune_entry *e = &tab[(*n)++];
        snprintf(e->machine, sizeof e->machine, "%s", field[0]);
        e->comm_size = (int)cs;
        e->ranks_per_node = (int)rpn;
        e->lo = lo;
        e->hi = hi;
        e->alg = alg;
        e->time_s = ts;
    }
    if (rc == 0 && lineno == 0) {
        snprintf(err, errlen, "is empty (expected the header 'mpilens-tuning<TAB>1')");
        rc = -2;
    }
    fclose(f);
    return rc;
}

int ml_a2a_write_atomic(const char *path, const char *text, size_t n)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int bad = fwrite(text, 1, n, f) != n;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        bad = 1;
    if (fclose(f) != 0)
        bad = 1;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int ml_tune_write(const char *path, const ml_tune_entry *tab, int n)
{
    ml_buf_t b = {0};
    ml_buf_printf(&b, "%s\n", HEADER);
    ml_buf_printf(&b, "# machine\tcomm_size\tranks_per_node\tmin_bytes\tmax_bytes\talgorithm\ttime_s\n");
    for (int i = 0; i < n; i++)
        ml_buf_printf(&b, "%s\t%d\t%d\t%lld\t%lld\t%s\t%.9g\n", tab[i].machine, tab[i].comm_size,
                      tab[i].ranks_per_node, tab[i].lo, tab[i].hi, ml_a2a_names[tab[i].alg],
                      tab[i].time_s);
    int rc = ml_a2a_write_atomic(path, b.p, b.n);
    ml_buf_free(&b);
    return rc;
}

void ml_tune_range(size_t m, long long *lo, long long *hi)
{
    if (m == 0) {
        *lo = *hi = 0;
        return;
    }
    long long p = 1;
    while ((size_t)(p * 2) <= m)
        p *= 2;
    *lo = p;
    *hi = 2 * p - 1;
}

static void clean(char *s)
{
    for (; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r' || *s == '|')
            *s = ' ';
}

void ml_machine_signature(char *buf, size_t len, const char *given)
{
    if (given) {
        snprintf(buf, len, "%s", given);
        clean(buf);
        return;
    }
    char cpu[128] = "unknown-cpu", host[128] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ')
                        c++;
                    snprintf(cpu, sizeof cpu, "%s", c);
                    strip_nl(cpu);
                }
                break;
            }
        }
        fclose(f);
    }
    gethostname(host, sizeof host - 1);
    /* host "stem": strip the domain and the node number (node012.x -> node) */
    char *dot = strchr(host, '.');
    if (dot)
        *dot = 0;
    size_t hl = strlen(host);
    while (hl && ((host[hl - 1] >= '0' && host[hl - 1] <= '9') || host[hl - 1] == '-'))
        host[--hl] = 0;
    int ll = 0;
    PMPI_Get_library_version(lib, &ll);
    lib[strcspn(lib, ",\n")] = 0; /* "Open MPI v4.1.4" / "MPICH Version: 4.0.2" */
    lib[48] = 0;
    clean(cpu);
    clean(host);
    clean(lib);
    snprintf(buf, len, "%s|%s|%ld cpus|%s", host, cpu, sysconf(_SC_NPROCESSORS_ONLN), lib);
    for (char *s = buf; *s; s++)
        if (*s == ' ' && s[1] == ' ')
            memmove(s, s + 1, strlen(s));
}

int ml_tune_lookup(int P, int rpn, long long bytes)
{
    for (int i = 0; i < ml_a2a.tune_n; i++) {
        const ml_tune_entry *t = &ml_a2a.tune_tab[i];
        if (t->comm_size == P && t->ranks_per_node == rpn && bytes >= t->lo && bytes <= t->hi &&
            strcmp(t->machine, ml_a2a.machine) == 0)
            return t->alg;
    }
    return -1;
}

void ml_tune_save(void)
{
    int added = 0;
    for (int i = 0; i < ml_a2a.n_all_recs; i++) {
        const double *r = ml_a2a.all_recs + (size_t)i * R_NFIELD;
        if (r[R_SRC] != SRC_LEARNED || r[R_REF] < 0 || r[R_ALG] < 0)
            continue;
        ml_tune_entry ne;
        memset(&ne, 0, sizeof ne);
        snprintf(ne.machine, sizeof ne.machine, "%s", ml_a2a.machine);
        ne.comm_size = (int)r[R_P];
        ne.ranks_per_node = (int)r[R_RPN];
        ml_tune_range((size_t)r[R_BYTES], &ne.lo, &ne.hi);
        ne.alg = (int)r[R_ALG];
        ne.time_s = r[R_REF];
        int j;
        for (j = 0; j < ml_a2a.tune_n; j++) {
            ml_tune_entry *t = &ml_a2a.tune_tab[j];
            if (t->comm_size == ne.comm_size && t->ranks_per_node == ne.ranks_per_node &&
                t->lo == ne.lo && t->hi == ne.hi && strcmp(t->machine, ne.machine) == 0)
                break;
        }
        if (j == ml_a2a.tune_n) {
            if (ml_a2a.tune_n >= ML_TUNE_MAX)
                continue;
            ml_a2a.tune_n++;
        }
        ml_a2a.tune_tab[j] = ne;
        added++;
    }
    if (added && ml_tune_write(ml_a2a.tune_path, ml_a2a.tune_tab, ml_a2a.tune_n) != 0)
        fprintf(stderr, "mpilens: could not write the tuning file '%s'\n", ml_a2a.tune_path);
}
