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
            ml_buf_room(out, 16384 + z->avail_in / 4);
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

/* A line longer than this is compressed by its own rank into a member of its own, in
 * parallel with the others, and the block's first rank only copies it: zlib's window
 * is 32 KB, so such a line gains little from the line before it (HPCC's 60 KB lines:
 * 3 % in blocks of 4, bench/profsize), while level 9 costs about 0.15 s per MB of a
 * line of peers, which a leader would otherwise spend G times in a row. */
#define ML_GZ_OWN_LINE (64 * 1024)

/* The leader's stream: the member being built (in_cur bytes of text so far) and the
 * block's output. */
typedef struct {
    z_stream z;
    ml_buf_t out;
    size_t in_cur, in_all;
    int ok, inited;
} ml_gz_block_t;

/* ends the member being built (if it holds any text) and starts the next */
static void ml_gz_cut(ml_gz_block_t *g)
{
    if (!g->ok || !g->in_cur) return;
    g->ok = ml_gz_feed(&g->z, &g->out, "", 0, Z_FINISH) == 0 && deflateReset(&g->z) == Z_OK;
    g->in_cur = 0;
}

/* a plain line (with its newline) into the block: a long one as a member of its own */
static void ml_gz_line(ml_gz_block_t *g, const char *p, size_t n)
{
    if (!n) return;
    g->in_all += n;
    if (n > ML_GZ_OWN_LINE) ml_gz_cut(g);
    if (g->ok) g->ok = ml_gz_feed(&g->z, &g->out, p, n, Z_NO_FLUSH) == 0;
    g->in_cur += n;
    if (n > ML_GZ_OWN_LINE) ml_gz_cut(g);
}

/* Collective over the profiler's private communicator, in blocks of `group`
 * consecutive ranks: every rank of a block but its first sends its text (b) to the
 * first, the block's leader, and is left with none; the leader compresses its own
 * text and then each other rank's, in rank order, as it arrives (one line held at a
 * time: receive, deflate with Z_NO_FLUSH, reuse the buffer; Z_FINISH after the last)
 * into ONE gzip member, which replaces its text in b.  Consecutive ranks' lines repeat
 * the same keys, functions, call sites and similar numbers, which one member's window
 * sees and a member per line cannot.  A line longer than ML_GZ_OWN_LINE is
 * compressed by its own rank (as with group 1) and sent compressed: the leader ends
 * the member before it and copies it (a plain line if that rank's zlib failed).  A
 * block with no text at all gives no member (as ml_gzip_tail).  group 1:
 * ml_gzip_tail on each rank's own text.  0 ok; -1 on a leader whose zlib failed (it
 * still receives every line of its block, and b is then empty): the caller makes
 * every rank agree not to write the file. */
int ml_gzip_block(ml_buf_t *b, int group)
{
    if (group <= 1) return ml_gzip_tail(b, 0);
    MPI_Comm c = ml_fin_comm();
    int lead = ml_world_rank - ml_world_rank % group;
    if (lead != ml_world_rank) { /* a member: its length (< 0: compressed), then its text in pieces */
        long long len = (long long)b->n;
        if (b->n > ML_GZ_OWN_LINE && ml_gzip_tail(b, 0) == 0) len = -(long long)b->n;
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
    ml_gz_block_t g;
    memset(&g, 0, sizeof g);
    g.ok = g.inited = deflateInit2(&g.z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    ml_gz_line(&g, b->p, b->n);
    ml_buf_free(b);
    char *line = NULL;
    size_t cap = 0;
    for (int src = lead + 1; src < last; src++) {
        long long len = 0;
        MPI_Request r;
        PMPI_Irecv(&len, 1, MPI_LONG_LONG, src, ML_GZ_TAG_LEN, c, &r);
        ml_fin_wait(&r);
        size_t n = (size_t)(len < 0 ? -len : len);
        char *to;
        if (len < 0) { /* a member already: after the one being built, copied as it is */
            ml_gz_cut(&g);
            ml_buf_room(&g.out, n + 1);
            to = g.out.p + g.out.n;
        } else {
            if (n > cap) {
                free(line);
                cap = n;
                line = malloc(cap);
                if (!line) {
                    fprintf(stderr, "mpilens: out of memory receiving rank %d's profile line (%zu bytes)\n", src, n);
                    abort();
                }
            }
            to = line;
        }
        for (size_t done = 0; done < n;) {
            size_t piece = n - done > ML_GZ_PIECE ? ML_GZ_PIECE : n - done;
            PMPI_Irecv(to + done, (int)piece, MPI_CHAR, src, ML_GZ_TAG_TEXT, c, &r);
            ml_fin_wait(&r);
            done += piece;
        }
        if (len < 0) {
            g.out.n += n;
            g.in_all += n;
        } else {
            ml_gz_line(&g, line, n);
        }
    }
    free(line);
    ml_gz_cut(&g);
    if (g.inited) deflateEnd(&g.z);
    if (!g.ok || !g.in_all) {
        ml_buf_free(&g.out);
        return g.ok ? 0 : -1;
    }
    g.out.p[g.out.n] = 0;
    *b = g.out;
    return 0;
}
