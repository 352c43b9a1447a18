/* Compressed profiles (docs/profile-format.md, "Compression"): the lines of each
 * block of MPILENS_COMPRESS_GROUP consecutive ranks become one gzip member at the
 * block's first rank before the collective write (the other ranks of the block
 * then write nothing); gzip members concatenated are one valid .gz stream (RFC
 * 1952), so the scan's placement and the one MPI_File_write_at_all stay as they
 * are.  Rank 0's header is a member of its own: the first member decompresses to
 * exactly the header line. */
#define _GNU_SOURCE
#include <stdint.h>
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

/* ---- grouped compression: one gzip member per block of G consecutive ranks ---- */

#define ML_GZ_PIECE (1u << 30) /* messages and zlib inputs in pieces of at most 1 GiB (int counts) */
#define ML_GZ_TAG_LEN 1        /* the private communicator's tags (ml_fin_exscan uses 0) */
#define ML_GZ_TAG_TEXT 2

/* out grown so that at least `room` bytes are free after its text */
static void ml_gz_room(ml_buf_t *out, size_t room)
{
    if (out->cap - out->n >= room) return;
    size_t cap = out->cap * 2 > out->n + room ? out->cap * 2 : out->n + room;
    char *p = realloc(out->p, cap);
    if (!p) {
        fprintf(stderr, "mpilens: out of memory compressing the profile (%zu bytes)\n", cap);
        abort();
    }
    out->p = p;
    out->cap = cap;
}

/* n bytes of p into z's stream, its output appended to out; flush Z_NO_FLUSH, or
 * Z_FINISH (p may then be empty) to end the member.  0 ok, -1 zlib failed. */
static int ml_gz_feed(z_stream *z, ml_buf_t *out, const char *p, size_t n, int flush)
{
    do {
        size_t piece = n > ML_GZ_PIECE ? ML_GZ_PIECE : n;
        int f = piece == n ? flush : Z_NO_FLUSH;
        z->next_in = (unsigned char *)(uintptr_t)p;
        z->avail_in = (uInt)piece;
        p += piece;
        n -= piece;
        int rc;
        do {
            ml_gz_room(out, 16384 + z->avail_in / 4);
            size_t room = out->cap - out->n - 1;
            if (room > ML_GZ_PIECE) room = ML_GZ_PIECE;
            z->next_out = (unsigned char *)out->p + out->n;
            z->avail_out = (uInt)room;
            rc = deflate(z, f);
            if (rc == Z_STREAM_ERROR) return -1;
            out->n += room - z->avail_out;
        } while (z->avail_out == 0 || z->avail_in > 0 || (f == Z_FINISH && rc != Z_STREAM_END));
    } while (n > 0);
    return 0;
}

/* Collective over the profiler's private communicator, in blocks of `group`
 * consecutive ranks: every rank of a block but its first sends its text (b) to the
 * first, the block's leader, and is left with none; the leader compresses its own
 * text and then each other rank's, in rank order, as it arrives (one line held at a
 * time: receive, deflate with Z_NO_FLUSH, reuse the buffer; Z_FINISH after the last)
 * into ONE gzip member, which replaces its text in b.  A block with no text at all
 * gives no member (as ml_gzip_tail).  Consecutive ranks' lines repeat the same keys,
 * functions, call sites and similar numbers, which one member's window sees and a
 * member per line cannot.  group 1: ml_gzip_tail on each rank's own text.  0 ok; -1
 * on a leader whose zlib failed (it still receives every line of its block, and b is
 * then empty): the caller makes every rank agree not to write the file. */
int ml_gzip_block(ml_buf_t *b, int group)
{
    if (group <= 1) return ml_gzip_tail(b, 0);
    MPI_Comm c = ml_fin_comm();
    int lead = ml_world_rank - ml_world_rank % group;
    if (lead != ml_world_rank) { /* a member: its length, then its text in pieces */
        long long len = (long long)b->n;
        MPI_Request r;
        PMPI_Isend(&len, 1, MPI_LONG_LONG, lead, ML_GZ_TAG_LEN, c, &r);
        ml_fin_wait(&r);
        for (size_t done = 0; done < b->n;) {
            size_t piece = b->n - done > ML_GZ_PIECE ? ML_GZ_PIECE : b->n - done;
            PMPI_Isend(b->p + done, (int)piece, MPI_CHAR, lead, ML_GZ_TAG_TEXT, c, &r);
            ml_fin_wait(&r);
            done += piece;
        }
        ml_buf_free(b);
        return 0;
    }
    int last = lead + group < ml_world_size ? lead + group : ml_world_size;
    z_stream z;
    memset(&z, 0, sizeof z);
    int ok = deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    int inited = ok;
    ml_buf_t out = {0};
    size_t in = b->n;
    if (ok && b->n) ok = ml_gz_feed(&z, &out, b->p, b->n, Z_NO_FLUSH) == 0;
    ml_buf_free(b);
    char *line = NULL;
    size_t cap = 0;
    for (int src = lead + 1; src < last; src++) {
        long long len = 0;
        MPI_Request r;
        PMPI_Irecv(&len, 1, MPI_LONG_LONG, src, ML_GZ_TAG_LEN, c, &r);
        ml_fin_wait(&r);
        if ((size_t)len > cap) {
            free(line);
            cap = (size_t)len;
            line = malloc(cap);
            if (!line) {
                fprintf(stderr, "mpilens: out of memory receiving rank %d's profile line (%lld bytes)\n", src, len);
                abort();
            }
        }
        for (size_t done = 0; done < (size_t)len;) {
            size_t piece = (size_t)len - done > ML_GZ_PIECE ? ML_GZ_PIECE : (size_t)len - done;
            PMPI_Irecv(line + done, (int)piece, MPI_CHAR, src, ML_GZ_TAG_TEXT, c, &r);
            ml_fin_wait(&r);
            done += piece;
        }
        if (ok && len) ok = ml_gz_feed(&z, &out, line, (size_t)len, Z_NO_FLUSH) == 0;
        in += (size_t)len;
    }
    free(line);
    if (ok && in) ok = ml_gz_feed(&z, &out, "", 0, Z_FINISH) == 0;
    if (inited) deflateEnd(&z);
    if (!ok || !in) {
        ml_buf_free(&out);
        return ok ? 0 : -1;
    }
    out.p[out.n] = 0;
    *b = out;
    return 0;
}
