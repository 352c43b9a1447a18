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
        ml_buf_room(b, (size_t)k + 1);
    }
}

void ml_buf_room(ml_buf_t *b, size_t room)
{
    if (b->p && b->cap - b->n >= room) return;
    size_t cap = b->cap ? b->cap * 2 : 4096;
    if (cap < b->n + room) cap = b->n + room;
    char *np = realloc(b->p, cap);
    if (!np) {
        fprintf(stderr, "mpilens: out of memory growing a text buffer to %zu bytes\n", cap);
        abort();
    }
    b->p = np;
    b->cap = cap;
}

/* Length of the well-formed UTF-8 sequence at c (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), 0 if it is not one. */
static int ml_utf8_len(const unsigned char *c)
{
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (*c < 0x80) return 1;
    if (*c >= 0xC2 && *c <= 0xDF) n = 2;
    else if (*c >= 0xE0 && *c <= 0xEF) {
        n = 3;
        if (*c == 0xE0) lo = 0xA0;
        if (*c == 0xED) hi = 0x9F;
    } else if (*c >= 0xF0 && *c <= 0xF4) {
        n = 4;
        if (*c == 0xF0) lo = 0x90;
        if (*c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (c[1] < lo || c[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (c[i] < 0x80 || c[i] > 0xBF) return 0;
    return n;
}

/* A JSON string; bytes that are not UTF-8 (a name cut in the middle of a character,
 * a communicator named in Latin-1) become U+FFFD, so the file stays UTF-8 text. */
void ml_buf_json_str(ml_buf_t *b, const char *s)
{
    ml_buf_printf(b, "\"");
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c;) {
        int n = ml_utf8_len(c);
        if (n == 0) {
            ml_buf_printf(b, "\\ufffd");
            c++;
        } else if (n > 1) {
            ml_buf_printf(b, "%.*s", n, (const char *)c);
            c += n;
        } else {
            if (*c == '"' || *c == '\\')
                ml_buf_printf(b, "\\%c", *c);
            else if (*c < 0x20)
                ml_buf_printf(b, "\\u%04x", *c);
            else
                ml_buf_printf(b, "%c", *c);
            c++;
        }
    }
    ml_buf_printf(b, "\"");
}

void ml_buf_free(ml_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
