/* The network model file (MPILENS_NETWORK_MODEL) that `mpilens bench logp
 * --model FILE` writes: P-LogP parameters measured once per machine, so that
 * Grouping predicts from them instead of measuring in the library (no
 * measurement cost on the first call of a message size).
 *
 *   {"format": "mpilens-netmodel", "version": 1, "model": "plogp",
 *    "mpi_library": "...", "L_s": 2.7e-7, "sizes": [0, 1, 2, ...],
 *    "os_s": [...], "or_s": [...], "g_s": [...], ...}
 *
 * Other keys (rtt_s, L_raw_s, ...) are read over.  Parameters for a size m
 * between two measured sizes are interpolated linearly; beyond the largest
 * they follow the line through the last two (P-LogP's linear regime, never
 * decreasing); below the smallest they take its value.
 */
#define _DEFAULT_SOURCE
#include "alltoall.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (1 << 20)

enum { K_FORMAT = 1, K_VERSION = 2, K_MODEL = 4, K_LIB = 8, K_L = 16, K_SIZES = 32, K_OS = 64,
       K_OR = 128, K_G = 256, K_ALL = 511 };

typedef struct {
    ml_netmodel *nm;
    int seen, n[4]; /* element counts: sizes, os, or, g */
    char format[32], model[32];
    double version;
} ctx_t;

static int member(ml_json *ps, const char *key, void *vctx)
{
    ctx_t *c = vctx;
    ml_netmodel *nm = c->nm;
    double *arrs[4] = {nm->size, nm->os, nm->orr, nm->g};
    static const char *const akeys[4] = {"sizes", "os_s", "or_s", "g_s"};
    for (int i = 0; i < 4; i++)
        if (strcmp(key, akeys[i]) == 0) {
            if (ps->p >= ps->end || *ps->p != '[') {
                snprintf(ps->err, ps->errlen, "key '%s' is not an array of numbers", key);
                return -1;
            }
            c->seen |= K_SIZES << i;
            return ml_json_array(ps, 1, arrs[i], ML_NETMODEL_MAX, &c->n[i]);
        }
    struct { const char *key; int bit; char *out; size_t len; } strs[] = {
        {"format", K_FORMAT, c->format, sizeof c->format},
        {"model", K_MODEL, c->model, sizeof c->model},
        {"mpi_library", K_LIB, nm->mpi_library, sizeof nm->mpi_library}};
    for (int i = 0; i < 3; i++)
        if (strcmp(key, strs[i].key) == 0) {
            c->seen |= strs[i].bit;
            if (ps->p >= ps->end || *ps->p != '"') {
                snprintf(ps->err, ps->errlen, "key '%s' is not a string", key);
                return -1;
            }
            return ml_json_string(ps, strs[i].out, strs[i].len);
        }
    if (strcmp(key, "version") == 0 || strcmp(key, "L_s") == 0) {
        int isv = key[0] == 'v';
        c->seen |= isv ? K_VERSION : K_L;
        if (ps->p >= ps->end || *ps->p == '"' || *ps->p == '[' || *ps->p == '{') {
            snprintf(ps->err, ps->errlen, "key '%s' is not a number", key);
            return -1;
        }
        return ml_json_number(ps, isv ? &c->version : &nm->L);
    }
    return ml_json_value(ps, 1);
}

static int check(const ctx_t *c, char *err, size_t errlen)
{
    static const char *const names[] = {"format", "version", "model", "mpi_library", "L_s",
                                        "sizes", "os_s", "or_s", "g_s"};
    const ml_netmodel *nm = c->nm;
    for (int i = 0; i < 9; i++)
        if (!(c->seen & 1 << i)) {
            snprintf(err, errlen, "has no key '%s' (write it with `mpilens bench logp --model FILE`)",
                     names[i]);
            return -1;
        }
    if (strcmp(c->format, "mpilens-netmodel") != 0) {
        snprintf(err, errlen, "has format '%.32s', expected 'mpilens-netmodel'", c->format);
        return -1;
    }
    if (c->version != 1) {
        snprintf(err, errlen, "has version %g, expected 1", c->version);
        return -1;
    }
    if (strcmp(c->model, "plogp") != 0) {
        snprintf(err, errlen, "has model '%.32s', expected 'plogp'", c->model);
        return -1;
    }
    int n = c->n[0];
    if (n < 1 || n > ML_NETMODEL_MAX || c->n[1] != n || c->n[2] != n || c->n[3] != n) {
        snprintf(err, errlen, "sizes, os_s, or_s and g_s must have the same length, 1 to %d "
                 "(have %d, %d, %d, %d)", ML_NETMODEL_MAX, c->n[0], c->n[1], c->n[2], c->n[3]);
        return -1;
    }
    if (!(isfinite(nm->L) && nm->L >= 0)) {
        snprintf(err, errlen, "L_s must be a non-negative number");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (!(nm->size[i] >= 0 && nm->size[i] == floor(nm->size[i]) && nm->size[i] < 1e15) ||
            (i > 0 && nm->size[i] <= nm->size[i - 1])) {
            snprintf(err, errlen, "sizes must be increasing non-negative integers (element %d)", i);
            return -1;
        }
        const double v[3] = {nm->os[i], nm->orr[i], nm->g[i]};
        for (int q = 0; q < 3; q++)
            if (!(isfinite(v[q]) && v[q] >= 0)) {
                snprintf(err, errlen, "%s[%d] must be a non-negative number", names[6 + q], i);
                return -1;
            }
    }
    return 0;
}

int ml_netmodel_load(const char *path, ml_netmodel *nm, char *err, size_t errlen)
{
    memset(nm, 0, sizeof *nm);
    ctx_t c = {.nm = nm};
    int rc = ml_json_parse_file(path, MAX_FILE, member, &c, err, errlen) ? -1 : 0;
    if (rc == 0 && (rc = check(&c, err, errlen)) == 0)
        nm->n = c.n[0];
    return rc;
}

static double at(const ml_netmodel *nm, const double *y, double x)
{
    int n = nm->n;
    const double *s = nm->size;
    if (n == 1 || x <= s[0])
        return y[0];
    int i = 1;
    while (i < n - 1 && s[i] < x)
        i++;
    double slope = (y[i] - y[i - 1]) / (s[i] - s[i - 1]);
    if (x > s[n - 1] && slope < 0)
        slope = 0; /* extrapolating: the linear regime never gets cheaper */
    double v = y[i - 1] + (x - s[i - 1]) * slope;
    return v > 0 ? v : 0;
}

void ml_netmodel_params(const ml_netmodel *nm, size_t m, ml_plogp *p)
{
    double x = (double)m;
    p->L = nm->L;
    p->g0 = at(nm, nm->g, 0);
    p->os0 = at(nm, nm->os, 0);
    p->or0 = at(nm, nm->orr, 0);
    p->gm = at(nm, nm->g, x);
    p->osm = at(nm, nm->os, x);
    p->orm = at(nm, nm->orr, x);
    p->g2m = at(nm, nm->g, 2 * x);
}
