/* The profiler core's settings (its own rows, which write ml_cfg only), the
 * list of every part's table that runtime/common/settings.c reads together
 * (the core's, each record kind's, the flight recorder's, each engine's: a
 * part's rows write its own file's variables), the function mask they
 * select, and `mpilens config`'s view of them (mpilens_settings_json). */
#define _GNU_SOURCE
#include <ctype.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ml.h"
#include "engine.h"


static const char *const timing_choices[] = {"sampled", "all", NULL};
static const char *const clock_choices[] = {"auto", "tsc", "monotonic", NULL};
static const char *const compress_choices[] = {"auto", "gzip", "off", NULL};
static const char *const write_choices[] = {"auto", "posix", "mpiio", NULL};

/* The default output: compressed (profile_gzip.c: auto compresses a name ending
 * in .gz); with MPILENS_COMPRESS=off and no output given, the plain name. A
 * given output keeps its name whatever MPILENS_COMPRESS says. */
static const char default_output[] = "mpilens-%j.prof.gz";
static const char default_output_plain[] = "mpilens-%j.prof";

/* ml_config_load's leader (rank 0, or `mpilens config`): the only process that
 * looks at the file system for the output path */
static int cfg_leader;

/* output: a path whose % placeholders are known, at most PATH_MAX - 1
 * characters, and not an existing directory, device or other non-regular file
 * (checked by the leader: the name is the same on every rank) */
static int parse_output(const char *v, void *out, ml_buf_t *why)
{
    int literal = 1;
    for (const char *p = v; *p; p++)
        if (*p == '%') {
            if (!*++p || !strchr("jtph%", *p)) {
                ml_buf_printf(why, "unknown placeholder '%%%.1s'", p);
                return -1;
            }
            literal &= *p == '%';
        }
    size_t n = strlen(v);
    if (n >= PATH_MAX) {
        ml_buf_printf(why, "it is %zu characters long, the limit is %d", n, PATH_MAX - 1);
        return -1;
    }
    for (const char *c = v; *c;) { /* each name in the path within NAME_MAX */
        size_t len = strcspn(c, "/");
        if (len > NAME_MAX) {
            ml_buf_printf(why, "a name in it is %zu characters long, the limit is %d", len, NAME_MAX);
            return -1;
        }
        c += len + (c[len] == '/');
    }
    if (cfg_leader && n && v[n - 1] == '/') {
        ml_buf_printf(why, "it names a directory; give a file name in it, such as %smpilens-%%j.prof.gz", v);
        return -1;
    }
    struct stat st;
    char lit[PATH_MAX];
    size_t k = 0;
    for (const char *p = v; *p; p++) lit[k++] = *p == '%' ? *++p : *p; /* %% -> % */
    lit[k] = 0;
    if (cfg_leader && literal && stat(lit, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            ml_buf_printf(why, "it is a directory; give a file name in it, such as %s/mpilens-%%j.prof.gz", v);
        else
            ml_buf_printf(why, "it exists and is not a regular file (a device, FIFO or socket); "
                               "MPILENS_PROFILE=off writes no profile");
        return -1;
    }
    *(const char **)out = v;
    return 0;
}

/* include / exclude: names or globs; a plain name must be an MPI function */
static int parse_functions(const char *v, void *out, ml_buf_t *why)
{
    *(const char **)out = v;
    if (!v)
        return 0;
    char *copy = strdup(v), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *t = copy ? strtok_r(copy, ", \t\n", &save) : NULL; t && !rc; t = strtok_r(NULL, ", \t\n", &save)) {
        int hit = strpbrk(t, "*?[") != NULL;
        for (int i = 1; i < ML_NFUNC && !hit; i++)
            hit = fnmatch(t, ml_func_name[i], FNM_CASEFOLD) == 0;
        if (!hit) {
            ml_buf_printf(why, "no MPI function named '%s'", t);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

#define FUNCS_ACCEPTED "comma- or space-separated MPI function names or globs such as MPI_Send, " \
                       "MPI_*reduce* (any case)"
#define ML_CFG_STR_(x) #x
#define ML_CFG_STR(x) ML_CFG_STR_(x) /* a schema constant as a default's text */
static const ml_setting core_settings[] = {
    {.key = "output", .type = ML_SET_CUSTOM, .def = default_output, .parse = parse_output,
     .out = &ml_cfg.output,
     .accepted = "a file path of at most 4095 characters, not an existing directory, device or "
                 "other non-regular file; placeholders %j job id, %t UTC time, %p pid of rank 0, "
                 "%h host of rank 0, %% a percent sign",
     .help = "where the profile goes (gzip-compressed by default; with MPILENS_COMPRESS=off "
             "and no output given, mpilens-%j.prof, plain). %j is SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID, else "
             "<UTC time>-<pid of rank 0>; %t is YYYYmmdd-HHMMSS. An existing file is never "
             "overwritten: the profile then goes to <path>.1, <path>.2, ... (before a final .gz: "
             "run.prof.1.gz). If the profile cannot "
             "be written there (directory missing or read-only, file system full), it goes to "
             "$TMPDIR (or /tmp) under the same file name, else nowhere, with one line saying so; "
             "the application's exit status is kept. A directory (/tmp, or a path ending in /) "
             "or a device (/dev/null) is refused at MPI_Init: MPILENS_PROFILE=off writes no "
             "profile. See docs/runtime.md, Writing the profile."},
    {.key = "include", .type = ML_SET_CUSTOM, .unset = "all functions", .flags = ML_SET_BARE,
     .parse = parse_functions, .out = &ml_cfg.include, .accepted = FUNCS_ACCEPTED,
     .help = "record only these. In the config file, lines holding only a function name or "
             "glob are an include list too, as in MPIPROF's configuration file."},
    {.key = "exclude", .type = ML_SET_CUSTOM, .unset = "none", .parse = parse_functions,
     .out = &ml_cfg.exclude, .accepted = FUNCS_ACCEPTED,
     .help = "do not record these (applied after include)"},
    {.key = "detail", .type = ML_SET_BOOL, .def = "on", .out = &ml_cfg.detail,
     .accepted = "on or off (also 1/0, yes/no, true/false)",
     .help = "per-rank lines in the profile; off keeps only the cross-rank aggregates of the header"},
    {.key = "compress", .type = ML_SET_CHOICE, .def = "auto", .choices = compress_choices,
     .out = &ml_cfg.compress, .accepted = "auto, gzip or off",
     .help = "gzip: the profile is gzip-compressed (in blocks of MPILENS_COMPRESS_GROUP ranks; the file "
             "is one .gz stream that gunzip, zcat and mpilens read); off: plain JSON Lines; "
             "auto: gzip when the output path ends in .gz (the default output does; off with no "
             "output given: the plain default name mpilens-%j.prof)"},
    {.key = "compress_group", .type = ML_SET_INT, .def = "16", .lo = 1, .hi = 65536,
     .out = &ml_cfg.compress_group, .accepted = "an integer from 1 to 65536",
     .help = "compressed profiles: the lines of each block of this many consecutive ranks "
             "become one gzip member, compressed by the block's first rank (the others send it "
             "their lines at MPI_Finalize), which lets zlib find what neighbouring ranks' lines "
             "repeat; a line over 64 KB is compressed by its own rank; 1: one member per rank "
             "line (docs/profile-format.md, Compression)"},
    {.key = "write", .type = ML_SET_CHOICE, .def = "auto", .choices = write_choices,
     .out = &ml_cfg.writer, .accepted = "auto, posix or mpiio",
     .help = "how the ranks write their lines into the profile: posix, each rank with pwrite at "
             "its offset; mpiio, one collective MPI_File_write_at_all; auto: posix up to 1024 "
             "ranks, mpiio above (docs/scale.md)"},
    {.key = "profile", .type = ML_SET_BOOL, .def = "on", .out = &ml_cfg.profile,
     .accepted = "on or off (also 1/0, yes/no, true/false)",
     .help = "off: no recording and no profile (the engines still work)"},
    {.key = "timing", .type = ML_SET_CHOICE, .def = "sampled", .choices = timing_choices,
     .out = &ml_cfg.timing, .accepted = "sampled or all",
     .help = "all times every call. sampled counts every call and its bytes exactly but reads "
             "the clock for every call only during a function's first 32 calls on a thread and "
             "while its calls average over 2 us (the longest left out); otherwise 1 call in 16, "
             "and the calls not timed count at the mean of those 1-in-16 samples (timed_calls in "
             "the profile says how many were measured). See docs/runtime.md."},
    {.key = "time_above_ns", .type = ML_SET_INT, .def = ML_CFG_STR(ML_ALWAYS_TIME_ABOVE_NS), .lo = 1, .hi = 1000000000,
     .out = &ml_cfg.time_above_ns, .accepted = "an integer from 1 to 1000000000",
     .help = "sampled timing: a function whose timed calls average above this many ns has every "
             "call timed (the longest left out). The instruction benchmark (docs/bench.md, instr) "
             "raises it so that calls slowed down by valgrind are timed as often as natively."},
    {.key = "clock", .type = ML_SET_CHOICE, .def = "auto", .choices = clock_choices,
     .out = &ml_cfg.clock, .accepted = "auto, tsc or monotonic",
     .help = "auto/tsc: invariant TSC calibrated against CLOCK_MONOTONIC when the CPU has one, "
             "else clock_gettime; monotonic forces clock_gettime(CLOCK_MONOTONIC)"},
    {.key = "max_threads", .type = ML_SET_INT, .def = "64", .lo = 1, .hi = 4096,
     .out = &ml_cfg.max_threads, .accepted = "an integer from 1 to 4096",
     .help = "threads that get their own lock-free records; further threads share one record "
             "set under a lock (counts and bytes stay exact; their calls serialise on it; no "
             "in-flight state for the flight recorder)"},
    {.key = "max_requests", .type = ML_SET_INT, .def = "4096", .lo = 64, .hi = 16777216,
     .flags = ML_SET_POW2, .out = &ml_cfg.max_requests,
     .accepted = "an integer from 64 to 16777216 that is a power of two",
     .help = "per-thread table of pending requests (56 bytes each): receives, persistent requests, and for the flight recorder sends and collectives; "
             "requests beyond 3/4 of it are counted as untracked_requests"},
    {.key = "quiet", .type = ML_SET_FLAG, .unset = "rank 0 prints where the profile went",
     .out = &ml_cfg.quiet, .accepted = "any value, even empty",
     .help = "rank 0 does not print 'mpilens: profile written to ...'"},
    {0}};

/* Read by the settings loader only (the config file) and by mpilens-exec. */
static const ml_setting file_settings[] = {
    {.key = "config", .type = ML_SET_FILE, .unset = "no config file",
     .flags = ML_SET_ENV_ONLY | ML_SET_CONFIG, .out = &ml_cfg.config,
     .accepted = "a readable regular file of 'key = value' lines",
     .help = "the config file (environment only): one 'key = value' per line, keys as in this "
             "table, '#' starts a comment"},
    {.key = "lib", .type = ML_SET_TEXT, .unset = "the library mpilens-exec was built with",
     .flags = ML_SET_ENV_ONLY | ML_SET_NOT_READ, .accepted = "a path to libmpilens.so",
     .help = "read by mpilens-exec only: which libmpilens.so to preload"},
    {0}};

/* The core's rows, every module's (modules_list.h: the record kinds', the flight
 * recorder's), the file's, then every registered engine's (malloc'd; *n parts).
 * Each part's rows write variables of the file that owns the part. */
static ml_setting_part *parts(int *n)
{
    int ne = 0;
    while (ml_engines[ne])
        ne++;
    ml_setting_part *p = malloc(sizeof *p * (size_t)(ne + ML_NMODULES + 2));
    if (!p)
        return NULL;
    int k = 0;
    p[k++] = (ml_setting_part){"profiler", core_settings};
    k += ml_modules_settings(p + k, ML_NMODULES);
    p[k++] = (ml_setting_part){"profiler", file_settings};
    for (int i = 0; i < ne; i++)
        p[k++] = (ml_setting_part){ml_engines[i]->name, ml_engines[i]->settings};
    *n = k;
    return p;
}

/* Names or globs into the function mask. */
static void apply_list(const char *list, unsigned char val)
{
    char *copy = strdup(list), *save = NULL;
    for (char *t = copy ? strtok_r(copy, ", \t\n", &save) : NULL; t; t = strtok_r(NULL, ", \t\n", &save))
        for (int i = 1; i < ML_NFUNC; i++)
            if (fnmatch(t, ml_func_name[i], FNM_CASEFOLD) == 0)
                ml_fon[i] = val;
    free(copy);
}

int ml_config_load(ml_buf_t *err, int leader)
{
    int n = 0;
    cfg_leader = leader;
    ml_setting_part *p = parts(&n);
    int rc = p ? ml_settings_load(p, n, 1, err) : -1;
    if (!p)
        ml_buf_printf(err, "mpilens: out of memory reading the settings");
    free(p);
    if (rc != 0)
        return -1;
    /* the default (not given: the loader kept the table's own string) */
    if (ml_cfg.output == default_output && ml_cfg.compress == ML_COMPRESS_OFF)
        ml_cfg.output = default_output_plain;
    for (int i = 0; leader && ml_engines[i]; i++)
        if (ml_engines[i]->check && ml_engines[i]->check(err) != 0)
            return -1;
    memset(ml_fon, ml_cfg.include ? 0 : 1, sizeof ml_fon);
    if (ml_cfg.include)
        apply_list(ml_cfg.include, 1);
    if (ml_cfg.exclude)
        apply_list(ml_cfg.exclude, 0);
    ml_fon[0] = 0;
    return 0;
}

/* `mpilens config`: the settings in force for this process's environment and
 * config file, as MPI_Init would read them, without MPI: a JSON object
 * {"error": line or null, "config": ..., "settings": [...]} (malloc'd; free
 * with mpilens_free). */
__attribute__((visibility("default"))) char *mpilens_settings_json(void)
{
    ml_buf_t err = {0}, b = {0};
    ml_config_load(&err, 1);
    ml_buf_printf(&b, "{\"error\":");
    if (err.n)
        ml_buf_json_str(&b, err.p);
    else
        ml_buf_printf(&b, "null");
    ml_buf_printf(&b, ",");
    ml_settings_json(&b);
    ml_buf_printf(&b, "}");
    ml_buf_free(&err);
    return b.p;
}

__attribute__((visibility("default"))) void mpilens_free(void *p) { free(p); }
