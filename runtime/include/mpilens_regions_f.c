/* Fortran regions for programs that must also run without mpilens: compile
 * this file with the program (mpicc -c mpilens_regions_f.c) and call
 *
 *     call mpilens_region_begin('label')
 *     call mpilens_region_end('label')
 *
 * With libmpilens.so loaded these forward to its mpilens_region_begin/end
 * (weak references, mpilens.h); without it they do nothing.  (A program
 * linked with -lmpilens may call the same names without this file.) */
#include <stddef.h>
#include <string.h>

#include "mpilens.h"

static void mpilens_f_forward(void (*fn)(const char *), const char *s, size_t len)
{
    char name[64];
    if (!fn) return;
    while (len && s[len - 1] == ' ') len--;
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, s, len);
    name[len] = 0;
    fn(name);
}

void mpilens_region_begin_(const char *s, size_t len) { mpilens_f_forward(mpilens_region_begin, s, len); }
void mpilens_region_end_(const char *s, size_t len) { mpilens_f_forward(mpilens_region_end, s, len); }
