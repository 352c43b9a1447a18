/* Configuration: MPILENS_* environment variables and an optional config file
 * (MPILENS_CONFIG).  The environment wins over the file.  Every value is
 * checked at MPI_Init; a bad one stops the job with one line naming the
 * variable, the value and what is accepted (docs/configuration.md). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ml.h"

int ml_cfg_detail = 1, ml_cfg_profile = 1, ml_cfg_max_threads = 64, ml_cfg_max_requests = 4096, ml_cfg_sample = 1;
const char *ml_cfg_output = "mpilens-%j.prof";
char ml_config_error[512];

#define ML_MAXKV 64
static struct { char key[64]; char *val; } ml_file_kv[ML_MAXKV];
static int ml_nkv = 0;
static char *ml_file_funcs = NULL; /* bare function names in the file: an include list */

/* Keys the config file may hold (lower case; engines own the ones with a prefix). */
static const char *const ml_known[] = {"output", "include", "exclude", "detail", "profile", "clock", "timing",
                                       "max_threads", "max_requests", NULL};
static const char *const ml_engine_prefix[] = {"alltoall", "repro", "tuning_file", "machine",
                                                  "network_model", NULL};

const char *ml_config_get(const char *key)
{
    char env[96];
    snprintf(env, sizeof env, "MPILENS_%s", key);
    for (char *p = env; *p; p++) *p = (char)toupper((unsigned char)*p);
    const char *v = getenv(env);
    if (v) return v;
    for (int i = 0; i < ml_nkv; i++)
        if (strcasecmp(ml_file_kv[i].key, key) == 0) return ml_file_kv[i].val;
    return NULL;
}

static int ml_err(const char *key, const char *val, const char *accepted)
{
    char env[96];
    snprintf(env, sizeof env, "MPILENS_%s", key);
    for (char *p = env; *p; p++) *p = (char)toupper((unsigned char)*p);
    snprintf(ml_config_error, sizeof ml_config_error, "mpilens: %s='%s' is invalid: %s", env, val, accepted);
    return 1;
}

static char *ml_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int ml_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return ml_err("config", path, strerror(errno)), 1;
    char line[4096];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *h = strchr(line, '#');
        if (h) *h = 0;
        char *s = ml_trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) { /* MPIPROF style: a function name or glob per line = record it */
            size_t old = ml_file_funcs ? strlen(ml_file_funcs) : 0;
            char *n = realloc(ml_file_funcs, old + strlen(s) + 2);
            if (!n) break;
            if (!old) n[0] = 0;
            ml_file_funcs = n;
            strcat(strcat(ml_file_funcs, old ? "," : ""), s);
            continue;
        }
        *eq = 0;
        char *k = ml_trim(s), *v = ml_trim(eq + 1);
        int ok = 0;
        for (int i = 0; ml_known[i]; i++) ok |= strcasecmp(k, ml_known[i]) == 0;
        for (int i = 0; ml_engine_prefix[i]; i++) ok |= strncasecmp(k, ml_engine_prefix[i], strlen(ml_engine_prefix[i])) == 0;
        if (!ok || ml_nkv == ML_MAXKV) {
            snprintf(ml_config_error, sizeof ml_config_error,
                     "mpilens: MPILENS_CONFIG='%s': unknown key '%s' at line %d: expected output, include, "
                     "exclude, detail, profile, clock, timing, max_threads, max_requests, alltoall*, repro*, tuning_file, machine, network_model",
                     path, k, lineno);
            fclose(f);
            return 1;
        }
        snprintf(ml_file_kv[ml_nkv].key, sizeof ml_file_kv[ml_nkv].key, "%s", k);
        ml_file_kv[ml_nkv].val = strdup(v);
        ml_nkv++;
    }
    fclose(f);
    return 0;
}

static int ml_onoff(const char *key, int *out)
{
    const char *v = ml_config_get(key);
    if (!v) return 0;
    if (!strcasecmp(v, "on") || !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true")) *out = 1;
    else if (!strcasecmp(v, "off") || !strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false")) *out = 0;
    else return ml_err(key, v, "expected on or off (also 1/0, yes/no, true/false)");
    return 0;
}

static int ml_int(const char *key, int lo, int hi, int pow2, int *out)
{
    const char *v = ml_config_get(key);
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    char acc[128];
    snprintf(acc, sizeof acc, "expected an integer from %d to %d%s", lo, hi, pow2 ? " that is a power of two" : "");
    if (errno || end == v || *ml_trim(end) || x < lo || x > hi || (pow2 && (x & (x - 1))))
        return ml_err(key, v, acc);
    *out = (int)x;
    return 0;
}

/* Apply a list of names/globs to the function mask; a plain name must exist. */
static int ml_apply_list(const char *key, const char *list, unsigned char val)
{
    char *copy = strdup(list), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(copy, ", \t\n", &save); t; t = strtok_r(NULL, ", \t\n", &save)) {
        int glob = strpbrk(t, "*?[") != NULL, hit = 0;
        for (int i = 1; i < ML_NFUNC; i++)
            if (fnmatch(t, ml_func_name[i], FNM_CASEFOLD) == 0) {
                ml_fon[i] = val;
                hit = 1;
            }
        if (!hit && !glob) {
            char acc[256];
            snprintf(acc, sizeof acc, "no MPI function named '%s' (expected MPI function names or globs such as MPI_Send, MPI_*reduce*)", t);
            rc = ml_err(key, list, acc);
            break;
        }
    }
    free(copy);
    return rc;
}

int ml_config_load(void)
{
    const char *cf = getenv("MPILENS_CONFIG");
    if (cf && *cf && ml_read_file(cf)) return 1;
    if (ml_onoff("detail", &ml_cfg_detail) || ml_onoff("profile", &ml_cfg_profile)) return 1;
    if (ml_int("max_threads", 1, 4096, 0, &ml_cfg_max_threads)) return 1;
    if (ml_int("max_requests", 64, 1 << 24, 1, &ml_cfg_max_requests)) return 1;
    const char *clk = ml_config_get("clock");
    if (clk && strcmp(clk, "auto") && strcmp(clk, "tsc") && strcmp(clk, "monotonic"))
        return ml_err("clock", clk, "expected auto, tsc or monotonic");
    const char *tmg = ml_config_get("timing");
    if (tmg && strcmp(tmg, "sampled") && strcmp(tmg, "all"))
        return ml_err("timing", tmg, "expected sampled or all");
    if (tmg) ml_cfg_sample = strcmp(tmg, "sampled") == 0;
    const char *out = ml_config_get("output");
    if (out) {
        if (!*out) return ml_err("output", out, "expected a file path (placeholders %j job id, %t time, %p pid, %h host, %% percent)");
        for (const char *p = out; *p; p++)
            if (*p == '%') {
                p++;
                if (!*p || !strchr("jtph%", *p))
                    return ml_err("output", out, "unknown placeholder: expected %j (job id), %t (time), %p (pid), %h (host) or %%");
            }
        ml_cfg_output = out;
    }
    const char *inc = ml_config_get("include");
    if (!inc && ml_file_funcs) inc = ml_file_funcs;
    memset(ml_fon, inc ? 0 : 1, sizeof ml_fon);
    if (inc && ml_apply_list("include", inc, 1)) return 1;
    const char *exc = ml_config_get("exclude");
    if (exc && ml_apply_list("exclude", exc, 0)) return 1;
    ml_fon[0] = 0;
    return 0;
}
