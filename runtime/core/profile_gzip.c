/* Compressed profiles (docs/profile-format.md, "Compression"): each rank turns its
 * own text into one gzip member before the collective write; gzip members
 * concatenated are one valid .gz stream (RFC 1952), so the scan's placement and
 * the one MPI_File_write_at_all stay as they are.  Rank 0's header is a member of
 * its own: the first member decompresses to exactly the header line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.h"

/* Whether this profile is compressed: MPILENS_COMPRESS=gzip or off, or (auto) when
 * the output path ends in ".gz". */
int ml_profile_compressed(const char *path)
{
    if (ml_cfg.compress == ML_COMPRESS_GZIP) return 1;
    if (ml_cfg.compress == ML_COMPRESS_OFF) return 0;
    size_t n = strlen(path);
    return n >= 3 && strcmp(path + n - 3, ".gz") == 0;
}

/* b's text from byte `from` on replaced by one gzip member holding it (zlib level 9:
 * 1 % smaller than level 6 on heat2d's lines, for a few more microseconds a line).
 * 0 ok; -1 (b unchanged) when zlib fails, which leaves that part plain: the reader
 * then meets plain text after gzip members and refuses the file, so this only
 * happens with no memory, where the abort of ml_buf would come first. */
int ml_gzip_tail(ml_buf_t *b, size_t from)
{
    if (!b->p || from >= b->n) return 0;
    size_t len = b->n - from;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    uLong cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (unsigned char *)b->p + from;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t got = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return -1;
    }
    if (from + got + 1 > b->cap) {
        char *p = realloc(b->p, from + got + 1);
        if (!p) {
            free(out);
            return -1;
        }
        b->p = p;
        b->cap = from + got + 1;
    }
    memcpy(b->p + from, out, got);
    b->n = from + got;
    b->p[b->n] = 0;
    free(out);
    return 0;
}
