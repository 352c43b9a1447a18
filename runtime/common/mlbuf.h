/* A growable text buffer with printf and JSON string output: the one writer
 * behind the profile (runtime/core/profile_*.c), the engines' profile
 * sections, the settings' messages and the benchmarks' JSON (bench/src/json.c).
 * Out of memory aborts with one line: a writer that silently stopped would
 * leave a truncated document. */
#ifndef MLENS_MLBUF_H
#define MLENS_MLBUF_H
#include <stddef.h>

typedef struct {
    char *p;        /* NUL-terminated text (NULL while empty) */
    size_t n, cap;  /* length, allocated bytes */
} ml_buf_t;

void ml_buf_printf(ml_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* b grown so that at least `room` bytes are free after its text (doubling). */
void ml_buf_room(ml_buf_t *b, size_t room);
/* s as a JSON string literal (quotes, escapes; NULL as ""). */
void ml_buf_json_str(ml_buf_t *b, const char *s);
void ml_buf_free(ml_buf_t *b);

#endif
