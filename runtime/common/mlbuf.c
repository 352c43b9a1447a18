/* Growable text buffer (mlbuf.h). */
#include "mlbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ml_buf_printf(ml_buf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
        char *np = realloc(b->p, cap);
        if (!np) {
            fprintf(stderr, "mpilens: out of memory formatting %zu bytes of text\n", cap);
            abort();
        }
        b->p = np;
        b->cap = cap;
    }
}

void ml_buf_json_str(ml_buf_t *b, const char *s)
{
    ml_buf_printf(b, "\"");
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            ml_buf_printf(b, "\\%c", *c);
        else if (*c < 0x20)
            ml_buf_printf(b, "\\u%04x", *c);
        else
            ml_buf_printf(b, "%c", *c);
    }
    ml_buf_printf(b, "\"");
}

void ml_buf_free(ml_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
