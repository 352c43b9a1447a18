/* Call sites (MPILENS_CALLSITES, MPILENS_CALLSITE_SLOTS): calls, time, bytes
 * and a size histogram per return address into the application
 * (docs/runtime.md, "Call sites").
 *
 * Depth 1 takes __builtin_return_address(0) in the wrapper itself and finds
 * its record with one probe (callend.h, callend.c).  Deeper stacks, and the
 * rare depth-1 site whose return address lies inside an MPI library or
 * mpilens (a Fortran module procedure of the MPI, say), are walked by
 * unwind.c (by default the unwind tables with a per-return-address rule
 * cache; else frame pointers), checked at each step, else with backtrace()
 * (ml_cs_walk below); frames inside those libraries are skipped, by address
 * ranges found once at start-up.  Each thread holds a fixed table (the slot's cs): a site
 * beyond it is counted in the overflow figures, never allocated.
 *
 * At MPI_Finalize each rank merges its threads' tables and writes its sites
 * in its rank line as module path + offset in the module (address minus the
 * module's load bias: the address as in the ELF file, for PIE programs,
 * shared libraries and fixed-address programs alike); the CLI resolves
 * them to file:line:function (python/mpilens/report/callsites.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"
#include "profile.h"
#include "unwind.h"


#define ML_NRANGE 64

/* This file's state: its other settings, and the address ranges found once
 * at MPI_Init (ml_cs_init), read without a lock afterwards. */
static struct {
    int slots;                 /* MPILENS_CALLSITE_SLOTS */
    int unwind;                /* MPILENS_CALLSITE_UNWIND: ML_UW_BACKTRACE, ML_UW_FP, ML_UW_CFI (unwind.h) */
    int tables;                /* call sites were on at start: every thread has a table */
    struct { uintptr_t lo, hi; } range[ML_NRANGE]; /* executable segments of the MPI libraries and mpilens */
    int nrange;
} C = {.slots = 256, .unwind = ML_UW_CFI};

/* ---- address ranges of the MPI libraries and mpilens ---- */

static int ml_internal_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "libmpi", 6) == 0 || strncmp(b, "libpmpi", 7) == 0 || strncmp(b, "libopen-", 8) == 0 ||
           strncmp(b, "mca_", 4) == 0 || strstr(b, "mpich") != NULL;
}

static int ml_range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!info->dlpi_name || !*info->dlpi_name || !ml_internal_name(info->dlpi_name)) return 0;
    for (int i = 0; i < info->dlpi_phnum && C.nrange < ML_NRANGE; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        C.range[C.nrange].lo = info->dlpi_addr + ph->p_vaddr;
        C.range[C.nrange].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        C.nrange++;
    }
    return 0;
}

static int ml_is_internal(uintptr_t pc)
{
    for (int i = 0; i < C.nrange; i++)
        if (pc >= C.range[i].lo && pc < C.range[i].hi) return 1;
    return 0;
}

/* After MPI_Init (the MPI's libraries are loaded): ranges, and one walk so
 * that backtrace() has loaded its unwinder before any wrapper needs it. */
static int ml_cs_init(void)
{
    C.nrange = 0;
    dl_iterate_phdr(ml_range_cb, NULL);
    ml_uw_init(ml_internal_name);
    if (ml_hot.cs_depth) {
        C.tables = 1;
        void *buf[4];
        backtrace(buf, 4);
        return ML_HOOKS_INLINE;
    }
    return 0;
}

/* ---- the per-thread table ---- */

static void *ml_cs_zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "mpilens: out of memory allocating the call-site table (%zu bytes)\n", n * size);
        abort();
    }
    return p;
}

static void ml_cs_table_init(ml_cstab_t *t, int cap)
{
    uint32_t sz = 2;
    while (sz < 2u * (uint32_t)cap) sz <<= 1;
    t->cap = cap;
    t->n = 0;
    t->mask = sz - 1;
    t->idx = ml_cs_zalloc(sz, sizeof *t->idx);
    memset(t->idx, 0xff, sz * sizeof *t->idx);
    t->rec = ml_cs_zalloc((size_t)cap, sizeof *t->rec);
}

/* A new thread's slot (core.c, under the slot lock). */
static void ml_cs_attach(ml_slot_t *s)
{
    if (!ml_hot.cs_depth) return;
    s->cs = ml_cs_zalloc(1, sizeof *s->cs);
    ml_cs_table_init(s->cs, C.slots);
}

/* Empties a thread's table (after the start-up overhead probe, core.c). */
static void ml_cs_reset(ml_slot_t *s)
{
    memset(s->cs1, 0, sizeof s->cs1); /* the depth-1 cache points into the table (callend.h) */
    ml_cstab_t *t = s->cs;
    if (!t) return;
    memset(t->idx, 0xff, (t->mask + 1) * sizeof *t->idx);
    memset(t->rec, 0, (size_t)t->cap * sizeof *t->rec);
    t->n = 0;
    memset(&t->over, 0, sizeof t->over);
    t->over_bytes_s = t->over_bytes_r = 0;
    ml_uw_reset();
}

static size_t ml_cs_bytes(void)
{
    if (!ml_hot.cs_depth) return 0;
    uint32_t sz = 2;
    while (sz < 2u * (uint32_t)C.slots) sz <<= 1;
    return sizeof(ml_cstab_t) + sz * sizeof(int32_t) + (size_t)C.slots * sizeof(ml_cs_rec_t);
}

static uint32_t ml_cs_hash(const uintptr_t *pc, int n, int fid)
{
    if (n == 1) return ml_cs_hash1(pc[0], fid);
    uint64_t h = (uint64_t)fid;
    for (int i = 0; i < n; i++) h = (h ^ pc[i]) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

/* The record of (pc[0..n), fid), inserted if new; NULL when the table is full. */
static ml_cs_rec_t *ml_cs_get(ml_cstab_t *t, const uintptr_t *pc, int n, int fid)
{
    uint32_t i = ml_cs_hash(pc, n, fid);
    for (;; i++) {
        int32_t k = t->idx[i & t->mask];
        if (k < 0) break;
        ml_cs_rec_t *r = &t->rec[k];
        if (r->fid == (uint32_t)fid && r->n == n && memcmp(r->pc, pc, (size_t)n * sizeof *pc) == 0) return r;
    }
    if (t->n >= t->cap) return NULL;
    ml_cs_rec_t *r = &t->rec[t->n];
    t->idx[i & t->mask] = t->n++;
    memcpy(r->pc, pc, (size_t)n * sizeof *pc);
    r->n = (uint8_t)n;
    r->fid = (uint32_t)fid;
    r->internal = n == 1 && ml_is_internal(pc[0]);
    return r;
}

/* Up to want application frames from the wrapper's caller (ra) outwards,
 * skipping frames inside the MPI libraries and mpilens; 0 if none. */
static int ml_cs_walk(uintptr_t *out, int want, void *ra)
{
    int got = ml_uw_walk(out, want, ra, C.unwind);
    if (got > 0) return got;
    void *buf[ML_CS_MAXDEPTH + 24];
    int n = backtrace(buf, (int)(sizeof buf / sizeof *buf)), i = 0, k = 0;
    while (i < n && buf[i] != ra) i++;
    if (i == n) i = 0; /* the wrapper's own frames cannot be told apart: skip by range */
    for (; i < n && k < want; i++)
        if (!ml_is_internal((uintptr_t)buf[i])) out[k++] = (uintptr_t)buf[i];
    return k;
}

static void ml_cs_account(ml_cstab_t *t, int fid, void *ra, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    uintptr_t pc[ML_CS_MAXDEPTH];
    int n = 1;
    pc[0] = (uintptr_t)ra;
    ml_cs_rec_t *r = NULL;
    if (ml_hot.cs_depth == 1) {
        r = ml_cs_get(t, pc, 1, fid);
        if (r && r->internal) { /* the caller is inside an MPI library: the first application frame */
            ml_cs_rec_t *w = ml_cs_walk(pc, 1, ra) ? ml_cs_get(t, pc, 1, fid) : NULL;
            if (w || t->n >= t->cap) r = w;
        }
    } else {
        n = ml_cs_walk(pc, ml_hot.cs_depth, ra);
        if (!n) {
            pc[0] = (uintptr_t)ra;
            n = 1;
        }
        r = ml_cs_get(t, pc, n, fid);
    }
    if (r) {
        ml_cs_upd(r, tm, dt, bs, br);
        return;
    }
    t->over.calls++;
    ml_time_add(&t->over, tm, dt);
    t->over_bytes_s += bs;
    t->over_bytes_r += br;
}

void ml_cs_add_slow(ml_slot_t *S, int fid, void *ra, int tm, uint64_t dt, uint64_t bs, uint64_t br)
{
    if (!S->cs) return; /* the shared slot's lock is held by the wrapper */
    ml_cs_account(S->cs, fid, ra, tm, dt, bs, br);
}

/* mpilens_set_callsites(depth): change the depth while running (0 off,
 * 1..8); only when call sites were on at start (the tables exist).  Returns
 * the previous depth, or -1 if refused.  For benchmarks (mpilens-bench
 * overhead compares depths 0 and 1 in one run), with no other thread inside MPI. */
__attribute__((visibility("default"))) int mpilens_set_callsites(int depth)
{
    int old = ml_hot.cs_depth;
    if (depth < 0 || depth > ML_CS_MAXDEPTH || (depth && !C.tables)) return -1;
    ml_hot.cs_depth = depth;
    if (depth != old) /* the depth-1 cache answers without testing the depth (callend.h) */
        ML_FOR_EACH_SLOT(s) memset(s->cs1, 0, sizeof s->cs1);
    return old;
}

/* ---- the rank line ---- */

typedef struct {
    uintptr_t bias;
    char path[PATH_MAX];
} ml_mod_t;

/* index of pc's module in mods (added if new), and pc's offset in it; -1 unknown */
static int ml_cs_module(uintptr_t pc, ml_mod_t **mods, int *nmods, uint64_t *off)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return -1;
    for (int i = 0; i < *nmods; i++)
        if ((*mods)[i].bias == lm->l_addr) {
            *off = pc - lm->l_addr;
            return i;
        }
    ml_mod_t *m = realloc(*mods, sizeof **mods * (size_t)(*nmods + 1));
    if (!m) return -1;
    *mods = m;
    m = &m[*nmods];
    m->bias = lm->l_addr;
    if (lm->l_name && *lm->l_name) {
        snprintf(m->path, sizeof m->path, "%s", lm->l_name);
    } else { /* the program itself */
        ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[k > 0 ? k : 0] = 0;
    }
    *off = pc - lm->l_addr;
    return (*nmods)++;
}

/* This rank's call sites, merged over its threads, as rank-line members:
 * ,"callsites":[...],"callsite_modules":[...],"callsites_dropped":{...} */
static void ml_cs_rank_json(ml_buf_t *b)
{
    if (!C.tables) return;
    /* A dump (flight recorder) runs while the application threads go on adding
     * sites: each table's record count is read once, the merge table is sized
     * to their sum, and only those records are merged (a later one waits for
     * the next dump).  A slot made after the count is left out. */
    int nslots = 0, total = 0;
    ML_FOR_EACH_SLOT(s) nslots++;
    int *upto = ml_cs_zalloc((size_t)nslots, sizeof *upto);
    int j = 0;
    for (ml_slot_t *s = ml_first_slot(); s && j < nslots; s = s->next, j++) {
        if (!s->cs) continue;
        int n = __atomic_load_n(&s->cs->n, __ATOMIC_ACQUIRE);
        if (n > s->cs->cap) n = s->cs->cap;
        upto[j] = n;
        total += n;
    }
    ml_cstab_t m;
    memset(&m, 0, sizeof m);
    ml_cs_table_init(&m, total ? total : 1);
    j = 0;
    for (ml_slot_t *s = ml_first_slot(); s && j < nslots; s = s->next, j++) {
        ml_cstab_t *t = s->cs;
        if (!t) continue;
        for (int i = 0; i < upto[j]; i++) {
            ml_cs_rec_t *x = &t->rec[i];
            /* a record being filled in right now: its frames are not written yet */
            if (x->n == 0 || x->n > ML_CS_MAXDEPTH || x->fid >= ML_NFUNC) continue;
            ml_cs_rec_t *a = ml_cs_get(&m, x->pc, x->n, (int)x->fid);
            if (!a) continue;
            ml_timing_sum(&a->t, &x->t);
            a->bytes_s += x->bytes_s;
            a->bytes_r += x->bytes_r;
            for (int k = 0; k < ML_NBINS; k++) a->hist[k] += x->hist[k];
        }
        ml_timing_sum(&m.over, &t->over);
        m.over_bytes_s += t->over_bytes_s;
        m.over_bytes_r += t->over_bytes_r;
    }
    free(upto);
    ml_mod_t *mods = NULL;
    int nmods = 0, first = 1;
    ml_buf_printf(b, ",\"callsites\":[");
    for (int i = 0; i < m.n; i++) {
        const ml_cs_rec_t *r = &m.rec[i];
        if (!r->t.calls) continue;
        ml_buf_printf(b, "%s{\"function\":\"%s\",\"frames\":[", first ? "" : ",", ml_func_name[r->fid]);
        first = 0;
        for (int k = 0; k < r->n; k++) {
            uint64_t off = 0;
            int mi = ml_cs_module(r->pc[k], &mods, &nmods, &off);
            ml_buf_printf(b, "%s[%d,%llu]", k ? "," : "", mi, (unsigned long long)(mi < 0 ? r->pc[k] : off));
        }
        ml_buf_printf(b, "],\"calls\":%llu,\"timed_calls\":%llu,\"time_s\":%.8g,\"bytes_sent\":%llu,\"bytes_recv\":%llu,\"hist\":[",
                      (unsigned long long)r->t.calls, (unsigned long long)r->t.timed, ml_est_s(&r->t),
                      (unsigned long long)r->bytes_s,
                      (unsigned long long)r->bytes_r);
        for (int k = 0; k < ML_NBINS; k++) ml_buf_printf(b, "%s%llu", k ? "," : "", (unsigned long long)r->hist[k]);
        ml_buf_printf(b, "]}");
    }
    ml_buf_printf(b, "],\"callsite_modules\":[");
    for (int i = 0; i < nmods; i++) {
        ml_buf_printf(b, i ? "," : "");
        ml_buf_json_str(b, mods[i].path);
    }
    uint64_t rules, fallbacks;
    ml_uw_stats(&rules, &fallbacks);
    ml_buf_printf(b, "],\"callsite_backtraces\":%llu", (unsigned long long)fallbacks);
    ml_buf_printf(b, ",\"callsites_dropped\":{\"calls\":%llu,\"time_s\":%.8g,\"bytes_sent\":%llu,\"bytes_recv\":%llu}",
                  (unsigned long long)m.over.calls, ml_est_s(&m.over),
                  (unsigned long long)m.over_bytes_s, (unsigned long long)m.over_bytes_r);
    free(mods);
    free(m.idx);
    free(m.rec);
}

/* ---- the module (modules_list.h) ---- */

static const char *const unwind_choices[] = {"backtrace", "fp", "cfi", NULL}; /* ML_UW_* (unwind.h) */

static const ml_setting ml_cs_settings[] = {
    {.key = "callsites", .type = ML_SET_INT, .def = "1", .lo = 0, .hi = ML_CS_MAXDEPTH, .out = &ml_hot.cs_depth,
     .accepted = "an integer from 0 to 8",
     .help = "call-site depth: calls, time, bytes and sizes per call site. 1 (default): the immediate "
             "caller of each MPI function (one return address); 2..8: that many frames of the "
             "application's stack (walked by the unwind tables with a cache, tens of ns per call: "
             "MPILENS_CALLSITE_UNWIND); 0: off. Frames inside the MPI "
             "libraries and mpilens are skipped. See docs/runtime.md."},
    {.key = "callsite_unwind", .type = ML_SET_CHOICE, .def = "cfi", .choices = unwind_choices,
     .out = &C.unwind, .accepted = "cfi, fp or backtrace",
     .help = "how call sites of depth 2..8 are walked. cfi (default): the compiler's unwind tables "
             "(.eh_frame), read once per return address and cached, tens of ns per call, right with "
             "or without frame pointers (a frame it cannot follow: backtrace() for that call). "
             "backtrace: glibc's unwinder on every call, a few us. fp: the saved frame pointers, "
             "checked at each step (else backtrace()); only for applications built with "
             "-fno-omit-frame-pointer (a function without one between two with one is skipped "
             "unseen). See docs/runtime.md."},
    {.key = "callsite_slots", .type = ML_SET_INT, .def = "256", .lo = 1, .hi = 65536,
     .out = &C.slots, .accepted = "an integer from 1 to 65536",
     .help = "call sites each thread records (about 300 bytes each); calls from further sites "
             "are counted in callsites_dropped"},
    {0}};

static void ml_cs_header_json(ml_buf_t *b)
{
    ml_buf_printf(b, ",\"callsite_depth\":%d,\"callsite_slots\":%d", ml_hot.cs_depth, C.slots);
}

/* Per call: the depth-1 cache in ml_call_done (callend.h), the probe in ml_call_end (callend.c), else ml_cs_add_slow. */
const ml_module_t ml_module_callsites = {
    .name = "callsites",
    .settings = ml_cs_settings,
    .init = ml_cs_init,
    .attach = ml_cs_attach,
    .bytes = ml_cs_bytes,
    .reset = ml_cs_reset,
    .header_json = ml_cs_header_json,
    .rank_json = ml_cs_rank_json,
};
