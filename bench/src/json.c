/* Minimal streaming JSON writer (rank 0 builds the result document), on the
 * runtime's text buffer (runtime/common/mlbuf.c). */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlbuf.h"

struct ml_json {
    ml_buf_t b;
    int depth;
    int first[64];
    char close[64];
};

ml_json *ml_json_new(void)
{
    ml_json *w = calloc(1, sizeof *w);
    if (!w) {
        fprintf(stderr, "mpilens-bench: out of memory\n");
        abort();
    }
    ml_buf_printf(&w->b, "%s", "");
    w->first[0] = 1;
    return w;
}

#define put(w, ...) ml_buf_printf(&(w)->b, __VA_ARGS__)
#define put_string(w, s) ml_buf_json_str(&(w)->b, s)

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
const char *ml_json_text(ml_json *w) { return w->b.p; }
void ml_json_free(ml_json *w) { if (w) { ml_buf_free(&w->b); free(w); } }
