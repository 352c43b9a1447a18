/* A small JSON reader for the engine's input files (the network model file,
 * netmodel.c; the learning cache, cache.c): recursive descent over a buffer,
 * objects through a callback per member, arrays of numbers into a table or
 * through a callback per element.  Errors fill err with "is not valid JSON:
 * <what> at byte N" or the caller's own words. */
#define _DEFAULT_SOURCE
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ml_json_fail(ml_json *ps, const char *what)
{
    snprintf(ps->err, ps->errlen, "is not valid JSON: %s at byte %ld", what,
             (long)(ps->p - ps->s));
    return -1;
}

void ml_json_ws(ml_json *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* After an element of an array or a member of an object: ',' (1: another
 * follows), the closing ']' or '}' (0: done), else an error (-1). */
int ml_json_next(ml_json *ps, char close)
{
    ml_json_ws(ps);
    if (ps->p < ps->end && (*ps->p == ',' || *ps->p == close))
        return *ps->p++ == ',';
    return ml_json_fail(ps, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
}

static void put(char *out, size_t outlen, size_t *n, unsigned c)
{
    if (out && *n + 1 < outlen)
        out[(*n)++] = (char)c;
}

static int hex4(ml_json *ps, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++, ps->p++) {
        char c = ps->p < ps->end ? *ps->p : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return ml_json_fail(ps, "bad \\u escape");
        *u = *u * 16 + (unsigned)d;
    }
    return 0;
}

/* A string; its unescaped text (UTF-8) is copied into out (truncated to
 * outlen) when out is given. */
int ml_json_string(ml_json *ps, char *out, size_t outlen)
{
    size_t n = 0;
    if (ps->p >= ps->end || *ps->p != '"')
        return ml_json_fail(ps, "expected a string");
    ps->p++;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20)
            return ml_json_fail(ps, "control character in a string");
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
            return ml_json_fail(ps, "bad escape in a string");
        }
    }
    if (ps->p >= ps->end)
        return ml_json_fail(ps, "unterminated string");
    ps->p++;
    if (out && outlen)
        out[n] = 0;
    return 0;
}

int ml_json_number(ml_json *ps, double *v)
{
    char buf[64];
    size_t n = 0;
    while (ps->p + n < ps->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", ps->p[n]))
        n++;
    if (n == 0)
        return ml_json_fail(ps, "expected a value");
    memcpy(buf, ps->p, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    *v = strtod(buf, &e);
    if (*e || errno == ERANGE)
        return ml_json_fail(ps, "bad number");
    ps->p += n;
    return 0;
}

/* An array; with arr, its elements must be numbers (stored, at most max; *n counts all). */
int ml_json_array(ml_json *ps, int depth, double *arr, int max, int *n)
{
    int k = 0;
    ps->p++; /* '[' */
    ml_json_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        if (n)
            *n = 0;
        return 0;
    }
    for (;;) {
        ml_json_ws(ps);
        if (arr) {
            double v;
            if (ml_json_number(ps, &v))
                return -1;
            if (k < max)
                arr[k] = v;
            k++;
        } else if (ml_json_value(ps, depth + 1)) {
            return -1;
        }
        int more = ml_json_next(ps, ']');
        if (more < 0)
            return -1;
        if (!more)
            break;
    }
    if (n)
        *n = k;
    return 0;
}

int ml_json_value(ml_json *ps, int depth)
{
    if (depth > 32)
        return ml_json_fail(ps, "nested too deeply");
    ml_json_ws(ps);
    if (ps->p >= ps->end)
        return ml_json_fail(ps, "unexpected end");
    switch (*ps->p) {
    case '"':
        return ml_json_string(ps, NULL, 0);
    case '[':
        return ml_json_array(ps, depth, NULL, 0, NULL);
    case '{':
        return ml_json_object(ps, depth, NULL, NULL);
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
    return ml_json_number(ps, &v);
}

/* An object; member(ps, key, ctx) parses the value of each key (NULL: skip them). */
int ml_json_object(ml_json *ps, int depth, int (*member)(ml_json *, const char *, void *), void *ctx)
{
    ps->p++; /* '{' */
    ml_json_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    for (;;) {
        char key[64];
        ml_json_ws(ps);
        if (ml_json_string(ps, key, sizeof key))
            return -1;
        ml_json_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return ml_json_fail(ps, "expected ':'");
        ps->p++;
        ml_json_ws(ps);
        if (member ? member(ps, key, ctx) : ml_json_value(ps, depth + 1))
            return -1;
        int more = ml_json_next(ps, '}');
        if (more <= 0)
            return more;
    }
}

int ml_json_each(ml_json *ps, int depth, int (*elem)(ml_json *, int, void *), void *ctx)
{
    if (depth > 32)
        return ml_json_fail(ps, "nested too deeply");
    if (ps->p >= ps->end || *ps->p != '[')
        return ml_json_fail(ps, "expected '['");
    ps->p++;
    ml_json_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (int i = 0;; i++) {
        ml_json_ws(ps);
        if (elem(ps, i, ctx))
            return -1;
        int more = ml_json_next(ps, ']');
        if (more <= 0)
            return more;
    }
}

int ml_json_parse_file(const char *path, size_t max, int (*member)(ml_json *, const char *, void *),
                       void *ctx, char *err, size_t errlen)
{
    ml_buf_t why = {0};
    errno = 0;
    FILE *f = ml_open_regular(path, &why); /* a FIFO or a directory is never read */
    if (!f) {
        int missing = errno == ENOENT;
        snprintf(err, errlen, "cannot be read (%s)", why.p ? why.p : "?");
        ml_buf_free(&why);
        return missing ? -2 : -1;
    }
    char *buf = malloc(max + 1);
    size_t len = buf ? fread(buf, 1, max + 1, f) : 0;
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr || len > max) {
        if (!buf)
            snprintf(err, errlen, "cannot be read (out of memory)");
        else if (rerr)
            snprintf(err, errlen, "cannot be read (read error)");
        else
            snprintf(err, errlen, "is larger than %zu KiB", max >> 10);
        free(buf);
        return -1;
    }
    ml_json ps = {buf, buf, buf + len, err, errlen};
    ml_json_ws(&ps);
    int rc = ps.p < ps.end && *ps.p == '{' ? ml_json_object(&ps, 0, member, ctx)
                                            : ml_json_fail(&ps, "expected '{'");
    if (rc == 0) {
        ml_json_ws(&ps);
        if (ps.p != ps.end)
            rc = ml_json_fail(&ps, "text after the object");
    }
    free(buf);
    return rc;
}
