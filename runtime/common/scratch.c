/* Per-thread scratch buffers (scratch.h). */
#include "scratch.h"

#include <stdlib.h>

void *ml_scratch_get(ml_scratch_t *s, size_t bytes)
{
    if (s->cap >= bytes && s->p)
        return s->p;
    /* at least double the old size: a slowly growing request reallocates log times */
    size_t cap = s->cap * 2 > bytes ? s->cap * 2 : bytes;
    if (cap < 4096)
        cap = 4096;
    free(s->p);
    s->p = malloc(cap);
    s->cap = s->p ? cap : 0;
    return s->p;
}

void ml_scratch_release(ml_scratch_t *s, int n)
{
    for (int i = 0; i < n; i++) {
        free(s[i].p);
        s[i].p = NULL;
        s[i].cap = 0;
    }
}
