/* Time line (MPILENS_TIMELINE_BINS): per rank, calls, MPI time and bytes per
 * function class (point-to-point, collective, one-sided, I/O, other) in a
 * fixed number of time bins from MPI_Init (docs/runtime.md, "Time line").
 *
 * Bins start ~1 ms wide (a power of two of clock ticks); when a call falls
 * past the last bin, pairs of bins merge and the width doubles, so memory
 * stays fixed and any run length fits.  A call counts in the bin of its
 * start time; an untimed call (sampled timing) in the bin of the thread's
 * last clock reading (at most ML_SAMPLE_PERIOD calls earlier).  Counts and
 * bytes sum exactly to the function records; time is estimated per bin
 * and class as mean of the timed calls x calls.  Per thread; merged into
 * the widest thread's bins at MPI_Finalize (widths are powers of two of
 * the same first width, so merging is exact). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "profile.h"

/* This file's state: its setting, and the first bins' width (set at MPI_Init). */
static struct {
    int bins;   /* MPILENS_TIMELINE_BINS (0: off) */
    int shift0; /* the first bins are 2^shift0 ticks wide, about 1 ms */
} T = {.bins = 64, .shift0 = 20};

static const char *const ml_tl_names[ML_TL_NCLASS] = {"p2p", "coll", "rma", "io", "other"};

static int ml_tl_init(void)
{
    if (!T.bins) return 0;
    uint64_t ms = ml_ns_to_ticks(1000000);
    T.shift0 = 0;
    while (T.shift0 < 62 && (2ull << T.shift0) <= ms) T.shift0++;
    return ML_HOOKS_INLINE;
}

static void ml_tl_attach(ml_slot_t *s)
{
    if (!T.bins) return;
    s->tl = calloc(1, sizeof *s->tl);
    if (s->tl) s->tl->cell = calloc((size_t)T.bins * ML_TL_NCLASS, sizeof(ml_tl_cell_t));
    if (!s->tl || !s->tl->cell) {
        fprintf(stderr, "mpilens: out of memory allocating the time line\n");
        abort();
    }
    s->tl->nbins = T.bins;
    s->tl->shift = T.shift0;
    s->tl->row = s->tl->cell;
}

static size_t ml_tl_bytes(void)
{
    return T.bins ? sizeof(ml_tltab_t) + (size_t)T.bins * ML_TL_NCLASS * sizeof(ml_tl_cell_t) : 0;
}

static void ml_tl_reset(ml_slot_t *s)
{
    if (!s->tl) return;
    memset(s->tl->cell, 0, (size_t)s->tl->nbins * ML_TL_NCLASS * sizeof(ml_tl_cell_t));
    s->tl->shift = T.shift0;
    s->tl->row = s->tl->cell;
    s->tl->last = 0;
    s->tl->merges = 0;
}

static void ml_cell_add(ml_tl_cell_t *a, const ml_tl_cell_t *x)
{
    ml_timing_sum(&a->t, &x->t);
    a->bytes += x->bytes;
}

/* Pairs of bins merge until rel (ticks since MPI_Init) falls in the last bin or before. */
void ml_tl_grow(ml_tltab_t *t, uint64_t rel)
{
    while ((rel >> t->shift) >= (uint64_t)t->nbins) {
        if (t->nbins == 1) { /* one bin: it only widens (nothing to merge, nothing to clear) */
            t->shift++;
            t->merges++;
            continue;
        }
        for (int i = 0; i < t->nbins / 2; i++)
            for (int c = 0; c < ML_TL_NCLASS; c++) {
                ml_tl_cell_t m = t->cell[2 * i * ML_TL_NCLASS + c];
                ml_cell_add(&m, &t->cell[(2 * i + 1) * ML_TL_NCLASS + c]);
                t->cell[i * ML_TL_NCLASS + c] = m;
            }
        memset(&t->cell[(t->nbins / 2) * ML_TL_NCLASS], 0,
               (size_t)(t->nbins - t->nbins / 2) * ML_TL_NCLASS * sizeof(ml_tl_cell_t));
        t->shift++;
        t->merges++;
    }
}

/* A timed call at t0: the bin of t0 becomes the thread's current row (bins
 * merge first when t0 falls past the last one). */
void ml_tl_move(ml_tltab_t *t, uint64_t t0)
{
    t->last = t0;
    uint64_t rel = t0 > ml_t_init ? t0 - ml_t_init : 0;
    if (__builtin_expect((rel >> t->shift) >= (uint64_t)t->nbins, 0)) ml_tl_grow(t, rel);
    t->row = &t->cell[(rel >> t->shift) * ML_TL_NCLASS];
}
static void ml_put_row(ml_buf_t *b, const char *key, const ml_tl_cell_t *cell, int n, int what)
{
    ml_buf_printf(b, ",\"%s\":[", key);
    for (int i = 0; i < n; i++) {
        ml_buf_printf(b, "%s[", i ? "," : "");
        for (int c = 0; c < ML_TL_NCLASS; c++) {
            const ml_tl_cell_t *x = &cell[i * ML_TL_NCLASS + c];
            if (what == 0) ml_buf_printf(b, "%s%llu", c ? "," : "", (unsigned long long)x->t.calls);
            else if (what == 1) ml_buf_printf(b, "%s%llu", c ? "," : "", (unsigned long long)x->bytes);
            else ml_buf_printf(b, "%s%.4g", c ? "," : "", ml_est_s(&x->t));
        }
        ml_buf_printf(b, "]");
    }
    ml_buf_printf(b, "]");
}

/* This rank's time line, its threads merged into the widest bins. */
static void ml_tl_rank_json(ml_buf_t *b)
{
    if (!T.bins) return;
    int shift = T.shift0;
    uint64_t merges = 0;
    ML_FOR_EACH_SLOT(s)
        if (s->tl && s->tl->shift > shift) shift = s->tl->shift;
    uint64_t span = ml_t_final > ml_t_init ? ml_t_final - ml_t_init : 0;
    while ((span >> shift) >= (uint64_t)T.bins) shift++; /* the whole run fits */
    ml_tl_cell_t *m = calloc((size_t)T.bins * ML_TL_NCLASS, sizeof *m);
    if (!m) {
        fprintf(stderr, "mpilens: out of memory formatting the time line\n");
        abort();
    }
    ML_FOR_EACH_SLOT(s) {
        ml_tltab_t *t = s->tl;
        if (!t) continue;
        if (t->merges > merges) merges = t->merges;
        for (int i = 0; i < t->nbins; i++)
            for (int c = 0; c < ML_TL_NCLASS; c++)
                ml_cell_add(&m[(i >> (shift - t->shift)) * ML_TL_NCLASS + c], &t->cell[i * ML_TL_NCLASS + c]);
    }
    int n = (int)(span >> shift) + 1;
    if (n > T.bins) n = T.bins;
    for (int i = n; i < T.bins; i++) /* calls stamped after MPI_Finalize began: none, but keep them */
        for (int c = 0; c < ML_TL_NCLASS; c++)
            if (m[i * ML_TL_NCLASS + c].t.calls) n = i + 1;
    ml_buf_printf(b, ",\"timeline\":{\"bin_s\":%.9g,\"merges\":%llu,\"classes\":[", ml_ticks_to_s(1ull << shift),
                  (unsigned long long)merges);
    for (int c = 0; c < ML_TL_NCLASS; c++) ml_buf_printf(b, "%s\"%s\"", c ? "," : "", ml_tl_names[c]);
    ml_buf_printf(b, "]");
    ml_put_row(b, "calls", m, n, 0);
    ml_put_row(b, "time_s", m, n, 2);
    ml_put_row(b, "bytes", m, n, 1);
    ml_buf_printf(b, "}");
    free(m);
}

/* ---- the module (modules_list.h) ---- */

static const ml_setting ml_tl_settings[] = {
    {.key = "timeline_bins", .type = ML_SET_INT, .def = "64", .lo = 0, .hi = 4096, .flags = ML_SET_POW2,
     .out = &T.bins, .accepted = "0, or a power of two up to 4096",
     .help = "time line: per rank, this many time bins of calls, MPI time and bytes per function "
             "class (p2p, coll, rma, io, other); bins start about 1 ms wide and pairs merge when "
             "the run outgrows them (memory stays fixed); 0: off"},
    {0}};

static void ml_tl_header_json(ml_buf_t *b) { ml_buf_printf(b, ",\"timeline_bins\":%d", T.bins); }

/* Per call: ml_call_done (callend.h) and ml_call_end (callend.c), through the slot's tl. */
const ml_module_t ml_module_timeline = {
    .name = "timeline",
    .settings = ml_tl_settings,
    .init = ml_tl_init,
    .attach = ml_tl_attach,
    .bytes = ml_tl_bytes,
    .reset = ml_tl_reset,
    .header_json = ml_tl_header_json,
    .rank_json = ml_tl_rank_json,
};
