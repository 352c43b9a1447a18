/* A small JSON reader (json.c) for the engine's input files. */
#ifndef MLENS_A2A_JSON_H
#define MLENS_A2A_JSON_H
#include <stddef.h>

#include "settings.h"

typedef struct ml_json {
    const char *s, *p, *end;
    char *err;
    size_t errlen;
} ml_json;

/* "is not valid JSON: <what> at byte N" into err; returns -1. */
int ml_json_fail(ml_json *ps, const char *what);
void ml_json_ws(ml_json *ps);
/* After an element or member: ',' (1: another follows), the closing char (0), else -1. */
int ml_json_next(ml_json *ps, char close);
/* A string; its text (UTF-8) copied into out (truncated to outlen) when out is given. */
int ml_json_string(ml_json *ps, char *out, size_t outlen);
int ml_json_number(ml_json *ps, double *v);
/* Any value, read over. */
int ml_json_value(ml_json *ps, int depth);
/* An array at '['; with arr, its elements must be numbers (stored, at most max;
 * *n counts all); without, any values, read over. */
int ml_json_array(ml_json *ps, int depth, double *arr, int max, int *n);
/* An object at '{'; member(ps, key, ctx) parses each key's value (NULL: read over). */
int ml_json_object(ml_json *ps, int depth, int (*member)(ml_json *, const char *, void *), void *ctx);
/* An array at '[' whose elements elem(ps, index, ctx) parses. */
int ml_json_each(ml_json *ps, int depth, int (*elem)(ml_json *, int, void *), void *ctx);
/* Reads path (a regular file, at most max bytes) as one object through member.
 * 0 ok; -2 missing file, -1 otherwise, with err filled. */
int ml_json_parse_file(const char *path, size_t max, int (*member)(ml_json *, const char *, void *),
                       void *ctx, char *err, size_t errlen);

#endif
