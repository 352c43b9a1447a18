/* Command-line options of mpilens-bench families: `--name value`, `--name=value`
 * or a flag.  Every rank parses the same argv, so every rank reaches the same
 * verdict; ml_usage() prints one line on rank 0 and exits with status 2. */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXOPT 64
static struct { const char *name, *value; int used; } opts[MAXOPT];
static int nopt;
static const char *const flags[] = {"progress", "keep", "raw", NULL};

_Noreturn void ml_usage(const char *fmt, ...)
{
    if (ml_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs("mpilens-bench: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(2);
}

_Noreturn void ml_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mpilens-bench: rank %d: ", ml_rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static int is_flag(const char *name)
{
    for (int i = 0; flags[i]; i++)
        if (!strcmp(flags[i], name)) return 1;
    return 0;
}

void ml_opts_init(int argc, char **argv, int first)
{
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2])
            ml_usage("unexpected argument '%s' (options are --name value)", a);
        if (nopt == MAXOPT) ml_usage("too many options");
        char *name = strdup(a + 2), *eq = strchr(name, '=');
        const char *val = NULL;
        if (eq) { *eq = 0; val = eq + 1; }
        else if (!is_flag(name)) {
            if (i + 1 >= argc) ml_usage("option --%s needs a value", name);
            val = argv[++i];
        }
        for (int k = 0; k < nopt; k++)
            if (!strcmp(opts[k].name, name)) ml_usage("option --%s given twice", name);
        opts[nopt].name = name;
        opts[nopt].value = val ? val : "";
        nopt++;
    }
}

static const char *find(const char *name)
{
    for (int k = 0; k < nopt; k++)
        if (!strcmp(opts[k].name, name)) { opts[k].used = 1; return opts[k].value; }
    return NULL;
}

int ml_opt_given(const char *name)
{
    for (int k = 0; k < nopt; k++)
        if (!strcmp(opts[k].name, name)) return 1;
    return 0;
}

int ml_opt_flag(const char *name) { return find(name) != NULL; }

const char *ml_opt_str(const char *name, const char *def)
{
    const char *v = find(name);
    if (v && !*v) ml_usage("option --%s needs a value", name);
    return v ? v : def;
}

static int parse_size(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0) return -1;
    long long mul = 1;
    if (*end) {
        char u = (char)toupper((unsigned char)*end);
        if (u == 'K') mul = 1LL << 10;
        else if (u == 'M') mul = 1LL << 20;
        else if (u == 'G') mul = 1LL << 30;
        else if (u != 'B') return -1;
        end++;
        if (u != 'B' && (!strcmp(end, "iB") || !strcmp(end, "B") || !strcmp(end, "ib")))
            end += strlen(end);
        if (*end) return -1;
    }
    if (v > (1LL << 40) / mul) return -1;
    *out = v * mul;
    return 0;
}

long long ml_opt_size(const char *name, long long def)
{
    const char *v = ml_opt_str(name, NULL);
    if (!v) return def;
    long long x;
    if (parse_size(v, &x))
        ml_usage("--%s '%s' is not a size (accepted: bytes such as 4096, 4K, 4KiB, 1M)",
                 name, v);
    return x;
}

long long ml_opt_int(const char *name, long long def, long long lo, long long hi)
{
    const char *v = ml_opt_str(name, NULL);
    if (!v) return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        ml_usage("--%s '%s' is invalid (accepted: an integer from %lld to %lld)",
                 name, v, lo, hi);
    return x;
}

unsigned ml_opt_names(const char *name, const char *const *allowed, int n, unsigned def)
{
    const char *v = ml_opt_str(name, NULL);
    if (!v) return def;
    unsigned mask = 0;
    char *copy = strdup(v), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k;
        for (k = 0; k < n; k++)
            if (!strcmp(tok, allowed[k])) break;
        if (k == n) {
            char list[512] = "";
            for (int j = 0; j < n; j++) {
                strncat(list, allowed[j], sizeof list - strlen(list) - 2);
                if (j + 1 < n) strncat(list, ",", sizeof list - strlen(list) - 1);
            }
            ml_usage("--%s: unknown '%s' (accepted: %s)", name, tok, list);
        }
        mask |= 1u << k;
    }
    free(copy);
    if (!mask) ml_usage("--%s is empty", name);
    return mask;
}

int ml_opt_sizes(long long defmin, long long defmax, long long lo, long long hi,
                 long long **out)
{
    long long mn = ml_opt_size("min-size", defmin), mx = ml_opt_size("max-size", defmax);
    if (mn < lo || mx > hi)
        ml_usage("size range %lld..%lld B is out of bounds (accepted: %lld B to %lld B)",
                 mn, mx, lo, hi);
    if (mn > mx)
        ml_usage("--min-size %lld is larger than --max-size %lld", mn, mx);
    long long *s = malloc(64 * sizeof *s);
    int n = 0;
    if (mn == 0) { s[n++] = 0; mn = 1; }
    long long p = 1;
    while (p < mn) p <<= 1;
    for (; p <= mx; p <<= 1) s[n++] = p;
    if (!n) ml_usage("no power-of-two size between --min-size and --max-size");
    *out = s;
    return n;
}

void ml_opts_finish(void)
{
    for (int k = 0; k < nopt; k++)
        if (!opts[k].used)
            ml_usage("unknown option --%s for this family (see docs/bench.md)", opts[k].name);
}
