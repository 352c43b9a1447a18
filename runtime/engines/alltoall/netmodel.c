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

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (1 << 20)

typedef struct {
    const char *s, *p, *end;
    char *err;
    size_t errlen;
} parser;

static int fail(parser *ps, const char *what)
{
    snprintf(ps->err, ps->errlen, "is not valid JSON: %s at byte %ld", what,
             (long)(ps->p - ps->s));
    return -1;
}

static void ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* After an element of an array or a member of an object: ',' (1: another
 * follows), the closing ']' or '}' (0: done), else an error (-1). */
static int next_or_close(parser *ps, char close)
{
    ws(ps);
    if (ps->p < ps->end && (*ps->p == ',' || *ps->p == close))
        return *ps->p++ == ',';
    return fail(ps, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
}

static void put(char *out, size_t outlen, size_t *n, unsigned c)
{
    if (out && *n + 1 < outlen)
        out[(*n)++] = (char)c;
}

static int hex4(parser *ps, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++, ps->p++) {
        char c = ps->p < ps->end ? *ps->p : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return fail(ps, "bad \\u escape");
        *u = *u * 16 + (unsigned)d;
    }
    return 0;
}

/* A string; its unescaped text (UTF-8) is copied into out (truncated to
 * outlen) when out is given. */
static int string(parser *ps, char *out, size_t outlen)
{
    size_t n = 0;
    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, "expected a string");
    ps->p++;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20)
            return fail(ps, "control character in a string");
        if (c != '\\') {
            put(out, outlen, &n, c);
            continue;
        }
        if (ps->p >= ps->end)
            break;
        c = (unsigned char)*ps->p++;
        unsigned simple = c == '"' || c == '\\' || c == '/' ? c : c == 'b' ? '\b' :
                          c == 'f' ? '\f' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : 0;
        if (simple) {
            put(out, outlen, &n, simple);
        } else if (c == 'u') {
            unsigned u, lo;
            if (hex4(ps, &u))
                return -1;
            if (u >= 0xD800 && u < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                ps->p += 2;
                if (hex4(ps, &lo))
                    return -1;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (u < 0x80) {
                put(out, outlen, &n, u);
            } else if (u < 0x800) {
                put(out, outlen, &n, 0xC0 | u >> 6);
                put(out, outlen, &n, 0x80 | (u & 0x3F));
            } else if (u < 0x10000) {
                put(out, outlen, &n, 0xE0 | u >> 12);
                put(out, outlen, &n, 0x80 | (u >> 6 & 0x3F));
                put(out, outlen, &n, 0x80 | (u & 0x3F));
            } else {
                put(out, outlen, &n, 0xF0 | u >> 18);
                put(out, outlen, &n, 0x80 | (u >> 12 & 0x3F));
                put(out, outlen, &n, 0x80 | (u >> 6 & 0x3F));
                put(out, outlen, &n, 0x80 | (u & 0x3F));
            }
        } else {
            return fail(ps, "bad escape in a string");
        }
    }
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    ps->p++;
    if (out && outlen)
        out[n] = 0;
    return 0;
}

static int number(parser *ps, double *v)
{
    char buf[64];
    size_t n = 0;
    while (ps->p + n < ps->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", ps->p[n]))
        n++;
    if (n == 0)
        return fail(ps, "expected a value");
    memcpy(buf, ps->p, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    *v = strtod(buf, &e);
    if (*e || errno == ERANGE)
        return fail(ps, "bad number");
    ps->p += n;
    return 0;
}

static int value(parser *ps, int depth);

/* An array; with arr, its elements must be numbers (stored, at most max; *n counts all). */
static int array(parser *ps, int depth, double *arr, int max, int *n)
{
    int k = 0;
    ps->p++; /* '[' */
    ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        if (n)
            *n = 0;
        return 0;
    }
    for (;;) {
        ws(ps);
        if (arr) {
            double v;
            if (number(ps, &v))
                return -1;
            if (k < max)
                arr[k] = v;
            k++;
        } else if (value(ps, depth + 1)) {
            return -1;
        }
        int more = next_or_close(ps, ']');
        if (more < 0)
            return -1;
        if (!more)
            break;
    }
    if (n)
        *n = k;
    return 0;
}

static int object(parser *ps, int depth, int (*member)(parser *, const char *, void *), void *ctx);

static int value(parser *ps, int depth)
{
    if (depth > 32)
        return fail(ps, "nested too deeply");
    ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end");
    switch (*ps->p) {
    case '"':
        return string(ps, NULL, 0);
    case '[':
        return array(ps, depth, NULL, 0, NULL);
    case '{':
        return object(ps, depth, NULL, NULL);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(words[i]);
        if ((size_t)(ps->end - ps->p) >= l && memcmp(ps->p, words[i], l) == 0) {
            ps->p += l;
            return 0;
        }
    }
    double v;
    return number(ps, &v);
}

/* An object; member(ps, key, ctx) parses the value of each key (NULL: skip them). */
static int object(parser *ps, int depth, int (*member)(parser *, const char *, void *), void *ctx)
{
    ps->p++; /* '{' */
    ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        char key[64];
        ws(ps);
        if (string(ps, key, sizeof key))
            return -1;
        ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail(ps, "expected ':'");
        ps->p++;
        ws(ps);
        if (member ? member(ps, key, ctx) : value(ps, depth + 1))
            return -1;
        int more = next_or_close(ps, '}');
        if (more <= 0)
            return more;
    }
}

enum { K_FORMAT = 1, K_VERSION = 2, K_MODEL = 4, K_LIB = 8, K_L = 16, K_SIZES = 32, K_OS = 64,
       K_OR = 128, K_G = 256, K_ALL = 511 };

typedef struct {
    ml_netmodel *nm;
    int seen, n[4]; /* element counts: sizes, os, or, g */
    char format[32], model[32];
    double version;
} ctx_t;

static int member(parser *ps, const char *key, void *vctx)
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
            return array(ps, 1, arrs[i], ML_NETMODEL_MAX, &c->n[i]);
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
            return string(ps, strs[i].out, strs[i].len);
        }
    if (strcmp(key, "version") == 0 || strcmp(key, "L_s") == 0) {
        int isv = key[0] == 'v';
        c->seen |= isv ? K_VERSION : K_L;
        if (ps->p >= ps->end || *ps->p == '"' || *ps->p == '[' || *ps->p == '{') {
            snprintf(ps->err, ps->errlen, "key '%s' is not a number", key);
            return -1;
        }
        return number(ps, isv ? &c->version : &nm->L);
    }
    return value(ps, 1);
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
    ml_buf_t why = {0};
    FILE *f = ml_open_regular(path, &why); /* a FIFO or a directory is never read */
    if (!f) {
        snprintf(err, errlen, "cannot be read (%s)", why.p);
        ml_buf_free(&why);
        return -1;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t len = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr || len > MAX_FILE) {
        snprintf(err, errlen, !buf ? "cannot be read (out of memory)" : rerr ?
                 "cannot be read (read error)" : "is larger than 1 MiB");
        free(buf);
        return -1;
    }
    parser ps = {buf, buf, buf + len, err, errlen};
    ctx_t c = {.nm = nm};
    ws(&ps);
    int rc = ps.p < ps.end && *ps.p == '{' ? object(&ps, 0, member, &c) : fail(&ps, "expected '{'");
    if (rc == 0) {
        ws(&ps);
        if (ps.p != ps.end)
            rc = fail(&ps, "text after the object");
    }
    free(buf);
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
