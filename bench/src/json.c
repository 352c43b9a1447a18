/* Minimal streaming JSON writer (rank 0 builds the result document). */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ml_json {
    char *buf;
    size_t len, cap;
    int depth;
    int first[64];
    char close[64];
};

ml_json *ml_json_new(void)
{
    ml_json *w = calloc(1, sizeof *w);
    w->cap = 4096;
    w->buf = malloc(w->cap);
    w->buf[0] = 0;
    w->first[0] = 1;
    return w;
}

static void put(ml_json *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(ml_json *w, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < w->cap - w->len) { w->len += (size_t)n; return; }
        w->cap = 2 * w->cap + (size_t)n;
        w->buf = realloc(w->buf, w->cap);
    }
}

static void put_string(ml_json *w, const char *s)
{
    put(w, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') put(w, "\\%c", *p);
        else if (*p < 0x20) put(w, "\\u%04x", *p);
        else put(w, "%c", *p);
    }
    put(w, "\"");
}

static void key(ml_json *w, const char *k)
{
    if (!w->first[w->depth]) put(w, ",");
    w->first[w->depth] = 0;
    if (k) { put_string(w, k); put(w, ":"); }
}

void ml_json_obj(ml_json *w, const char *k)
{
    key(w, k);
    put(w, "{");
    w->close[++w->depth] = '}';
    w->first[w->depth] = 1;
}

void ml_json_arr(ml_json *w, const char *k)
{
    key(w, k);
    put(w, "[");
    w->close[++w->depth] = ']';
    w->first[w->depth] = 1;
}

void ml_json_end(ml_json *w) { put(w, "%c", w->close[w->depth--]); }

void ml_json_num(ml_json *w, const char *k, double v)
{
    key(w, k);
    if (isfinite(v)) put(w, "%.9g", v);
    else put(w, "null");
}
void ml_json_int(ml_json *w, const char *k, long long v) { key(w, k); put(w, "%lld", v); }
void ml_json_str(ml_json *w, const char *k, const char *s) { key(w, k); put_string(w, s); }
void ml_json_bool(ml_json *w, const char *k, int v) { key(w, k); put(w, v ? "true" : "false"); }
void ml_json_null(ml_json *w, const char *k) { key(w, k); put(w, "null"); }
void ml_json_raw(ml_json *w, const char *k, const char *j) { key(w, k); put(w, "%s", j); }
const char *ml_json_text(ml_json *w) { return w->buf; }
void ml_json_free(ml_json *w) { if (w) { free(w->buf); free(w); } }
